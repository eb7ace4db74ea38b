"""The deviation step (``evaluator_config["deviation"]``): how often an equivalent variant
makes the student disagree with its teacher, and how many paired queries finding one takes.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) judges a distilled student against its
teacher on semantically equivalent code. DFLARE (Tian et al., "Finding Deviated Behaviors of
the Compressed DNN Models for Image Classifications", TOSEM 2023) and DiffChaser (Xie et
al., ASE 2019) search for such *deviations* directly: an input ``x'`` equivalent to ``x``
with ``argmax p_s(x') != argmax p_t(x')``. For every row where both models agree at the
start, :func:`~mlflow_metacompress.attacks.deviation.api.find_deviations` searches the
variant space within ``queries`` paired queries; each reported deviation is verified by
re-querying both models uncached. Logged:

- ``deviation_rate``: found / agreeing rows, with ``deviation_rate_ci_low``/``_ci_high``
  (the 95% percentile bootstrap of :mod:`mlflow_metacompress.statistics`, resampling the
  agreeing rows, ``bootstrap_samples`` replicates, ``seed``);
- ``deviation_queries_median``: the median paired queries to the first deviation (found rows);
- ``deviation_rows_searched``, ``deviation_rows_agreeing``, ``deviation_rows_found``;
- the table ``deviations.parquet`` (:data:`~mlflow_metacompress.artifact_names.DEVIATIONS`).

:func:`search_deviations` is a function of the teacher's :class:`QueryModel` and *another*
model's ``predict``, so a second model judged against the same teacher (a retrained
reference) gets the same figures, logged under a prefix with :meth:`DeviationFigures.metrics`.
The teacher's :class:`QueryModel` is kept per teacher identity in this process
(:func:`teacher_queries`), so the teacher's predictions on a variant are shared by every
student judged in one process, and both models start from the evaluator's predictions on the
original rows (the prediction cache's), never run again on them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError
from ..artifact_names import DEVIATIONS_TABLE
from ..attacks.goal import PredictFn, QueryModel
from .deviation_settings import DeviationSettings, parse_deviation
from .variants import SourceInputs, VariantSet

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from ..attacks.deviation.api import Deviation
    from .config_model import EvaluatorConfig
    from .pair import ModelPair

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


def local_figures(
    frame: pd.DataFrame, inputs: SourceInputs, models: ModelPair, settings: DeviationSettings
) -> DeviationFigures:
    """The search in this process: the teacher's shared front, a fresh one for the student, both
    seeded with the evaluator's predictions on the original rows."""
    from .pair import attack_victim

    cfg, columns = inputs.cfg, list(inputs.cfg.code_columns or ())
    if inputs.base is None or cfg.language is None:
        raise MetaCompressInputError("the deviation search needs the models' predictions and the code's language")
    teacher = teacher_queries(models.teacher, columns, inputs.classes)
    student = QueryModel(attack_victim(models.student, columns, inputs.classes), columns)
    rows = [tuple(str(v) for v in r) for r in frame[columns].itertuples(index=False)]
    teacher.remember(rows, inputs.base.teacher[: len(frame)])
    student.remember(rows, inputs.base.student[: len(frame)])
    seed = settings.seed_or(cfg.seed)
    return search_deviations(teacher, student, frame, cfg.language, settings, seed, inputs.classes, cfg.progress)


def deviations(inputs: SourceInputs, models: ModelPair | None, search: DeviationRunner | None = None) -> VariantSet:
    """The evaluation loop's producer: no variants to judge, the deviation metrics, the
    ``deviations`` table and the ``deviation`` summary section (nothing when the key is unset).
    ``search``: where the search runs, when not here (the Spark engine's executors)."""
    cfg = inputs.cfg
    settings = parse_deviation(cfg.deviation)
    if settings is None:
        return VariantSet()
    if models is None:
        raise MetaCompressInputError("evaluator_config['deviation'] needs a teacher and a student model")
    frame = inputs.df[list(cfg.code_columns or ())].reset_index(drop=True)
    if settings.rows is not None:
        frame = frame.iloc[: settings.rows]
    if search is not None:
        figures = search(frame, cfg, settings, inputs.classes)
    else:
        figures = local_figures(frame, inputs, models, settings)
    metrics = figures.metrics(cfg.bootstrap_samples, cfg.seed)
    notes = {"deviation": figures.notes()}
    logger.info(
        "deviation search (%s): %d of %d agreeing rows deviate", settings.search, figures.found, figures.agreeing
    )
    if models.reference is not None and search is None:
        from .deviation_reference import reference_deviations

        ref_metrics, notes["reference_deviation"] = reference_deviations(frame, inputs, models, settings, figures)
        metrics.update(ref_metrics)
    return VariantSet(metrics=metrics, tables={DEVIATIONS_TABLE: figures.table()}, notes=notes)
