"""The evaluation loop, free of MLflow logging: three named steps, one module each.

1. **produce variants** (:mod:`.variants`): the original, then each producer's
   :class:`~.variant_types.VariantSet` (transformations, attacks), from the engine;
2. **predict into the table** (:mod:`.predict`): both models' probabilities on every
   variant, into one :class:`~.predictions.PredictionTable` (rows × variant × model), read
   from columns in static mode and handed over by the engine when it predicted ahead;
3. **judge the table** (:mod:`.judge`): the four relations of MetaCompress (arXiv
   2511.05476) and every metric, from the table alone.

:func:`run_evaluation` returns one :class:`EvaluationOutcome` and logs nothing, so a failure
anywhere leaves nothing half-written in the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError
from .engines import Engine, LocalEngine
from .judge import add_slices_and_statistics, judge_table
from .pair import ModelPair
from .predict import original_table, predict_variants, static_table
from .variant_types import SourceInputs, Variant, VariantSet, VariantSource
from .variants import SOURCES, original_variant

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from .config_model import EvaluatorConfig
    from .predictions import PredictionTable

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class EvaluationOutcome:
    """Everything one evaluation produced, before it is logged (never changed afterwards)."""

    metrics: dict[str, float]
    per_sample: pd.DataFrame
    classes: list[str]
    extra_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


def run_evaluation(
    df: pd.DataFrame,
    y: np.ndarray | None,
    cfg: EvaluatorConfig,
    teacher: Predictor | None,
    student: Predictor | None,
    engine: Engine | None = None,
    reference: Predictor | None = None,
) -> EvaluationOutcome:
    """Compute every metric and table of one metacompress evaluation (``cfg`` from
    :func:`~.config.parse_config`; ``teacher``/``student`` None in static mode; ``reference``:
    the model of ``cfg.reference``, judged against the teacher on the student's rows,
    :mod:`.reference`).

    ``engine`` (:mod:`.engines`) is where the heavy work runs: the evaluator passes the one
    ``cfg`` chose (:func:`~.engines.get_engine`, bound to the models); by default, this
    process. The loop below enters the engine's session, takes its variant producers (and
    the predictions it made ahead, :meth:`~.engines.Engine.predicted`), predicts what is not
    yet in the table and judges the table, whatever the engine (the Spark engine transforms
    and predicts on executors first, :mod:`.spark_engine`).

    In model mode, inference and the speed timings run on ``cfg.threads`` torch threads
    (:mod:`mlflow_metacompress.threads`: default the enclosing run's, ``$METACOMPRESS_THREADS``
    or the free cores), recorded as ``notes["threads"]`` (and ``notes["speed_threads"]``
    with ``measure_speed``) for ``summary.json``."""
    df = df.reset_index(drop=True)
    engine = engine if engine is not None else LocalEngine()
    if cfg.static or teacher is None or student is None:
        return _evaluate(df, y, cfg, teacher, student, engine)
    from ..threads import using

    with using(cfg.threads, source="evaluator_config['threads']") as threads:
        outcome = _evaluate(df, y, cfg, teacher, student, engine, reference)
    notes = {**outcome.notes, "threads": threads}
    if cfg.measure_speed and "student_speedup" in outcome.metrics:
        notes["speed_threads"] = threads
    return replace(outcome, notes=notes)


def _evaluate(
    df: pd.DataFrame,
    y: np.ndarray | None,
    cfg: EvaluatorConfig,
    teacher: Predictor | None,
    student: Predictor | None,
    engine: Engine,
    reference: Predictor | None = None,
) -> EvaluationOutcome:
    with engine.session():
        sources = engine.sources(df, cfg, teacher, student)
        return _run(df, y, cfg, teacher, student, sources, engine.predicted(), reference)


def _run(
    df: pd.DataFrame,
    y: np.ndarray | None,
    cfg: EvaluatorConfig,
    teacher: Predictor | None,
    student: Predictor | None,
    sources: tuple[VariantSource, ...],
    ahead: PredictionTable | None = None,
    reference: Predictor | None = None,
) -> EvaluationOutcome:
    """Produce variants → predict into the table → judge the table (``ahead``: the
    predictions the engine made while producing its sources; ``reference``: predicted on
    every variant and judged beside the student, :mod:`.reference`)."""
    models = None
    if not cfg.static:
        if teacher is None or student is None:
            raise MetaCompressInputError("model mode needs both a teacher and a student")
        models = ModelPair(teacher, student, tuple(cfg.code_columns or ()), reference)
    original = original_variant(df, cfg.code_columns)
    table = static_table(df, cfg, y) if models is None else original_table(original, y, models, ahead)
    inputs = SourceInputs(df, cfg, table.labels, table.base, table.class_names)
    sets = []
    for produced in _variant_sets(original, inputs, models, sources):
        predict_variants(table, produced.variants, models, ahead)
        for pool, members in produced.pools():
            table.add_pooled(pool.name, members)
        sets.append(produced)
    if cfg.static and cfg.reference_prob_columns:
        from .reference import static_reference

        reference_probs = static_reference(df, cfg, table)
    elif reference is not None:
        from .reference import predict_reference, variant_frames

        reference_probs = predict_reference(reference, table, variant_frames(sets), list(cfg.code_columns or ()))
    else:
        reference_probs = None
    judged = judge_table(table, sets, cfg)
    if models is not None and cfg.measure_speed:
        from .speed import speed_metrics

        judged.metrics.update(speed_metrics(df, cfg, models.teacher, models.student))
    if models is not None:
        judged.notes["teacher_rows_run"] = models.teacher.rows_run
        judged.notes["student_rows_run"] = models.student.rows_run
        limits = {p.name: p.input_limit for p in (models.teacher, models.student) if p.input_limit is not None}
        if limits:  # Hugging Face pipelines: the max input tokens each was cut to, and where that came from
            judged.notes["input_limits"] = limits
    add_slices_and_statistics(judged, df, cfg)
    if reference_probs is not None:
        from .reference import add_reference

        add_reference(judged, table, reference_probs, cfg, len(df))
        if reference is not None:
            judged.notes["reference_rows_run"] = reference.rows_run
    return EvaluationOutcome(judged.metrics, judged.per_sample, table.classes, judged.tables, judged.notes)


def _variant_sets(
    original: Variant, inputs: SourceInputs, models: ModelPair | None, sources: tuple[VariantSource, ...] = SOURCES
) -> Iterator[VariantSet]:
    """The original first, then each producer's set (produced lazily, in order)."""
    yield VariantSet((original,))
    for source in sources:
        yield source(inputs, models)
