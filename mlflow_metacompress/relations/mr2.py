"""MR2, probability-distribution similarity, of MetaCompress (Awal, Rochan, Roy, arXiv
2511.05476): the student's class distribution stays close to the teacher's.

``kl_i = KL(P_T,i ‖ P_S,i)``; ``v_i = [kl_i > kl_threshold]``;
``mr2_violation_rate = mean_i v_i``; ``mr2_mean_kl = mean_i kl_i``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .base import KL_EPS, Param, Relation, RelationConfig, RelationMetric, RelationResult


def kl_divergence(P_T: np.ndarray, P_S: np.ndarray) -> np.ndarray:
    """Per-sample ``KL(P_T ‖ P_S) = Σ_k p_T log(p_T / max(p_S, 1e-12))``, natural log,
    with ``0·log 0 = 0``."""
    P_T = np.asarray(P_T, dtype=np.float64)
    P_S = np.maximum(np.asarray(P_S, dtype=np.float64), KL_EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P_T > 0, P_T * (np.log(np.where(P_T > 0, P_T, 1.0)) - np.log(P_S)), 0.0)
    return terms.sum(axis=1)


def mr2_distribution_similarity(P_T: np.ndarray, P_S: np.ndarray, kl_threshold: float = 0.1) -> RelationResult:
    """MR2, probability-distribution similarity.

    ``kl_i = KL(P_T,i ‖ P_S,i)``; ``v_i = [kl_i > kl_threshold]``;
    ``mr2_violation_rate = mean_i v_i``; ``mr2_mean_kl = mean_i kl_i``.
    """
    kl = kl_divergence(P_T, P_S)
    viol = kl > kl_threshold
    return RelationResult(
        {"mr2_violation_rate": float(viol.mean()), "mr2_mean_kl": float(kl.mean())},
        {"kl": kl, "mr2_violation": viol},
    )


def _judge(P_T: np.ndarray, P_S: np.ndarray, config: RelationConfig) -> RelationResult:
    return mr2_distribution_similarity(P_T, P_S, config.kl_threshold)


def _statistics(c: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    return {"kl": np.asarray(c["kl"], dtype=np.float64), "v": np.asarray(c["mr2_violation"], dtype=np.float64)}


def _compute(t: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    return {"mr2_violation_rate": t["v"] / t["count"], "mr2_mean_kl": t["kl"] / t["count"]}


MR2 = Relation(
    key="mr2",
    title="MR2 distribution similarity (KL)",
    doc=__doc__ or "",
    metrics=(
        RelationMetric("mr2_violation_rate", False, "MR2: fraction of samples with KL(P_T‖P_S) > kl_threshold (0.1)"),
        RelationMetric("mr2_mean_kl", False, "MR2: mean per-sample KL(P_T‖P_S), natural log"),
    ),
    judge=_judge,
    statistics=_statistics,
    compute=_compute,
    columns=("kl", "mr2_violation"),
    params=(Param("kl_threshold", 0.1),),
)
