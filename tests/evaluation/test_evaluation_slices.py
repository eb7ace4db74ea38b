"""``slice_columns``: relation rates per value of a data column, checked against a pandas
groupby over the relations' own per-sample flags and against the relations recomputed on
each slice; metric names checked with MLflow's own validator; the plugin run end to end."""

from __future__ import annotations

import json
import logging
import zlib

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.utils.validation import _validate_metric_name

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.adapters.predictors import Predictor
from mlflow_metacompress.data.generators import generate_vulnerability
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.loop import run_evaluation
from mlflow_metacompress.evaluation.slices import SLICE_METRICS, metric_tokens
from mlflow_metacompress.metrics import greater_is_better
from mlflow_metacompress.relations import RelationConfig, evaluate_relations
from tests.conftest import random_probs

STATIC = {"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}


def static_frame(n: int = 240, seed: int = 0, drop_every: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Generated vulnerability data (``cwe`` column) with random teacher/student probabilities.
    ``drop_every``: drop rows so that the CWE classes have different sizes."""
    df = generate_vulnerability(n, seed=seed)
    if drop_every:
        order = {c: i for i, c in enumerate(sorted(df["cwe"].unique()))}
        keep = [i for i, c in enumerate(df["cwe"]) if i % (order[c] + 2) != 0 or order[c] == 0]
        df = df.iloc[keep].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    pt = random_probs(rng, len(df), 2, 3.0)
    ps = np.clip(0.75 * pt + 0.25 * random_probs(rng, len(df), 2, 2.0), 1e-9, None)
    ps /= ps.sum(axis=1, keepdims=True)
    df = df.assign(t0=pt[:, 0], t1=pt[:, 1], s0=ps[:, 0], s1=ps[:, 1])
    return df, pt, ps


def static_outcome(df: pd.DataFrame, **raw):
    cfg = parse_config({**STATIC, **raw}, df, model_given=False)
    return run_evaluation(df, None, cfg, None, None), cfg


def oracle(
    df: pd.DataFrame, pt: np.ndarray, ps: np.ndarray, column: str, config: RelationConfig | None = None
) -> dict[str, float]:
    """Slice rates by pandas groupby over evaluate_relations' per-sample flags on all rows."""
    flags = pd.DataFrame(evaluate_relations(pt, ps, config=config).per_sample)
    flags["value"] = df[column].to_numpy()
    out = {}
    means = flags.groupby("value")[["mr1_violation", "mr2_violation", "mr4_bin_violation", "any_violation"]].mean()
    for value, row in means.iterrows():
        for metric, col in (
            ("mr1_violation_rate", "mr1_violation"),
            ("mr2_violation_rate", "mr2_violation"),
            ("mr4_violation_rate", "mr4_bin_violation"),
            ("any_violation_rate", "any_violation"),
        ):
            out[f"{metric}/slice:{column}:{value}"] = float(row[col])
    for value, rate in flags[flags["mr3_in_h"]].groupby("value")["mr3_violation"].mean().items():
        out[f"mr3_violation_rate/slice:{column}:{value}"] = float(rate)
    return out


def slice_keys(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if "/slice:" in k}


def test_slice_rates_match_a_pandas_groupby_oracle_on_the_cwe_column():
    df, pt, ps = static_frame(drop_every=1)
    assert df["cwe"].value_counts().nunique() > 1  # slices of different sizes
    outcome, _ = static_outcome(df, slice_columns=["cwe"])
    expected = oracle(df, pt, ps, "cwe")
    assert slice_keys(outcome.metrics).keys() == expected.keys()
    assert slice_keys(outcome.metrics) == pytest.approx(expected, abs=1e-12)
    # MR1-MR3 are per-sample relations: the same as the relations recomputed on the slice alone
    for value in df["cwe"].unique():
        m = (df["cwe"] == value).to_numpy()
        alone = evaluate_relations(pt[m], ps[m]).metrics
        for metric in ("mr1_violation_rate", "mr2_violation_rate", "mr3_violation_rate"):
            if metric in alone:
                assert outcome.metrics[f"{metric}/slice:cwe:{value}"] == pytest.approx(alone[metric], abs=1e-12)
    # the overall rate is the sample-weighted mean of the slice rates when every value is sliced
    sizes = df["cwe"].value_counts()
    for metric in ("mr1_violation_rate", "mr2_violation_rate", "mr4_violation_rate", "any_violation_rate"):
        weighted = sum(n * outcome.metrics[f"{metric}/slice:cwe:{v}"] for v, n in sizes.items()) / len(df)
        assert weighted == pytest.approx(outcome.metrics[metric], abs=1e-12)
    note = outcome.notes["slices"]["cwe"]
    assert note["distinct_values"] == 10 and note["skipped_values"] == 0 and note["skipped_samples"] == 0
    assert {s["value"]: s["samples"] for s in note["sliced"]} == sizes.to_dict()
    assert [s["samples"] for s in note["sliced"]] == sorted(sizes, reverse=True)


def test_values_beyond_max_slice_values_are_skipped_with_a_warning_and_counted(caplog):
    df, pt, ps = static_frame(drop_every=1)
    sizes = sorted(df["cwe"].value_counts().items(), key=lambda kv: (-kv[1], kv[0]))
    with caplog.at_level(logging.WARNING, logger="mlflow_metacompress.evaluation.slices"):
        outcome, _ = static_outcome(df, slice_columns="cwe", max_slice_values=3)
    kept = {v for v, _ in sizes[:3]}
    assert {k.rsplit(":", 1)[1] for k in slice_keys(outcome.metrics)} == kept
    expected = {k: v for k, v in oracle(df, pt, ps, "cwe").items() if k.rsplit(":", 1)[1] in kept}
    assert slice_keys(outcome.metrics) == pytest.approx(expected, abs=1e-12)
    note = outcome.notes["slices"]["cwe"]
    assert note["skipped_values"] == 7 and note["skipped_samples"] == sum(n for _, n in sizes[3:])
    assert "'cwe' has 10 distinct values" in caplog.text and "7 values" in caplog.text


def test_metric_names_are_valid_for_mlflow_distinct_and_mapped_back():
    texts = [
        "CWE-121",
        "a/b",
        "a:b",
        "a_b",
        "..",
        "../etc",
        "",
        "  x  ",
        "x",
        "<missing>",
        "é ü",
        "日本",
        "v" * 200,
        "v" * 199 + "w",
        "tab\there",
        "50%",
        "a//b",
        "a b",
    ]
    tokens = metric_tokens(texts)
    assert len(set(tokens.values())) == len(texts)
    assert tokens["CWE-121"] == "CWE-121" and tokens["é ü"] == "é ü" and tokens["a b"] == "a b"
    column = metric_tokens(["col/umn"])["col/umn"]
    assert column == "col_umn"
    for metric in SLICE_METRICS:
        for token in tokens.values():
            _validate_metric_name(f"mc.{metric}/slice:{column}:{token}")  # raises on a name MLflow refuses
            assert len(f"{metric}/slice:{column}:{token}") <= 250


def test_awkward_values_and_missing_cells_through_the_engine():
    df, pt, ps = static_frame(n=60)
    values = np.array(["a/b", "a:b", None, "..", " ", 3.5], dtype=object)
    df["group id/x"] = values[np.arange(len(df)) % len(values)]
    outcome, _ = static_outcome(df, slice_columns=["group id/x"])
    keys = slice_keys(outcome.metrics)
    for key in keys:
        _validate_metric_name(key)
    note = outcome.notes["slices"]["group id/x"]
    assert note["token"] == "group id_x"
    assert sorted(s["value"] for s in note["sliced"]) == sorted(["a/b", "a:b", "<missing>", "..", " ", "3.5"])
    missing = next(s["token"] for s in note["sliced"] if s["value"] == "<missing>")
    m = np.array([v is None for v in df["group id/x"]])
    expected = float(evaluate_relations(pt, ps).per_sample["mr1_violation"][m].mean())
    assert outcome.metrics[f"mr1_violation_rate/slice:group id_x:{missing}"] == pytest.approx(expected)
    assert len({k.rsplit(":", 1)[1] for k in keys}) == 6


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"slice_columns": ["cwe", "cwx"]}, "names 'cwx', which is not a column of the data"),
        ({"slice_columns": ["target"], "max_slice_values": 0}, r"'max_slice_values'\] must be an integer ≥ 1; got 0"),
        (
            {"slice_columns": ["cwe"], "max_slice_values": True},
            r"'max_slice_values'\] must be an integer ≥ 1; got True",
        ),
        ({"slice_columns": ["cwe", "cwe"]}, r"'slice_columns'\] names 'cwe' twice"),
        ({"slice_columns": [3]}, r"'slice_columns'\] must be a list of non-empty"),
        ({"slice_columns": ["tags"]}, r"slice column 'tags' must hold single values"),
    ],
)
def test_bad_slice_config_is_rejected_before_anything_runs(raw, needle):
    df, _, _ = static_frame(n=20)
    df["tags"] = [["a", "b"]] * len(df)
    with pytest.raises(MetaCompressInputError, match=needle):
        parse_config({**STATIC, **raw}, df, model_given=False)


