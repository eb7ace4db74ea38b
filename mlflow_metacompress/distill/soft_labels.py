"""Teacher soft labels, computed once and kept in the one cache (:mod:`mlflow_metacompress.cache`).

Compressor (Shi et al., ASE 2022) labels the unlabeled half of the training data with
the teacher's outputs and distils on those. Here the teacher is any MLflow pyfunc model
that returns class probabilities (the project's ``CodeClassifierPyfunc`` does), so the
teacher never enters the training loop and never reaches a student's checkpoint.

Log-probabilities serve as logits: ``log p = t − logsumexp(t)`` differs from the
teacher's logits ``t`` by a per-row constant, and ``softmax((t + c)/T) = softmax(t/T)``
for every temperature ``T``, so the KD loss is unchanged.

Entries are keyed on the teacher's :func:`~mlflow_metacompress.cache_keys.model_identity` and
the code of every row, and validated on load (shape, finite, ``exp`` rows summing to 1,
checksum); a bad entry is recomputed.

With several devices (:mod:`.devices`) the launching process computes them before the
``Trainer`` starts and only the fit runs in the ranks; a rank other than zero that asks
anyway reads the cache and never runs the teacher (a miss is an error, not N copies of
the teacher's inference).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .. import cache, cache_keys
from ..cache_keys import resolve_model_uri

logger = logging.getLogger(__name__)

KIND = "soft_labels"
# cache_dir=None means the one cache location (:func:`mlflow_metacompress.cache.location`),
# resolved when used; kept as a name for callers that pass it explicitly.
DEFAULT_CACHE: Path | None = None

__all__ = ["DEFAULT_CACHE", "cache_key", "model_identity", "resolve_model_uri", "teacher_logits"]


def distributed_rank() -> int:
    """This process's rank in an initialised ``torch.distributed`` group, else 0 (torch
    is not imported for the question)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return 0
    return int(dist.get_rank())


def model_identity(teacher_uri: str) -> str:
    """The teacher's cache identity (:func:`mlflow_metacompress.cache_keys.model_identity`):
    the same for every spelling of one logged model, new for another model that reuses
    ``name/1`` in a fresh registry."""
    identity = cache_keys.model_identity(teacher_uri)
    if identity is None:
        raise ValueError(
            f"teacher {teacher_uri!r} has no identity to cache its outputs under (its MLmodel names no model)"
        )
    return identity


def logits_identity(teacher_uri: str) -> str:
    """The teacher's identity and the precision its pyfunc runs in now
    (:func:`mlflow_metacompress.precision.for_inference`, which reads
    ``$METACOMPRESS_PRECISION``): fp32 and bf16 logits differ, so they are cached apart."""
    from ..precision import for_inference

    return f"{model_identity(teacher_uri)}|precision:{for_inference()}"


def cache_key(teacher_uri: str, df: pd.DataFrame, code_columns: Sequence[str]) -> str:
    """Entry key over the teacher's identity, its inference precision and the code of every row."""
    return cache_keys.entry_key(KIND, logits_identity(teacher_uri), cache_keys.rows_digest(df, list(code_columns)))


def teacher_logits(
    teacher_uri: str,
    df: pd.DataFrame,
    code_columns: Sequence[str],
    cache_dir: str | Path | None = DEFAULT_CACHE,
    *,
    use_cache: bool = True,
) -> np.ndarray:
    """N×K teacher logits (log-probabilities, float32) for ``df``.

    Cached under ``cache_dir``, or the one cache location when it is None;
    ``use_cache=False`` neither reads nor writes. The teacher is loaded only on a miss.
    """
    import mlflow

    columns = list(code_columns)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(f"DataFrame is missing code column(s) {missing}; it has {list(df.columns)}")
    pinned = resolve_model_uri(teacher_uri)
    rows = cache_keys.rows_digest(df, columns)
    key = identity = None
    if use_cache:
        identity = logits_identity(pinned)
        key = cache_keys.entry_key(KIND, identity, rows)
        hit = cache.load(
            KIND, key, rows=rows, n_rows=len(df), checks={"logits": "log_probabilities"}, cache_dir=cache_dir
        )
        if hit is not None:
            logger.info("teacher soft labels: cache hit %s", hit.path)
            return hit.arrays["logits"]
    rank = distributed_rank()
    if rank != 0:
        raise RuntimeError(
            f"teacher soft labels for {pinned} ({len(df)} rows) are not in the cache, and rank {rank} "
            "does not run the teacher: compute them in the launching process before the Trainer starts"
        )
    logger.info("teacher soft labels: running %s on %d rows", pinned, len(df))
    teacher = mlflow.pyfunc.load_model(pinned)
    probs = np.asarray(teacher.predict(df[columns]), dtype=np.float64)
    if probs.ndim != 2 or len(probs) != len(df):
        raise ValueError(f"teacher {pinned} returned shape {probs.shape}; expected ({len(df)}, num_classes)")
    try:
        cache.check_values(probs, "probabilities", f"teacher {pinned} probabilities", len(df))
    except cache.CacheEntryError as exc:
        raise ValueError(str(exc)) from None
    logits = np.log(np.clip(probs, 1e-12, 1.0)).astype(np.float32)
    if key is not None:
        cache.store(KIND, key, {"logits": logits}, rows=rows, identity=identity or "", cache_dir=cache_dir)
    return logits
