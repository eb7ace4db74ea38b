"""Metrics that need labels, beside the relations of MetaCompress (Awal, Rochan, Roy, arXiv
2511.05476): accuracy and its drop, F1, top-label ECE (Guo et al., ICML 2017) of both
models and MR4's labelled companion ``mr4_ece_gap``."""

from __future__ import annotations

import numpy as np

from .base import bin_index, predict


def expected_calibration_error(P: np.ndarray, y: np.ndarray, calibration_bins: int = 10) -> float:
    """Top-label ECE (Guo et al., ICML 2017): ``Σ_b (|B_b|/N)·|acc_b − conf_b|`` with
    ``conf_i = max_k P[i,k]``, equal-width bins ``min(⌊conf·B⌋, B−1)``."""
    conf = P.max(axis=1)
    correct = (predict(P) == y).astype(np.float64)
    b = bin_index(conf, calibration_bins)
    counts = np.bincount(b, minlength=calibration_bins)
    safe = np.maximum(counts, 1)
    gap = np.abs(np.bincount(b, correct, calibration_bins) / safe - np.bincount(b, conf, calibration_bins) / safe)
    return float((counts / len(P) * gap).sum())


def binary_f1(y: np.ndarray, pred: np.ndarray) -> float:
    """F1 with class 1 positive: ``2·TP / (2·TP + FP + FN)`` (0 when undefined)."""
    tp = float(((pred == 1) & (y == 1)).sum())
    denom = 2 * tp + float(((pred == 1) & (y != 1)).sum()) + float(((pred != 1) & (y == 1)).sum())
    return 2 * tp / denom if denom else 0.0


def labelled_metrics(P_T: np.ndarray, P_S: np.ndarray, y: np.ndarray, calibration_bins: int = 10) -> dict[str, float]:
    """Accuracy, accuracy drop (teacher − student), F1 (K = 2) and ECE of both models,
    and ``mr4_ece_gap = |student_ece − teacher_ece|``."""
    pT, pS = predict(P_T), predict(P_S)
    m = {"teacher_accuracy": float((pT == y).mean()), "student_accuracy": float((pS == y).mean())}
    m["accuracy_drop"] = m["teacher_accuracy"] - m["student_accuracy"]
    if P_T.shape[1] == 2:
        m["teacher_f1"], m["student_f1"] = binary_f1(y, pT), binary_f1(y, pS)
    m["teacher_ece"] = expected_calibration_error(P_T, y, calibration_bins)
    m["student_ece"] = expected_calibration_error(P_S, y, calibration_bins)
    m["mr4_ece_gap"] = abs(m["student_ece"] - m["teacher_ece"])
    return m
