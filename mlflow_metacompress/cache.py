"""The one on-disk cache of model outputs: evaluator predictions, distillation soft labels
and the fidelity method's teacher states.

Location (read each time the cache is used, never frozen at import):

1. an explicit ``cache_dir`` (``evaluator_config["cache_dir"]``, ``--cache-dir``),
2. the environment variable ``MLFLOW_METACOMPRESS_CACHE`` (``METACOMPRESS_CACHE_DIR`` is
   still read as a fallback),
3. the user cache directory: ``platformdirs.user_cache_dir("mlflow-metacompress")`` when
   platformdirs is installed, else ``$XDG_CACHE_HOME/mlflow-metacompress`` or
   ``~/.cache/mlflow-metacompress`` (the same folder on Linux).

Nothing is written relative to the working directory unless a relative ``cache_dir`` is
given explicitly.

An entry is one ``<kind>-<key>.npz`` file: named float arrays plus a JSON header holding
the entry's kind, key, model identity, the digest of the input rows it was computed on,
the class list, and each array's shape, dtype and SHA-256. :func:`load` checks all of
it, and the values themselves like fresh outputs (finite; probability rows sum to 1;
log-probability rows exponentiate to rows summing to 1); a bad entry is discarded with a
warning and the caller recomputes. The checksum catches corruption and entries copied
between keys (another model's probabilities); it is not a signature against someone who
rewrites a whole entry on purpose. Writes go to a unique ``tempfile.mkstemp`` name in the
same folder and are ``os.replace``-d, so concurrent writers of one key all succeed and a
reader never sees half a file.

Sharing: an entry is readable by whoever may write the folder. Entries are written
``0600`` (owner only), plus group read when the folder is group-writable (``chmod g+w``,
typically with the setgid bit so entries keep the folder's group: ``0640``) and other read
when it is world-writable. An entry this user cannot read (another user's, written before
the folder was shared) is reported as "not readable", not as invalid; it is recomputed
but left in place, never overwritten.

Entry keys (model identity, row digests): :mod:`.cache_keys`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

logger = logging.getLogger(__name__)

ENV = "MLFLOW_METACOMPRESS_CACHE"
LEGACY_ENV = "METACOMPRESS_CACHE_DIR"
APP_NAME = "mlflow-metacompress"
FORMAT = 1
ROW_SUM_TOLERANCE = 1e-3  # the evaluator's tolerance for fresh probabilities

Check = Literal["probabilities", "log_probabilities", "finite"]


class DefaultLocation:
    """Sentinel for "the one default location", resolved by :func:`location` when used."""

    def __repr__(self) -> str:
        return "<default metacompress cache location>"


DEFAULT = DefaultLocation()


class CacheEntryError(ValueError):
    """A cache entry (or a fresh output about to be cached) failed validation."""


def location(cache_dir: str | os.PathLike[str] | DefaultLocation | None = None) -> Path:
    """The cache folder: ``cache_dir``, else ``$MLFLOW_METACOMPRESS_CACHE``, else
    ``$METACOMPRESS_CACHE_DIR``, else the user cache directory (read now, not at import)."""
    if cache_dir is not None and not isinstance(cache_dir, DefaultLocation) and str(cache_dir):
        return Path(cache_dir).expanduser()
    for var in (ENV, LEGACY_ENV):
        value = os.environ.get(var, "").strip()
        if value:
            return Path(value).expanduser()
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        return (Path(base) if base else Path.home() / ".cache") / APP_NAME
    return Path(user_cache_dir(APP_NAME, appauthor=False))


def entry_path(kind: str, key: str, cache_dir: Any = None) -> Path:
    return location(cache_dir) / f"{kind}-{key}.npz"


# ------------------------------------------------------------------------- checks
def check_values(arr: np.ndarray, check: Check, who: str, n_rows: int | None = None) -> np.ndarray:
    """Validate an output array like a fresh prediction; raises :class:`CacheEntryError`."""
    arr = np.asarray(arr)
    if arr.dtype.kind != "f":
        raise CacheEntryError(f"{who} must be a float array; got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise CacheEntryError(f"{who} must be an N×K array; got shape {arr.shape}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise CacheEntryError(f"{who} has {arr.shape[0]} rows for {n_rows} input rows")
    if not np.isfinite(arr).all():
        row = int(np.argwhere(~np.isfinite(arr))[0][0])
        raise CacheEntryError(f"{who} holds a non-finite value in row {row}")
    if check == "finite":
        return arr
    if arr.shape[1] < 2:
        raise CacheEntryError(f"{who} must have K ≥ 2 classes; got shape {arr.shape}")
    probs = np.exp(arr.astype(np.float64)) if check == "log_probabilities" else arr.astype(np.float64)
    if (probs < 0).any():
        raise CacheEntryError(f"{who} holds a negative probability in row {int(np.argwhere(probs < 0)[0][0])}")
    off = np.abs(probs.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE
    if off.any():
        row = int(np.argmax(off))
        raise CacheEntryError(f"{who}: row {row} sums to {probs[row].sum():.6g}, not 1")
    return arr


def _checksum(arr: np.ndarray) -> str:
    h = hashlib.sha256(f"{arr.dtype.str}|{arr.shape}".encode())
    h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class Entry:
    """A validated cache entry."""

    arrays: dict[str, np.ndarray]
    classes: list[str] | None
    path: Path


def load(
    kind: str,
    key: str,
    *,
    rows: str,
    n_rows: int,
    checks: Mapping[str, Check],
    classes: Sequence[str] | None = None,
    cache_dir: Any = None,
) -> Entry | None:
    """The entry ``kind``/``key`` if it exists and passes every check, else None.

    ``checks`` names the arrays the entry must hold and how each is validated; every
    array has ``n_rows`` rows. ``classes``, when given, must equal the stored class list.
    A bad entry is logged as a warning and ignored (the caller recomputes and overwrites it).
    """
    path = entry_path(kind, key, cache_dir)
    if not path.is_file():
        return None
    try:
        entry = _read(path, kind, key, rows, n_rows, checks, classes)
    except PermissionError as exc:  # another user's entry: say so, and never call it invalid
        logger.warning(
            "%s cache entry %s is not readable by this user (%s): computing without it and leaving it "
            "in place; make the cache folder group-writable to share entries",
            kind,
            path,
            exc.strerror or exc,
        )
        return None
    except Exception as exc:  # corrupt, truncated, tampered or foreign: recompute, never trust
        logger.warning("discarding invalid %s cache entry %s (it will be recomputed): %s", kind, path, exc)
        return None
    logger.debug("%s cache hit: %s", kind, path)
    return entry


def _read(
    path: Path, kind: str, key: str, rows: str, n_rows: int, checks: Mapping[str, Check], classes: Sequence[str] | None
) -> Entry:
    with np.load(path, allow_pickle=False) as z:
        if "__meta__" not in z.files:
            raise CacheEntryError("no header")
        meta = json.loads(str(z["__meta__"][()]))
        arrays = {name: z[name] for name in checks if name in z.files}
    expected = {"format": FORMAT, "kind": kind, "key": key, "rows": rows}
    for field_name, value in expected.items():
        if meta.get(field_name) != value:
            raise CacheEntryError(f"header {field_name} is {meta.get(field_name)!r}, expected {value!r}")
    stored_classes = meta.get("classes")
    if classes is not None and (stored_classes is None or list(map(str, classes)) != stored_classes):
        raise CacheEntryError(f"classes {stored_classes} differ from the model's {list(classes)}")
    for name, check in checks.items():
        if name not in arrays:
            raise CacheEntryError(f"array {name!r} is missing")
        info = meta.get("arrays", {}).get(name, {})
        arr = arrays[name]
        if list(arr.shape) != info.get("shape") or arr.dtype.str != info.get("dtype"):
            raise CacheEntryError(
                f"array {name!r} has shape {arr.shape} {arr.dtype.str}; header says "
                f"{info.get('shape')} {info.get('dtype')}"
            )
        if _checksum(arr) != info.get("sha256"):
            raise CacheEntryError(f"array {name!r} does not match its checksum")
        check_values(arr, check, f"array {name!r}", n_rows)
        if stored_classes is not None and check != "finite" and arr.shape[1] != len(stored_classes):
            raise CacheEntryError(f"array {name!r} has {arr.shape[1]} columns for {len(stored_classes)} classes")
    return Entry(arrays, stored_classes, path)


def entry_mode(folder: str | os.PathLike[str]) -> int:
    """The mode of a new entry in ``folder``: ``0600``, plus read for the group when the
    folder is group-writable and for others when it is world-writable (module docstring)."""
    folder_mode = os.stat(folder).st_mode
    mode = stat.S_IRUSR | stat.S_IWUSR
    if folder_mode & stat.S_IWGRP:
        mode |= stat.S_IRGRP
    if folder_mode & stat.S_IWOTH:
        mode |= stat.S_IROTH
    return mode


def store(
    kind: str,
    key: str,
    arrays: Mapping[str, np.ndarray],
    *,
    rows: str,
    identity: str = "",
    classes: Sequence[str] | None = None,
    cache_dir: Any = None,
) -> Path | None:
    """Write an entry atomically (unique temporary file + ``os.replace``); returns its path,
    or None (with a warning) when the folder cannot be written: caching is an optimisation."""
    path = entry_path(kind, key, cache_dir)
    arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    meta = {
        "format": FORMAT,
        "kind": kind,
        "key": key,
        "identity": identity,
        "rows": rows,
        "classes": [str(c) for c in classes] if classes is not None else None,
        "arrays": {
            n: {"shape": list(a.shape), "dtype": a.dtype.str, "sha256": _checksum(a)} for n, a in arrays.items()
        },
    }
    if path.is_file() and not os.access(path, os.R_OK):
        logger.info("leaving %s cache entry %s in place: it is not readable by this user", kind, path)
        return None
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            # allow_pickle is numpy's default, spelled out so that **arrays cannot stand for it
            np.savez(fh, allow_pickle=True, __meta__=np.array(json.dumps(meta)), **arrays)  # no fsync: load() validates
            os.fchmod(fh.fileno(), entry_mode(path.parent))  # mkstemp makes 0600
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        logger.warning("could not write %s cache entry %s: %s", kind, path, exc)
        return None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return path
