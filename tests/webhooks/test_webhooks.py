"""``metacompress webhooks`` end to end: a real ``mlflow server`` (sqlite, loopback) delivers
signed registry events to the gate service, started as ``metacompress webhooks serve`` in a
subprocess and installed with ``metacompress webhooks install``. The models are tiny pyfunc
models returning fixed probabilities, so each evaluation takes about a second: a passing
student agrees with the teacher on every row, a failing one disagrees on 3 rows in 10."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from mlflow_metacompress.cli import main
from mlflow_metacompress.webhooks.signature import sign

pytestmark = pytest.mark.slow  # trains, runs a pipeline or mlflow run, or starts a server: out of the fast lane

REPO = Path(__file__).resolve().parents[2]
SECRET = "wh-test-secret"
ALIAS = "champion"
VERDICT, TEACHER = "metacompress.verdict", "metacompress.teacher"
MODEL_CODE = '''
import re

import pandas as pd
from mlflow.models import set_model
from mlflow.pyfunc import PythonModel


class FixedProbabilities(PythonModel):
    """P(class 1) from the number n in ``f<n>``: odd n is class 1; the rows with n % 10 < flip
    get the other class."""

    def load_context(self, context):
        cfg = context.model_config or {}
        self.flip, self.confidence = int(cfg.get("flip", 0)), float(cfg.get("confidence", 0.9))

    def predict(self, context, model_input, params=None):
        ids = [int(re.search(r"f(\\d+)", code).group(1)) for code in model_input["func"]]
        p = [self.confidence if (i % 2 == 1) != (i % 10 < self.flip) else 1 - self.confidence for i in ids]
        return pd.DataFrame({"0": [1 - x for x in p], "1": p})


set_model(FixedProbabilities())
'''
POLICY = {"name": "wh-test", "thresholds": {"accuracy_drop": "<= 0.05", "mr1_violation_rate": "<= 0.1"}}
EVAL_CFG = {"code_columns": ["func"], "transforms": [], "attacks": [], "progress": False}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop ``proc`` and every process of its session (the server's uvicorn workers)."""
    for s in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, s)
        except ProcessLookupError:
            break
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
    proc.wait(10)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("webhooks")


