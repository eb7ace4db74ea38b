"""A fifth relation, declared in a temporary module and registered for one test, appears in
the metrics, intervals, slices, report, comparison and gate policies with no other edit
(issue 45); the registration undoes itself. Oracles: SciPy's Jensen–Shannon distance for
the relation's flags, pandas for slice rates, NumPy percentiles over the same resample
counts for the intervals, and repeated rows for the weighted (paired) metrics.
"""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path
from types import ModuleType

import mlflow
import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from mlflow_metacompress import metrics as catalogue_module
from mlflow_metacompress import statistics as st
from mlflow_metacompress.gates.policy import GatePolicy, PolicyError
from mlflow_metacompress.relations import RelationConfig, evaluate_relations, registered, registered_relations
from mlflow_metacompress.relations.pairing import paired_difference, weighted_metrics
from mlflow_metacompress.resampling import resample_counts
from tests.conftest import random_probs

MR5_SOURCE = '''
"""MR5 (a test relation): Jensen–Shannon distance between teacher and student rows."""
import numpy as np

from mlflow_metacompress.relations import Param, Relation, RelationMetric, RelationResult


def _judge(P_T, P_S, config):
    m = (P_T + P_S) / 2
    def kl(p, q):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0).sum(axis=1)
    js = np.sqrt(np.maximum((kl(P_T, m) + kl(P_S, m)) / 2, 0.0))
    viol = js > config.js_threshold
    return RelationResult({"mr5_violation_rate": float(viol.mean())}, {"mr5_js": js, "mr5_violation": viol})


MR5 = Relation(
    key="mr5",
    title="MR5 Jensen-Shannon agreement",
    doc=__doc__,
    metrics=(RelationMetric("mr5_violation_rate", False, "MR5: fraction of rows with JS distance > js_threshold"),),
    judge=_judge,
    statistics=lambda c, config: {"v": np.asarray(c["mr5_violation"], dtype=float)},
    compute=lambda t, config: {"mr5_violation_rate": t["v"] / t["count"]},
    columns=("mr5_violation",),
    params=(Param("js_threshold", 0.2),),
)
'''


