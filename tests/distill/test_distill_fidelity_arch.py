"""The fidelity method's teacher-shaped student: every returned configuration keeps the
family's proportions and the size budget, and no configuration of the family (found by
brute force) puts more parameters into encoder layers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mlflow_metacompress.distill.arch import ArchSpec, param_count
from mlflow_metacompress.distill.search.space import size_mb
from mlflow_metacompress.distill.search.teacher_shaped import teacher_shaped


def layer_params(c: ArchSpec, pair_mode: str | None) -> int:
    """Encoder-layer parameters, measured as the difference to the same model without layers."""
    no_layers = SimpleNamespace(**{**c.to_dict(), "num_hidden_layers": 0})  # ArchSpec refuses 0 layers
    return param_count(c, 2, pair_mode) - param_count(no_layers, 2, pair_mode)


def family(target: float, pair_mode: str | None, max_length: int, min_vocab: int):
    for hidden in range(32, 769, 32):
        for layers in range(1, 5):
            for vocab in range(min_vocab, 46001, 1000):
                c = ArchSpec(
                    vocab_size=vocab,
                    num_hidden_layers=layers,
                    hidden_size=hidden,
                    num_attention_heads=hidden // 32,
                    intermediate_size=4 * hidden,
                    max_length=max_length,
                )
                if 0.8 * target <= size_mb(c, 2, pair_mode) <= target:
                    yield c


@pytest.mark.parametrize(
    "target,pair_mode,max_length",
    [(3.0, None, 128), (3.0, "concat_cls", 256), (10.0, None, 512), (1.5, None, 128), (30.0, None, 256)],
)
def test_teacher_shaped_keeps_proportions_budget_and_is_the_family_optimum(target, pair_mode, max_length):
    c = teacher_shaped(target, pair_mode=pair_mode, max_length=max_length)
    assert c.hidden_size % 32 == 0 and c.hidden_size % 16 == 0
    assert c.num_attention_heads == c.hidden_size // 32 and c.intermediate_size == 4 * c.hidden_size
    assert 1 <= c.num_hidden_layers <= 4 and c.vocab_size >= 4000 and c.vocab_size % 1000 == 0
    assert 0.8 * target <= size_mb(c, 2, pair_mode) <= target and c.max_length == max_length
    best = max(layer_params(o, pair_mode) for o in family(target, pair_mode, max_length, 4000))
    assert layer_params(c, pair_mode) == best
    # the student really has that many parameters (the closed form is checked against models elsewhere)
    assert param_count(c, 2, pair_mode) * 4 / 1e6 == pytest.approx(size_mb(c, 2, pair_mode))


def test_teacher_shaped_options_and_errors():
    c = teacher_shaped(3.0, max_length=128, head_dim=16, ffn_ratio=2, max_layers=6, min_vocab=1000)
    assert c.num_attention_heads == c.hidden_size // 16 and c.intermediate_size == 2 * c.hidden_size
    assert c.num_hidden_layers <= 6
    with pytest.raises(ValueError, match="fits 0.2 MB"):
        teacher_shaped(0.2, max_length=128)
    small = teacher_shaped(0.2, max_length=64, min_vocab=1000)
    assert size_mb(small) <= 0.2 and small.vocab_size >= 1000


def test_fidelity_choose_architecture_options_and_fallback(caplog):
    from types import SimpleNamespace

    from mlflow_metacompress.distill import get_method
    from mlflow_metacompress.distill.methods.fidelity import choose_architecture

    parse = get_method("fidelity").parse

    def ctx(size_mb):
        return SimpleNamespace(labels=["0", "1"], pair_mode=None, max_length=64, size_mb=size_mb)

    c, record = choose_architecture(ctx(3.0), parse({}), {})
    assert c == teacher_shaped(3.0, max_length=64) and record == {"arch": "teacher_shaped"}
    c, record = choose_architecture(ctx(3.0), parse({"max_layers": "2"}), {})
    assert c.num_hidden_layers <= 2 and record["max_layers"] == 2
    small, record = choose_architecture(
        ctx(0.2), parse({}), {}
    )  # 4000 tokens cannot fit: relaxed to 1000, with a warning
    assert small == teacher_shaped(0.2, max_length=64, min_vocab=1000) and "allowing 1000" in caplog.text
    assert record == {"arch": "teacher_shaped", "min_vocab": 1000}
    with pytest.raises(ValueError, match="fits 0.2 MB"):  # an explicit min_vocab is not relaxed
        choose_architecture(ctx(0.2), parse({"min_vocab": 4000}), {})
    with pytest.raises(
        ValueError, match=r"option arch='wide' of method 'fidelity': expected one of \['teacher_shaped', 'avatar'\]"
    ):
        parse({"arch": "wide"})
