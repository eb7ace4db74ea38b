"""Teacher soft labels, computed once and cached on disk.

Compressor (Shi et al., ASE 2022) labels the unlabeled half of the training data with
the teacher's outputs and distils on those. Here the teacher is any MLflow pyfunc model
that returns class probabilities (the project's ``CodeClassifierPyfunc`` does), so the
teacher never enters the training loop and never reaches a student's checkpoint.

Log-probabilities serve as logits: ``log p = t − logsumexp(t)`` differs from the
teacher's logits ``t`` by a per-row constant, and ``softmax((t + c)/T) = softmax(t/T)``
for every temperature ``T``, so the KD loss is unchanged.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

DEFAULT_CACHE = Path(".metacompress_cache") / "soft_labels"


def resolve_model_uri(uri: str) -> str:
    """Pin ``models:/name/latest`` or ``models:/name@alias`` to ``models:/name/<version>``
    so the cache key names exactly one model version."""
    if not uri.startswith("models:/"):
        return uri
    import mlflow

    client = mlflow.MlflowClient()
    rest = uri[len("models:/"):]
    if "@" in rest:
        name, alias = rest.split("@", 1)
        return f"models:/{name}/{client.get_model_version_by_alias(name, alias).version}"
    name, _, ref = rest.rpartition("/")
    if ref == "latest":
        versions = client.search_model_versions(f"name='{name}'")
        if not versions:
            raise ValueError(f"registered model {name!r} has no versions")
        return f"models:/{name}/{max(int(v.version) for v in versions)}"
    return uri


def model_identity(pinned_uri: str) -> str:
    """The URI pinned to a version (:func:`resolve_model_uri`) plus what makes the version unique beyond its number (its logged
    model id or source and creation time): a fresh registry that reuses ``name/1`` for
    another model must not hit an old cache entry."""
    pinned_uri = resolve_model_uri(pinned_uri)
    if not pinned_uri.startswith("models:/"):
        return pinned_uri
    import mlflow

    name, _, version = pinned_uri[len("models:/"):].rpartition("/")
    mv = mlflow.MlflowClient().get_model_version(name, version)
    return f"{pinned_uri}|{getattr(mv, 'model_id', None) or mv.source}|{mv.creation_timestamp}"


def cache_key(teacher_uri: str, df: pd.DataFrame, code_columns: Sequence[str]) -> str:
    """SHA-256 over the teacher's identity (:func:`model_identity` of the pinned URI) and
    the code text of every row."""
    h = hashlib.sha256(model_identity(teacher_uri).encode())
    for col in code_columns:
        h.update(b"\x00" + col.encode())
        for text in df[col]:
            h.update(b"\x01" + str(text).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def teacher_logits(
    teacher_uri: str,
    df: pd.DataFrame,
    code_columns: Sequence[str],
    cache_dir: str | Path | None = DEFAULT_CACHE,
) -> np.ndarray:
    """N×K teacher logits (log-probabilities) for ``df``; cached under ``cache_dir``.

    ``cache_dir=None`` disables the cache. The teacher is loaded only on a cache miss.
    """
    import mlflow

    missing = [c for c in code_columns if c not in df.columns]
    if missing:
        raise KeyError(f"DataFrame is missing code column(s) {missing}; it has {list(df.columns)}")
    pinned = resolve_model_uri(teacher_uri)
    path = Path(cache_dir) / f"{cache_key(pinned, df, code_columns)}.npy" if cache_dir is not None else None
    if path is not None and path.exists():
        logger.info("teacher soft labels: cache hit %s", path)
        return np.load(path)
    logger.info("teacher soft labels: running %s on %d rows", pinned, len(df))
    teacher = mlflow.pyfunc.load_model(pinned)
    probs = teacher.predict(df[list(code_columns)])
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or len(probs) != len(df):
        raise ValueError(f"teacher {pinned} returned shape {probs.shape}; expected ({len(df)}, num_classes)")
    logits = np.log(np.clip(probs, 1e-12, 1.0)).astype(np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, logits)
    return logits
