"""The attacks' in-process memo of teacher reports.

Evaluating several students of one teacher in one process (the reproduction study, a
method comparison) attacks the teacher once: its report is kept per (teacher identity,
attack, rows, labels, language, budget, seed, substitute model). Attacks are seeded and
deterministic for a given model and rows (MHM, ALERT, WIR-Random and CODA as MetaCompress,
arXiv 2511.05476, runs them), so the report is the one a new attack would give. The
per-query memo of one attack lives with the attack (:class:`~.goal.QueryModel`).
"""

from __future__ import annotations

import logging
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
    seed, substitute model), or None (the student, or a model without identity)."""
    identity = getattr(predictor, "identity", None)
    if role != "teacher" or identity is None:
        return None
    from ..cache import rows_digest

    return (identity, attack, rows_digest(frame, list(frame.columns)), np.asarray(y).tobytes(), *settings)


def recall(key: tuple[Any, ...] | None) -> Any | None:
    """The report remembered under ``key``, or None."""
    if key is None or key not in _TEACHER_REPORTS:
        return None
    logger.info("attack %s: the teacher's report on these rows is reused from this process", key[1])
    return _TEACHER_REPORTS[key]


def remember(key: tuple[Any, ...] | None, report: Any) -> None:
    """Keep ``report`` under ``key`` (nothing when None), dropping the oldest beyond :data:`MAX_REPORTS`."""
    if key is None:
        return
    if len(_TEACHER_REPORTS) >= MAX_REPORTS:
        _TEACHER_REPORTS.pop(next(iter(_TEACHER_REPORTS)))
    _TEACHER_REPORTS[key] = report
