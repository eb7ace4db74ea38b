"""One ``describe_student`` for the searched methods (AVATAR, MORPH, fidelity; issue 34)."""

from __future__ import annotations

import dataclasses

import pytest

from mlflow_metacompress.distill.arch import ArchSpec
from mlflow_metacompress.distill.context import DistillContext
from mlflow_metacompress.distill.search.build import describe_student

SPEC = ArchSpec(
    vocab_size=600, num_hidden_layers=2, hidden_size=48, num_attention_heads=2, intermediate_size=96, max_length=64
)


@pytest.mark.parametrize("pair_mode", [None, "concat_cls"])
def test_describe_student_sizes_the_student_as_the_built_model_does(pair_mode):
    ctx = DistillContext(
        task="devign",
        code_columns=("func",),
        unlabeled=None,
        valid=None,
        labels=["0", "1"],  # type: ignore[arg-type]
        pair_mode=pair_mode,
        size_mb=3.0,
        max_length=64,
        fit_config=None,  # type: ignore[arg-type]
    )
    model, tokenizer = object(), object()
    out = describe_student(
        ctx, "avatar", (model, tokenizer, SPEC), None, {"evaluated": 4}, fallback=False, temperature=2.0
    )
    built = dataclasses.replace(SPEC, num_labels=2, pair_mode=pair_mode)
    assert out.model is model and out.tokenizer is tokenizer and out.fit is None
    assert list(out.config) == [
        "method",
        "student",
        "target_size_mb",
        "size_mb",
        "gflops",
        "temperature",
        "search_fallback",
        "search",
    ]
    assert out.config["size_mb"] == pytest.approx(built.size_mb())
    assert out.config["gflops"] == pytest.approx(built.gflops())
    assert out.config["student"] == SPEC.to_dict() and out.config["search"] == {"evaluated": 4}
    assert out.params == {f"arch.{k}": v for k, v in SPEC.to_dict().items()}
    plain = describe_student(ctx, "fidelity", (model, tokenizer, SPEC), None, {})
    assert "search_fallback" not in plain.config
