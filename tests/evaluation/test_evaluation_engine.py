"""``run_evaluation`` on its own, with plain-callable models: every metric and per-sample
column checked against the relations computed independently on the models' outputs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.predictors import Predictor
from mlflow_metacompress.evaluation.artifacts import write_artifacts
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.loop import run_evaluation
from mlflow_metacompress.relations import RelationConfig, evaluate_relations
from mlflow_metacompress.transforms import TransformStatus, transform
from tests.conftest import random_probs, toy_frame
from tests.support.evaluation import evaluate_engine as evaluate
from tests.support.evaluation import labelled, student_fn, teacher_fn


def test_original_metrics_and_per_sample_columns_follow_the_relations():
    df = labelled()
    y = df["target"].to_numpy()
    outcome, _ = evaluate(df, {"transforms": [], "kl_threshold": 0.05}, y)
    expected = evaluate_relations(teacher_fn(df), student_fn(df), y, RelationConfig(kl_threshold=0.05))
    assert {k: outcome.metrics[k] for k in expected.metrics} == pytest.approx(expected.metrics, abs=1e-12)
    assert set(outcome.metrics) - set(expected.metrics) == {"accuracy_drop_pvalue"} | {  # tests/core/test_statistics.py
        k for k in outcome.metrics if k.endswith(("_ci_low", "_ci_high"))
    }
    per = outcome.per_sample
    probs = [f"teacher_prob_{k}" for k in range(3)] + [f"student_prob_{k}" for k in range(3)]
    assert list(per.columns) == ["variant", "row", "label", *probs, *expected.per_sample, "code"]
    assert (per["variant"] == "original").all() and per["row"].tolist() == list(range(30))
    for key, values in expected.per_sample.items():
        np.testing.assert_allclose(
            per[key].to_numpy().astype(float), np.asarray(values, dtype=float), atol=1e-12, err_msg=key
        )
    np.testing.assert_allclose(per[[f"student_prob_{k}" for k in range(3)]].to_numpy(), student_fn(df), atol=1e-12)
    assert per["code"].tolist() == df["func"].tolist() and outcome.classes == ["0", "1", "2"]
    notes = {k: v for k, v in outcome.notes.items() if k != "statistics"}  # tests/core/test_statistics.py
    from mlflow_metacompress.threads import resolve

    assert notes == {"teacher_rows_run": 30, "student_rows_run": 30, "threads": resolve()}
    assert outcome.extra_tables == {}


def test_transformed_and_pooled_metrics_match_an_independent_recomputation():
    df = labelled(24, seed=6)
    y = df["target"].to_numpy()
    names = ["rename_variables", "for_to_while"]
    outcome, _ = evaluate(df, {"language": "c", "transforms": names}, y)
    codes = df["func"].tolist()
    pooled_rows, pooled_codes = [], []
    for name in names:
        res = [transform(c, name, "c", seed=0) for c in codes]
        changed = [i for i, r in enumerate(res) if r.status == TransformStatus.CHANGED]
        assert outcome.metrics[f"transform_applicable_rate/{name}"] == pytest.approx(len(changed) / 24)
        if not changed:
            assert f"mr1_violation_rate/{name}" not in outcome.metrics
            continue
        new = pd.DataFrame({"func": [res[i].code for i in changed]})
        expected = evaluate_relations(teacher_fn(new), student_fn(new), y[changed]).metrics
        for key, value in expected.items():
            assert outcome.metrics[f"{key}/{name}"] == pytest.approx(value, abs=1e-12), (name, key)
        before = df.iloc[changed]
        flips = np.mean(teacher_fn(new).argmax(1) != teacher_fn(before).argmax(1))
        assert outcome.metrics[f"teacher_flip_rate/{name}"] == pytest.approx(flips)
        rows = outcome.per_sample[outcome.per_sample["variant"] == name]
        assert rows["row"].tolist() == changed and rows["code"].tolist() == new["func"].tolist()
        pooled_rows += changed
        pooled_codes += new["func"].tolist()
    assert pooled_rows, "no transformation changed any sample: the test data is wrong"
    pooled = pd.DataFrame({"func": pooled_codes})
    expected = evaluate_relations(teacher_fn(pooled), student_fn(pooled), y[pooled_rows]).metrics
    for key, value in expected.items():
        assert outcome.metrics[f"{key}/metamorphic"] == pytest.approx(value, abs=1e-12), key
    assert "metamorphic" not in set(outcome.per_sample["variant"])  # the pool is judged, its rows are the variants'
    assert outcome.notes["language"] == "c" and outcome.metrics["transform_parse_failures"] == 0.0


def test_student_columns_are_aligned_to_the_teacher_classes():
    df = toy_frame(10)

    def named_teacher(frame):
        return pd.DataFrame(
            teacher_fn(frame)[:, :2] / teacher_fn(frame)[:, :2].sum(1, keepdims=True), columns=["safe", "vuln"]
        )

    def named_student(frame):  # same classes, other column order
        return named_teacher(frame)[["vuln", "safe"]]

    cfg = parse_config({"teacher": named_teacher, "transforms": []}, df, model_given=True)
    y = np.where(df["target"].to_numpy() == 1, "vuln", "safe")
    outcome = run_evaluation(
        df,
        y,
        cfg,
        Predictor("teacher", named_teacher, cache_dir=None, progress=False),
        Predictor("student", named_student, cache_dir=None, progress=False),
    )
    assert outcome.classes == ["safe", "vuln"]
    assert outcome.metrics["mr1_violation_rate"] == 0.0 and outcome.metrics["mr2_mean_kl"] == pytest.approx(
        0.0, abs=1e-12
    )
    per = outcome.per_sample
    np.testing.assert_allclose(per["student_prob_vuln"], per["teacher_prob_vuln"])
    assert per["label"].tolist() == df["target"].tolist()  # "vuln" is class index 1 in the teacher's order


def test_static_mode_judges_the_given_columns():
    rng = np.random.default_rng(1)
    t, s = random_probs(rng, 15, 2), random_probs(rng, 15, 2)
    df = pd.DataFrame({"t0": t[:, 0], "t1": t[:, 1], "s0": s[:, 0], "s1": s[:, 1]})
    cfg = parse_config(
        {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}, df, model_given=False
    )
    outcome = run_evaluation(df, None, cfg, None, None)
    expected = evaluate_relations(t, s).metrics
    assert {k: outcome.metrics[k] for k in expected} == pytest.approx(expected, abs=1e-12)
    assert all(k.endswith(("_ci_low", "_ci_high")) for k in set(outcome.metrics) - set(expected))
    assert (
        "code" not in outcome.per_sample and "label" not in outcome.per_sample and set(outcome.notes) == {"statistics"}
    )


@pytest.mark.slow
def test_outcome_is_frozen_and_summary_records_detected_values(tmp_path):
    df = labelled(12)
    outcome, cfg = evaluate(df, {"transforms": ["rename_variables"]}, df["target"].to_numpy())
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.metrics = {}  # type: ignore[misc]  # frozen: the test expects the refusal
    written = write_artifacts(outcome, cfg, tmp_path)
    assert {
        "summary.json",
        "per_sample.parquet",
        "worst_discrepancies.csv",
        "reliability.png",
        "kl_histogram.png",
    } <= set(written)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["language"] is None and summary["config"]["transforms"] == ["rename_variables"]
    assert summary["config_sources"]["language"] == "detected" and summary["config_sources"]["transforms"] == "given"
    assert summary["detected"] == {"language": "c", "code_columns": ["func"], "transform_columns": ["func"]}
    assert (
        summary["language"] == "c" and summary["metrics"]["mr1_violation_rate"] == outcome.metrics["mr1_violation_rate"]
    )
    per = pd.read_parquet(tmp_path / "per_sample.parquet")
    assert list(per.columns) == list(outcome.per_sample.columns) and len(per) == len(outcome.per_sample)