def _hash_probs(codes: list[str], salt: int) -> np.ndarray:
    return np.stack(
        [random_probs(np.random.default_rng(zlib.crc32(f"{salt}:{c}".encode())), 1, 2, 2.0)[0] for c in codes]
    )


def test_model_mode_slices_only_the_original_inputs():
    df = generate_vulnerability(20, seed=4)

    def teacher(f):
        return _hash_probs(f["func"].tolist(), 0)

    def student(f):
        return 0.6 * _hash_probs(f["func"].tolist(), 0) + 0.4 * _hash_probs(f["func"].tolist(), 1)

    cfg = parse_config(
        {
            "teacher": teacher,
            "progress": False,
            "language": "c",
            "transforms": ["rename_variables"],
            "slice_columns": ["cwe"],
            "kl_threshold": 0.02,
        },
        df,
        model_given=True,
    )
    outcome = run_evaluation(
        df,
        None,
        cfg,
        Predictor("teacher", teacher, cache_dir=None, progress=False),
        Predictor("student", student, cache_dir=None, progress=False),
    )
    assert "mr1_violation_rate/rename_variables" in outcome.metrics
    keys = slice_keys(outcome.metrics)
    assert keys and all(k.split("/", 1)[1].startswith("slice:cwe:") for k in keys)
    expected = oracle(df, teacher(df), student(df), "cwe", RelationConfig(kl_threshold=0.02))
    assert keys == pytest.approx(expected, abs=1e-12)
    assert 0 < sum(keys.values())  # some slice violates: the comparison is not between zeros


