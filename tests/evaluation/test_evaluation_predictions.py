"""The prediction table and the judge step: relations and metrics computed from the
table alone, checked against the relations recomputed independently on the same
probabilities (and numpy for the flip rates)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.evaluation.judge import judge, judge_table
from mlflow_metacompress.evaluation.predictions import PairPredictions, PredictionTable
from mlflow_metacompress.evaluation.variant_types import Variant, VariantSet
from mlflow_metacompress.relations import RelationConfig, evaluate_relations
from tests.conftest import random_probs


def _variant(name: str, kind: str, positions: np.ndarray) -> Variant:
    return Variant(name, kind, positions, pd.DataFrame(index=range(len(positions))), "")  # type: ignore[arg-type]


def _table(rng: np.random.Generator, n: int = 20, k: int = 3) -> PredictionTable:
    labels = rng.integers(0, k, n)
    table = PredictionTable(n, ["a", "b", "c"][:k], labels)
    table.add("original", np.arange(n), PairPredictions(random_probs(rng, n, k), random_probs(rng, n, k)))
    return table


def test_a_variant_is_judged_from_its_rows_of_the_table():
    rng = np.random.default_rng(3)
    table = _table(rng)
    rows = np.array([1, 4, 4, 9, 17])  # a row may appear twice (pooled variants)
    t, s = random_probs(rng, 5, 3), random_probs(rng, 5, 3)
    table.add("t1", rows, PairPredictions(t, s))
    metrics, per = judge(_variant("t1", "transform", rows), table, RelationConfig())
    expected = evaluate_relations(t, s, table.labels[rows], RelationConfig()).metrics
    assert {k.removesuffix("/t1"): v for k, v in metrics.items() if "flip" not in k} == pytest.approx(expected)
    base = table.base
    flips_t = np.mean(t.argmax(1) != base.teacher[rows].argmax(1))
    flips_s = np.mean(s.argmax(1) != base.student[rows].argmax(1))
    assert metrics["teacher_flip_rate/t1"] == pytest.approx(flips_t)
    assert metrics["student_flip_rate/t1"] == pytest.approx(flips_s)
    assert per["row"].tolist() == rows.tolist() and per["label"].tolist() == table.labels[rows].tolist()
    np.testing.assert_array_equal(per[["student_prob_a", "student_prob_b", "student_prob_c"]].to_numpy(), s)


def test_a_pooled_variant_is_its_members_rows_together():
    rng = np.random.default_rng(4)
    table = _table(rng)
    members = []
    for name, rows in (("x", np.array([0, 2, 5])), ("y", np.array([2, 3]))):
        table.add(name, rows, PairPredictions(random_probs(rng, len(rows), 3), random_probs(rng, len(rows), 3)))
        members.append(_variant(name, "transform", rows))
    table.add_pooled("metamorphic", ["x", "y"])
    pooled = _variant("metamorphic", "metamorphic", np.array([0, 2, 5, 2, 3]))
    judged = judge_table(
        table,
        [VariantSet((_variant("original", "original", np.arange(20)),)), VariantSet(tuple(members), pooled)],
        _Cfg(),
    )
    both = PairPredictions.concat([table.pair("x"), table.pair("y")])
    expected = evaluate_relations(both.teacher, both.student, table.labels[[0, 2, 5, 2, 3]]).metrics
    for key, value in expected.items():
        assert judged.metrics[f"{key}/metamorphic"] == pytest.approx(value, abs=1e-12), key
    assert judged.pooled == {"metamorphic": ["x", "y"]}
    assert judged.per_sample["variant"].tolist() == ["original"] * 20 + ["x"] * 3 + ["y"] * 2


class _Cfg:
    relation_config = RelationConfig()


def test_bad_entries_are_refused_by_name():
    rng = np.random.default_rng(5)
    table = _table(rng, n=6, k=2)
    with pytest.raises(ValueError, match="'original' is already"):
        table.add("original", np.arange(6), table.base)
    with pytest.raises(ValueError, match=r"variant 'v': student probabilities have shape \(2, 3\)"):
        table.add("v", np.array([0, 1]), PairPredictions(random_probs(rng, 2, 2), random_probs(rng, 2, 3)))
    with pytest.raises(ValueError, match="variant 'w' names rows outside 0..5"):
        table.add("w", np.array([6]), PairPredictions(random_probs(rng, 1, 2), random_probs(rng, 1, 2)))
    with pytest.raises(KeyError, match="variant 'z' is not in the prediction table"):
        table.pair("z")
    with pytest.raises(ValueError, match="6 rows but 3 labels"):
        PredictionTable(6, ["0", "1"], np.zeros(3, dtype=int))
    assert list(table) == ["original"] and "original" in table and table.labels_of("original") is not None


def test_static_mode_fills_the_table_from_columns():
    from mlflow_metacompress.evaluation.config import parse_config
    from mlflow_metacompress.evaluation.predict import static_table

    rng = np.random.default_rng(6)
    t, s = random_probs(rng, 8, 2), random_probs(rng, 8, 2)
    df = pd.DataFrame({"t0": t[:, 0], "t1": t[:, 1], "s0": s[:, 0], "s1": s[:, 1]})
    cfg = parse_config({"teacher_prob_columns": ["t0", "t1"], "student_prob_columns": ["s0", "s1"]}, df, False)
    table = static_table(df, cfg, np.array([0, 1] * 4))
    np.testing.assert_array_equal(table.probabilities("original", "teacher"), t)
    np.testing.assert_array_equal(table.probabilities("original", "student"), s)
    assert table.classes == ["0", "1"] and table.class_names is None and table.labels.tolist() == [0, 1] * 4
