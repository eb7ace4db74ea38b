"""The evaluation data flow, free of MLflow logging:

DataFrame → variants → prediction table → relations → metrics + per-sample table.

``run_evaluation`` computes everything first; the evaluator logs only after it returns,
so a failure anywhere leaves nothing half-written in the run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .config import EvaluatorConfig
from .predictors import Predictor
from ..relations import evaluate_relations, predict
from .validation import MetaCompressInputError, align_classes, check_probabilities, encode_labels
from .variants import Variant, original_variant, pooled_variant

logger = logging.getLogger(__name__)


@dataclass
class Outcome:
    """Everything one evaluation produced, before it is logged."""

    metrics: dict[str, float]
    per_sample: pd.DataFrame
    classes: list[str]
    extra_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass
class PairPredictions:
    teacher: np.ndarray
    student: np.ndarray


class Comparison:
    """Runs both models over variants and judges them with the relations."""

    def __init__(self, cfg: EvaluatorConfig, teacher: Predictor | None, student: Predictor | None) -> None:
        self.cfg = cfg
        self.teacher = teacher
        self.student = student
        self.classes: list[str] | None = None

    def predict(self, frame: pd.DataFrame) -> PairPredictions:
        cols = self.cfg.code_columns or []
        p_t, c_t = self.teacher.predict(frame, cols)
        p_s, c_s = self.student.predict(frame, cols)
        p_s, classes = align_classes(p_t, c_t, p_s, c_s)
        if self.classes is None:
            self.classes = classes
        return PairPredictions(p_t, p_s)

    def judge(
        self, variant: Variant, preds: PairPredictions, y: np.ndarray | None, base: PairPredictions | None = None
    ) -> tuple[dict[str, float], pd.DataFrame]:
        """Relation metrics (suffixed by the variant) and this variant's per-sample rows."""
        labels = y[variant.positions] if y is not None else None
        result = evaluate_relations(preds.teacher, preds.student, labels, self.cfg.relation_config)
        metrics = dict(result.metrics)
        if base is not None:
            t0, s0 = predict(base.teacher)[variant.positions], predict(base.student)[variant.positions]
            metrics["teacher_flip_rate"] = float((result.per_sample["teacher_pred"] != t0).mean())
            metrics["student_flip_rate"] = float((result.per_sample["student_pred"] != s0).mean())
        rows = self._rows(variant, preds, labels, result.per_sample)
        return {f"{k}{variant.suffix}": v for k, v in metrics.items()}, rows

    def _rows(self, variant: Variant, preds: PairPredictions, labels: np.ndarray | None, per: dict[str, np.ndarray]) -> pd.DataFrame:
        classes = self.classes or [str(k) for k in range(preds.teacher.shape[1])]
        data: dict[str, Any] = {"variant": variant.name, "row": variant.positions}
        if labels is not None:
            data["label"] = labels
        for j, c in enumerate(classes):
            data[f"teacher_prob_{c}"] = preds.teacher[:, j]
        for j, c in enumerate(classes):
            data[f"student_prob_{c}"] = preds.student[:, j]
        for key in ("teacher_pred", "student_pred", "kl", "mr1_violation", "mr2_violation", "mr3_in_h",
                    "mr3_violation", "mr4_bin", "mr4_bin_violation", "mr4_violation", "any_violation"):
            data[key] = per[key]
        if variant.code_column in variant.frame:
            data["code"] = variant.frame[variant.code_column].to_numpy()
        return pd.DataFrame(data)


def static_predictions(df: pd.DataFrame, cfg: EvaluatorConfig) -> tuple[PairPredictions, None]:
    """Static mode: probabilities read from columns already in the data; the i-th column of
    each list is class i (labels are class indices)."""
    p_t = check_probabilities(df[cfg.teacher_prob_columns].to_numpy(dtype=np.float64, na_value=np.nan), "teacher (static columns)")
    p_s = check_probabilities(df[cfg.student_prob_columns].to_numpy(dtype=np.float64, na_value=np.nan), "student (static columns)")
    return PairPredictions(p_t, p_s), None


def run_evaluation(
    df: pd.DataFrame, y: np.ndarray | None, cfg: EvaluatorConfig, teacher: Predictor | None, student: Predictor | None
) -> Outcome:
    """Compute every metric and table of one metacompress evaluation."""
    df = df.reset_index(drop=True)
    comparison = Comparison(cfg, teacher, student)
    original = original_variant(df, cfg.code_columns) if cfg.code_columns else Variant(
        "original", "original", np.arange(len(df)), pd.DataFrame(index=range(len(df))), "")
    if cfg.static:
        base, classes = static_predictions(df, cfg)
        comparison.classes = classes
    else:
        base = comparison.predict(original.frame)
    classes = comparison.classes or [str(k) for k in range(base.teacher.shape[1])]
    labels = encode_labels(y, comparison.classes, base.teacher.shape[1]) if y is not None else None
    metrics, rows = comparison.judge(original, base, labels)
    tables = [rows]
    outcome = Outcome(metrics, pd.DataFrame(), classes)
    if not cfg.static and cfg.code_columns:
        from .variant_runs import run_attack_variants, run_transform_variants

        tables += run_transform_variants(df, cfg, comparison, base, labels, outcome)
        tables += run_attack_variants(df, cfg, comparison, base, labels, outcome)
    elif cfg.transforms not in ("all", None, [], ()) or cfg.attacks:
        raise MetaCompressInputError("transforms and attacks need models and code_columns; static mode only judges the given probabilities")
    outcome.per_sample = pd.concat(tables, ignore_index=True)
    return outcome
