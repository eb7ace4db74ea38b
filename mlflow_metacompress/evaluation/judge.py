"""Step three of the evaluation: every relation and metric from the
:class:`~.predictions.PredictionTable` alone.

Each variant is judged by the four relations of MetaCompress (arXiv 2511.05476) on its
rows of the table; a pooled variant (``/metamorphic``) on its members' rows together. With
the original predictions in the table, ``teacher_flip_rate`` and ``student_flip_rate``
count the rows whose own prediction changed from the original (MORPH, Panichella, ICSE
2025). The per-sample table, the slice rates (:mod:`.slices`) and the bootstrap intervals
and McNemar's test (:mod:`mlflow_metacompress.statistics`) follow from the same judgements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..relations import RelationConfig, evaluate_relations, predict
from .predictions import ORIGINAL, PredictionTable

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig
    from .variant_types import Variant, VariantSet


@dataclass
class Judged:
    """What judging the table gives: metrics (in the order the producers and variants came),
    the per-sample table, the producers' artifact tables and summary notes, and each pooled
    variant's member names."""

    metrics: dict[str, float] = field(default_factory=dict)
    per_sample: pd.DataFrame = field(default_factory=pd.DataFrame)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    pooled: dict[str, list[str]] = field(default_factory=dict)


def judge(variant: Variant, table: PredictionTable, config: RelationConfig) -> tuple[dict[str, float], pd.DataFrame]:
    """Relation metrics of one variant (keys suffixed ``/<variant>``) and its per-sample rows,
    from its entry in ``table``; every variant but the original also gets the flip rates
    against the original's predictions. The per-sample columns are the relations'
    per-sample arrays, in the relations' order."""
    name = variant.name
    preds, positions, y = table.pair(name), table.positions(name), table.labels_of(name)
    result = evaluate_relations(preds.teacher, preds.student, y, config)
    metrics = dict(result.metrics)
    if name != ORIGINAL:
        original = table.base.take(positions)
        metrics["teacher_flip_rate"] = float((result.per_sample["teacher_pred"] != predict(original.teacher)).mean())
        metrics["student_flip_rate"] = float((result.per_sample["student_pred"] != predict(original.student)).mean())
    data: dict[str, Any] = {"variant": name, "row": positions}
    if y is not None:
        data["label"] = y
    data.update({f"teacher_prob_{c}": preds.teacher[:, j] for j, c in enumerate(table.classes)})
    data.update({f"student_prob_{c}": preds.student[:, j] for j, c in enumerate(table.classes)})
    data.update(result.per_sample)
    if variant.code_column in variant.frame:
        data["code"] = variant.frame[variant.code_column].to_numpy()
    return {f"{k}{variant.suffix}": v for k, v in metrics.items()}, pd.DataFrame(data)


def judge_table(table: PredictionTable, sets: list[VariantSet], cfg: EvaluatorConfig) -> Judged:
    """Judge every variant of ``sets`` (each already in ``table``) and each pooled one; the slices and the
    statistics (:func:`add_slices_and_statistics`, after any metric they read)."""
    out = Judged()
    rows: list[pd.DataFrame] = []
    for produced in sets:
        out.metrics.update(produced.metrics)
        out.tables.update(produced.tables)
        out.notes.update(produced.notes)
        for variant in produced.variants:
            m, r = judge(variant, table, cfg.relation_config)
            out.metrics.update(m)
            rows.append(r)
        for pool, members in produced.pools():
            out.metrics.update(judge(pool, table, cfg.relation_config)[0])
            out.pooled[pool.name] = members
    out.per_sample = pd.concat(rows, ignore_index=True)
    return out


def add_slices_and_statistics(judged: Judged, df: pd.DataFrame, cfg: EvaluatorConfig) -> None:
    """Slice rates (``cfg.slice_columns``, :mod:`.slices`), then the bootstrap intervals
    (original and pooled variants) and McNemar's p-value (:mod:`mlflow_metacompress.statistics`),
    into ``judged.metrics`` and ``judged.notes``."""
    if cfg.slice_columns:
        from .slices import slice_metrics

        sliced, slice_notes = slice_metrics(df, judged.per_sample, cfg)
        judged.metrics.update(sliced)
        judged.notes.update(slice_notes)
    from ..statistics import evaluation_statistics

    new, section = evaluation_statistics(
        judged.per_sample,
        len(df),
        judged.metrics,
        judged.pooled,
        cfg.bootstrap_samples,
        cfg.seed,
        cfg.relation_config,
    )
    judged.metrics.update(new)
    judged.notes["statistics"] = section
