"""promote / gate_version against a real sqlite model registry with dummy pyfunc models."""

from __future__ import annotations

import time

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.models.evaluation import EvaluationResult

from mlflow_metacompress import gates
from mlflow_metacompress.gates import PromotionRefusedError, gate_version, promote
from tests.support.registry import alias_version, evaluation_run, register_versions, version_tags

GOOD = {
    "accuracy_drop": 0.01,
    "mr1_violation_rate": 0.02,
    "mr1_violation_rate/metamorphic": 0.05,
    "mr3_violation_rate/metamorphic": 0.04,
    "mr4_eca": 0.01,
    "attack_alert_yang_2022/excess_drop_pct": 40.0,
}


class _Identity(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("registry")
    uri = f"sqlite:///{root}/mlflow.db"
    previous = mlflow.get_tracking_uri()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        with mlflow.start_run() as run:
            info = mlflow.pyfunc.log_model(name="m", python_model=_Identity(), pip_requirements=[])
        yield {"client": MlflowClient(uri, uri), "source": info.model_uri, "run_id": run.info.run_id}
    mlflow.set_tracking_uri(previous)
    mlflow.set_registry_uri(previous)


def _model(registry, versions=2):
    client = registry["client"]
    return client, register_versions(client, registry["source"], "student", versions, run_id=registry["run_id"])


def _eval_run(client, metrics, end_time, summary=True, finish=True):
    exp = client.get_experiment_by_name("Default").experiment_id
    return evaluation_run(client, exp, metrics, end_time, summary, finish)


_tags, _alias = version_tags, alias_version


@pytest.mark.slow
def test_pass_tags_then_moves_alias(registry):
    client, name = _model(registry)
    decision = promote(name, 1, EvaluationResult(dict(GOOD), {}, run_id="r-good"), "standard", client=client)
    assert decision.passed and decision.alias_moved and not decision.failed_checks
    assert _alias(client, name) == "1"
    tags = _tags(client, name, 1)
    assert tags[gates.TAG_VERDICT] == "passed" and tags[gates.TAG_FAILED] == "none"
    assert tags[gates.TAG_RUN] == "r-good" and tags[gates.TAG_POLICY] == "standard"
    assert int(tags[gates.TAG_VERDICT_TIME]) <= int(time.time() * 1000)


def test_fail_records_actual_vs_threshold_and_keeps_alias(registry):
    client, name = _model(registry)
    promote(name, 1, EvaluationResult(dict(GOOD), {}), "standard", client=client)
    bad = dict(GOOD, accuracy_drop=0.05, **{"attack_alert_yang_2022/excess_drop_pct": 285.0})
    decision = promote(name, 2, EvaluationResult(bad, {}), "standard", client=client)
    assert not decision.passed and not decision.alias_moved
    failed = {c.metric: (c.actual, c.threshold) for c in decision.failed_checks}
    assert failed == {"accuracy_drop": (0.05, 0.02), "attack_alert_yang_2022/excess_drop_pct": (285.0, 100.0)}
    assert _alias(client, name) == "1"
    tags = _tags(client, name, 2)
    assert tags[gates.TAG_VERDICT] == "failed"
    assert "accuracy_drop = 0.05" in tags[gates.TAG_FAILED] and "285" in tags[gates.TAG_FAILED]


def test_missing_metric_fails_never_silently_passes(registry):
    client, name = _model(registry, versions=1)
    partial = {k: v for k, v in GOOD.items() if not k.startswith("attack_")}
    decision = promote(name, 1, EvaluationResult(partial, {}), "standard", client=client)
    assert not decision.passed and _alias(client, name) is None
    assert [c.metric for c in decision.failed_checks] == ["attack_*/excess_drop_pct"]
    assert "did not produce it" in _tags(client, name, 1)[gates.TAG_FAILED]


def test_refuses_older_evaluation_over_fresher_holder_unless_forced(registry):
    client, name = _model(registry)
    older = _eval_run(client, GOOD, end_time=1_700_000_000_000)
    newer = _eval_run(client, GOOD, end_time=1_700_000_500_000)
    assert promote(name, 1, newer, "standard", client=client).alias_moved
    assert _tags(client, name, 1)[gates.TAG_EVALUATED_AT] == "1700000500000"
    with pytest.raises(PromotionRefusedError, match="more recent evaluation") as err:
        promote(name, 2, older, "standard", client=client)
    assert err.value.decision.passed and not err.value.decision.alias_moved
    assert _alias(client, name) == "1"
    assert _tags(client, name, 2)[gates.TAG_VERDICT] == "passed"  # tags written even when refused
    forced = promote(name, 2, older, "standard", force=True, client=client)
    assert forced.alias_moved and forced.previous_holder == "1" and _alias(client, name) == "2"


def test_fresher_evaluation_replaces_holder_without_force(registry):
    client, name = _model(registry)
    promote(name, 1, _eval_run(client, GOOD, end_time=1_700_000_000_000), "standard", client=client)
    decision = promote(name, 2, _eval_run(client, GOOD, end_time=1_700_000_900_000), "standard", client=client)
    assert decision.alias_moved and decision.previous_holder == "1" and _alias(client, name) == "2"


def test_run_id_evaluation_reads_metrics_and_unknown_run_is_clear(registry):
    client, name = _model(registry, versions=1)
    run_id = _eval_run(client, dict(GOOD, mr1_violation_rate=0.5), end_time=1_700_000_000_000)
    decision = promote(name, 1, run_id, "standard", client=client)
    assert [c.metric for c in decision.failed_checks] == ["mr1_violation_rate"]
    assert decision.evaluation_run_id == run_id and _tags(client, name, 1)[gates.TAG_RUN] == run_id
    with pytest.raises(ValueError, match="evaluation run 'nope' not found"):
        promote(name, 1, "nope", "standard", client=client)


def test_failure_between_tags_and_alias_leaves_old_alias(registry, monkeypatch):
    client, name = _model(registry)
    promote(name, 1, EvaluationResult(dict(GOOD), {}), "standard", client=client)

    def boom(*args, **kwargs):
        raise RuntimeError("registry went away")

    monkeypatch.setattr(client, "set_registered_model_alias", boom)
    with pytest.raises(RuntimeError, match="registry went away"):
        promote(name, 2, EvaluationResult(dict(GOOD), {}), "standard", client=client)
    assert _alias(client, name) == "1"
    assert _tags(client, name, 2)[gates.TAG_VERDICT] == "passed"


def test_failure_while_tagging_never_reaches_alias(registry, monkeypatch):
    client, name = _model(registry)
    calls = []
    monkeypatch.setattr(client, "set_model_version_tag", lambda *a, **k: (_ for _ in ()).throw(OSError("disk")))
    monkeypatch.setattr(client, "set_registered_model_alias", lambda *a, **k: calls.append(a))
    with pytest.raises(OSError):
        promote(name, 2, EvaluationResult(dict(GOOD), {}), "standard", client=client)
    assert calls == []


def test_stage_transition_and_unknown_version(registry):
    client, name = _model(registry, versions=1)
    decision = promote(name, 1, EvaluationResult(dict(GOOD), {}), "lenient", stage="Production", client=client)
    assert decision.stage == "Production"
    assert client.get_model_version(name, "1").current_stage == "Production"
    with pytest.raises(mlflow.exceptions.MlflowException):
        promote(name, 7, EvaluationResult(dict(GOOD), {}), "lenient", client=client)


class _FakeEvaluator:
    """Stands in for the metacompress evaluator: records its call, returns fixed metrics."""

    calls: list[dict] = []

    def can_evaluate(self, *, model_type, evaluator_config, **kwargs):
        return model_type == "metacompress"

    def evaluate(self, *, model_type, dataset, run_id, evaluator_config, model=None, **kwargs):
        type(self).calls.append({"config": dict(evaluator_config), "n": len(dataset.features_data), "run_id": run_id})
        return EvaluationResult(dict(GOOD), {}, run_id=run_id)


@pytest.mark.slow
def test_gate_version_evaluates_against_tagged_teacher(registry, monkeypatch, tmp_path):
    from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

    monkeypatch.setitem(_model_evaluation_registry._registry, "metacompress", _FakeEvaluator)
    _FakeEvaluator.calls.clear()
    client, name = _model(registry, versions=1)
    data = tmp_path / "eval.jsonl"
    pd.DataFrame({"func": ["int f(){return 0;}", "int g(){return 1;}"], "target": [0, 1]}).to_json(
        data, orient="records", lines=True
    )
    with pytest.raises(ValueError, match="no 'metacompress.teacher' tag"):
        gate_version(name, 1, data, "standard", client=client)
    client.set_model_version_tag(name, "1", gates.TAG_TEACHER, "models:/vuln-teacher/1")
    with pytest.raises(ValueError, match=r"teacher model URI 'models:/vuln-teacher/1' does not resolve"):
        gate_version(name, 1, data, "standard", evaluator_config={"code_columns": ["func"]}, client=client)
    assert not _FakeEvaluator.calls and _alias(client, name) is None  # nothing evaluated, no alias moved
    teacher = register_versions(client, registry["source"], "vuln-teacher", 1, run_id=registry["run_id"])
    client.set_model_version_tag(name, "1", gates.TAG_TEACHER, f"models:/{teacher}/1")
    decision = gate_version(name, 1, data, "standard", evaluator_config={"code_columns": ["func"]}, client=client)
    assert decision.passed and _alias(client, name) == "1"
    (call,) = _FakeEvaluator.calls
    assert call["config"] == {"teacher": f"models:/{teacher}/1", "code_columns": ["func"]} and call["n"] == 2
    assert decision.evaluation_run_id == call["run_id"]
    assert client.get_run(call["run_id"]).data.tags[gates.TAG_POLICY] == "standard"
    with pytest.raises(KeyError, match="targets column 'label'"):
        gate_version(name, 1, data, "standard", targets="label", client=client)
