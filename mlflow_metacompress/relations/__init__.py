"""The metamorphic relations of MetaCompress, registered, and :func:`evaluate_relations`.

Source: Awal, Rochan, Roy, "A Metamorphic Testing Perspective on Knowledge Distillation
for Language Models of Code: Does the Student Deeply Mimic the Teacher?" (arXiv
2511.05476, JSS 2026). The teacher is the oracle: each relation states what a student
that *deeply* mimics its teacher must preserve. Inputs are probability arrays
``P_T`` and ``P_S`` of shape (N, K) (already validated, rows summing to 1) and optional
integer labels ``y``. ``ŷ = argmax`` with ties going to the lowest index; ``c_T`` is the
row maximum of ``P_T``.

Each relation is one :class:`~.base.Relation` in its own module (:mod:`.mr1` … :mod:`.mr4`),
registered here in the paper's order; :func:`~.base.register` adds more. Every relation
returns per-sample arrays plus scalar metrics, so the same code judges original,
transformed and adversarial inputs alike (CheckList-style: judging is separate from running
the model).
"""

from __future__ import annotations

import numpy as np

from .base import (
    KL_EPS,
    CellVerdict,
    Param,
    Relation,
    RelationConfig,
    RelationMetric,
    RelationResult,
    bin_index,
    predict,
    register,
    registered,
    registered_relations,
    unregister,
)
from .labelled import binary_f1, expected_calibration_error, labelled_metrics
from .mr1 import MR1, mr1_prediction_agreement
from .mr2 import MR2, kl_divergence, mr2_distribution_similarity
from .mr3 import MR3, mr3_high_confidence
from .mr4 import MR4, mr4_calibration_alignment

__all__ = [
    "KL_EPS",
    "MR1",
    "MR2",
    "MR3",
    "MR4",
    "CellVerdict",
    "Param",
    "Relation",
    "RelationConfig",
    "RelationMetric",
    "RelationResult",
    "bin_index",
    "binary_f1",
    "evaluate_relations",
    "expected_calibration_error",
    "kl_divergence",
    "labelled_metrics",
    "mr1_prediction_agreement",
    "mr2_distribution_similarity",
    "mr3_high_confidence",
    "mr4_calibration_alignment",
    "predict",
    "register",
    "registered",
    "registered_relations",
    "unregister",
]

for _relation in (MR1, MR2, MR3, MR4):
    if _relation.key not in {r.key for r in registered_relations()}:
        register(_relation)


def evaluate_relations(
    P_T: np.ndarray, P_S: np.ndarray, y: np.ndarray | None = None, config: RelationConfig | None = None
) -> RelationResult:
    """Every registered relation, ``any_violation_rate`` and (with labels) the labelled metrics.

    ``any_violation_i = ∨_r <r>_violation_i`` over the registered relations (MR3 only counts
    inside H, MR4 when the sample's bin violates and its own confidence gap exceeds the
    threshold); ``any_violation_rate = mean_i any_violation_i``.
    """
    cfg = config or RelationConfig()
    P_T = np.asarray(P_T, dtype=np.float64)
    P_S = np.asarray(P_S, dtype=np.float64)
    if P_T.shape != P_S.shape or P_T.ndim != 2 or len(P_T) == 0:
        raise ValueError(f"P_T and P_S must be non-empty N×K arrays of one shape; got {P_T.shape} and {P_S.shape}")
    metrics: dict[str, float] = {}
    per: dict[str, np.ndarray] = {"teacher_pred": predict(P_T), "student_pred": predict(P_S)}
    any_v = np.zeros(len(P_T), dtype=bool)
    for relation in registered_relations():
        part = relation.judge(P_T, P_S, cfg)
        metrics.update(part.metrics)
        per.update(part.per_sample)
        any_v = any_v | np.asarray(part.per_sample[relation.flag], dtype=bool)
    per["any_violation"] = any_v
    metrics["any_violation_rate"] = float(any_v.mean())
    if y is not None:
        metrics.update(labelled_metrics(P_T, P_S, np.asarray(y), cfg.calibration_bins))
    return RelationResult(metrics, per)
