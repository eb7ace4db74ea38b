"""The evaluation data flow in one loop, free of MLflow logging:

DataFrame → variants → both models' probabilities → relations → metrics + per-sample table.

:func:`run_evaluation` takes each producer's :class:`~.variants.VariantSet` in turn and,
for each variant, predicts, judges (the four relations of MetaCompress, arXiv
2511.05476) and collects. It returns one :class:`Outcome` and logs nothing, so a failure
anywhere leaves nothing half-written in the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..relations import RelationConfig, evaluate_relations, predict
from .engines import Engine, LocalEngine
from .pair import ModelPair, PairPredictions, static_predictions
from .validation import MetaCompressInputError, encode_labels
from .variants import (
    SOURCES,
    SourceInputs,
    Variant,
    VariantSet,
    VariantSource,
    original_variant,
)

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from .config import EvaluatorConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Outcome:
    """Everything one evaluation produced, before it is logged (never changed afterwards)."""

    metrics: dict[str, float]
    per_sample: pd.DataFrame
    classes: list[str]
    extra_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


def judge(
    variant: Variant,
    preds: PairPredictions,
    labels: np.ndarray | None,
    classes: list[str],
    config: RelationConfig,
    base: PairPredictions | None = None,
) -> tuple[dict[str, float], pd.DataFrame]:
    """Relation metrics of one variant (keys suffixed ``/<variant>``) and its per-sample rows.

    ``labels`` and ``base`` (both models on the original inputs) are indexed by data row;
    with ``base``, ``teacher_flip_rate`` and ``student_flip_rate`` count the rows whose own
    prediction changed from the original (MORPH, Panichella, ICSE 2025). The per-sample
    columns are the relations' per-sample arrays, in the relations' order.
    """
    y = labels[variant.positions] if labels is not None else None
    result = evaluate_relations(preds.teacher, preds.student, y, config)
    metrics = dict(result.metrics)
    if base is not None:
        original = base.take(variant.positions)
        metrics["teacher_flip_rate"] = float((result.per_sample["teacher_pred"] != predict(original.teacher)).mean())
        metrics["student_flip_rate"] = float((result.per_sample["student_pred"] != predict(original.student)).mean())
    data: dict[str, Any] = {"variant": variant.name, "row": variant.positions}
    if y is not None:
        data["label"] = y
    data.update({f"teacher_prob_{c}": preds.teacher[:, j] for j, c in enumerate(classes)})
    data.update({f"student_prob_{c}": preds.student[:, j] for j, c in enumerate(classes)})
    data.update(result.per_sample)
    if variant.code_column in variant.frame:
        data["code"] = variant.frame[variant.code_column].to_numpy()
    return {f"{k}{variant.suffix}": v for k, v in metrics.items()}, pd.DataFrame(data)


def run_evaluation(
    df: pd.DataFrame,
    y: np.ndarray | None,
    cfg: EvaluatorConfig,
    teacher: Predictor | None,
    student: Predictor | None,
    engine: Engine | None = None,
) -> Outcome:
    """Compute every metric and table of one metacompress evaluation (``cfg`` from
    :func:`~.config.parse_config`; ``teacher``/``student`` None in static mode).

    ``engine`` (:mod:`.engines`) is where the heavy work runs: the evaluator passes the one
    ``cfg`` chose (:func:`~.engines.get_engine`, bound to the models); by default, this
    process. The loop below enters the engine's session, takes its variant producers and
    judges what they produce, whatever the engine (the Spark engine transforms and predicts
    on executors first, :mod:`.spark_engine`).

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
        outcome = _evaluate(df, y, cfg, teacher, student, engine)
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
) -> Outcome:
    with engine.session():
        return _run(df, y, cfg, teacher, student, engine.sources(df, cfg, teacher, student))


