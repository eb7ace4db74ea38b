"""A gate's verdict on its run: a failing student is an outcome (run FINISHED, tag
``metacompress.verdict`` and metric ``gate_passed``), distinct from a crash (FAILED)."""

from __future__ import annotations

import pytest

from mlflow_metacompress.gates.decision import GateDecision
from mlflow_metacompress.gates.gate import GATE_PASSED, log_verdict
from mlflow_metacompress.gates.policy import load_policy


def _decision(checks):
    return GateDecision("m", "1", "quick", all(c.passed for c in checks), checks, "champion", False, None)


@pytest.mark.parametrize("drop,verdict", [(0.02, "passed"), (0.2, "failed")])
def test_log_verdict_tags_a_finished_run_and_leaves_its_status(tracking, drop, verdict):
    import mlflow

    policy = load_policy({"name": "t", "thresholds": {"accuracy_drop": "<= 0.05"}})
    checks = policy.check({"accuracy_drop": drop})
    with mlflow.start_run() as run:
        pass
    log_verdict(run.info.run_id, _decision(checks))
    after = mlflow.MlflowClient().get_run(run.info.run_id)
    assert after.info.status == "FINISHED"
    assert after.data.tags["metacompress.verdict"] == verdict
    assert after.data.metrics[GATE_PASSED] == (1.0 if verdict == "passed" else 0.0)


def test_a_decision_without_checks_records_nothing(tracking):
    import mlflow

    with mlflow.start_run() as run:
        pass
    log_verdict(run.info.run_id, _decision([]))  # e.g. an unfinished evaluation refused before judging
    after = mlflow.MlflowClient().get_run(run.info.run_id)
    assert "metacompress.verdict" not in after.data.tags and GATE_PASSED not in after.data.metrics


def test_gate_passed_is_in_the_metric_catalogue():
    from mlflow_metacompress.metrics import CATALOGUE

    assert CATALOGUE[GATE_PASSED].greater_is_better is True


@pytest.mark.slow
def test_a_student_failing_its_gate_leaves_the_pipeline_run_finished(tracking, tmp_path):
    import mlflow

    from mlflow_metacompress.pipeline import PipelineConfig, run_pipeline

    policy = tmp_path / "impossible.yaml"
    policy.write_text('name: impossible\nthresholds:\n  accuracy_drop: "<= -1"\n')
    result = run_pipeline(PipelineConfig(profile="tiny", methods="compressor", policy=str(policy), progress=False))
    assert result.errors == {} and [o.verdict for o in result.outcomes] == ["failed"]
    client = mlflow.MlflowClient()
    assert client.get_run(result.run_id).info.status == "FINISHED"
    gate = client.get_run(result.outcomes[0].evaluation_run_id)
    assert (
        gate.info.status == "FINISHED"
        and gate.info.run_name == "gate-metacompress-generated-vulnerability-compressor-v1"
    )
    assert gate.data.tags["metacompress.verdict"] == "failed" and gate.data.metrics[GATE_PASSED] == 0.0
    assert "champion" not in (client.get_registered_model(result.outcomes[0].model_name).aliases or {})
