"""Training batches without wasted work: tokenised once, grouped by length, in a seeded order.

Before, every training and validation batch was tokenised again in every epoch
(:class:`.datasets.Collator` calls the model's ``encode``), and batches drew rows of any
length, each padded to its longest row. Here:

- :class:`TokenisedRows` tokenises a dataset's rows once, unpadded and truncated exactly
  as :meth:`~mlflow_metacompress.models.classifier.CodeClassifier.encode` does
  (:func:`~mlflow_metacompress.models.batching.tokenise_all`, the inference path), and
  :class:`TokenisedCollator` only pads the rows of a batch (the same tensors as
  ``encode``, test-checked);
- :func:`length_grouped_batches` draws a seeded permutation of the rows each epoch,
  cuts it into windows of ``window × batch_size`` rows, sorts each window by token
  count and cuts it into batches, then shuffles the batches (seeded): rows of similar
  length share a batch, so less padding is computed, while each epoch still sees a new
  random order (the ``group_by_length`` sampler of Hugging Face's ``Trainer`` works the
  same way, with windows of 50 batches). The order depends only on ``seed`` and the epoch
  number, so a rerun with the same seed trains on the same batches.
  :class:`LengthGroupedSampler` is that order as a ``batch_sampler``;
- validation rows are batched once, sorted by length
  (:func:`~mlflow_metacompress.models.batching.plan_batches`); the per-epoch metrics are
  batch-size-weighted means, so the grouping does not change them.

Inference already worked this way (:mod:`mlflow_metacompress.models.batching`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..models.batching import Tokenised, collate, tokenise_all
from .datasets import _MapDataset, with_targets


class TokenisedRows(_MapDataset):
    """A map-style dataset: the items of ``data`` (``CodeExamples`` or a concatenation of
    them) with their token ids computed once; each item gains its position ``_row``."""

    def __init__(self, data: Any, tokenizer: Any, pair_mode: str | None, max_length: int) -> None:
        self.items = [data[i] for i in range(len(data))]
        texts = [it["text"] for it in self.items]
        texts_b = [it["text_b"] for it in self.items] if self.items and "text_b" in self.items[0] else None
        self.tokens: Tokenised = tokenise_all(tokenizer, texts, texts_b, pair_mode, max_length)

    @property
    def lengths(self) -> np.ndarray:
        """Real tokens per row (both inputs of a pair together)."""
        return self.tokens.lengths

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {**self.items[i], "_row": i}


class TokenisedCollator:
    """Pad the pre-tokenised rows of a batch into the keyword arguments of
    ``CodeClassifier.forward``, plus ``index``, ``labels`` and ``teacher_logits`` as
    :class:`.datasets.Collator` adds them."""

    def __init__(self, rows: TokenisedRows, pad_id: int, left: bool = False) -> None:
        self.rows, self.pad_id, self.left = rows, pad_id, left

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        positions = np.array([it["_row"] for it in items], dtype=np.int64)
        batch: dict[str, Any] = collate(self.rows.tokens, positions, self.pad_id, self.left)
        return with_targets(batch, items)


def length_grouped_batches(
    lengths: np.ndarray, batch_size: int, window: int, seed: int, epoch: int
) -> list[np.ndarray]:
    """Row indices of each batch of one epoch (module docstring); every row exactly once.
    ``window`` < 2 gives plain seeded shuffling, cut into batches."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    lengths = np.asarray(lengths)
    rng = np.random.default_rng([seed, epoch])
    perm = rng.permutation(len(lengths))
    if window < 2:
        return [perm[s : s + batch_size] for s in range(0, len(perm), batch_size)]
    span = window * batch_size
    batches: list[np.ndarray] = []
    for start in range(0, len(perm), span):
        chunk = perm[start : start + span]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        batches.extend(chunk[s : s + batch_size] for s in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


class LengthGroupedSampler:
    """:func:`length_grouped_batches` as a ``DataLoader`` ``batch_sampler``: the n-th
    iteration (epoch n) yields the batches of ``(seed, n)``."""

    def __init__(self, lengths: np.ndarray, batch_size: int, window: int, seed: int) -> None:
        self.lengths, self.batch_size, self.window, self.seed = np.asarray(lengths), batch_size, window, seed
        self.epoch = 0

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        batches = length_grouped_batches(self.lengths, self.batch_size, self.window, self.seed, self.epoch)
        self.epoch += 1
        for b in batches:
            yield [int(i) for i in b]


def padded_share(lengths: np.ndarray, batches: list[np.ndarray]) -> float:
    """Share of the computed tokens that are padding when each batch is padded to its longest row."""
    lengths = np.asarray(lengths)
    total = sum(len(b) * int(lengths[b].max()) for b in batches if len(b))
    return 0.0 if total == 0 else 1.0 - float(lengths.sum()) / total


def loaders(
    model: Any,
    tokenizer: Any,
    train: Any,
    val: Any,
    *,
    batch_size: int,
    eval_batch_size: int,
    window: int,
    seed: int,
    distributed: bool = False,
) -> tuple[Any, Any]:
    """``(train loader, validation loader or None)`` over rows tokenised once. One
    process: length-grouped training batches in a seeded order and length-sorted
    validation batches. Several (DDP): plain seeded shuffling and sequential validation,
    since Lightning then puts its own distributed sampler in place."""
    from torch.utils.data import DataLoader

    from ..models.batching import plan_batches
    from ..models.encoder import pad_id

    pair_mode, max_length = model.meta.pair_mode, model.meta.max_length
    pad = pad_id(tokenizer, model.encoder)
    left = getattr(tokenizer, "padding_side", "right") == "left"
    rows = TokenisedRows(train, tokenizer, pair_mode, max_length)
    collate_train = TokenisedCollator(rows, pad, left)
    if distributed:
        import torch

        generator = torch.Generator().manual_seed(seed)
        train_dl = DataLoader(rows, batch_size=batch_size, shuffle=True, collate_fn=collate_train, generator=generator)
    else:
        sampler = LengthGroupedSampler(rows.lengths, batch_size, window, seed)
        train_dl = DataLoader(rows, batch_sampler=sampler, collate_fn=collate_train)
    if not val:
        return train_dl, None
    vrows = TokenisedRows(val, tokenizer, pair_mode, max_length)
    collate_val = TokenisedCollator(vrows, pad, left)
    if distributed:
        return train_dl, DataLoader(vrows, batch_size=eval_batch_size, shuffle=False, collate_fn=collate_val)
    planned = [[int(i) for i in b] for b in plan_batches(vrows.tokens.widths, eval_batch_size)]
    return train_dl, DataLoader(vrows, batch_sampler=planned, collate_fn=collate_val)
