"""The webhook service's parts without a server: the signature against MLflow's own signer,
the sqlite queue across reopenings, config errors, event parsing, the alias guard and the
worker's retry/error handling on a sqlite registry."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest
import yaml

from mlflow_metacompress.cli import main
from mlflow_metacompress.webhooks import signature
from mlflow_metacompress.webhooks.config import WebhookConfigError, load_config
from mlflow_metacompress.webhooks.events import MalformedEventError, jobs_for, parse_event
from mlflow_metacompress.webhooks.guard import TAG_ALIAS_REVERTED, guard_alias
from mlflow_metacompress.webhooks.queue import EVALUATE, GUARD, JobQueue, JobSpec
from mlflow_metacompress.webhooks.worker import Worker, backoff_s, is_transient, tracking_reachable

HEADERS = ("X-MLflow-Delivery-Id", "X-MLflow-Timestamp", "X-MLflow-Signature")


# ------------------------------------------------------------------------ signature
def test_signature_matches_mlflows_signer_on_random_inputs():
    from mlflow.webhooks.delivery import _generate_hmac_signature

    rng = np.random.default_rng(0)
    for _ in range(50):
        secret = rng.bytes(int(rng.integers(1, 40))).hex()
        body = "".join(chr(int(c)) for c in rng.integers(32, 0x2FF, size=int(rng.integers(0, 200))))
        delivery, stamp = f"id-{rng.integers(1e9)}", str(int(rng.integers(1e9, 2e9)))
        expected = _generate_hmac_signature(secret, delivery, stamp, body)
        assert signature.sign(secret, delivery, stamp, body.encode("utf-8")) == expected
        headers = dict(zip(HEADERS, (delivery, stamp, expected), strict=True))
        assert signature.verify(secret, headers, body.encode("utf-8"), now=int(stamp)).delivery_id == delivery


def _headers(secret: str, body: bytes, delivery: str = "d1", stamp: int = 1_700_000_000) -> dict[str, str]:
    return dict(zip(HEADERS, (delivery, str(stamp), signature.sign(secret, delivery, stamp, body)), strict=True))


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda h, b: (h, b + b" "), "signature mismatch"),
        (lambda h, b: ({**h, "X-MLflow-Delivery-Id": "other"}, b), "signature mismatch"),
        (lambda h, b: ({**h, "X-MLflow-Timestamp": str(int(h["X-MLflow-Timestamp"]) + 1)}, b), "signature mismatch"),
        (
            lambda h, b: ({k: v for k, v in h.items() if k != "X-MLflow-Signature"}, b),
            "missing header X-MLflow-Signature",
        ),
        (lambda h, b: ({**h, "X-MLflow-Timestamp": "soon"}, b), "must be Unix seconds"),
        (lambda h, b: ({**h, "X-MLflow-Signature": "v1,AAAA"}, b), "signature mismatch"),
    ],
)
def test_signature_rejects_tampering(change, reason):
    body = b'{"entity": "model_version"}'
    headers, sent = change(_headers("s3cret", body), body)
    with pytest.raises(signature.SignatureError, match=reason):
        signature.verify("s3cret", headers, sent, now=1_700_000_000)


def test_signature_window_and_header_case():
    body = b"{}"
    headers = {k.lower(): v for k, v in _headers("k", body).items()}
    assert signature.verify("k", headers, body, now=1_700_000_000 + 300).timestamp == 1_700_000_000
    for now in (1_700_000_000 + 301, 1_700_000_000 - 301):
        with pytest.raises(signature.SignatureError, match="outside the 300 s tolerance"):
            signature.verify("k", headers, body, now=now)
    with pytest.raises(signature.SignatureError, match="no webhook secret"):
        signature.verify("", headers, body, now=1_700_000_000)


# ---------------------------------------------------------------------------- queue
def test_queue_deduplicates_deliveries_and_versions(tmp_path):
    q = JobQueue(tmp_path / "q.sqlite")
    assert q.record_delivery("d1", "model_version.created", [JobSpec(EVALUATE, "m", "1")]) == [1]
    assert q.record_delivery("d1", "model_version.created", [JobSpec(EVALUATE, "m", "2")]) is None  # replay
    assert q.record_delivery("d2", "model_version_tag.set", [JobSpec(EVALUATE, "m", "1", revive=True)]) == []
    assert q.record_delivery("d3", "x", [JobSpec(GUARD, "m", "1", "champion")] * 2) == [2, 3]  # one per event
    assert q.counts() == {"queued": 3, "running": 0, "done": 0, "error": 0, "waiting": 0, "skipped": 0, "deliveries": 3}
    assert [j.version for j in q.jobs()] == ["1", "1", "1"]


def test_queue_revives_waiting_and_error_jobs_only(tmp_path):
    q = JobQueue(tmp_path / "q.sqlite")
    for v in "123":
        q.record_delivery(f"c{v}", "model_version.created", [JobSpec(EVALUATE, "m", v)])
    for state in ("waiting", "error", "done"):
        job = q.claim([EVALUATE])
        q.finish(job.id, state, "x")
    revived = [
        q.record_delivery(f"t{v}", "model_version_tag.set", [JobSpec(EVALUATE, "m", v, revive=True)]) for v in "123"
    ]
    assert revived == [[1], [2], []]
    assert [j.state for j in q.jobs()] == ["queued", "queued", "done"]


def test_queue_resumes_interrupted_jobs_after_reopening(tmp_path):
    q = JobQueue(tmp_path / "q.sqlite")
    q.record_delivery("d1", "e", [JobSpec(EVALUATE, "m", "1"), JobSpec(EVALUATE, "m", "2")])
    running = q.claim([EVALUATE])
    assert running.version == "1" and running.attempts == 1
    q.close()  # the process dies: v1 running, v2 queued
    again = JobQueue(tmp_path / "q.sqlite")
    assert again.recovered == 1
    claimed = [again.claim([EVALUATE]), again.claim([EVALUATE])]
    assert [(j.version, j.attempts) for j in claimed] == [("1", 2), ("2", 1)]
    assert again.record_delivery("d1", "e", [JobSpec(EVALUATE, "m", "3")]) is None  # ledger survives too


def test_queue_retry_later_is_not_due_before_its_time(tmp_path):
    q = JobQueue(tmp_path / "q.sqlite")
    q.record_delivery("d1", "e", [JobSpec(EVALUATE, "m", "1")])
    job = q.claim([EVALUATE])
    q.retry_later(job.id, 60, "down")
    assert q.claim([EVALUATE]) is None and 59 < q.next_due_in([EVALUATE]) <= 60
    assert q.jobs()[0].state == "queued" and q.claim([GUARD]) is None


# --------------------------------------------------------------------------- config
@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"func": "int f(){}", "target": 0}\n')
    return path


def _write(tmp_path, cfg) -> str:
    path = tmp_path / "gates.yaml"
    path.write_text(yaml.safe_dump(cfg) if not isinstance(cfg, str) else cfg)
    return str(path)


def test_config_resolves_paths_and_globs(tmp_path, data_file):
    cfg = load_config(
        _write(
            tmp_path,
            {
                "models": {
                    "stu-*": {"data": "data.jsonl", "policy": "lenient"},
                    "stu-x": {"data": str(data_file), "teacher": "models:/t/1"},
                }
            },
        )
    )
    assert cfg.rule_for("stu-x").teacher == "models:/t/1"  # exact name before an earlier glob
    assert cfg.rule_for("stu-y").policy.name == "lenient" and cfg.rule_for("stu-y").data == data_file
    assert cfg.rule_for("other") is None
    assert cfg.alias == "champion" and cfg.queue_path == tmp_path / "gates.webhooks.sqlite"


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"models": {}}, "models: required"),
        ({"modles": {}}, "modles: unknown key"),
        ({"models": {"m": {"policy": "standard"}}}, r"models\.m\.data: required"),
        ({"models": {"m": {"data": "missing.jsonl"}}}, r"models\.m\.data: .*does not exist"),
        ({"models": {"m": {"data": "data.txt"}}}, r"models\.m\.data: .*must end with one of"),
        ({"models": {"m": {"data": "data.jsonl", "policy": "strictest"}}}, r"models\.m\.policy: unknown policy"),
        (
            {"models": {"m": {"data": "data.jsonl", "evaluator_config": {"kl_treshold": 1}}}},
            r"models\.m\.evaluator_config\.kl_treshold: unknown",
        ),
        (
            {"models": {"m": {"data": "data.jsonl", "evaluator_config": {"teacher": "x"}}}},
            r"models\.m\.evaluator_config\.teacher: give the teacher as",
        ),
        ({"models": {"m": {"data": "data.jsonl", "targets": 3}}}, r"models\.m\.targets: must be a non-empty string"),
        ({"secret_env": "my secret!", "models": {"m": {"data": "data.jsonl"}}}, "secret_env: .* is not an environment"),
        ({"secret": "hunter2", "models": {"m": {"data": "data.jsonl"}}}, "secret: the webhook secret is never read"),
        ({"alias": "latest", "models": {"m": {"data": "data.jsonl"}}}, "alias: 'latest' is not a valid"),
        ("models: {m: {data: data.jsonl}}\nmodels: {}\n", "duplicate key 'models'"),
    ],
)
def test_config_errors_name_the_key(tmp_path, data_file, cfg, message):
    with pytest.raises(WebhookConfigError, match=message):
        load_config(_write(tmp_path, cfg))


def test_secret_comes_from_the_named_environment_variable(tmp_path, data_file, monkeypatch):
    cfg = load_config(_write(tmp_path, {"secret_env": "WH_UNIT_SECRET", "models": {"m": {"data": "data.jsonl"}}}))
    monkeypatch.delenv("WH_UNIT_SECRET", raising=False)
    with pytest.raises(WebhookConfigError, match="WH_UNIT_SECRET is unset or empty"):
        cfg.secret()
    monkeypatch.setenv("WH_UNIT_SECRET", "abc")
    assert cfg.secret() == "abc"


@pytest.mark.slow
def test_cli_install_without_secret_is_one_line_exit_2(tracking, tmp_path, data_file, monkeypatch, capsys):
    monkeypatch.delenv("WH_UNIT_SECRET", raising=False)
    path = _write(tmp_path, {"secret_env": "WH_UNIT_SECRET", "models": {"m": {"data": "data.jsonl"}}})
    assert main(["webhooks", "install", "--config", path, "--url", "http://127.0.0.1:1/webhook"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("metacompress webhooks install: error:") and "WH_UNIT_SECRET" in err
    assert err.count("\n") == 1


# --------------------------------------------------------------------------- events
def test_events_map_to_jobs(tmp_path, data_file):
    cfg = load_config(_write(tmp_path, {"models": {"stu*": {"data": "data.jsonl"}}}))

    def body(entity, action, **data):
        return {"entity": entity, "action": action, "timestamp": "t", "data": data}

    created = parse_event(body("model_version", "created", name="stu1", version="4"))
    assert jobs_for(cfg, created) == [JobSpec(EVALUATE, "stu1", "4")]
    assert jobs_for(cfg, parse_event(body("model_version", "created", name="other", version="1"))) == []
    tag = parse_event(body("model_version_tag", "set", name="stu1", version="4", key="metacompress.teacher", value="x"))
    assert jobs_for(cfg, tag) == [JobSpec(EVALUATE, "stu1", "4", revive=True)]
    other_tag = parse_event(body("model_version_tag", "set", name="stu1", version="4", key="k", value="x"))
    assert jobs_for(cfg, other_tag) == []
    alias = parse_event(body("model_version_alias", "created", name="stu1", version="4", alias="champion"))
    assert jobs_for(cfg, alias) == [JobSpec(GUARD, "stu1", "4", alias="champion")]
    assert (
        jobs_for(cfg, parse_event(body("model_version_alias", "created", name="stu1", version="4", alias="staging")))
        == []
    )
    assert jobs_for(cfg, parse_event(body("registered_model", "created", name="stu1"))) == []
    for bad, field in [
        ([], "JSON object"),
        ({"entity": "model_version"}, "body.action"),
        (body("model_version", "created", name="stu1", version="v1"), "positive integer"),
        (body("model_version_alias", "created", name="stu1", version="1"), "body.data.alias"),
    ]:
        with pytest.raises(MalformedEventError, match=field):
            parse_event(bad)


# -------------------------------------------------------------- guard and worker
@pytest.fixture
def registry(tracking):
    from mlflow import MlflowClient

    client = MlflowClient()
    client.create_registered_model("g")
    for verdict in ("passed", "passed", "failed", None):  # v1, v2 pass; v3 fails; v4 never judged
        mv = client.create_model_version("g", "s3://bucket/model")
        if verdict:
            client.set_model_version_tag("g", mv.version, "metacompress.verdict", verdict)
    return client


def _holder(client, name="g"):
    version = client.get_registered_model(name).aliases.get("champion")  # int from sqlite, str over REST
    return None if version is None else str(version)


@pytest.mark.slow
def test_guard_restores_the_newest_passing_version(registry):
    registry.set_registered_model_alias("g", "champion", "3")
    outcome = guard_alias(registry, "g", "champion", "3")
    assert outcome.reverted and outcome.restored_to == "2" and _holder(registry) == "2"
    assert int(registry.get_model_version("g", "3").tags[TAG_ALIAS_REVERTED]) <= time.time() * 1000
    registry.set_registered_model_alias("g", "champion", "4")  # never judged: reverted as well
    assert guard_alias(registry, "g", "champion", "4").restored_to == "2"


def test_guard_leaves_passing_holders_and_stale_events_alone(registry):
    registry.set_registered_model_alias("g", "champion", "1")
    assert not guard_alias(registry, "g", "champion", "1").reverted  # its own move: no loop
    assert not guard_alias(registry, "g", "champion", "3").reverted  # the alias has moved on since
    assert _holder(registry) == "1" and TAG_ALIAS_REVERTED not in registry.get_model_version("g", "3").tags


def test_guard_deletes_the_alias_when_nothing_passed(registry):
    registry.create_registered_model("h")
    registry.create_model_version("h", "s3://bucket/model")
    registry.set_registered_model_alias("h", "champion", "1")
    outcome = guard_alias(registry, "h", "champion", "1")
    assert outcome.reverted and outcome.restored_to is None and _holder(registry, "h") is None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_tracking_server_is_transient(monkeypatch):
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    uri = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(Exception) as info:
        MlflowClient(uri, uri).get_model_version("m", "1")
    assert is_transient(info.value) and not tracking_reachable(uri)
    assert not is_transient(ValueError("targets column 'label' is not in the evaluation data"))
    assert [backoff_s(n) for n in (1, 2, 3, 8, 20)] == [1, 2, 4, 60, 60]


def _run_worker(queue, handler, client, uri):
    stop, wake = threading.Event(), threading.Event()
    worker = Worker(queue, (EVALUATE,), handler, client, uri, wake, stop)
    job = queue.claim([EVALUATE])
    worker.run_one(job)
    return queue.get(job.id)


def test_worker_keeps_a_job_while_the_server_is_down(tmp_path, registry):
    import requests

    q = JobQueue(tmp_path / "q.sqlite")
    q.record_delivery("d", "e", [JobSpec(EVALUATE, "g", "4")])
    uri = f"http://127.0.0.1:{_closed_port()}"

    def down(job):
        raise requests.ConnectionError("connection refused")

    job = _run_worker(q, down, registry, uri)
    assert job.state == "queued" and job.attempts == 1 and "unavailable" in job.message
    assert q.claim([EVALUATE]) is None and 0 < q.next_due_in([EVALUATE]) <= 1  # backed off 1 s, not dropped
    q.retry_later(job.id, 0, "due now")
    job = _run_worker(q, lambda job: ("done", "passed"), registry, uri)
    assert (job.state, job.attempts) == ("done", 2)


def test_worker_tags_an_evaluation_error_and_moves_no_alias(tmp_path, registry, tracking):
    q = JobQueue(tmp_path / "q.sqlite")
    q.record_delivery("d", "e", [JobSpec(EVALUATE, "g", "4")])
    registry.set_registered_model_alias("g", "champion", "1")

    def broken(job):
        raise KeyError("targets column 'label' is not in the evaluation data")

    job = _run_worker(q, broken, registry, tracking)
    tags = registry.get_model_version("g", "4").tags
    assert job.state == "error" and tags["metacompress.verdict"] == "error"
    assert "targets column 'label'" in tags["metacompress.error"] and _holder(registry) == "1"


def test_an_older_version_judged_late_does_not_take_the_alias_from_a_newer_passing_one(
    tmp_path, registry, data_file, monkeypatch
):
    from mlflow_metacompress import gates
    from mlflow_metacompress.webhooks.worker import evaluate_job

    cfg = load_config(_write(tmp_path, {"models": {"g": {"data": "data.jsonl", "teacher": "models:/t/1"}}}))
    calls = []

    def passing_gate(name, version, *args, alias, client, **kw):  # what gate_version does for a passing version
        calls.append((version, alias))
        client.set_model_version_tag(name, version, "metacompress.verdict", "passed")
        if alias:
            client.set_registered_model_alias(name, alias, version)
        return gates.GateDecision(name, version, "p", True, [], alias, alias is not None, None)

    monkeypatch.setattr(gates, "gate_version", passing_gate)
    q = JobQueue(tmp_path / "q.sqlite")
    q.record_delivery("d", "e", [JobSpec(EVALUATE, "g", "1"), JobSpec(EVALUATE, "g", "4"), JobSpec(EVALUATE, "g", "3")])
    registry.set_registered_model_alias("g", "champion", "2")  # v2 passed
    registry.delete_model_version_tag("g", "1", "metacompress.verdict")
    registry.delete_model_version_tag("g", "3", "metacompress.verdict")
    outcomes = [evaluate_job(cfg, registry, q.claim([EVALUATE])) for _ in range(3)]
    assert calls == [("1", None), ("4", "champion"), ("3", None)]  # only the newer v4 may take it from v2
    assert "stays on newer passing v2" in outcomes[0][1] and "stays on newer passing v4" in outcomes[2][1]
    assert _holder(registry) == "4"
