"""The reference model (issue 42): ``reference/``, ``excess/`` and ``increment/`` metrics,
checked against NumPy computations from the probabilities and the per-sample artifact."""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.relations import evaluate_relations
from mlflow_metacompress.resampling import resample_counts
from tests.conftest import random_probs, toy_frame

STATIC = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}


def evaluate(model, data, config):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=model,
            data=data,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return run.info.run_id, result.metrics


def static_frame(n=150, seed=3):
    rng = np.random.default_rng(seed)
    pt, ps, pr = (random_probs(rng, n, 2, 3.0) for _ in range(3))
    cols = {f"{m}{j}": p[:, j] for m, p in (("t", pt), ("s", ps), ("r", pr)) for j in range(2)}
    return pd.DataFrame({**cols, "target": rng.integers(0, 2, n)}), pt, ps, pr


def per_sample(run_id):
    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/per_sample.parquet")
    return pd.read_parquet(path)


def percentile_interval(diffs):
    return np.percentile(diffs[np.isfinite(diffs)], [2.5, 97.5])


@pytest.mark.slow
def test_static_reference_excess_and_intervals_match_numpy(tracking):
    df, pt, ps, pr = static_frame()
    n, samples = len(df), 300
    run_id, m = evaluate(None, df, {**STATIC, "reference_prob_columns": ["r0", "r1"], "bootstrap_samples": samples})
    student, ref = evaluate_relations(pt, ps), evaluate_relations(pt, pr)
    for key in ("mr1_violation_rate", "mr2_violation_rate", "mr2_mean_kl", "mr3_violation_rate", "mr4_eca"):
        assert m[f"reference/{key}"] == pytest.approx(ref.metrics[key], abs=1e-12), key
        assert m[f"excess/{key}"] == pytest.approx(student.metrics[key] - ref.metrics[key], abs=1e-12), key
    assert m["excess/mr1_violation_rate"] != 0  # different models: a real difference
    assert not any(k.startswith("increment/") for k in m)  # static mode has no transformed rows
    # the paired bootstrap: the same resample counts as the other intervals, difference inside each replicate
    W = resample_counts(n, samples, 0).astype(np.float64)
    sv = student.per_sample["mr1_violation"].astype(float)
    rv = ref.per_sample["mr1_violation"].astype(float)
    low, high = percentile_interval((W @ sv - W @ rv) / W.sum(1))
    assert m["excess/mr1_violation_rate_ci_low"] == pytest.approx(low, abs=1e-9)
    assert m["excess/mr1_violation_rate_ci_high"] == pytest.approx(high, abs=1e-9)
    assert low < m["excess/mr1_violation_rate"] < high
    s_kl, r_kl = student.per_sample["kl"], ref.per_sample["kl"]
    low, high = percentile_interval((W @ s_kl - W @ r_kl) / W.sum(1))
    assert m["excess/mr2_mean_kl_ci_high"] == pytest.approx(high, abs=1e-9)
    # the per-sample artifact holds the reference's columns beside the student's
    per = per_sample(run_id)
    assert (per["reference_mr1_violation"].to_numpy() == rv.astype(bool)).all()
    assert np.allclose(per["reference_prob_1"], pr[:, 1])
    logged = mlflow.get_run(run_id).data.metrics
    assert logged["excess/mr1_violation_rate_ci_high"] == pytest.approx(m["excess/mr1_violation_rate_ci_high"])


@pytest.mark.slow
def test_reference_equal_to_teacher_or_student_controls(tracking):
    df, pt, ps, _ = static_frame(100, seed=5)
    _, m = evaluate(None, df, {**STATIC, "reference_prob_columns": ["t0", "t1"], "bootstrap_samples": 100})
    for key in ("mr1_violation_rate", "mr2_violation_rate", "mr4_violation_rate", "any_violation_rate"):
        assert m[f"reference/{key}"] == 0.0, key  # the teacher against itself
        assert m[f"excess/{key}"] == pytest.approx(m[key], abs=1e-12), key
    _, m = evaluate(None, df, {**STATIC, "reference_prob_columns": ["s0", "s1"], "bootstrap_samples": 100})
    assert m["mr1_violation_rate"] > 0.2
    for key in ("mr1_violation_rate", "mr2_mean_kl", "mr4_eca", "any_violation_rate"):
        assert m[f"reference/{key}"] == pytest.approx(m[key], abs=1e-12), key
        assert m[f"excess/{key}"] == pytest.approx(0.0, abs=1e-12), key
        assert m[f"excess/{key}_ci_low"] == pytest.approx(0.0, abs=1e-12) == m[f"excess/{key}_ci_high"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "config, match",
    [
        ({**STATIC, "reference_prob_columns": ["r0", "nope"]}, "reference_prob_columns: column 'nope' is missing"),
        ({**STATIC, "reference_prob_columns": ["r0"]}, "reference_prob_columns has 1 columns"),
        ({**STATIC, "reference_prob_columns": ["r0", "bad"]}, "probability column 'bad' must hold numbers"),
        ({**STATIC, "reference": "models:/r/1"}, "name the reference's columns in reference_prob_columns"),
    ],
)
def test_bad_reference_is_named_and_logs_nothing(tracking, config, match):
    df = static_frame(20)[0].assign(bad="x")
    with mlflow.start_run() as run, pytest.raises(MetaCompressInputError, match=match):
        mlflow.models.evaluate(
            model=None, data=df, targets="target", model_type="metacompress", evaluators="metacompress",
            evaluator_config=config,
        )  # fmt: skip
    assert mlflow.get_run(run.info.run_id).data.metrics == {}


