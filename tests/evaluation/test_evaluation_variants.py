"""The variant producers on their own: positions and frames of original, transformed
(re-parsed with tree-sitter, recomputed sample by sample) and pooled variants, and the
adversarial producer against plain-callable models."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from mlflow_metacompress.adapters.checks import MetaCompressInputError
from mlflow_metacompress.adapters.predictors import Predictor
from mlflow_metacompress.evaluation.config import parse_config
from mlflow_metacompress.evaluation.pair import ModelPair
from mlflow_metacompress.evaluation.predictions import PairPredictions
from mlflow_metacompress.evaluation.variant_types import SourceInputs, Variant, VariantSet, pooled_variant
from mlflow_metacompress.evaluation.variants import (
    SOURCES,
    adversarial,
    original_variant,
    transform_variants,
    transformed,
)
from mlflow_metacompress.transforms import TransformStatus, transform
from tests.conftest import toy_frame

BROKEN = "int broken( { return ;"


def parses_cleanly(code: str) -> bool:
    import tree_sitter as ts
    import tree_sitter_c

    return not ts.Parser(ts.Language(tree_sitter_c.language())).parse(code.encode()).root_node.has_error


def uniform(frame: pd.DataFrame) -> np.ndarray:
    return np.tile([0.5, 0.5], (len(frame), 1))


def inputs_for(
    df: pd.DataFrame, raw: dict, labels: np.ndarray | None = None, base: PairPredictions | None = None
) -> SourceInputs:
    cfg = parse_config({"teacher": uniform, "progress": False, **raw}, df, model_given=True)
    base = base or PairPredictions(uniform(df), uniform(df))
    return SourceInputs(df.reset_index(drop=True), cfg, labels, base)


def test_original_variant_is_every_row():
    df = toy_frame(5).set_index(pd.Index([10, 11, 12, 13, 14]))
    v = original_variant(df, ("func",))
    assert v.kind == "original" and v.suffix == "" and v.positions.tolist() == [0, 1, 2, 3, 4]
    assert (
        v.frame["func"].tolist() == df["func"].tolist()
        and list(v.frame.columns) == ["func"]
        and v.code_column == "func"
    )
    empty = original_variant(df, None)  # static mode without code
    assert empty.positions.tolist() == [0, 1, 2, 3, 4] and empty.frame.shape == (5, 0) and empty.code_column == ""


def test_transform_variants_match_per_sample_transforms_and_reparse():
    df = toy_frame(20, seed=4)
    df.loc[len(df)] = {"func": BROKEN, "target": 0}
    names = ["rename_variables", "for_to_while", "swap_if_else"]
    out = transform_variants(df, ["func"], ["func"], names, "c", seed=0, progress=False)
    assert out.parse_failures == [20] and [v.name for v in out.variants] == names
    codes = df["func"].tolist()
    for variant in out.variants:
        # independent recomputation, one sample at a time
        results = {i: transform(c, variant.name, "c", seed=0) for i, c in enumerate(codes[:20])}
        changed = [i for i, r in results.items() if r.status == TransformStatus.CHANGED]
        assert variant.kind == "transform" and variant.suffix == f"/{variant.name}"
        assert variant.positions.tolist() == changed
        assert variant.frame["func"].tolist() == [results[i].code for i in changed]
        assert out.applicable_rate[variant.name] == pytest.approx(len(changed) / 20)
        for i, code in zip(changed, variant.frame["func"], strict=True):
            assert code != codes[i] and parses_cleanly(code), (variant.name, i)
    assert any(len(v.positions) for v in out.variants)


def test_clone_pairs_rewrite_only_the_transform_column():
    df = pd.DataFrame({"func1": toy_frame(8)["func"], "func2": toy_frame(8, seed=1)["func"]})
    out = transform_variants(df, ["func1", "func2"], ["func1"], ["rename_variables"], "c", progress=False)
    v = out.variants[0]
    assert len(v.positions) and list(v.frame.columns) == ["func1", "func2"]
    assert v.frame["func2"].tolist() == df["func2"].to_numpy()[v.positions].tolist()
    assert (v.frame["func1"].to_numpy() != df["func1"].to_numpy()[v.positions]).all()


def test_pooled_variant_is_the_concatenation():
    a = Variant("a", "transform", np.array([0, 2]), pd.DataFrame({"func": ["x", "y"]}), "func")
    empty = Variant(
        "b", "transform", np.array([], dtype=int), pd.DataFrame({"func": pd.Series([], dtype=object)}), "func"
    )
    c = Variant("c", "transform", np.array([1, 2, 3]), pd.DataFrame({"func": ["p", "q", "r"]}), "func")
    pooled = pooled_variant([a, empty, c])
    assert pooled.name == "metamorphic" and pooled.kind == "metamorphic" and pooled.suffix == "/metamorphic"
    assert pooled.positions.tolist() == [0, 2, 1, 2, 3]
    assert pooled.frame["func"].tolist() == ["x", "y", "p", "q", "r"] and pooled.frame.index.tolist() == [0, 1, 2, 3, 4]
    assert pooled_variant([empty]) is None


def test_transformed_source_returns_its_metrics_tables_and_pool():
    df = toy_frame(12)
    df.loc[len(df)] = {"func": BROKEN, "target": 1}
    produced = transformed(inputs_for(df, {"language": "c", "transforms": ["rename_variables", "swap_if_else"]}))
    direct = transform_variants(df, ["func"], ["func"], ["rename_variables", "swap_if_else"], "c", progress=False)
    used = [v for v in direct.variants if len(v.positions)]
    assert [v.name for v in produced.variants] == [v.name for v in used]
    for got, want in zip(produced.variants, used, strict=True):
        assert got.positions.tolist() == want.positions.tolist() and got.frame.equals(want.frame)
    assert produced.pooled.positions.tolist() == np.concatenate([v.positions for v in used]).tolist()
    assert produced.metrics["transform_parse_failures"] == 1.0
    assert produced.metrics["transform_applicable_rate/rename_variables"] == direct.applicable_rate["rename_variables"]
    assert produced.tables["transform_parse_failures"].to_dict("list") == {"row": [12], "code": [BROKEN]}
    assert produced.notes == {"language": "c"}


def test_transformed_source_with_nothing_to_do():
    assert transformed(inputs_for(toy_frame(3), {"transforms": []})).variants == ()
    # a transformation that changes nothing: rates reported, no variant, no pool
    df = pd.DataFrame({"func": ["int f(void) { return 0; }"] * 3})
    produced = transformed(inputs_for(df, {"language": "c", "transforms": ["for_to_while"]}))
    assert produced.variants == () and produced.pooled is None
    assert produced.metrics == {
        "transform_parse_failures": 0.0,
        "transform_over_limit": 0.0,
        "transform_applicable_rate/for_to_while": 0.0,
    }


def _score(code: str) -> float:
    return (zlib.crc32(code.encode()) % 1000) / 1000


def sensitive(frame: pd.DataFrame) -> pd.DataFrame:  # flips with any identifier spelling; names its classes
    p1 = np.array([0.05 + 0.9 * _score(c) for c in frame["func"]])
    return pd.DataFrame({"1": p1, "0": 1 - p1})  # columns deliberately in the other order


def stable(frame: pd.DataFrame) -> pd.DataFrame:
    p1 = np.array([0.1 + 0.8 * ((len(c) // 40) % 2) for c in frame["func"]])
    return pd.DataFrame({"0": 1 - p1, "1": p1})


def test_adversarial_source_attacks_both_models_and_returns_student_examples():
    df = toy_frame(40, seed=2)
    labels = stable(df).to_numpy().argmax(1)
    keep = sensitive(df)[["0", "1"]].to_numpy().argmax(1) == labels
    df = df[keep].reset_index(drop=True).head(6)
    labels = labels[keep][:6]
    models = ModelPair(
        Predictor("teacher", stable, cache_dir=None, progress=False),
        Predictor("student", sensitive, cache_dir=None, progress=False),
        ("func",),
    )
    base, classes = models.predict(df)
    assert classes == ["0", "1"]
    inputs = SourceInputs(
        df,
        parse_config(
            {
                "teacher": stable,
                "language": "c",
                "transforms": [],
                "attacks": ["mhm_zhang_2020"],
                "attack_budget": 40,
                "progress": False,
            },
            df,
            model_given=True,
        ),
        labels,
        base,
        classes,
    )
    produced = adversarial(inputs, models)
    m = produced.metrics
    for role in ("teacher", "student"):
        assert {f"attack_mhm_zhang_2020/{role}_{k}" for k in ("asr", "accuracy_drop", "accuracy_under_attack")} <= set(
            m
        )
    assert m["attack_mhm_zhang_2020/excess_drop"] == pytest.approx(
        m["attack_mhm_zhang_2020/student_accuracy_drop"] - m["attack_mhm_zhang_2020/teacher_accuracy_drop"]
    )
    table = produced.tables["attacks/mhm_zhang_2020"]
    won = table[table["status"] == "succeeded"]
    (variant,) = produced.variants
    assert variant.name == "attack_mhm_zhang_2020" and variant.kind == "attack" and produced.pooled is None
    assert sorted(variant.positions.tolist()) == sorted(won["index"].astype(int).tolist()) and len(won) > 0
    # re-query the student on the adversarial code: every example flips its (teacher-order) label
    requery = sensitive(variant.frame)[["0", "1"]].to_numpy().argmax(1)
    assert (requery != labels[variant.positions]).all()
    with pytest.raises(MetaCompressInputError, match="attacks need both models and labels"):
        adversarial(inputs, None)


def test_sources_are_the_two_producers():
    assert SOURCES == (transformed, adversarial)
    assert isinstance(adversarial(inputs_for(toy_frame(3), {"transforms": []}), None), VariantSet)


def test_samples_over_the_transformation_limits_are_counted_like_parse_failures():
    """A 4,000-deep function exceeds the depth limit (500): it is reported with its reason
    and left out of every variant and of the applicable-rate denominator."""
    import pandas as pd

    from mlflow_metacompress.evaluation.variants import transform_variants

    deep = "int f(int a) {\n" + "if (a) {\n" * 4000 + "a++;\n" + "}\n" * 4000 + "return a;\n}\n"
    ok = "int g(int x) {\n  int y = x + 1;\n  for (int i = 0; i < 3; i++) { y += i; }\n  return y;\n}\n"
    df = pd.DataFrame({"func": [ok, deep, ok]})
    out = transform_variants(df, ["func"], ["func"], ["rename_variables", "for_to_while"], "c", progress=False)
    assert out.over_limit == {1: "too_deep"}
    assert out.parse_failures == []
    for v in out.variants:
        assert 1 not in v.positions.tolist()
    assert out.applicable_rate["rename_variables"] == 1.0  # both in-limit rows changed, the deep one not counted