@pytest.mark.slow
def test_slices_through_mlflow_evaluate_in_static_mode(tracking):
    df, pt, ps = static_frame(n=100, seed=2)
    df = df.drop(columns=["func"])
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model=None,
            data=df,
            targets="target",
            model_type="metacompress",
            evaluators="metacompress",
            evaluator_config={**STATIC, "slice_columns": ["cwe"], "max_slice_values": 4, "metric_prefix": "mc_"},
        )
    logged = mlflow.get_run(run.info.run_id).data.metrics
    sliced = {k for k in logged if "/slice:" in k}
    assert len({k.rsplit(":", 1)[1] for k in sliced}) == 4 and all(k.startswith("mc_") for k in sliced)
    expected = oracle(df, pt, ps, "cwe")
    for key in sliced:
        assert logged[key] == pytest.approx(expected[key[len("mc_") :]])
        assert result.metrics[key] == logged[key]
        assert greater_is_better(key, "mc_") is False
    summary = json.loads(
        open(
            mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metacompress/summary.json")
        ).read()
    )
    assert summary["slices"]["cwe"]["skipped_values"] == 6
    assert summary["config"]["slice_columns"] == ["cwe"] and summary["config"]["max_slice_values"] == 4
    assert summary["config_sources"]["max_slice_values"] == "given"


def test_no_slice_metrics_without_slice_columns():
    df, _, _ = static_frame(n=30)
    outcome, cfg = static_outcome(df)
    assert not slice_keys(outcome.metrics) and "slices" not in outcome.notes
    assert cfg.slice_columns is None and cfg.max_slice_values == 20


def test_a_gate_policy_glob_judges_every_slice():
    from mlflow_metacompress.gates.policy import GatePolicy

    df, _, _ = static_frame(n=120, seed=3)
    outcome, _ = static_outcome(df, slice_columns=["cwe"])
    policy = GatePolicy.from_mapping({"name": "per-cwe", "thresholds": {"mr1_violation_rate/slice:cwe:*": "<= 0.05"}})
    results = policy.check(outcome.metrics)
    rates = {k: v for k, v in slice_keys(outcome.metrics).items() if k.startswith("mr1_violation_rate/")}
    assert {r.metric for r in results} == set(rates) and len(rates) == 10
    assert {r.metric: r.passed for r in results} == {k: v <= 0.05 for k, v in rates.items()}
    assert any(r.passed for r in results) and not all(r.passed for r in results)