def scorer(mod):
    """A callable model of the code: its own hash-like score, so a rewrite moves it."""

    def predict(frame):
        h = frame["func"].map(lambda s: sum(ord(c) * (i % mod + 1) for i, c in enumerate(s)) % 101 / 101).to_numpy()
        h = 0.05 + 0.9 * h
        return np.stack([h, 1 - h], axis=1)

    return predict


@pytest.mark.slow
def test_model_mode_increment_and_excess_from_the_per_sample_table(tracking):
    df = toy_frame(40, seed=2)
    teacher, student, reference = scorer(7), scorer(5), scorer(11)
    transforms = ["rename_variables", "rename_function"]
    config = {"teacher": teacher, "reference": reference, "language": "c", "transforms": transforms}
    run_id, m = evaluate(student, df, {**config, "progress": False, "bootstrap_samples": 200})
    per = per_sample(run_id)
    orig = per[per["variant"] == "original"].set_index("row")
    pooled = per[per["variant"].isin(transforms)]
    assert len(pooled) > 20 and set(pooled["variant"]) == set(transforms)
    # the reference was judged on exactly the student's (transformed) rows
    frame = pd.DataFrame({"func": pooled["code"].to_numpy()})
    flags = reference(frame).argmax(1) != teacher(frame).argmax(1)
    assert (pooled["reference_mr1_violation"].to_numpy() == flags).all()
    assert m["reference/mr1_violation_rate/metamorphic"] == pytest.approx(flags.mean())
    for key, flag in (("mr1_violation_rate", "mr1_violation"), ("mr2_violation_rate", "mr2_violation")):
        s, r = pooled[flag].to_numpy(float), pooled[f"reference_{flag}"].to_numpy(float)
        s0, r0 = (
            orig.loc[pooled["row"], flag].to_numpy(float),
            orig.loc[pooled["row"], f"reference_{flag}"].to_numpy(float),
        )
        assert m[f"excess/{key}/metamorphic"] == pytest.approx(s.mean() - r.mean(), abs=1e-12)
        assert m[f"increment/{key}/metamorphic"] == pytest.approx((s - s0).mean(), abs=1e-12)
        assert m[f"reference/increment/{key}/metamorphic"] == pytest.approx((r - r0).mean(), abs=1e-12)
        assert m[f"excess/increment/{key}/metamorphic"] == pytest.approx((s - s0).mean() - (r - r0).mean(), abs=1e-12)
        one = pooled["variant"] == transforms[0]
        assert m[f"increment/{key}/{transforms[0]}"] == pytest.approx((s - s0)[one].mean(), abs=1e-12)
        # the increment's interval: the paired bootstrap over original samples (a sample's rows move together)
        W = resample_counts(len(df), 200, 0).astype(np.float64)[:, pooled["row"].to_numpy()]
        low, high = percentile_interval((W @ (s - s0)) / W.sum(1))
        assert m[f"increment/{key}_ci_low/metamorphic"] == pytest.approx(low, abs=1e-9)
        assert m[f"increment/{key}_ci_high/metamorphic"] == pytest.approx(high, abs=1e-9)
    assert m["excess/mr1_violation_rate"] == pytest.approx(m["mr1_violation_rate"] - m["reference/mr1_violation_rate"])
    assert not any(k.startswith("increment/") and "/" not in k[len("increment/") :] for k in m)  # none on originals
    html = open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/report.html")).read()
    assert '<section id="reference">' in html
    assert html.count("<th>student</th><th>reference</th><th>excess</th>") == 3  # original, pooled, increment
    for key in ("reference/mr1_violation_rate/metamorphic", "excess/increment/any_violation_rate/metamorphic"):
        assert f'data-metric="{key}" data-value="{m[key]!r}"' in html
    assert 'data-interval="excess/mr1_violation_rate/metamorphic"' in html


@pytest.mark.slow
def test_report_without_a_reference_has_no_reference_section(tracking):
    df = static_frame(40)[0]
    run_id, m = evaluate(None, df, STATIC)
    assert not any(k.startswith(("reference/", "excess/", "increment/")) for k in m)
    html = open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/report.html")).read()
    assert 'id="headline"' in html and 'id="reference"' not in html
