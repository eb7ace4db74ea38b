"""A teacher's soft labels carried in its stage bundle (:mod:`.bundle`).

Every student of a study's teacher is distilled on the teacher's soft labels over the
distillation set (:mod:`mlflow_metacompress.distill.soft_labels`): about 20 minutes of the
teacher on one core for BigCloneBench's 43,506 CodeBERT-labelled pairs, kept in the one
cache (:mod:`mlflow_metacompress.cache`). A cache entry is keyed on the logged model's
identity, which a bundle adopted on another machine does not keep (the model is logged
again). So the entries of the teacher's identity are copied into ``<bundle>/cache/``
(:func:`refresh`, after the students that computed them), and :func:`adopt_entries` stores
them again under the adopted model's identity, after checking each one (header, checksum,
values) as the cache checks its own.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CACHE_DIR = "cache"


def _header(path: Path) -> dict[str, Any] | None:
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            return dict(json.loads(str(z["__meta__"][()])))
    except Exception:  # noqa: BLE001 - an unreadable entry is simply not carried
        return None


def refresh(bundle: Path, model_uri: str) -> int:
    """Copy the soft-label entries of ``model_uri`` (this store's teacher, in the precision
    used now) that ``bundle`` lacks into ``<bundle>/cache/``; returns how many were added."""
    from .. import cache
    from ..distill.soft_labels import KIND, logits_identity

    identity = logits_identity(model_uri)
    target = bundle / CACHE_DIR
    added = 0
    for path in sorted(cache.location().glob(f"{KIND}-*.npz")):
        header = _header(path)
        if header is None or header.get("identity") != identity or (target / path.name).is_file():
            continue
        target.mkdir(exist_ok=True)
        partial = target / f".{path.name}.partial"
        shutil.copy2(path, partial)
        partial.rename(target / path.name)  # whole or not at all
        added += 1
    if added:
        logger.info("carried %d soft-label cache entries of %s into %s", added, model_uri, bundle)
    return added


def adopt_entries(bundle: Path, model_uri: str) -> int:
    """Store the bundle's soft-label entries again under ``model_uri``'s identity (the
    adopted teacher's); an entry that fails the cache's checks is skipped with a warning."""
    from .. import cache
    from ..cache_keys import entry_key
    from ..distill.soft_labels import KIND, logits_identity

    identity = logits_identity(model_uri)
    stored = 0
    for path in sorted((bundle / CACHE_DIR).glob(f"{KIND}-*.npz")):
        header = _header(path) or {}
        shape = (header.get("arrays", {}).get("logits") or {}).get("shape") or [0]
        hit = cache.load(
            KIND, str(header.get("key", "")), rows=str(header.get("rows", "")), n_rows=int(shape[0]),
            checks={"logits": "log_probabilities"}, cache_dir=path.parent,
        )  # fmt: skip
        if hit is None:
            logger.warning("stage bundle cache entry %s fails the cache's checks: not adopted", path)
            continue
        rows = str(header["rows"])
        cache.store(
            KIND, entry_key(KIND, identity, rows), hit.arrays, rows=rows, identity=identity, classes=hit.classes
        )  # fmt: skip
        stored += 1
    return stored
