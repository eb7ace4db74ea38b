"""Gates at the edges: the boundary tolerance (issue 17.2: teacher 0.64 and student 0.59 on
100 rows pass ``accuracy_drop <= 0.05``), ``@upper``/``@lower`` judging the pessimistic
end of a bootstrap interval, and the verdict text. Real static-mode evaluations of 100
rows, then the registry gate (``promote``) on the evaluation run."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from mlflow_metacompress.gates import GatePolicy, PolicyError, load_policy
from mlflow_metacompress.gates.bounds import fmt, fmt_pair, on_threshold
from mlflow_metacompress.gates.promotion import promote


class _Identity(mlflow.pyfunc.PythonModel):
    def predict(self, context, model_input, params=None):
        return model_input


def _confident(pred: np.ndarray) -> np.ndarray:
    p = np.full((len(pred), 2), 0.05)
    p[np.arange(len(pred)), pred] = 0.95
    return p


def _frame(teacher_pred: np.ndarray, student_pred: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    pt, ps = _confident(teacher_pred), _confident(student_pred)
    return pd.DataFrame({"t0": pt[:, 0], "t1": pt[:, 1], "s0": ps[:, 0], "s1": ps[:, 1], "target": y})


def _evaluation_run(df: pd.DataFrame, **extra) -> str:
    config = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], **extra}
    with mlflow.start_run() as run:
        mlflow.models.evaluate(
            model=None,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return run.info.run_id


@pytest.fixture
def registered(tracking):
    client = MlflowClient()
    with mlflow.start_run() as run:
        info = mlflow.pyfunc.log_model(name="m", python_model=_Identity(), pip_requirements=[])
    client.create_registered_model("student")
    client.create_model_version("student", info.model_uri, run_id=run.info.run_id)
    return client


@pytest.mark.slow
def test_issue_17_accuracy_drop_on_the_threshold_passes(registered):
    y = np.ones(100, dtype=int)
    teacher = np.where(np.arange(100) < 64, 1, 0)  # 64 right
    student = np.where(np.arange(100) < 59, 1, 0)  # 59 right
    run_id = _evaluation_run(_frame(teacher, student, y))
    logged = mlflow.get_run(run_id).data.metrics
    assert logged["accuracy_drop"] == 0.64 - 0.59 > 0.05  # 0.050000000000000044: full precision in the store
    decision = promote(
        "student", 1, run_id, {"name": "edge", "thresholds": {"accuracy_drop": "<= 0.05"}}, client=registered
    )
    assert decision.passed and decision.alias_moved
    text = decision.summary()
    assert "accuracy_drop = 0.05 [95% CI " in text and "satisfies <= 0.05" in text
    assert "0.0500000" not in text
    # a drop one row larger still fails, shown with 4 significant digits
    run_id = _evaluation_run(_frame(teacher, np.where(np.arange(100) < 58, 1, 0), y))
    failed = promote(
        "student", 1, run_id, {"name": "edge", "thresholds": {"accuracy_drop": "<= 0.05"}}, client=registered
    )
    assert not failed.passed and "accuracy_drop = 0.06 [95% CI " in failed.summary()
    assert "violates <= 0.05" in failed.summary()


@pytest.mark.slow
def test_upper_bound_fails_a_student_whose_point_estimate_passes(registered):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 100)
    teacher = y.copy()
    student = teacher.copy()
    student[:18] = 1 - student[:18]  # 18% disagreement: passes <= 0.20, its interval does not
    run_id = _evaluation_run(_frame(teacher, student, y))
    logged = mlflow.get_run(run_id).data.metrics
    low, high = logged["mr1_violation_rate_ci_low"], logged["mr1_violation_rate_ci_high"]
    assert logged["mr1_violation_rate"] == pytest.approx(0.18) and low < 0.18 < 0.20 < high
    point = GatePolicy.from_mapping({"name": "point", "thresholds": {"mr1_violation_rate": "<= 0.20"}})
    assert all(c.passed for c in point.check(logged))
    decision = promote(
        "student",
        1,
        run_id,
        {"name": "pessimistic", "thresholds": {"mr1_violation_rate": "<= 0.20 @upper"}},
        client=registered,
    )
    assert not decision.passed and not decision.alias_moved
    (check,) = decision.checks
    assert check.metric == "mr1_violation_rate_ci_high" and check.actual == high and check.bound == "upper"
    assert (check.estimate, check.ci_low, check.ci_high) == (logged["mr1_violation_rate"], low, high)
    assert (
        f"mr1_violation_rate = 0.18 [95% CI {fmt(low)}, {fmt(high)}]: upper end {fmt(high)} violates <= 0.2"
        in decision.summary()
    )
    # the same student passes where the whole interval is inside the bound
    lenient = promote(
        "student",
        1,
        run_id,
        {"name": "wide", "thresholds": {"mr1_violation_rate": "<= 0.40 @upper"}},
        client=registered,
    )
    assert lenient.passed and "upper end" in lenient.summary() and "satisfies <= 0.4" in lenient.summary()


@pytest.mark.slow
def test_lower_bound_and_a_missing_interval(tracking):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 100)
    student = y.copy()
    student[:10] = 1 - student[:10]
    df = _frame(y, student, y)
    policy = GatePolicy.from_mapping(
        {
            "name": "p",
            "thresholds": {
                "student_accuracy": {"threshold": 0.85, "bound": "lower"},
                "mr1_violation_rate": "<= 0.2 @upper",
            },
        }
    )
    logged = mlflow.get_run(_evaluation_run(df)).data.metrics
    acc, upper = policy.check(logged)
    assert acc.metric == "student_accuracy_ci_low" and acc.passed == (logged["student_accuracy_ci_low"] >= 0.85)
    assert "lower end" in acc.message and upper.passed
    off = mlflow.get_run(_evaluation_run(df, bootstrap_samples=0)).data.metrics
    acc, upper = policy.check(off)
    assert not acc.passed and not upper.passed and acc.actual is None
    assert (
        "student_accuracy_ci_low (the lower end of student_accuracy's 95% interval; point estimate 0.9" in acc.message
    )
    assert "did not produce it" in upper.message and "bootstrap_samples > 0" in upper.message


def test_bound_syntax_errors_name_the_metric():
    def parse(metric, rule):
        return GatePolicy.from_mapping({"name": "p", "thresholds": {metric: rule}}).thresholds[0]

    t = parse("mr1_violation_rate/metamorphic", "<= 0.20 @upper")
    assert (t.metric, t.bound, t.checked, str(t)) == (
        "mr1_violation_rate/metamorphic",
        "upper",
        "mr1_violation_rate_ci_high/metamorphic",
        "mr1_violation_rate/metamorphic <= 0.2 @upper",
    )
    assert parse("mr3_hcar", {"threshold": 0.9, "bound": "@lower"}).checked == "mr3_hcar_ci_low"
    assert parse("mr1_violation_rate/*", "0.1 @upper").checked == "mr1_violation_rate_ci_high/*"
    for metric, rule, needle in [
        ("mr1_violation_rate", "<= 0.2 @lower", "optimistic end"),
        ("mr3_hcar", ">= 0.9 @upper", "optimistic end"),
        ("mr1_violation_rate", "<= 0.2 @top", "unknown interval bound '@top'"),
        ("attack_*/excess_drop_pct", "<= 100 @upper", "excess_drop_pct has no bootstrap interval"),
        ("mr3_hcar", {"threshold": 0.9, "bound": "median"}, "unknown interval bound"),
    ]:
        with pytest.raises(PolicyError, match=needle) as err:
            parse(metric, rule)
        assert repr(metric) in str(err.value)
    assert any(t.bound == "upper" for t in load_policy("safety_critical").thresholds)


def test_tolerance_and_display():
    assert on_threshold(0.64 - 0.59, 0.05) and on_threshold(0.9 - 1e-12, 0.9)
    assert not on_threshold(0.0500001, 0.05) and not on_threshold(0.0, 1e-9)
    assert fmt(0.010000000000000009) == "0.01" and fmt(0.345678) == "0.3457" and fmt(285.0) == "285"
    assert fmt_pair(0.64 - 0.59, 0.05) == ("0.05", "0.05")
    assert fmt_pair(0.0500001, 0.05) == ("0.0500001", "0.05")
    policy = GatePolicy.from_mapping({"name": "p", "thresholds": {"mr3_hcar": ">= 0.9", "accuracy_drop": "<= 0"}})
    hcar, drop = policy.check({"mr3_hcar": 0.8999999999999999, "accuracy_drop": 1e-13})
    assert hcar.passed and drop.passed and hcar.actual == 0.8999999999999999  # the value is not rewritten
    (nan,) = GatePolicy.from_mapping({"name": "p", "thresholds": {"accuracy_drop": "<= 0.05"}}).check(
        {"accuracy_drop": float("nan")}
    )
    assert not nan.passed and "is NaN" in nan.message