def _run(
    df: pd.DataFrame,
    y: np.ndarray | None,
    cfg: EvaluatorConfig,
    teacher: Predictor | None,
    student: Predictor | None,
    sources: tuple[VariantSource, ...],
) -> Outcome:
    models = None
    if not cfg.static:
        if teacher is None or student is None:
            raise MetaCompressInputError("model mode needs both a teacher and a student")
        models = ModelPair(teacher, student, tuple(cfg.code_columns or ()))
    original = original_variant(df, cfg.code_columns)
    if models is None:
        base, named = static_predictions(df, cfg), None
    else:
        base, named = models.predict(original.frame)
    classes = named or [str(k) for k in range(base.teacher.shape[1])]
    index_labels = bool(models is not None and getattr(models.teacher, "index_labels", False))
    labels = encode_labels(y, named, base.teacher.shape[1], index_labels=index_labels) if y is not None else None
    inputs = SourceInputs(df, cfg, labels, base, named)

    metrics: dict[str, float] = {}
    tables: dict[str, pd.DataFrame] = {}
    notes: dict[str, Any] = {}
    rows: list[pd.DataFrame] = []
    pooled: dict[str, list[str]] = {}
    for produced in _variant_sets(original, inputs, models, sources):
        metrics.update(produced.metrics)
        tables.update(produced.tables)
        notes.update(produced.notes)
        judged = []
        for variant in produced.variants:
            is_original = variant is original
            if is_original:
                preds = base
            elif models is None:
                raise MetaCompressInputError(
                    f"variant {variant.name!r} needs models; static mode only judges the given probabilities"
                )
            else:
                preds = models.predict(variant.frame)[0]
            m, r = judge(variant, preds, labels, classes, cfg.relation_config, None if is_original else base)
            metrics.update(m)
            rows.append(r)
            judged.append(preds)
        if produced.pooled is not None:
            m, _ = judge(produced.pooled, PairPredictions.concat(judged), labels, classes, cfg.relation_config, base)
            metrics.update(m)
            pooled[produced.pooled.name] = [v.name for v in produced.variants]
    if models is not None and cfg.measure_speed:
        from .speed import speed_metrics

        metrics.update(speed_metrics(df, cfg, models.teacher, models.student))
    if models is not None:
        notes["teacher_rows_run"] = models.teacher.rows_run
        notes["student_rows_run"] = models.student.rows_run
        limits = {p.name: p.input_limit for p in (models.teacher, models.student) if p.input_limit is not None}
        if limits:  # Hugging Face pipelines: the max input tokens each was cut to, and where that came from
            notes["input_limits"] = limits
    per_sample = pd.concat(rows, ignore_index=True)
    if cfg.slice_columns:
        from .slices import slice_metrics

        sliced, slice_notes = slice_metrics(df, per_sample, cfg)
        metrics.update(sliced)
        notes.update(slice_notes)
    _add_statistics(per_sample, len(df), metrics, notes, pooled, cfg)
    return Outcome(metrics, per_sample, classes, tables, notes)


def _add_statistics(
    per_sample: pd.DataFrame,
    n: int,
    metrics: dict[str, float],
    notes: dict[str, Any],
    pooled: dict[str, list[str]],
    cfg: EvaluatorConfig,
) -> None:
    """Bootstrap intervals (original and pooled variants) and McNemar's p-value, into
    ``metrics`` and ``notes["statistics"]`` (:mod:`mlflow_metacompress.statistics`)."""
    from ..statistics import evaluation_statistics

    new, section = evaluation_statistics(
        per_sample, n, metrics, pooled, cfg.bootstrap_samples, cfg.seed, cfg.relation_config
    )
    metrics.update(new)
    notes["statistics"] = section


def _variant_sets(
    original: Variant, inputs: SourceInputs, models: ModelPair | None, sources: tuple[VariantSource, ...] = SOURCES
) -> Iterator[VariantSet]:
    """The original first, then each producer's set (produced lazily, in order)."""
    yield VariantSet((original,))
    for source in sources:
        yield source(inputs, models)
