"""ArchSpec size and FLOPs against independent closed-form counts."""

from __future__ import annotations

import pytest

from mlflow_metacompress.distill.arch import ArchSpec, measure_model, spec_of
from mlflow_metacompress.models.size import parameter_count, size_mb


def roberta_params(v: int, h: int, n_layers: int, i: int, max_len: int, k: int, pair: bool, widths: int = 2) -> int:
    """RoBERTa without pooler + the RoBERTa head, counted by hand (``widths``: the head's
    input in hidden sizes for a pair: 2 for concat_cls, 4 for siamese's [u, v, |u-v|, u*v])."""
    emb = v * h + (max_len + 2) * h + 1 * h + 2 * h  # word, position, token type, LayerNorm
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    head_in = widths * h if pair else h
    head = head_in * h + h + h * k + k
    return emb + n_layers * layer + head


def roberta_flops(h: int, n_layers: int, i: int, seq: int, k: int, pair: bool, widths: int = 2) -> int:
    """2·(multiply-adds): projections and FFN per token, QKᵀ and AV per layer, head on [CLS]."""
    per_layer = 2 * seq * (4 * h * h + 2 * h * i) + 2 * 2 * seq * seq * h
    encoder = n_layers * per_layer
    head_in = widths * h if pair else h
    return (2 if pair else 1) * encoder + 2 * (head_in * h + h * k)


@pytest.mark.parametrize("pair", [False, True])
def test_params_size_and_flops_match_closed_form(pair):
    spec = ArchSpec(
        vocab_size=1234,
        num_hidden_layers=3,
        hidden_size=48,
        num_attention_heads=4,
        intermediate_size=96,
        max_length=40,
        pair_mode="concat_cls" if pair else None,
    )
    expected = roberta_params(1234, 48, 3, 96, 40, 2, pair)
    assert spec.parameter_count() == expected
    assert spec.size_mb() == pytest.approx(expected * 4 / 1e6)
    assert spec.gflops() == pytest.approx(roberta_flops(48, 3, 96, 40, 2, pair) / 1e9, rel=1e-9)
    model = spec.build()
    assert parameter_count(model) == expected and size_mb(model) == pytest.approx(spec.size_mb())
    assert spec_of(model) == spec
    assert measure_model(model) == pytest.approx(
        {"params": expected, "size_mb": spec.size_mb(), "gflops": spec.gflops()}
    )


def test_siamese_pairs_are_counted_with_a_four_wide_head():
    spec = ArchSpec(
        vocab_size=1234,
        num_hidden_layers=2,
        hidden_size=48,
        num_attention_heads=4,
        intermediate_size=96,
        max_length=40,
        pair_mode="siamese",
    )
    expected = roberta_params(1234, 48, 2, 96, 40, 2, True, widths=4)
    assert spec.parameter_count() == expected == parameter_count(spec.build())
    assert spec.gflops() == pytest.approx(roberta_flops(48, 2, 96, 40, 2, True, widths=4) / 1e9, rel=1e-9)
    assert spec_of(spec.build()) == spec


def test_invalid_specs_are_named():
    with pytest.raises(ValueError, match="hidden_size 50 is not divisible by num_attention_heads 4"):
        ArchSpec(hidden_size=50, num_attention_heads=4)
    with pytest.raises(ValueError, match="num_hidden_layers must be"):
        ArchSpec(num_hidden_layers=0)
    with pytest.raises(ValueError, match="3 labels"):
        ArchSpec().build(labels=["a", "b", "c"])
