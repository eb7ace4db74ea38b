"""The attacks' memo of teacher reports: in the process, and on disk in the prediction cache.

Evaluating several students of one teacher in one process (the reproduction study, a
method comparison) attacks the teacher once: its report is kept per (teacher identity,
attack, rows, labels, language, budget, seed, substitute model). Attacks are seeded and
deterministic for a given model and rows (MHM, ALERT, WIR-Random and CODA as MetaCompress,
arXiv 2511.05476, runs them), so the report is the one a new attack would give. The
per-query memo of one attack lives with the attack (:class:`~.goal.QueryModel`).

With a cache folder (the evaluator's ``cache_dir``, :func:`mlflow_metacompress.cache.location`),
a teacher's report is also written there, as ``attack-report-<sha256 of the key>.pkl``, so
a new process (the next stage of a study: issue 42 measured 21 minutes per seed of
re-attacking the teacher) reads it back instead of attacking again. The key holds the
teacher's identity (its ``MLmodel`` uuid), the attack, a digest of the rows and labels,
the language, budget, seed and substitute model. A file that cannot be read is ignored and
rewritten; files are written whole (a temporary file, then an atomic rename).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

MAX_REPORTS = 8  # a few teachers' reports at most
_TEACHER_REPORTS: dict[tuple[Any, ...], Any] = {}


def teacher_report_key(
    role: str,
    predictor: Any,
    attack: str,
    frame: pd.DataFrame,
    y: np.ndarray,
    settings: tuple[Any, ...],
) -> tuple[Any, ...] | None:
    """The memo key of the teacher's attack on ``frame`` (``settings``: language, budget,
    seed, substitute model), or None (a model without identity). A student has a key only
    when it *is* a teacher (the three-teacher study judges teachers against each other and
    attacks a teacher alone to choose its budget): its identity is then in the memo already."""
    identity = getattr(predictor, "identity", None)
    if identity is None or (role != "teacher" and not any(k[0] == identity for k in _TEACHER_REPORTS)):
        return None
    from ..cache_keys import rows_digest

    return (identity, attack, rows_digest(frame, list(frame.columns)), np.asarray(y).tobytes(), *settings)


def _disk_path(key: tuple[Any, ...], folder: Path) -> Path:
    digest = hashlib.sha256(repr(key).encode("utf-8")).hexdigest()[:32]
    return folder / f"attack-report-{digest}.pkl"


def recall(key: tuple[Any, ...] | None, folder: Path | None = None) -> Any | None:
    """The report remembered under ``key`` in this process, else the one stored in
    ``folder`` by an earlier process (its key checked), or None."""
    if key is None:
        return None
    if key in _TEACHER_REPORTS:
        logger.info("attack %s: the teacher's report on these rows is reused from this process", key[1])
        return _TEACHER_REPORTS[key]
    if folder is None or not (path := _disk_path(key, folder)).is_file():
        return None
    try:
        with path.open("rb") as fh:
            stored_key, report = pickle.load(fh)  # noqa: S301 - our own cache folder
    except Exception as exc:  # a truncated or foreign file: attack again and rewrite it
        logger.warning("attack cache %s unreadable (%s): attacking again", path, exc)
        return None
    if stored_key != key:
        return None
    logger.info("attack %s: the teacher's report on these rows is read from %s", key[1], path)
    _keep(key, report)
    return report


def _keep(key: tuple[Any, ...], report: Any) -> None:
    if len(_TEACHER_REPORTS) >= MAX_REPORTS:
        _TEACHER_REPORTS.pop(next(iter(_TEACHER_REPORTS)))
    _TEACHER_REPORTS[key] = report


def remember(key: tuple[Any, ...] | None, report: Any, folder: Path | None = None) -> None:
    """Keep ``report`` under ``key`` (nothing when None), dropping the oldest beyond
    :data:`MAX_REPORTS`, and write it whole into ``folder`` when one is given."""
    if key is None:
        return
    _keep(key, report)
    if folder is None:
        return
    path = _disk_path(key, folder)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((key, report), fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:  # a read-only or full cache folder costs a re-attack later, nothing more
        logger.warning("attack cache %s not written: %s", path, exc)
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
