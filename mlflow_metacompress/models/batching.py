"""Length-bucketed inference batches for :class:`~.classifier.CodeClassifier`.

Inference tokenises every text once (no padding), sorts the rows by their real token
count (both functions for clone pairs), cuts the sorted rows into batches and pads each
batch only to its own longest row. Batches hold ``batch_size`` rows, or, with a token
budget ``max_tokens``, as many rows as fit in that many padded tokens, so short
functions travel in big batches and long ones in small ones.

With ``chunk_rows`` (the default on CUDA), rows are first ordered by character length
and cut into chunks that are tokenised and bucketed one at a time, the next chunk in a
background thread while the device runs the current one, so tokenisation overlaps the
forward passes; buckets are then exact within a chunk, near-exact overall.

Everything here works on plain lists and NumPy arrays; torch is imported only by
:func:`collate` and :func:`autocast_dtype`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

PRECISIONS = ("fp32", "bf16", "fp16")
# how a clone classifier reads two functions (:mod:`.classifier`); here, without torch, so
# tokenisation and the size formulas of ``distill.arch`` share the one table
PAIR_MODES: tuple[str, ...] = ("concat_cls", "single_sequence", "siamese")
# pair modes that encode the two functions as two inputs, and the head's input width in hidden sizes
TWO_INPUTS: dict[str, int] = {"concat_cls": 2, "siamese": 4}


@dataclass
class Tokenised:
    """Token ids of every row, unpadded.

    ``ids`` holds one list of sequences per model input: one for single texts and
    ``single_sequence`` pairs, two (first and second function) for ``concat_cls`` and
    ``siamese`` pairs.
    ``widths`` is the (rows × inputs) array of their lengths.
    """

    ids: list[list[list[int]]]
    widths: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Real tokens per row (both inputs together)."""
        return self.widths.sum(axis=1)


def tokenise_all(
    tokenizer: Any, texts: list[str], texts_b: list[str] | None, pair_mode: str | None, max_length: int
) -> Tokenised:
    """Tokenise all rows once, truncated to ``max_length`` and unpadded, exactly as
    :meth:`~.classifier.CodeClassifier.encode` would before padding."""
    if texts_b is not None and len(texts_b) != len(texts):
        raise ValueError(f"the two code columns differ in length: {len(texts)} and {len(texts_b)} rows")
    kw = {
        "truncation": True,
        "max_length": max_length,
        "padding": False,
        "return_attention_mask": False,
        "return_token_type_ids": False,
    }
    if pair_mode == "single_sequence":
        if texts_b is None:
            raise ValueError("a single_sequence pair classifier needs two code columns")
        seqs = [list(tokenizer(texts, texts_b, **kw)["input_ids"])] if texts else [[]]
    else:
        seqs = [list(tokenizer(texts, **kw)["input_ids"])] if texts else [[]]
        if pair_mode in TWO_INPUTS:
            if texts_b is None:
                raise ValueError(f"a {pair_mode} pair classifier needs two code columns")
            seqs.append(list(tokenizer(texts_b, **kw)["input_ids"]) if texts_b else [])
    widths = np.array([[len(s) for s in col] for col in seqs], dtype=np.int64).T.reshape(len(texts), len(seqs))
    return Tokenised(seqs, widths)


