"""Bootstrap intervals and McNemar's test (mlflow_metacompress/statistics.py) against
independent oracles: the relations recomputed on explicitly resampled rows, a plain-loop
cluster bootstrap, ``scipy.stats.bootstrap(method="percentile")`` and ``scipy.stats.binomtest``;
then through ``mlflow.models.evaluate`` in static mode and ``run_evaluation`` with transforms."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from mlflow_metacompress import statistics as st
from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.mcnemar import mcnemar_exact
from mlflow_metacompress.relations import RelationConfig, evaluate_relations
from tests.conftest import random_probs

CFG = RelationConfig()


def synthetic(n: int = 200, variants: int = 3, seed: int = 0):
    """Original probabilities plus up to ``variants`` rewrites per sample whose outcome is
    strongly tied to the sample (a student that disagrees on a sample tends to disagree on
    all its rewrites): the case where resampling rows instead of samples goes wrong."""
    rng = np.random.default_rng(seed)
    pt = random_probs(rng, n, 2, 4.0)
    bad = rng.random(n) < 0.3  # samples the student gets wrong
    ps = np.where(bad[:, None], pt[:, ::-1], 0.9 * pt + 0.1 * random_probs(rng, n, 2, 4.0))
    y = rng.integers(0, 2, n)
    rows = np.concatenate([np.flatnonzero(rng.random(n) < 0.8) for _ in range(variants)])
    noise_t = random_probs(rng, len(rows), 2, 4.0)
    vt = 0.85 * pt[rows] + 0.15 * noise_t
    vs = np.where(bad[rows, None], vt[:, ::-1], 0.85 * vt + 0.15 * random_probs(rng, len(rows), 2, 4.0))
    return pt, ps, y, rows, vt, vs


def table_of(pt, ps, y, rows, vt, vs) -> pd.DataFrame:
    """The engine's per-sample layout: original rows, then the rewrites (judged per variant
    as the engine does, here one variant 'v')."""
    n = len(pt)
    orig = evaluate_relations(pt, ps, y).per_sample
    var = evaluate_relations(vt, vs, y[rows]).per_sample
    return pd.concat(
        [
            pd.DataFrame({"variant": "original", "row": np.arange(n), "label": y, **orig}),
            pd.DataFrame({"variant": "v", "row": rows, "label": y[rows], **var}),
        ],
        ignore_index=True,
    )


def pooled_oracle(pt, ps, y, rows, vt, vs, idx: np.ndarray) -> dict[str, float]:
    """The relations recomputed on one resample ``idx`` of original samples: each drawn
    sample brings its original row and all its rewrites."""
    take = np.concatenate([np.flatnonzero(rows == i) for i in idx])
    orig = evaluate_relations(pt[idx], ps[idx], y[idx]).metrics
    pooled = evaluate_relations(vt[take], vs[take], y[rows[take]]).metrics
    pooled["teacher_flip_rate"] = float(np.mean(vt[take].argmax(1) != pt[rows[take]].argmax(1)))
    pooled["student_flip_rate"] = float(np.mean(vs[take].argmax(1) != ps[rows[take]].argmax(1)))
    return {**orig, **{f"{k}/metamorphic": v for k, v in pooled.items()}}


def test_each_replicate_equals_the_relations_on_the_resampled_rows():
    data = synthetic(120)
    groups = st.groups_from_table(table_of(*data), {"metamorphic": ["v"]})
    counts = st.resample_counts(120, 4, seed=7)
    reps = st.replicate_metrics(groups, 120, counts, CFG)
    assert {f"{m}{s}" for m in st.INTERVAL_METRICS for s in ("", "/metamorphic")} - set(reps) == {
        "teacher_flip_rate",
        "student_flip_rate",
    }  # flips only exist for rewrites
    for r in range(4):
        assert counts[r].sum() == 120
        expected = pooled_oracle(*data, np.repeat(np.arange(120), counts[r].astype(int)))
        for key, values in reps.items():
            assert values[r] == pytest.approx(expected[key], abs=1e-6), (r, key)  # float32 sums
    point = st.point_estimates(groups, 120, CFG)
    expected = pooled_oracle(*data, np.arange(120))
    assert point == pytest.approx({k: expected[k] for k in point}, abs=1e-12)


def test_original_intervals_agree_with_scipy_percentile_bootstrap():
    rng = np.random.default_rng(3)
    n = 300
    pt, ps, y = random_probs(rng, n, 2, 3.0), random_probs(rng, n, 2, 3.0), rng.integers(0, 2, n)
    rel = evaluate_relations(pt, ps, y)
    table = pd.DataFrame({"variant": "original", "row": np.arange(n), "label": y, **rel.per_sample})
    ours = st.bootstrap_intervals(st.groups_from_table(table), n, 4000, seed=1)
    per_sample = {
        "mr1_violation_rate": rel.per_sample["mr1_violation"].astype(float),
        "mr2_mean_kl": rel.per_sample["kl"],
        "any_violation_rate": rel.per_sample["any_violation"].astype(float),
        "student_accuracy": (rel.per_sample["student_pred"] == y).astype(float),
    }
    for key, values in per_sample.items():
        ref = sps.bootstrap(
            (values,),
            np.mean,
            method="percentile",
            n_resamples=4000,
            vectorized=True,
            random_state=np.random.default_rng(2),
        ).confidence_interval
        half = (ref.high - ref.low) / 2
        assert half > 0.02  # a real interval, so the tolerance below is meaningful
        # Monte Carlo error of a 2.5% quantile from 4000 replicates is ~3% of the half-width
        assert ours[f"{key}_ci_low"] == pytest.approx(ref.low, abs=0.15 * half), key
        assert ours[f"{key}_ci_high"] == pytest.approx(ref.high, abs=0.15 * half), key


@pytest.mark.slow
def test_metamorphic_intervals_resample_whole_samples():
    data = synthetic(200)
    pt, ps, y, rows, vt, vs = data
    ours = st.bootstrap_intervals(st.groups_from_table(table_of(*data), {"metamorphic": ["v"]}), 200, 2000, seed=4)
    rng = np.random.default_rng(5)
    loop = [pooled_oracle(*data, rng.integers(0, 200, 200)) for _ in range(600)]  # plain-loop cluster bootstrap
    for key in (
        "mr1_violation_rate/metamorphic",
        "any_violation_rate/metamorphic",
        "mr2_mean_kl/metamorphic",
        "mr4_eca/metamorphic",
        "student_flip_rate/metamorphic",
        "accuracy_drop/metamorphic",
    ):
        low, high = np.percentile([r[key] for r in loop], [2.5, 97.5])
        half = (high - low) / 2
        assert ours[st.interval_key(key, "low")] == pytest.approx(low, abs=0.25 * half), key
        assert ours[st.interval_key(key, "high")] == pytest.approx(high, abs=0.25 * half), key
    # resampling rewrites one by one would ignore that they share a sample: a narrower interval
    flags = evaluate_relations(vt, vs).per_sample["mr1_violation"].astype(float)
    naive = np.percentile(flags[rng.integers(0, len(flags), (2000, len(flags)))].mean(1), [2.5, 97.5])
    ours_width = ours["mr1_violation_rate_ci_high/metamorphic"] - ours["mr1_violation_rate_ci_low/metamorphic"]
    assert naive[1] - naive[0] < 0.75 * ours_width


@pytest.mark.parametrize("b,c", [(0, 0), (5, 5), (0, 7), (30, 12), (1, 40), (2410, 2519), (3, 4000)])
def test_pvalue_is_the_exact_binomial_test_on_discordant_pairs(b, c):
    teacher = np.array([True] * b + [False] * c + [True] * 11 + [False] * 4)
    student = np.array([False] * b + [True] * c + [True] * 11 + [False] * 4)
    p, bb, cc = mcnemar_exact(teacher, student)
    assert (bb, cc) == (b, c)
    expected = sps.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert p == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_interval_keys_put_the_variant_suffix_last():
    assert st.interval_key("mr1_violation_rate/metamorphic", "high") == "mr1_violation_rate_ci_high/metamorphic"
    assert st.interval_key("accuracy_drop", "low") == "accuracy_drop_ci_low"
    assert st.point_key("mr1_violation_rate_ci_high/metamorphic") == "mr1_violation_rate/metamorphic"
    with pytest.raises(ValueError, match="'low' or 'high'"):
        st.interval_key("x", "mid")


def _static(n: int = 150, seed: int = 3):
    rng = np.random.default_rng(seed)
    pt, ps = random_probs(rng, n, 2, 3.0), random_probs(rng, n, 2, 3.0)
    return pd.DataFrame(
        {"t0": pt[:, 0], "t1": pt[:, 1], "s0": ps[:, 0], "s1": ps[:, 1], "target": rng.integers(0, 2, n)}
    )


def _evaluate(df: pd.DataFrame, **extra):
    config = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], **extra}
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=None,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config=config,
        )
    return run.info.run_id, result


@pytest.mark.slow
def test_static_evaluation_logs_intervals_and_pvalue(tracking):
    df = _static()
    run_id, result = _evaluate(df, bootstrap_samples=500, seed=11)
    logged = mlflow.get_run(run_id).data.metrics
    for metric in (
        "mr1_violation_rate",
        "mr2_mean_kl",
        "any_violation_rate",
        "mr4_eca",
        "accuracy_drop",
        "teacher_accuracy",
    ):
        low, high = logged[f"{metric}_ci_low"], logged[f"{metric}_ci_high"]
        assert low < high and low <= logged[metric] <= high, metric
    pt, ps, y = df[["t0", "t1"]].to_numpy(), df[["s0", "s1"]].to_numpy(), df["target"].to_numpy()
    t_ok, s_ok = pt.argmax(1) == y, ps.argmax(1) == y
    b, c = int((t_ok & ~s_ok).sum()), int((~t_ok & s_ok).sum())
    assert logged["accuracy_drop_pvalue"] == pytest.approx(sps.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)
    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="metacompress/summary.json")
    summary = json.loads(open(path).read())
    assert summary["metrics"]["mr1_violation_rate_ci_high"] == logged["mr1_violation_rate_ci_high"]
    section = summary["statistics"]
    assert section["bootstrap_samples"] == 500 and section["seed"] == 11 and section["level"] == 0.95
    assert section["intervals"]["mr1_violation_rate"] == {
        "estimate": logged["mr1_violation_rate"],
        "low": logged["mr1_violation_rate_ci_low"],
        "high": logged["mr1_violation_rate_ci_high"],
    }
    assert section["accuracy_drop_pvalue"]["teacher_right_student_wrong"] == b
    assert summary["config"]["bootstrap_samples"] == 500
    # the seed fixes the intervals; 0 replicates turns them off (the p-value stays)
    _, again = _evaluate(df, bootstrap_samples=500, seed=11)
    assert again.metrics == result.metrics
    _, other = _evaluate(df, bootstrap_samples=500, seed=12)
    assert other.metrics["mr2_mean_kl_ci_high"] != result.metrics["mr2_mean_kl_ci_high"]
    _, off = _evaluate(df, bootstrap_samples=0)
    assert not [k for k in off.metrics if "_ci_" in k] and "accuracy_drop_pvalue" in off.metrics


@pytest.mark.parametrize("value", [-1, 1.5, True, "1000", 100_001])
def test_bootstrap_samples_is_checked(value):
    from mlflow_metacompress.evaluation.config import parse_config

    df = _static(5)
    with pytest.raises(MetaCompressInputError, match="bootstrap_samples"):
        parse_config(
            {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"], "bootstrap_samples": value},
            df,
            model_given=False,
        )


def test_transformed_evaluation_gets_metamorphic_intervals():
    from tests.support.evaluation import evaluate_engine as evaluate
    from tests.support.evaluation import labelled

    df = labelled(40, seed=2)
    outcome, cfg = evaluate(
        df,
        {"language": "c", "transforms": ["rename_variables", "for_to_while"], "bootstrap_samples": 300},
        df["target"].to_numpy(),
    )
    m = outcome.metrics
    for metric in (
        "mr1_violation_rate",
        "any_violation_rate",
        "mr4_violation_rate",
        "teacher_flip_rate",
        "accuracy_drop",
    ):
        assert f"{metric}_ci_low/metamorphic" in m and f"{metric}_ci_high/metamorphic" in m, metric
        assert m[f"{metric}_ci_low/metamorphic"] <= m[f"{metric}_ci_high/metamorphic"]
    assert not [k for k in m if "_ci_" in k and ("/rename_variables" in k or "/for_to_while" in k)]
    # the per-sample table alone reproduces the pooled point estimates the engine logged
    groups = st.groups_from_table(outcome.per_sample, {"metamorphic": ["rename_variables", "for_to_while"]})
    point = st.point_estimates(groups, len(df), cfg.relation_config)
    for key, value in point.items():
        if key in m:
            assert value == pytest.approx(m[key], abs=1e-12), key
