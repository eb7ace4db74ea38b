"""The deviation step (``evaluator_config["deviation"]``): how often an equivalent variant
makes the student disagree with its teacher, and how many paired queries finding one takes
(the figures: :mod:`.deviation_search`).

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

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from ..adapters.checks import MetaCompressInputError
from ..artifact_names import DEVIATIONS_TABLE
from ..attacks.goal import QueryModel
from .deviation_search import DeviationFigures, DeviationRunner, DeviationSettings, search_deviations, teacher_queries
from .deviation_settings import parse_deviation
from .variant_types import SourceInputs, VariantSet

if TYPE_CHECKING:
    from .pair import ModelPair

logger = logging.getLogger(__name__)


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
    from .trained import unseen_operators

    settings = replace(settings, operators=unseen_operators(cfg, settings.operators))
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
