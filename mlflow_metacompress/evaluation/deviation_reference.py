"""The deviation search read against a retrained teacher (``evaluator_config["reference"]``
with ``["deviation"]``).

At large budgets any two separately trained models deviate: a teacher retrained with
another seed left the first on 81% of agreeing rows within 100 paired queries in this
project's probe (issue 43), as easily as a Compressor student. So a student's
``deviation_rate`` is evidence only beside the reference's. The reference is searched
against the same teacher on the same rows, with the same search, budget and seed (DFLARE,
Tian et al., TOSEM 2023; the teacher's predictions on variants are shared,
:func:`.deviation.teacher_queries`), and logged as ``reference/deviation_rate`` (with its
interval, median queries and counts). The student's excess, ``excess/deviation_rate`` =
student rate − reference rate, each over its own agreeing rows, gets a paired percentile
bootstrap over the searched rows (the same resample counts for both models, so the rows'
shared difficulty cancels): ``excess/deviation_rate_ci_low`` / ``_ci_high``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..attacks.goal import QueryModel

if TYPE_CHECKING:
    from .deviation_search import DeviationFigures
    from .deviation_settings import DeviationSettings
    from .pair import ModelPair
    from .variant_types import SourceInputs

logger = logging.getLogger(__name__)


def row_outcomes(figures: DeviationFigures) -> tuple[np.ndarray, np.ndarray]:
    """Per searched row: agreed at the start (0/1) and a verified deviation found (0/1)."""
    agree = np.array([float(r.agreed_at_start) for r in figures.records])
    found = np.array([float(r.agreed_at_start and r.found) for r in figures.records])
    return agree, found


def excess_rate(student: DeviationFigures, reference: DeviationFigures, samples: int, seed: int) -> dict[str, float]:
    """``excess/deviation_rate`` and its paired 95% percentile-bootstrap interval over the
    searched rows (replicates with no agreeing row for either model are left out)."""
    from ..resampling import resample_counts
    from ..statistics import LEVEL

    a_s, f_s = row_outcomes(student)
    a_r, f_r = row_outcomes(reference)
    if a_s.sum() == 0 or a_r.sum() == 0 or len(a_s) != len(a_r):
        return {}
    out = {"excess/deviation_rate": float(f_s.sum() / a_s.sum() - f_r.sum() / a_r.sum())}
    if samples > 0:
        counts = resample_counts(len(a_s), samples, seed).astype(np.float64)
        den_s, den_r = counts @ a_s, counts @ a_r
        ok = (den_s > 0) & (den_r > 0)
        reps = (counts[ok] @ f_s) / den_s[ok] - (counts[ok] @ f_r) / den_r[ok]
        if len(reps):
            low, high = np.percentile(reps, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
            out["excess/deviation_rate_ci_low"] = float(low)
            out["excess/deviation_rate_ci_high"] = float(high)
    return out


def reference_deviations(
    frame: pd.DataFrame,
    inputs: SourceInputs,
    models: ModelPair,
    settings: DeviationSettings,
    student: DeviationFigures,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The reference's search against the teacher (same rows, search, budget, seed), its
    ``reference/`` figures and the student's ``excess/deviation_rate``; plus the summary note."""
    from .deviation_search import search_deviations, teacher_queries
    from .pair import attack_victim

    assert models.reference is not None
    cfg, columns = inputs.cfg, list(inputs.cfg.code_columns or ())
    teacher = teacher_queries(models.teacher, columns, inputs.classes)
    other = QueryModel(attack_victim(models.reference, columns, inputs.classes), columns)
    seed = settings.seed_or(cfg.seed)
    assert cfg.language is not None
    figures = search_deviations(teacher, other, frame, cfg.language, settings, seed, inputs.classes, cfg.progress)
    metrics = figures.metrics(cfg.bootstrap_samples, cfg.seed, prefix="reference/")
    metrics.update(excess_rate(student, figures, cfg.bootstrap_samples, cfg.seed))
    logger.info(
        "deviation search, reference against the teacher: %d of %d agreeing rows deviate",
        figures.found,
        figures.agreeing,
    )
    return metrics, figures.notes()
