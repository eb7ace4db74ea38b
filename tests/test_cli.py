"""The ``metacompress`` console script: ``gate`` and ``policies``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient

from mlflow_metacompress import gates
from mlflow_metacompress.cli import main

GOOD = {"accuracy_drop": 0.0, "mr1_violation_rate/metamorphic": 0.1, "attack_mhm_zhang_2020/excess_drop_pct": 10.0}


class _Identity(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri, uri)
    with mlflow.start_run() as run:
        info = mlflow.pyfunc.log_model(name="m", python_model=_Identity())
    client.create_registered_model("vuln-student")
    for _ in range(2):
        client.create_model_version("vuln-student", info.model_uri, run_id=run.info.run_id)

    def eval_run(metrics, end_time):
        exp = client.get_experiment_by_name("Default").experiment_id
        r = client.create_run(exp, start_time=end_time - 5)
        for k, v in metrics.items():
            client.log_metric(r.info.run_id, k, v)
        client.log_text(r.info.run_id, json.dumps({"metrics": metrics}), "metacompress/summary.json")
        client.set_terminated(r.info.run_id, end_time=end_time)
        return r.info.run_id

    yield uri, client, eval_run
    mlflow.set_tracking_uri(previous)


def _alias(client):
    return str(client.get_model_version_by_alias("vuln-student", "champion").version)


def test_gate_pass_fail_refuse_force_exit_codes(store, capsys):
    uri, client, eval_run = store
    fresh, stale = eval_run(GOOD, 1_700_000_900_000), eval_run(GOOD, 1_700_000_000_000)
    base = ["--tracking-uri", uri, "gate", "--model-name", "vuln-student", "--policy", "lenient"]
    assert main([*base, "--version", "1", "--evaluation-run-id", fresh, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["alias_moved"] and _alias(client) == "1"

    assert main([*base, "--version", "2", "--evaluation-run-id", stale]) == 1
    assert "refused" in capsys.readouterr().out and _alias(client) == "1"
    assert main([*base, "--version", "2", "--evaluation-run-id", stale, "--force"]) == 0
    assert _alias(client) == "2"

    bad = eval_run(dict(GOOD, accuracy_drop=0.3), 1_700_001_000_000)
    assert main([*base, "--version", "1", "--evaluation-run-id", bad]) == 1
    text = capsys.readouterr().out
    assert "FAILED" in text and "accuracy_drop = 0.3 violates <= 0.05" in text
    assert _alias(client) == "2"
    assert client.get_model_version("vuln-student", "1").tags[gates.TAG_VERDICT] == "failed"


def test_gate_input_errors_exit_2_with_one_line(store, capsys, tmp_path):
    uri, client, eval_run = store
    base = ["--tracking-uri", uri, "gate", "--model-name", "vuln-student", "--version", "1"]
    assert main([*base, "--evaluation-run-id", "nope"]) == 2
    assert "evaluation run 'nope' not found" in capsys.readouterr().err
    assert main([*base, "--evaluation-run-id", eval_run(GOOD, 1), "--policy", str(tmp_path / "x.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([*base, "--data", str(tmp_path / "missing.jsonl")]) == 2
    assert "no 'metacompress.teacher' tag" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # exactly one of --data / --evaluation-run-id
        main([*base])
    assert exit_.value.code == 2


def test_console_script_is_installed_and_lists_presets():
    script = Path(sys.executable).with_name("metacompress")
    if not script.exists():
        pytest.skip("console script not installed in this environment")
    out = subprocess.run([str(script), "policies"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for name in ("safety_critical", "standard", "lenient"):
        assert f"policy {name}" in out.stdout
    assert "accuracy_drop <= 0.02" in out.stdout