@pytest.fixture(scope="module")
def server(tmp):
    """A real ``mlflow server`` on a free loopback port, allowed to deliver to loopback over http."""
    port = _free_port()
    env = {
        **os.environ,
        "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true",
        "MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https",
        "MLFLOW_WEBHOOK_CACHE_TTL": "1",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "HOME": str(tmp),
    }
    log = open(tmp / "mlflow-server.log", "wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp}/mlflow.db",
            "--artifacts-destination",
            str(tmp / "artifacts"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-w",
            "1",
        ],
        cwd=tmp,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, (tmp / "mlflow-server.log").read_text()[-3000:]
        try:
            return requests.get(f"{uri}/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    try:
        _wait(up, 120, "mlflow server")
        yield uri
    finally:
        _stop(proc)
        log.close()


class ServiceProcess:
    """``metacompress webhooks serve`` in a subprocess that the tests can kill and restart."""

    def __init__(self, tmp: Path, config: Path, tracking: str) -> None:
        self.config, self.port, self.proc = config, _free_port(), None
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "METACOMPRESS_WEBHOOK_SECRET": SECRET,
            "MLFLOW_TRACKING_URI": tracking,
            "MLFLOW_METACOMPRESS_CACHE": str(tmp / "cache"),
            "HOME": str(tmp),
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        self.log = tmp / "service.log"
        self.cwd = tmp

    def start(self, queue_only: bool = False) -> None:
        cmd = [
            sys.executable,
            "-m",
            "mlflow_metacompress.cli",
            "-v",
            "webhooks",
            "serve",
            "--config",
            str(self.config),
            "--port",
            str(self.port),
            *(["--queue-only"] if queue_only else []),
        ]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        _wait(self._up, 90, "the webhook service")

    def _up(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        try:
            return requests.get(f"{self.url}/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def health(self) -> dict:
        return requests.get(f"{self.url}/health", timeout=5).json()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None:
            _stop(self.proc, sig)

    def post(
        self,
        body: bytes,
        delivery_id: str | None = None,
        timestamp: int | None = None,
        secret: str | None = SECRET,
        signature: str | None = None,
    ) -> requests.Response:
        delivery_id = delivery_id or str(uuid.uuid4())
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        headers = {"Content-Type": "application/json", "X-MLflow-Delivery-Id": delivery_id, "X-MLflow-Timestamp": stamp}
        if signature is not None:
            headers["X-MLflow-Signature"] = signature
        elif secret is not None:
            headers["X-MLflow-Signature"] = sign(secret, delivery_id, stamp, body)
        return requests.post(f"{self.url}/webhook", data=body, headers=headers, timeout=10)


@pytest.fixture(scope="module")
def env(tmp, server):
    """Logged teacher/students, the gates.yaml, the running service installed as a webhook."""
    import mlflow
    import pandas as pd
    from mlflow import MlflowClient

    previous_secret = os.environ.get("METACOMPRESS_WEBHOOK_SECRET")
    mlflow.set_tracking_uri(server)
    mlflow.set_registry_uri(server)  # an earlier test's registry URI must not win over the server
    os.environ["METACOMPRESS_WEBHOOK_SECRET"] = SECRET
    (tmp / "model.py").write_text(MODEL_CODE)
    rows = [{"func": f"int f{i}(int a) {{ return a + {i}; }}", "target": i % 2} for i in range(40)]
    pd.DataFrame(rows).to_json(tmp / "data.jsonl", orient="records", lines=True)
    uris = {}
    for key, cfg in {"teacher": {"flip": 0}, "pass": {"flip": 0, "confidence": 0.8}, "fail": {"flip": 3}}.items():
        with mlflow.start_run(run_name=f"wh-{key}"):  # one run each: model_config is logged as params
            info = mlflow.pyfunc.log_model(
                name=key, python_model=str(tmp / "model.py"), model_config=cfg, pip_requirements=["pandas"]
            )
        uris[key] = info.model_uri
    client = MlflowClient(server, server)
    mlflow.register_model(uris["teacher"], "wh-teacher")
    rule = {"data": "data.jsonl", "targets": "target", "policy": POLICY, "evaluator_config": EVAL_CFG}
    config = {
        "tracking_uri": server,
        "secret_env": "METACOMPRESS_WEBHOOK_SECRET",
        "alias": ALIAS,
        "models": {
            "wh-broken": {**rule, "teacher": "models:/wh-no-such-teacher/1"},
            "wh-tagged": rule,
            "wh-*": {**rule, "teacher": "models:/wh-teacher/1"},
        },
    }
    (tmp / "gates.yaml").write_text(yaml.safe_dump(config))
    service = ServiceProcess(tmp, tmp / "gates.yaml", server)
    service.start()
    assert main(["webhooks", "install", "--config", str(tmp / "gates.yaml"), "--url", f"{service.url}/webhook"]) == 0
    time.sleep(1.5)  # the server caches each event's webhook list for MLFLOW_WEBHOOK_CACHE_TTL=1 s
    try:
        yield {"client": client, "uris": uris, "service": service, "tmp": tmp, "server": server}
    finally:
        service.stop()
        mlflow.set_tracking_uri(None)  # back to MLFLOW_TRACKING_URI / the next test's fixture
        mlflow.set_registry_uri(None)
        if previous_secret is None:
            os.environ.pop("METACOMPRESS_WEBHOOK_SECRET", None)
        else:
            os.environ["METACOMPRESS_WEBHOOK_SECRET"] = previous_secret


def _register(env, name: str, kind: str, tags: dict | None = None) -> str:
    import mlflow

    return str(mlflow.register_model(env["uris"][kind], name, tags=tags).version)


def _tags(env, name: str, version: str) -> dict:
    return env["client"].get_model_version(name, version).tags


def _judged(env, name: str, version: str, timeout: float = 60) -> dict:
    return _wait(
        lambda: (t := _tags(env, name, version)).get(VERDICT) in ("passed", "failed", "error") and t,
        timeout,
        f"the verdict of {name} v{version}",
    )


def _holder(env, name: str) -> str | None:
    aliases = env["client"].get_registered_model(name).aliases
    return aliases.get(ALIAS)


def _settled_holder(env, name: str, expected: str | None, timeout: float = 20) -> str | None:
    """The alias holder once it equals ``expected`` (promote writes the verdict, then moves the alias)."""
    _wait(lambda: _holder(env, name) == expected, timeout, f"{ALIAS} of {name} to be {expected}")
    return _holder(env, name)


def _gate_runs(env, name: str, version: str) -> int:
    runs = env["client"].search_runs(["0"], f"tags.`metacompress.gate_model` = 'models:/{name}/{version}'")
    return len(runs)


def test_registered_version_is_judged_and_promoted(env):
    start = time.monotonic()
    v1 = _register(env, "wh-a", "pass")
    tags = _judged(env, "wh-a", v1)
    elapsed = time.monotonic() - start
    assert tags[VERDICT] == "passed", tags
    assert _settled_holder(env, "wh-a", v1) == v1
    v2 = _register(env, "wh-a", "fail")
    tags = _judged(env, "wh-a", v2)
    assert tags[VERDICT] == "failed" and "mr1_violation_rate" in tags["metacompress.failed_checks"], tags
    assert _holder(env, "wh-a") == v1  # a failing version never takes the alias
    run = env["client"].get_run(tags["metacompress.evaluation_run_id"])
    assert run.data.metrics["mr1_violation_rate"] == pytest.approx(0.3)  # 3 rows in 10 flipped
    print(f"register -> verdict: {elapsed:.1f} s")


def test_manual_alias_on_failing_version_is_reverted(env):
    client = env["client"]
    good = _register(env, "wh-b", "pass")
    assert _judged(env, "wh-b", good)[VERDICT] == "passed"
    bad = _register(env, "wh-b", "fail")
    assert _judged(env, "wh-b", bad)[VERDICT] == "failed"
    _wait(lambda: _holder(env, "wh-b") == good, 20, "v1 to hold the alias")
    client.set_registered_model_alias("wh-b", ALIAS, bad)  # skips the gate
    _wait(lambda: "metacompress.alias_reverted" in _tags(env, "wh-b", bad), 30, "the revert tag")
    assert _holder(env, "wh-b") == good
    # no passing version: a hand-set alias is deleted
    only = _register(env, "wh-c", "fail")
    assert _judged(env, "wh-c", only)[VERDICT] == "failed"
    client.set_registered_model_alias("wh-c", ALIAS, only)
    # the guard deletes the alias, then tags the version: wait for the tag, the last step
    _wait(lambda: "metacompress.alias_reverted" in _tags(env, "wh-c", only), 30, "the revert tag")
    assert _holder(env, "wh-c") is None
    assert "v2 was given alias 'champion' without passing" in (env["tmp"] / "service.log").read_text()


def _created(name: str, version: str) -> bytes:
    return json.dumps(
        {
            "entity": "model_version",
            "action": "created",
            "timestamp": "2026-01-01T00:00:00+00:00",
            "data": {
                "name": name,
                "version": version,
                "source": "models:/m-1",
                "run_id": None,
                "tags": {},
                "description": None,
            },
        }
    ).encode()


def test_bad_signature_stale_timestamp_and_malformed_body_start_nothing(env):
    service = env["service"]
    health = service.health()
    assert health["status"] == "ok" and all(health["workers"].values()) and len(health["workers"]) == 2
    before = health["queue"]
    assert set(before) == {"queued", "running", "done", "error", "waiting", "skipped", "deliveries"}
    body = _created("wh-unsigned", "1")
    assert service.post(body, secret=None).status_code == 401
    assert service.post(body, secret="wrong-secret").status_code == 401
    assert service.post(body, signature="v1,AAAA").status_code == 401
    assert service.post(body, timestamp=int(time.time()) - 301).status_code == 401
    assert service.post(b"{not json", secret=SECRET).status_code == 400
    broken = json.dumps({"entity": "model_version", "action": "created", "data": {"name": "wh-x"}}).encode()
    response = service.post(broken)
    assert response.status_code == 400 and "version" in response.json()["error"]
    assert service.health()["queue"] == before  # no delivery recorded, no job queued
    assert env["client"].search_registered_models("name = 'wh-unsigned'") == []


def test_replayed_delivery_starts_no_second_evaluation(env):
    service = env["service"]
    version = _register(env, "wh-replay", "pass")  # MLflow delivers its own model_version.created
    delivery = str(uuid.uuid4())
    first = service.post(_created("wh-replay", version), delivery_id=delivery)  # a second event, same version
    assert first.status_code == 200 and first.json()["status"] in ("queued", "ignored")
    assert _judged(env, "wh-replay", version)[VERDICT] == "passed"
    for _ in range(2):
        again = service.post(_created("wh-replay", version), delivery_id=delivery)
        assert again.status_code == 200 and again.json() == {"status": "duplicate", "jobs": []}
    fresh = service.post(_created("wh-replay", version))  # a new delivery id for a judged version
    assert fresh.status_code == 200 and fresh.json() == {"status": "ignored", "jobs": []}
    unnamed = service.post(_created("not-gated", "1"))  # a model the config does not name
    assert unnamed.status_code == 200 and unnamed.json() == {"status": "ignored", "jobs": []}
    time.sleep(1.0)
    assert _gate_runs(env, "wh-replay", version) == 1


def test_evaluation_error_tags_error_and_moves_no_alias(env):
    version = _register(env, "wh-broken", "pass")  # its configured teacher does not resolve
    tags = _judged(env, "wh-broken", version)
    assert tags[VERDICT] == "error" and "wh-no-such-teacher" in tags["metacompress.error"], tags
    assert _holder(env, "wh-broken") is None
    assert env["service"].health()["status"] == "ok"  # the service keeps serving


def test_teacher_tag_set_after_registration_starts_the_evaluation(env):
    version = _register(env, "wh-tagged", "pass")  # no teacher in the config, no tag yet
    _wait(lambda: env["service"].health()["queue"]["waiting"] >= 1, 30, "the job to wait for its teacher")
    assert VERDICT not in _tags(env, "wh-tagged", version)
    env["client"].set_model_version_tag("wh-tagged", version, TEACHER, "models:/wh-teacher/1")
    assert _judged(env, "wh-tagged", version)[VERDICT] == "passed"
    assert _settled_holder(env, "wh-tagged", version) == version


def test_killed_service_resumes_its_queued_job(env):
    service = env["service"]
    service.stop()
    service.start(queue_only=True)  # deliveries are queued, no job runs
    queued = service.health()["queue"]["queued"]
    version = _register(env, "wh-restart", "pass")
    _wait(lambda: service.health()["queue"]["queued"] > queued, 30, "the delivery to be queued")
    service.stop(signal.SIGKILL)
    assert VERDICT not in _tags(env, "wh-restart", version)
    service.start()
    assert _judged(env, "wh-restart", version)[VERDICT] == "passed"
    assert _settled_holder(env, "wh-restart", version) == version


def test_burst_of_ten_versions_ends_with_the_latest_passing_champion(env):
    pattern = ["pass", "fail", "pass", "pass", "fail", "pass", "fail", "pass", "fail", "fail"]
    versions = [_register(env, "wh-burst", kind) for kind in pattern]
    verdicts = {v: _judged(env, "wh-burst", v, timeout=120)[VERDICT] for v in versions}
    assert verdicts == {v: "passed" if k == "pass" else "failed" for v, k in zip(versions, pattern, strict=True)}
    latest_passing = versions[7]
    assert env["client"].get_registered_model("wh-burst").aliases == {ALIAS: latest_passing}
    assert [_gate_runs(env, "wh-burst", v) for v in versions] == [1] * 10
    # the service's own alias moves raised alias events that the guard left alone (no loop)
    assert not any("metacompress.alias_reverted" in _tags(env, "wh-burst", v) for v in versions)


def test_install_twice_keeps_one_webhook_and_uninstall_removes_it(env):
    client, config = env["client"], str(env["tmp"] / "gates.yaml")
    before = [h.webhook_id for h in client.list_webhooks() if h.name == "metacompress-gates"]
    url = f"{env['service'].url}/webhook"
    assert main(["webhooks", "install", "--config", config, "--url", url]) == 0
    assert [h.webhook_id for h in client.list_webhooks() if h.name == "metacompress-gates"] == before
    assert len(before) == 1 and client.test_webhook(before[0]).success  # a signed test delivery gets 200
    assert main(["webhooks", "uninstall", "--config", config]) == 0
    assert [h for h in client.list_webhooks() if h.name == "metacompress-gates"] == []
