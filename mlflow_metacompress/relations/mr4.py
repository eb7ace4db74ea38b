"""MR4, calibration alignment, of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476):
label-free, the teacher is the oracle, so the student's confidence in the teacher's class
matches the teacher's own, bin by bin.

``a_T,i = P_T[i, ŷ_T,i]``, ``a_S,i = P_S[i, ŷ_T,i]``; bins ``b(i) = min(⌊a_T,i·B⌋, B−1)``;
``gap_b = |mean_{B_b} a_T − mean_{B_b} a_S|``; ``mr4_eca = Σ_b (|B_b|/N)·gap_b``;
``mr4_violation_rate = Σ_b (|B_b|/N)·[gap_b > eca_threshold]``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .base import CellVerdict, Param, Relation, RelationConfig, RelationMetric, RelationResult, bin_index, predict


def mr4_calibration_alignment(
    P_T: np.ndarray, P_S: np.ndarray, calibration_bins: int = 10, eca_threshold: float = 0.05
) -> RelationResult:
    """MR4, calibration alignment (label-free: the teacher is the oracle).

    ``a_T,i = P_T[i, ŷ_T,i]``, ``a_S,i = P_S[i, ŷ_T,i]``; bins ``b(i) = min(⌊a_T,i·B⌋, B−1)``;
    ``gap_b = |mean_{B_b} a_T − mean_{B_b} a_S|``;
    ``mr4_eca = Σ_b (|B_b|/N)·gap_b`` (expected calibration alignment);
    ``mr4_violation_rate = Σ_b (|B_b|/N)·[gap_b > eca_threshold]``.

    Per sample (for ``any_violation``): ``i`` violates MR4 when its bin violates *and*
    its own gap ``|a_T,i − a_S,i|`` exceeds ``eca_threshold``, i.e. when it contributes
    to its bin's misalignment. Giving every member the bin's verdict would mark nearly
    every sample of a confident teacher (most fall in the top bin) as soon as a few
    disagreements pull that bin's mean apart, even samples the student matches exactly.
    ``mr4_bin_violation`` keeps the bin's verdict per sample.
    """
    n = len(P_T)
    yT = predict(P_T)
    a_t = P_T[np.arange(n), yT]
    a_s = P_S[np.arange(n), yT]
    b = bin_index(a_t, calibration_bins)
    counts = np.bincount(b, minlength=calibration_bins)
    safe = np.maximum(counts, 1)
    gap = np.abs(np.bincount(b, a_t, calibration_bins) / safe - np.bincount(b, a_s, calibration_bins) / safe)
    weight = counts / n
    bad_bin = (gap > eca_threshold) & (counts > 0)
    return RelationResult(
        {"mr4_eca": float((weight * gap).sum()), "mr4_violation_rate": float(weight[bad_bin].sum())},
        {
            "mr4_bin": b,
            "mr4_bin_violation": bad_bin[b],
            "mr4_violation": bad_bin[b] & (np.abs(a_t - a_s) > eca_threshold),
            "mr4_teacher_conf": a_t,
            "mr4_student_conf_at_teacher": a_s,
        },
    )


def _judge(P_T: np.ndarray, P_S: np.ndarray, config: RelationConfig) -> RelationResult:
    return mr4_calibration_alignment(P_T, P_S, config.calibration_bins, config.eca_threshold)


def _statistics(c: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    """Per row, one-hot over the bins: the row itself, its ``a_T`` and its ``a_S``."""
    onehot = np.eye(config.calibration_bins)[np.asarray(c["mr4_bin"], dtype=np.int64)]
    a_t = np.asarray(c["mr4_teacher_conf"], dtype=np.float64)[:, None]
    a_s = np.asarray(c["mr4_student_conf_at_teacher"], dtype=np.float64)[:, None]
    return {"b_count": onehot, "b_at": onehot * a_t, "b_as": onehot * a_s}


def _gaps(t: Mapping[str, np.ndarray], config: RelationConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts = t["b_count"]
    safe = np.maximum(counts, 1.0)
    gap = np.abs(t["b_at"] / safe - t["b_as"] / safe)
    return counts, gap, (gap > config.eca_threshold) & (counts > 0)


def _compute(t: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    counts, gap, bad = _gaps(t, config)
    n = t["count"]
    return {"mr4_eca": (counts * gap).sum(axis=-1) / n, "mr4_violation_rate": (counts * bad).sum(axis=-1) / n}


def _candidates(c: Mapping[str, np.ndarray], config: RelationConfig) -> tuple[np.ndarray, np.ndarray]:
    a_t = np.asarray(c["mr4_teacher_conf"], dtype=np.float64)
    a_s = np.asarray(c["mr4_student_conf_at_teacher"], dtype=np.float64)
    return np.abs(a_t - a_s) > config.eca_threshold, np.asarray(c["mr4_bin"], dtype=np.int64)


MR4 = Relation(
    key="mr4",
    title="MR4 calibration alignment",
    doc=__doc__ or "",
    metrics=(
        RelationMetric(
            "mr4_eca",
            False,
            "MR4: expected calibration alignment, Σ_b |B_b|/N·|mean a_T − mean a_S| over bins of the teacher's "
            "confidence",
        ),
        RelationMetric(
            "mr4_violation_rate",
            False,
            "MR4: fraction of samples in bins whose alignment gap exceeds eca_threshold (0.05)",
        ),
    ),
    judge=_judge,
    statistics=_statistics,
    compute=_compute,
    columns=("mr4_bin", "mr4_teacher_conf", "mr4_student_conf_at_teacher"),
    params=(Param("calibration_bins", 10, 1, 1000, integer=True), Param("eca_threshold", 0.05)),
    slice_flag="mr4_bin_violation",
    verdict=CellVerdict(
        cells=lambda config: int(config.calibration_bins),
        candidates=_candidates,
        bad=lambda t, config: _gaps(t, config)[2],
    ),
)
