"""``metacompress gate`` / ``policies`` exit codes: 0 passed, 1 failed or refused, 2 usage or
input error, with a one-line message and never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mlflow_metacompress import gates
from mlflow_metacompress.cli import main
from mlflow_metacompress.gates.lock import promotion_lock

GOOD = {"accuracy_drop": 0.0, "mr1_violation_rate/metamorphic": 0.1, "attack_mhm_zhang_2020/excess_drop_pct": 10.0}
POLICY = "name: p\nthresholds:\n  accuracy_drop: '<= 0.05'\n"


@pytest.fixture
def registered(fresh_store):
    """``student`` with one version in a fresh store, and a maker of evaluation runs:
    (uri, client, eval_run)."""
    uri, client, exp = fresh_store.uri, fresh_store.client, fresh_store.exp
    client.create_registered_model("student")
    client.create_model_version("student", fresh_store.source)

    def eval_run(metrics=GOOD, summary=True, finish=True):
        run = client.create_run(exp, start_time=1_700_000_000_000)
        for key, value in metrics.items():
            client.log_metric(run.info.run_id, key, value)
        if summary:
            client.log_text(run.info.run_id, json.dumps({"metrics": metrics}), "metacompress/summary.json")
        if finish:
            client.set_terminated(run.info.run_id, end_time=1_700_000_000_100)
        return run.info.run_id

    return uri, client, eval_run


def _gate(uri, run_id, policy="lenient", version="1"):
    return [
        "--tracking-uri",
        uri,
        "gate",
        "--model-name",
        "student",
        "--version",
        version,
        "--evaluation-run-id",
        run_id,
        "--policy",
        policy,
    ]


def _bad_inputs(tmp_path):
    (tmp_path / "policy_dir").mkdir()
    (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9\nthresholds:\n  accuracy_drop: 0.1\n".encode("latin-1"))
    (tmp_path / "dup.yaml").write_text(POLICY + "  accuracy_drop: '<= 0.5'\n")
    (tmp_path / "dup_top.yaml").write_text(POLICY + "name: q\n")
    return {
        "directory": ({"policy": str(tmp_path / "policy_dir")}, "is a directory"),
        "non-utf8": ({"policy": str(tmp_path / "latin1.yaml")}, "is not UTF-8 text (byte 0xe9 at offset 9)"),
        "duplicate threshold": ({"policy": str(tmp_path / "dup.yaml")}, "found duplicate key 'accuracy_drop'"),
        "duplicate top-level": ({"policy": str(tmp_path / "dup_top.yaml")}, "found duplicate key 'name'"),
        "missing policy": ({"policy": str(tmp_path / "nope.yaml")}, "does not exist"),
        "version with space": ({"version": "1 "}, "got '1 '"),
        "version word": ({"version": "x"}, "got 'x'"),
        "unknown version": ({"version": "7"}, "student"),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "directory",
        "non-utf8",
        "duplicate threshold",
        "duplicate top-level",
        "missing policy",
        "version with space",
        "version word",
        "unknown version",
    ],
)
def test_gate_input_errors_exit_2_one_line(registered, tmp_path, capsys, case):
    uri, client, eval_run = registered
    overrides, needle = _bad_inputs(tmp_path)[case]
    run_id = eval_run()
    assert main(_gate(uri, run_id, **overrides)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("metacompress gate: error: "), captured.err
    assert needle in lines[0] and "Traceback" not in captured.err and captured.out == ""
    if "policy" in overrides:
        assert os.path.basename(overrides["policy"]) in lines[0]  # the message names the file
    assert gates.TAG_VERDICT not in (client.get_model_version("student", "1").tags or {})  # nothing ran


@pytest.mark.slow
def test_unfinished_or_half_written_run_is_refused_exit_1(registered, capsys):
    uri, client, eval_run = registered
    assert main(_gate(uri, eval_run(finish=False))) == 1
    assert "not FINISHED" in capsys.readouterr().out
    assert main(_gate(uri, eval_run(summary=False))) == 1
    assert "has no metacompress/summary.json" in capsys.readouterr().out
    assert main(_gate(uri, eval_run())) == 0
    assert main(_gate(uri, eval_run(dict(GOOD, accuracy_drop=0.9)))) == 1


@pytest.mark.slow
def test_failing_holder_loses_alias_through_the_cli(registered, capsys):
    uri, client, eval_run = registered
    assert main(_gate(uri, eval_run()) + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alias_moved"]
    assert main(_gate(uri, eval_run(dict(GOOD, accuracy_drop=0.9))) + ["--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["passed"] and out["alias_handed_to"] is None and "deleted" in out["notes"][-1]
    assert not client.get_registered_model("student").aliases


def test_lock_held_elsewhere_is_exit_1_not_a_pass(registered, capsys, monkeypatch):
    uri, client, eval_run = registered
    monkeypatch.setattr("mlflow_metacompress.gates.lock.DEFAULT_TIMEOUT_S", 0.05)
    monkeypatch.setattr("mlflow_metacompress.gates.promotion.DEFAULT_TIMEOUT_S", 0.05)
    run_id = eval_run()
    with promotion_lock(uri, "student"):
        code = main(_gate(uri, run_id))
    err = capsys.readouterr().err
    assert code == 1 and "held the lock" in err and len(err.strip().splitlines()) == 1


def test_policies_lists_quick_and_rejects_bad_files(tmp_path, capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in ("safety_critical", "standard", "lenient", "quick"):
        assert f"policy {name}" in out
    assert main(["policies", "quick"]) == 0 and "attack_*/excess_drop <= 0.15" in capsys.readouterr().out
    (tmp_path / "d").mkdir()
    assert main(["policies", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("metacompress policies: error: ") and "is a directory" in err


def test_quick_preset_matches_the_pipeline_profile():
    from mlflow_metacompress.gates.policy import load_policy
    from mlflow_metacompress.profiles import QUICK_POLICY

    assert load_policy("quick") == load_policy(QUICK_POLICY)
    assert load_policy("quick").description == QUICK_POLICY["description"]


@pytest.mark.slow
def test_real_process_prints_no_traceback(registered, tmp_path):
    uri, _, eval_run = registered
    (tmp_path / "policy_dir").mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(
        [sys.executable, "-m", "mlflow_metacompress.cli", *_gate(uri, eval_run(), policy=str(tmp_path / "policy_dir"))],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "is a directory" in proc.stderr
