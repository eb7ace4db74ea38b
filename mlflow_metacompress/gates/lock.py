"""A per-registered-model lock that serialises promotions across processes.

``promote`` reads the alias holder, compares evaluation times and moves the alias; those
steps must not interleave with another promotion of the same model, or an older
evaluation can overwrite a fresher one. The lock is an advisory ``fcntl.flock`` on a
file:

- beside a sqlite store (``sqlite:///dir/mlflow.db`` → ``dir/mlflow.db.metacompress-<key>.lock``),
  so every process that writes that database shares it;
- for any other store (``http(s)://`` tracking servers, databases reached over the
  network, an in-memory sqlite), a best-effort file in the local cache directory
  (``$METACOMPRESS_CACHE_DIR/locks`` or ``~/.cache/mlflow-metacompress/locks``) keyed by
  the URI and model name: it serialises the processes of one machine only, and
  ``promote`` re-reads the alias after moving it to report a lost race truthfully.

The holder removes the lock file before releasing it (a waiter that then holds the lock of
the removed file notices and retries on the current one), so no ``*.lock`` file is left
beside the database; ``.gitignore`` covers one left by a killed process.

On platforms without ``fcntl`` the lock is skipped with a warning (the read-back still
applies).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0
_POLL_S = 0.02


class PromotionLockError(TimeoutError):
    """The promotion lock of a registered model could not be taken in time."""


def _cache_dir() -> Path:
    """The one metacompress cache directory (:func:`mlflow_metacompress.cache.location`)."""
    from ..cache import location

    return location()


def _sqlite_file(registry_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, or None (not sqlite, or in memory)."""
    from ..stores import sqlite_file

    return sqlite_file(registry_uri)


def lock_path(registry_uri: str, model_name: str) -> Path:
    """Where the lock file of ``model_name`` in the store at ``registry_uri`` lives."""
    db = _sqlite_file(registry_uri)
    if db is not None:
        key = hashlib.sha256(model_name.encode("utf-8")).hexdigest()[:16]
        return db.with_name(f"{db.name}.metacompress-{key}.lock")
    key = hashlib.sha256(f"{registry_uri}\0{model_name}".encode()).hexdigest()[:24]
    return _cache_dir() / "locks" / f"promote-{key}.lock"


@contextlib.contextmanager
def promotion_lock(registry_uri: str, model_name: str, timeout: float | None = None) -> Iterator[Path | None]:
    """Hold the exclusive promotion lock of ``model_name`` for the ``with`` block.

    Raises :class:`PromotionLockError` naming the lock file after ``timeout`` seconds
    (default :data:`DEFAULT_TIMEOUT_S`, read at call time). Yields the lock file path
    (None when locking is unavailable on this platform).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        logger.warning("fcntl is unavailable: promotions of %r are not serialised across processes", model_name)
        yield None
        return
    path = lock_path(registry_uri, model_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    if timeout is None:
        timeout = DEFAULT_TIMEOUT_S
    deadline = time.monotonic() + timeout
    fd = _acquire(fcntl, path, model_name, deadline, timeout)
    try:
        yield path
    finally:
        try:
            os.unlink(path)  # still holding the lock: a waiter sees the file gone and retries (_acquire)
        except OSError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _acquire(fcntl: Any, path: Path, model_name: str, deadline: float, timeout: float) -> int:
    """An open descriptor of ``path`` holding its exclusive lock.

    The holder removes the file before releasing it, so nothing is left beside the store.
    A waiter may then hold the lock of the removed file while a newcomer creates a new one:
    after locking, the descriptor must still be the file at ``path`` (same inode), else the
    waiter starts over on the new file."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise PromotionLockError(
                            f"another promotion of {model_name!r} held the lock {path} for more than {timeout:g} s; "
                            "retry when it finishes (the lock is released when its holder exits)"
                        ) from None
                    time.sleep(_POLL_S)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            if current is not None and current.st_ino == os.fstat(fd).st_ino:
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the lock of a file its holder removed: try again on the file at ``path``
