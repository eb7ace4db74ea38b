"""``extra_metrics`` and ``custom_artifacts`` run on the student's predictions (issue 45), as
MLflow's default evaluator runs them; oracles: scikit-learn's accuracy, F1 and confusion matrix."""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.metrics.base import MetricValue
from mlflow.models import make_metric
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from tests.conftest import random_probs


def _static(n: int = 80, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pt, ps = random_probs(rng, n, 2, 2.0), random_probs(rng, n, 2, 2.0)
    return pd.DataFrame(
        {
            "t0": pt[:, 0],
            "t1": pt[:, 1],
            "s0": ps[:, 0],
            "s1": ps[:, 1],
            "target": rng.integers(0, 2, n),
            "weight": rng.uniform(size=n),
        }
    )


def _evaluate(df: pd.DataFrame, **kwargs):
    config = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "bootstrap_samples": 0}
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
            **kwargs,
        )
    return run.info.run_id, result


@pytest.mark.slow
def test_extra_metrics_are_computed_on_the_students_predictions(tracking):
    df = _static()
    y, pred = df["target"].to_numpy(), df[["s0", "s1"]].to_numpy().argmax(1)

    def accuracy(predictions, targets, metrics):
        return float((predictions == targets).mean())

    def f1(predictions, targets):
        names = sorted(set(targets) | set(predictions))
        return MetricValue(scores=None, aggregate_results={"f1": f1_score(targets, predictions, pos_label=names[-1])})

    def twice_any(predictions, metrics):
        return 2 * metrics["any_violation_rate"].aggregate_results["any_violation_rate"]

    def weighted_hits(predictions, targets, weight):
        return float(((predictions == targets) * weight).sum())

    extra = [
        make_metric(eval_fn=accuracy, greater_is_better=True, name="sk_accuracy"),
        make_metric(eval_fn=f1, greater_is_better=True, name="sk"),
        make_metric(eval_fn=twice_any, greater_is_better=False, name="twice_any"),
        make_metric(eval_fn=weighted_hits, greater_is_better=True, name="weighted_hits"),
    ]
    run_id, result = _evaluate(df, extra_metrics=extra)
    logged = mlflow.get_run(run_id).data.metrics
    assert logged["sk_accuracy"] == pytest.approx(accuracy_score(y, pred), abs=1e-12)
    assert logged["sk_accuracy"] == pytest.approx(logged["student_accuracy"], abs=1e-12)
    assert logged["sk/f1"] == pytest.approx(f1_score(y, pred), abs=1e-12)
    assert logged["twice_any"] == pytest.approx(2 * logged["any_violation_rate"], abs=1e-12)
    assert logged["weighted_hits"] == pytest.approx(float(((pred == y) * df["weight"]).sum()), abs=1e-9)
    assert result.metrics["sk_accuracy"] == logged["sk_accuracy"]


@pytest.mark.slow
def test_custom_artifacts_are_logged_and_returned(tracking):
    df = _static()
    y, pred = df["target"].to_numpy(), df[["s0", "s1"]].to_numpy().argmax(1)

    def confusion(eval_df, metrics, artifacts_dir):
        names = sorted(set(eval_df["target"]) | set(eval_df["prediction"]))
        table = pd.DataFrame(confusion_matrix(eval_df["target"], eval_df["prediction"], labels=names))
        path = Path(artifacts_dir) / "note.txt"
        path.write_text(f"student accuracy {metrics['student_accuracy']}", encoding="utf-8")
        return {"confusion": table, "headline": {"any": metrics["any_violation_rate"]}, "note": str(path)}

    run_id, result = _evaluate(df, custom_artifacts=[confusion])
    logged = mlflow.get_run(run_id).data.metrics
    root = Path(mlflow.artifacts.download_artifacts(run_id=run_id))
    table = pd.read_json(root / "confusion.json", orient="split")
    np.testing.assert_array_equal(table.to_numpy(), confusion_matrix(y, pred, labels=[0, 1]))
    assert json.loads((root / "headline.json").read_text()) == {"any": logged["any_violation_rate"]}
    assert (root / "note.txt").read_text() == f"student accuracy {logged['student_accuracy']}"
    assert {"confusion", "headline", "note"} <= set(result.artifacts)
    assert result.artifacts["confusion"].uri.endswith("/confusion.json")


@pytest.mark.slow
def test_an_extra_metric_the_evaluator_cannot_feed_is_refused_by_name(tracking):
    df = _static()

    def needs_inputs(predictions, inputs):
        return 0.0

    with pytest.raises(MetaCompressInputError, match="'needs_inputs'.*'inputs'"):
        _evaluate(df, extra_metrics=[make_metric(eval_fn=needs_inputs, greater_is_better=True, name="needs_inputs")])
    with pytest.raises(MetaCompressInputError, match="custom_artifacts\\[0\\]"):
        _evaluate(df, custom_artifacts=[lambda eval_df, metrics, folder: ["not", "a", "dict"]])
