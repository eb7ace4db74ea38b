"""The deviation search's figures (``evaluator_config["deviation"]``): one model searched
against the teacher, its per-row records, metrics, table and summary note.

DFLARE (Tian et al., "Finding Deviated Behaviors of the Compressed DNN Models for Image
Classifications", TOSEM 2023) searches for inputs ``x'`` equivalent to ``x`` on which a
compressed model and its original disagree; MetaCompress (Awal, Rochan, Roy, arXiv
2511.05476) judges a distilled student against its teacher on such equivalent code. Used by
the evaluation step (:mod:`.deviation`), the reference's search (:mod:`.deviation_reference`)
and the Spark engine (:mod:`.spark_deviation`). The teacher's :class:`QueryModel` is kept per
teacher identity in this process (:func:`teacher_queries`), so every model judged against
it reads the teacher's predictions on a variant already seen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..attacks.goal import PredictFn, QueryModel
from .deviation_settings import DeviationSettings

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from ..attacks.deviation.api import Deviation
    from .config_model import EvaluatorConfig

logger = logging.getLogger(__name__)

MAX_TEACHERS = 4  # teachers whose variant predictions are kept in this process
_TEACHERS: dict[tuple[Any, ...], QueryModel] = {}

DeviationRunner = Callable[[pd.DataFrame, "EvaluatorConfig", DeviationSettings, list[str] | None], "DeviationFigures"]
"""``(rows, config, settings, class names) -> figures``: the search run somewhere other than
this process (the Spark engine's executors, :mod:`.spark_deviation`), with the same results."""


@dataclass(frozen=True)
class DeviationFigures:
    """One model's deviation search against the teacher: the per-row records, in row order."""

    records: tuple[Deviation, ...]
    classes: list[str]
    settings: DeviationSettings

    @property
    def agreeing(self) -> int:
        return sum(r.agreed_at_start for r in self.records)

    @property
    def found(self) -> int:
        return sum(r.found for r in self.records)

    def metrics(self, bootstrap_samples: int = 1000, seed: int = 0, prefix: str = "") -> dict[str, float]:
        """The logged figures (``prefix``, e.g. ``reference/``, before each name); the rate
        and its interval only when some row agreed, the median only when one deviated."""
        out = {
            "deviation_rows_searched": float(len(self.records)),
            "deviation_rows_agreeing": float(self.agreeing),
            "deviation_rows_found": float(self.found),
        }
        hits = np.array([bool(r.found) for r in self.records if r.agreed_at_start], dtype=float)
        if len(hits):
            out["deviation_rate"] = float(hits.mean())
            out.update(rate_interval(hits, bootstrap_samples, seed))
        else:
            logger.warning("no row where teacher and student agree: deviation_rate is undefined and not logged")
        firsts = [r.queries_to_first for r in self.records if r.found and r.queries_to_first is not None]
        if firsts:
            out["deviation_queries_median"] = float(np.median(firsts))
            # DFLARE's cost measure: every paired query spent on agreeing rows, per deviation found
            spent = sum(r.queries for r in self.records if r.agreed_at_start)
            out["deviation_queries_per_deviation"] = float(spent / self.found)
        return {f"{prefix}{k}": v for k, v in out.items()}

    def table(self) -> pd.DataFrame:
        """Every verified deviation: the row, the original and the variant, the unified diff,
        the operators, the queries, both models' fresh probabilities and predictions, and their
        total-variation gap (the report shows the largest first)."""
        rows = []
        for r in self.records:
            if not r.found or r.teacher_probs is None or r.student_probs is None:
                continue
            t, s = np.asarray(r.teacher_probs), np.asarray(r.student_probs)
            rows.append(
                {
                    "row": int(r.index),
                    "original_code": r.original_code,
                    "variant_code": r.variant_code,
                    "diff": r.diff,
                    "operators": json.dumps(list(r.operators)),
                    "queries_to_first": int(r.queries_to_first or 0),
                    "queries": int(r.queries),
                    "teacher_probs": [float(x) for x in t],
                    "student_probs": [float(x) for x in s],
                    "teacher_prediction": self._name(int(t.argmax())),
                    "student_prediction": self._name(int(s.argmax())),
                    "gap": float(0.5 * np.abs(t - s).sum()),
                }
            )
        columns = ["row", "original_code", "variant_code", "diff", "operators", "queries_to_first", "queries"]
        columns += ["teacher_probs", "student_probs", "teacher_prediction", "student_prediction", "gap"]
        return pd.DataFrame(rows, columns=columns)

    def notes(self) -> dict[str, Any]:
        """The summary.json section: settings and counts (unverified: disagreements a fresh query undid)."""
        s = self.settings
        return {
            "search": s.search,
            "queries": s.queries,
            "seed": s.seed,
            "rows": s.rows,
            "batch": s.batch,
            "depth": s.depth,
            "rows_searched": len(self.records),
            "rows_agreeing": self.agreeing,
            "found": self.found,
            "unverified": sum(r.unverified for r in self.records),
        }

    def _name(self, j: int) -> str:
        return str(self.classes[j]) if j < len(self.classes) else str(j)


def rate_interval(hits: np.ndarray, samples: int, seed: int) -> dict[str, float]:
    """The 95% percentile-bootstrap interval of the mean of ``hits`` (0/1 per agreeing row):
    ``samples`` replicates of the rows drawn with replacement (the evaluator's resampler, so
    the same ``seed`` and row count give the same draws); empty when ``samples`` is 0."""
    from ..resampling import resample_counts
    from ..statistics import LEVEL

    n = len(hits)
    if samples <= 0 or n == 0:
        return {}
    reps = resample_counts(n, samples, seed).astype(np.float64) @ hits / n
    low, high = np.percentile(reps, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return {"deviation_rate_ci_low": float(low), "deviation_rate_ci_high": float(high)}


def search_deviations(
    teacher: QueryModel,
    other: PredictFn | QueryModel,
    frame: pd.DataFrame,
    language: str,
    settings: DeviationSettings,
    seed: int,
    classes: list[str] | None,
    progress: bool = False,
    positions: Sequence[int] | None = None,
) -> DeviationFigures:
    """``other`` (the student, or later a reference) against ``teacher`` on ``frame``'s code
    columns (``teacher.columns``; only the first is rewritten). ``positions``: only those rows."""
    from ..attacks.deviation.api import find_deviations

    records = find_deviations(
        teacher,
        other,
        frame,
        teacher.columns,
        language,
        queries=settings.queries,
        search=settings.search,
        seed=seed,
        batch=settings.batch,
        depth=settings.depth,
        operators=settings.operators,
        progress=progress,
        positions=positions,
    )
    k = teacher.num_classes or 0
    return DeviationFigures(tuple(records), list(classes) if classes else [str(j) for j in range(k)], settings)


def teacher_queries(predictor: Predictor, columns: list[str], classes: list[str] | None) -> QueryModel:
    """The teacher's query front for deviation searches: one per teacher identity, columns and
    class order in this process (:data:`MAX_TEACHERS` kept), so every student judged here reads
    the teacher's predictions on a variant already seen; a fresh one for a model without identity."""
    from .pair import attack_victim

    key = (predictor.identity, tuple(columns), tuple(classes or ()))
    if predictor.identity is not None and key in _TEACHERS:
        return _TEACHERS[key]
    model = QueryModel(attack_victim(predictor, columns, classes), columns)
    if predictor.identity is not None:
        if len(_TEACHERS) >= MAX_TEACHERS:
            _TEACHERS.pop(next(iter(_TEACHERS)))
        _TEACHERS[key] = model
    return model