def _mr5_module(tmp_path: Path) -> ModuleType:
    path = tmp_path / "mr5_relation.py"
    path.write_text(textwrap.dedent(MR5_SOURCE), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("mr5_relation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _js_flags(pt: np.ndarray, ps: np.ndarray, threshold: float = 0.2) -> np.ndarray:
    return np.array([jensenshannon(a, b) for a, b in zip(pt, ps, strict=True)]) > threshold


def _static(n: int = 120, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pt, ps = random_probs(rng, n, 2, 3.0), random_probs(rng, n, 2, 3.0)
    return pd.DataFrame(
        {
            "t0": pt[:, 0],
            "t1": pt[:, 1],
            "s0": ps[:, 0],
            "s1": ps[:, 1],
            "target": rng.integers(0, 2, n),
            "part": np.where(np.arange(n) % 3 == 0, "a", "b"),
        }
    )


def test_a_fifth_relation_is_judged_counted_in_any_and_undone(tmp_path):
    module = _mr5_module(tmp_path)
    rng = np.random.default_rng(0)
    pt, ps = random_probs(rng, 200, 3, 2.0), random_probs(rng, 200, 3, 2.0)
    before = evaluate_relations(pt, ps)
    with registered(module.MR5):
        assert [r.key for r in registered_relations()] == ["mr1", "mr2", "mr3", "mr4", "mr5"]
        res = evaluate_relations(pt, ps)
        flags = _js_flags(pt, ps)
        assert 0 < flags.sum() < len(flags)
        np.testing.assert_array_equal(res.per_sample["mr5_violation"], flags)
        assert res.metrics["mr5_violation_rate"] == pytest.approx(flags.mean(), abs=1e-12)
        np.testing.assert_array_equal(res.per_sample["any_violation"], before.per_sample["any_violation"] | flags)
        assert RelationConfig().js_threshold == 0.2 and RelationConfig(js_threshold=0.5).js_threshold == 0.5
        tight = evaluate_relations(pt, ps, config=RelationConfig(js_threshold=0.5))
        assert tight.metrics["mr5_violation_rate"] == pytest.approx(_js_flags(pt, ps, 0.5).mean())
        assert catalogue_module.greater_is_better("mr5_violation_rate") is False
        assert catalogue_module.greater_is_better("mr5_violation_rate_ci_high/metamorphic") is False
        assert "mr5_violation_rate" in st.INTERVAL_METRICS
    assert [r.key for r in registered_relations()] == ["mr1", "mr2", "mr3", "mr4"]
    assert "mr5_violation_rate" not in catalogue_module.CATALOGUE
    with pytest.raises(TypeError, match="js_threshold"):
        RelationConfig(js_threshold=0.5)
    assert evaluate_relations(pt, ps).metrics == before.metrics


def test_a_fifth_relation_gets_bootstrap_intervals_from_its_statistics(tmp_path):
    module = _mr5_module(tmp_path)
    df = _static()
    pt, ps = df[["t0", "t1"]].to_numpy(), df[["s0", "s1"]].to_numpy()
    with registered(module.MR5):
        per = pd.DataFrame(evaluate_relations(pt, ps).per_sample)
        per["variant"], per["row"] = "original", np.arange(len(df))
        groups = st.groups_from_table(per)
        out = st.bootstrap_intervals(groups, len(df), samples=300, seed=4)
    counts = resample_counts(len(df), 300, 4).astype(np.float64)
    flags = _js_flags(pt, ps).astype(np.float64)
    reps = counts @ flags / counts.sum(axis=1)
    low, high = np.percentile(reps, [2.5, 97.5])
    assert out["mr5_violation_rate_ci_low"] == pytest.approx(low, rel=1e-6)
    assert out["mr5_violation_rate_ci_high"] == pytest.approx(high, rel=1e-6)
    assert low < flags.mean() < high


@pytest.mark.slow
def test_a_fifth_relation_reaches_metrics_slices_report_and_gates(tmp_path, tracking):
    module = _mr5_module(tmp_path)
    df = _static()
    pt, ps = df[["t0", "t1"]].to_numpy(), df[["s0", "s1"]].to_numpy()
    flags = _js_flags(pt, ps)
    config = {
        "teacher_prob_columns": ["t0", "t1"],
        "student_prob_columns": ["s0", "s1"],
        "slice_columns": ["part"],
        "bootstrap_samples": 200,
    }
    with registered(module.MR5):
        with mlflow.start_run() as run:
            mlflow.models.evaluate(
                data=df, targets="target", model_type="metacompress", evaluators="metacompress", evaluator_config=config
            )
        logged = mlflow.get_run(run.info.run_id).data.metrics
        assert logged["mr5_violation_rate"] == pytest.approx(flags.mean(), abs=1e-12)
        assert logged["mr5_violation_rate_ci_low"] < flags.mean() < logged["mr5_violation_rate_ci_high"]
        by_part = pd.Series(flags).groupby(df["part"]).mean()
        for part in ("a", "b"):
            assert logged[f"mr5_violation_rate/slice:part:{part}"] == pytest.approx(by_part[part], abs=1e-12)
        root = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress"))
        report = (root / "report.html").read_text(encoding="utf-8")
        assert f'data-metric="mr5_violation_rate" data-value="{logged["mr5_violation_rate"]!r}"' in report
        assert "MR5 Jensen-Shannon agreement" in report
        assert 'data-metric="mr5_violation_rate/slice:part:a"' in report
        summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
        assert "mr5_violation_rate" in summary["statistics"]["intervals"]
        from mlflow_metacompress.report.compare import comparison_rows

        assert ("mr5_violation_rate", "original", "MR5 violation") in comparison_rows()
        rate = logged["mr5_violation_rate"]
        strict = GatePolicy.from_mapping({"name": "p", "thresholds": {"mr5_violation_rate": f"<= {rate / 2}"}})
        loose = GatePolicy.from_mapping({"name": "p", "thresholds": {"mr5_violation_rate": "<= 1.0 @upper"}})
        assert [c.passed for c in strict.check(logged)] == [False]
        (check,) = loose.check(logged)
        assert check.passed and check.metric == "mr5_violation_rate_ci_high"
        assert check.actual == logged["mr5_violation_rate_ci_high"]
    with pytest.raises(PolicyError, match="mr5_violation_rate"):
        GatePolicy.from_mapping({"name": "p", "thresholds": {"mr5_violation_rate": "<= 0.1"}})


def test_weighted_and_paired_metrics_equal_repeated_rows():
    """``weighted_metrics`` with integer weights equals judging each row repeated that many
    times; ``paired_difference`` is the per-replicate difference of two row sets' metrics."""
    rng = np.random.default_rng(2)
    n = 60
    pt, ps = random_probs(rng, n, 2, 3.0), random_probs(rng, n, 2, 3.0)
    pt2, ps2 = random_probs(rng, n, 2, 3.0), random_probs(rng, n, 2, 3.0)
    cfg = RelationConfig()
    a = (np.arange(n), evaluate_relations(pt, ps).per_sample)
    b = (np.arange(n), evaluate_relations(pt2, ps2).per_sample)
    counts = resample_counts(n, 3, 9).astype(np.float64)
    weighted = weighted_metrics(*a, n, counts, cfg)
    diff = paired_difference(a, b, n, counts, cfg)
    for r, w in enumerate(counts.astype(int)):
        take = np.repeat(np.arange(n), w)
        left = evaluate_relations(pt[take], ps[take]).metrics
        right = evaluate_relations(pt2[take], ps2[take]).metrics
        for key in ("mr1_violation_rate", "mr2_mean_kl", "mr4_eca", "mr4_violation_rate", "any_violation_rate"):
            assert weighted[key][r] == pytest.approx(left[key], abs=1e-9), key
            assert diff[key][r] == pytest.approx(left[key] - right[key], abs=1e-9), key
        if "mr3_violation_rate" in left and "mr3_violation_rate" in right:
            assert diff["mr3_violation_rate"][r] == pytest.approx(
                left["mr3_violation_rate"] - right["mr3_violation_rate"], abs=1e-9
            )
