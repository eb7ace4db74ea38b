"""MR3, high-confidence preservation, of MetaCompress (Awal, Rochan, Roy, arXiv
2511.05476): where the teacher is sure, the student agrees and is sure too.

``H = {i : c_T,i ≥ τ}``. For ``i ∈ H``: ``v_i = [ŷ_S,i ≠ ŷ_T,i  ∨  P_S[i, ŷ_T,i] < τ]``.
``mr3_violation_rate = mean_{i∈H} v_i``; ``mr3_hcar = 1 − rate``; ``mr3_support = |H| / N``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from .base import Param, Relation, RelationConfig, RelationMetric, RelationResult, predict

logger = logging.getLogger(__name__)


def mr3_high_confidence(P_T: np.ndarray, P_S: np.ndarray, confidence_threshold: float = 0.8) -> RelationResult:
    """MR3, high-confidence preservation.

    ``H = {i : c_T,i ≥ τ}``. For ``i ∈ H``: ``v_i = [ŷ_S,i ≠ ŷ_T,i  ∨  P_S[i, ŷ_T,i] < τ]``.
    ``mr3_violation_rate = mean_{i∈H} v_i``; ``mr3_hcar = 1 − rate`` (high-confidence
    agreement rate); ``mr3_support = |H| / N``. With ``H = ∅`` the metrics are omitted
    (never NaN) and a warning is logged.
    """
    yT = predict(P_T)
    in_h = P_T.max(axis=1) >= confidence_threshold
    p_s_at_t = P_S[np.arange(len(yT)), yT]
    viol = in_h & ((predict(P_S) != yT) | (p_s_at_t < confidence_threshold))
    per = {"mr3_in_h": in_h, "mr3_violation": viol}
    if not in_h.any():
        logger.warning("MR3: no sample has teacher confidence >= %s; MR3 metrics are omitted", confidence_threshold)
        return RelationResult({}, per)
    rate = float(viol[in_h].mean())
    return RelationResult({"mr3_violation_rate": rate, "mr3_hcar": 1.0 - rate, "mr3_support": float(in_h.mean())}, per)


def _judge(P_T: np.ndarray, P_S: np.ndarray, config: RelationConfig) -> RelationResult:
    return mr3_high_confidence(P_T, P_S, config.confidence_threshold)


def _statistics(c: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    return {"h": np.asarray(c["mr3_in_h"], dtype=np.float64), "v": np.asarray(c["mr3_violation"], dtype=np.float64)}


def _compute(t: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    rate = np.where(t["h"] > 0, t["v"] / t["h"], np.nan)  # undefined (left out) when H is empty
    return {"mr3_violation_rate": rate, "mr3_hcar": 1.0 - rate, "mr3_support": t["h"] / t["count"]}


MR3 = Relation(
    key="mr3",
    title="MR3 high-confidence preservation",
    doc=__doc__ or "",
    metrics=(
        RelationMetric(
            "mr3_violation_rate",
            False,
            "MR3: among samples the teacher predicts with confidence ≥ τ (0.8), the fraction where the student "
            "predicts another class or gives the teacher's class < τ",
        ),
        RelationMetric("mr3_hcar", True, "MR3: high-confidence agreement rate, 1 − mr3_violation_rate"),
        RelationMetric("mr3_support", True, "MR3: fraction of samples in the high-confidence set H"),
    ),
    judge=_judge,
    statistics=_statistics,
    compute=_compute,
    columns=("mr3_in_h", "mr3_violation"),
    params=(Param("confidence_threshold", 0.8, 0.0, 1.0, low_open=True),),
    slice_support="mr3_in_h",
    omitted="MR3 is omitted when no sample has teacher confidence >= confidence_threshold "
    "(a weak teacher is never confident)",
)
