"""MR1, prediction agreement (label loyalty), of MetaCompress (Awal, Rochan, Roy, arXiv
2511.05476): a student that deeply mimics its teacher predicts the teacher's class.

``v_i = [ŷ_S,i ≠ ŷ_T,i]``; ``mr1_violation_rate = mean_i v_i``;
``mr1_label_loyalty = 1 − mr1_violation_rate``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .base import Relation, RelationConfig, RelationMetric, RelationResult, predict


def mr1_prediction_agreement(P_T: np.ndarray, P_S: np.ndarray) -> RelationResult:
    """MR1, prediction agreement (label loyalty).

    ``v_i = [ŷ_S,i ≠ ŷ_T,i]``;  ``mr1_violation_rate = mean_i v_i``;
    ``mr1_label_loyalty = 1 − mr1_violation_rate``.
    """
    viol = predict(P_S) != predict(P_T)
    rate = float(viol.mean())
    return RelationResult({"mr1_violation_rate": rate, "mr1_label_loyalty": 1.0 - rate}, {"mr1_violation": viol})


def _judge(P_T: np.ndarray, P_S: np.ndarray, config: RelationConfig) -> RelationResult:
    return mr1_prediction_agreement(P_T, P_S)


def _statistics(c: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    return {"v": np.asarray(c["mr1_violation"], dtype=np.float64)}


def _compute(t: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    rate = t["v"] / t["count"]
    return {"mr1_violation_rate": rate, "mr1_label_loyalty": 1.0 - rate}


MR1 = Relation(
    key="mr1",
    title="MR1 prediction agreement",
    doc=__doc__ or "",
    metrics=(
        RelationMetric(
            "mr1_violation_rate",
            False,
            "MR1: fraction of samples where the student's predicted class differs from the teacher's",
        ),
        RelationMetric("mr1_label_loyalty", True, "MR1: 1 − mr1_violation_rate"),
    ),
    judge=_judge,
    statistics=_statistics,
    compute=_compute,
    columns=("mr1_violation",),
)