def bucketed(
    tokenizer: Any,
    texts: list[str],
    texts_b: list[str] | None,
    pair_mode: str | None,
    max_length: int,
    batch_size: int = 32,
    max_tokens: int | None = None,
    chunk_rows: int | None = None,
) -> Iterator[tuple[Tokenised, np.ndarray, list[np.ndarray]]]:
    """Yield ``(tokenised chunk, its rows' input indices, batches of chunk positions)``.

    Without ``chunk_rows`` there is one chunk, all rows, tokenised here. With it, rows
    in descending character length are cut into chunks of ``chunk_rows``, each
    tokenised in a worker thread while the caller consumes the previous one.
    """
    if texts_b is not None and len(texts_b) != len(texts):
        raise ValueError(f"the two code columns differ in length: {len(texts)} and {len(texts_b)} rows")

    def prepare(rows: np.ndarray) -> tuple[Tokenised, np.ndarray, list[np.ndarray]]:
        a = [texts[i] for i in rows]
        b = [texts_b[i] for i in rows] if texts_b is not None else None
        tok = tokenise_all(tokenizer, a, b, pair_mode, max_length)
        return tok, rows, plan_batches(tok.widths, batch_size, max_tokens)

    n = len(texts)
    if not chunk_rows or n <= chunk_rows:
        yield prepare(np.arange(n))
        return
    chars = np.array([len(t) for t in texts]) + (np.array([len(t) for t in texts_b]) if texts_b is not None else 0)
    order = np.argsort(-chars, kind="stable")
    chunks = [order[s : s + chunk_rows] for s in range(0, n, chunk_rows)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenise") as pool:
        pending = pool.submit(prepare, chunks[0])
        for nxt in chunks[1:] + [None]:
            ready = pending.result()
            if nxt is not None:
                pending = pool.submit(prepare, nxt)
            yield ready


def plan_batches(widths: np.ndarray, batch_size: int = 32, max_tokens: int | None = None) -> list[np.ndarray]:
    """Row indices of each batch, longest batch first; every row exactly once.

    Rows are sorted by real token count (both inputs for pairs; ties in input order).
    Without ``max_tokens``, batches are runs of ``batch_size`` sorted rows plus one
    shorter run of the remainder, placed where it saves most padding
    (:func:`_fixed_size_runs`). With ``max_tokens``, starting from the longest row, a
    batch grows while ``rows × Σ(longest row per input)`` stays within ``max_tokens``
    (at least one row per batch); ``batch_size`` is then not used.
    """
    widths = np.asarray(widths, dtype=np.int64)
    if widths.ndim == 1:
        widths = widths[:, None]
    if batch_size < 1:
        raise ValueError(f"batch_size must be ≥ 1, got {batch_size}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be ≥ 1, got {max_tokens}")
    lengths = widths.sum(axis=1)
    if max_tokens is None:
        ascending = np.argsort(lengths, kind="stable")
        return _fixed_size_runs(ascending, lengths[ascending], batch_size)[::-1]
    order = np.argsort(-lengths, kind="stable")
    if not len(order):
        return []
    batches: list[np.ndarray] = []
    start, longest = 0, widths[order[0]].copy()
    for pos in range(1, len(order)):
        grown = np.maximum(longest, widths[order[pos]])
        if (pos - start + 1) * int(grown.sum()) > max_tokens:
            batches.append(order[start:pos])
            start, longest = pos, widths[order[pos]].copy()
        else:
            longest = grown
    batches.append(order[start:])
    return batches


def _fixed_size_runs(order: np.ndarray, sorted_lengths: np.ndarray, size: int) -> list[np.ndarray]:
    """Cut rows sorted by ascending length into runs of ``size`` and one run of the
    remainder ``r``, placing the short run at the run boundary ``j·size`` that minimises
    the padded tokens ``Σ rows × longest`` (O(n / size) with prefix sums).

    Putting it last (as plain chunking does) pads ``[1, 10, 10]`` in twos to 30 tokens,
    putting it first to 21.
    """
    n = len(order)
    k, r = divmod(n, size)
    if r == 0 or k == 0:
        return [order[s : s + size] for s in range(0, n, size)]
    ls = sorted_lengths.astype(np.int64)
    before = np.concatenate([[0], np.cumsum(size * ls[size - 1 :: size][:k])])  # full runs from 0
    after = size * ls[r + size - 1 :: size][:k]  # full runs after the short one (offset r)
    after_from = np.concatenate([np.cumsum(after[::-1])[::-1], [0]])
    short = r * ls[np.arange(k + 1) * size + r - 1]
    j = int(np.argmin(before + short + after_from))
    cuts = [i * size for i in range(j + 1)] + [j * size + r + i * size for i in range(k - j + 1)]
    return [order[a:b] for a, b in itertools.pairwise(cuts)]


def padded_tokens(widths: np.ndarray, batches: list[np.ndarray]) -> int:
    """Tokens the model processes when each batch is padded to its longest row per input."""
    widths = np.asarray(widths, dtype=np.int64).reshape(len(widths), -1)
    return int(sum(len(b) * widths[b].max(axis=0).sum() for b in batches if len(b)))


def padding_fraction(widths: np.ndarray, batches: list[np.ndarray]) -> float:
    """Share of processed tokens that are padding (0 when nothing is processed)."""
    total = padded_tokens(widths, batches)
    return 0.0 if total == 0 else 1.0 - float(np.asarray(widths).sum()) / total


def pad_rows(seqs: list[list[int]], pad_id: int, left: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(input_ids, attention_mask)`` int64 arrays padded to the longest sequence."""
    width = max((len(s) for s in seqs), default=0)
    ids = np.full((len(seqs), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(seqs), width), dtype=np.int64)
    for i, s in enumerate(seqs):
        if not s:
            continue
        if left:
            ids[i, width - len(s) :] = s
            mask[i, width - len(s) :] = 1
        else:
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
    return ids, mask


def collate(tok: Tokenised, rows: np.ndarray, pad_id: int, left: bool = False, pin: bool = False) -> dict[str, Any]:
    """The keyword arguments of ``CodeClassifier.forward`` for ``rows`` as CPU tensors
    (in pinned memory when ``pin``, for asynchronous host-to-device copies)."""
    import torch

    names = (("input_ids", "attention_mask"), ("input_ids_b", "attention_mask_b"))
    out: dict[str, Any] = {}
    # one or two model inputs: the second pair of names is used only for two
    for (id_name, mask_name), col in zip(names, tok.ids, strict=False):
        ids, mask = pad_rows([col[i] for i in rows], pad_id, left)
        for name, arr in ((id_name, ids), (mask_name, mask)):
            t = torch.from_numpy(arr)
            out[name] = t.pin_memory() if pin else t
    return out


def autocast_dtype(precision: str | None, device: str = "cpu") -> Any:
    """The autocast dtype for ``precision`` on ``device`` (None for ``fp32``): ``auto`` or
    None resolve by the hardware (:func:`mlflow_metacompress.precision.for_inference`)."""
    import torch

    from ..precision import for_inference

    chosen = for_inference(precision, device)  # a bad value raises ValueError naming it
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[chosen]
