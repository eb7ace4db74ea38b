"""Training batches without wasted work (issue 31, item 4): rows tokenised once per fit
(the same tensors as the model's own ``encode``), length-grouped batches in a seeded
order with less padding than plain shuffling, and teacher logits never recomputed."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from mlflow_metacompress.distill.batches import (
    LengthGroupedSampler,
    TokenisedCollator,
    TokenisedRows,
    length_grouped_batches,
    padded_share,
)
from mlflow_metacompress.distill.datasets import Collator
from mlflow_metacompress.distill.devices import TrainerSettings
from tests.support.models import code_examples as _examples


@pytest.mark.parametrize("pair_mode", [None, "concat_cls", "single_sequence"])
def test_tokenised_once_batches_equal_the_models_own_encoding(tiny_classifiers, pair_mode):
    import torch

    from mlflow_metacompress.models.classifier import CodeClassifier

    tok = tiny_classifiers[0]
    torch.manual_seed(0)
    pad = tok.pad_token_id
    model = CodeClassifier.from_config(
        len(tok), hidden_size=32, intermediate_size=64, max_length=40, pad_token_id=pad, pair_mode=pair_mode
    )
    data = _examples(pairs=pair_mode is not None)
    rows = TokenisedRows(data, tok, pair_mode, 40)
    fresh = Collator(functools.partial(model.encode, tok))
    once = TokenisedCollator(rows, tok.pad_token_id)
    for picks in ([0, 5, 9], [3], list(range(len(data)))):
        a, b = once([rows[i] for i in picks]), fresh([data[i] for i in picks])
        assert a.keys() == b.keys()
        for key in a:
            assert torch.equal(a[key], b[key]), key
    assert rows.lengths.max() <= (80 if pair_mode == "concat_cls" else 40)


def test_length_grouped_batches_are_seeded_complete_and_pad_less():
    lengths = np.random.default_rng(1).integers(5, 256, 1000)
    first = length_grouped_batches(lengths, 16, 16, seed=0, epoch=0)
    again = length_grouped_batches(lengths, 16, 16, seed=0, epoch=0)
    assert all(np.array_equal(x, y) for x, y in zip(first, again, strict=True))  # one seed, one order
    assert sorted(np.concatenate(first).tolist()) == list(range(1000)) and len(first) == 63
    assert [len(b) for b in first].count(16) == 62
    later = length_grouped_batches(lengths, 16, 16, seed=0, epoch=1)
    assert not all(np.array_equal(x, y) for x, y in zip(first, later, strict=True))  # a new order each epoch
    plain = length_grouped_batches(lengths, 16, 0, seed=0, epoch=0)
    assert sorted(np.concatenate(plain).tolist()) == list(range(1000))
    # uniform lengths in 5-256: shuffled batches compute ~46% padding; sorted windows of 256 rows
    # leave ~16 length steps of ~1 token per batch, ~6% (a global sort, the inference plan, ~0.4%)
    from mlflow_metacompress.models.batching import padding_fraction, plan_batches

    assert padded_share(lengths, plain) > 0.4 and padded_share(lengths, first) < 0.08
    assert padding_fraction(lengths, plan_batches(lengths, 16)) < padded_share(lengths, first)
    sampler = LengthGroupedSampler(lengths, 16, 16, seed=0)
    assert len(sampler) == 63 and [list(b) for b in sampler] == [b.tolist() for b in first]
    assert [list(b) for b in sampler] == [b.tolist() for b in later]  # the second iteration is epoch 1
    with pytest.raises(ValueError, match="batch_size"):
        length_grouped_batches(lengths, 0, 16, 0, 0)


class _CountingTokenizer:
    """A tokenizer that counts the texts it tokenises."""

    def __init__(self, tok):
        self.tok, self.texts = tok, 0

    def __call__(self, texts, *args, **kw):
        self.texts += len(texts) if isinstance(texts, list) else 1
        return self.tok(texts, *args, **kw)

    def __getattr__(self, name):
        return getattr(self.tok, name)


@pytest.mark.slow
def test_a_fit_tokenises_each_row_once_and_two_fits_of_one_seed_agree(tiny_classifiers):
    """Three epochs tokenise each training and validation row once (before: once per
    epoch), and the seeded batch order makes two fits of one seed give equal weights."""
    import torch

    from mlflow_metacompress.distill.modules import ClassifierModule, soft_label_loss
    from mlflow_metacompress.distill.training import FitConfig, fit
    from mlflow_metacompress.models.classifier import CodeClassifier

    tok = tiny_classifiers[0]
    train, val = _examples(40), _examples(12)
    weights = []
    for _ in range(2):
        counting = _CountingTokenizer(tok)
        torch.manual_seed(0)
        model = CodeClassifier.from_config(
            len(tok), hidden_size=32, intermediate_size=64, max_length=64, pad_token_id=tok.pad_token_id
        )
        config = FitConfig(epochs=3, batch_size=8, progress=False, settings=TrainerSettings(threads=1), seed=3)
        fit(ClassifierModule(model, soft_label_loss(1.0)), counting, train, val, config, mlflow_logger=False)
        assert counting.texts == len(train) + len(val)
        weights.append({k: v.clone() for k, v in model.state_dict().items()})
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_fidelity_variants_are_tokenised_once_and_padded_as_encode_pads(tiny_classifiers):
    """The fidelity module's per-step variants: the same inputs as the model's ``encode``,
    all variants tokenised at the first step, none again later."""
    import torch

    from mlflow_metacompress.distill.methods.fidelity import Options
    from mlflow_metacompress.distill.modules import FidelityModule

    tok, model, _ = tiny_classifiers
    variants = _examples(9).texts
    counting = _CountingTokenizer(tok)
    module = FidelityModule(
        model,
        counting,
        np.zeros((3, 2)),
        np.zeros((3, 4)),
        variants,
        None,
        np.zeros((9, 2)),
        np.zeros((9, 4)),
        [np.arange(3 * i, 3 * i + 3) for i in range(3)],
        Options(),
    )
    for rows in (np.array([0, 4, 8]), np.array([7]), np.arange(9)):
        got = module._encode_variants(rows)
        expected = model.encode(tok, [variants[r] for r in rows])
        assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in got)
    assert counting.texts == len(variants)
