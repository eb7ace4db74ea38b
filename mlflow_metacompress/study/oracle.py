"""Teacher-as-oracle comparison with a real CodeBERT (the reproduction study).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) treats the teacher's predictions as
the oracle. ``unlabeled_codebert.txt`` carries the hard labels that the fine-tuned
CodeBERT teacher of Compressor (Shi et al., ASE 2022) predicted for the unlabelled half
of the BigCloneBench sample, so a student can also be judged against *that* teacher, on
pairs it never saw (:mod:`.data` holds them out of distillation). With hard
labels only, two numbers exist: MR1 (the share of rows whose predicted label differs
from CodeBERT's) and its complement, accuracy against CodeBERT's labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def bootstrap_mean(values: np.ndarray, samples: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (``samples`` resamples)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0 or samples < 1:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(samples, len(values)))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def codebert_metrics(
    student_pred: np.ndarray, teacher_pred: np.ndarray, codebert: np.ndarray, samples: int = 1000, seed: int = 0
) -> dict[str, float]:
    """MR1 against CodeBERT's labels (with a bootstrap interval), accuracy against them,
    and the same MR1 of our teacher and of the student against our teacher."""
    student_pred, teacher_pred, codebert = (np.asarray(a).astype(int) for a in (student_pred, teacher_pred, codebert))
    if not len(student_pred) == len(teacher_pred) == len(codebert):
        raise ValueError(
            f"codebert_metrics: {len(student_pred)} student, {len(teacher_pred)} teacher and "
            f"{len(codebert)} CodeBERT labels"
        )
    flips = (student_pred != codebert).astype(float)
    low, high = bootstrap_mean(flips, samples, seed)
    return {
        "codebert/mr1_violation_rate": float(flips.mean()),
        "codebert/mr1_violation_rate_ci_low": low,
        "codebert/mr1_violation_rate_ci_high": high,
        "codebert/student_accuracy": float(1 - flips.mean()),
        "codebert/teacher_mr1_violation_rate": float(np.mean(teacher_pred != codebert)),
        "codebert/student_teacher_mr1_violation_rate": float(np.mean(student_pred != teacher_pred)),
        "codebert/rows": float(len(codebert)),
    }


def codebert_agreement(
    student_uri: str,
    teacher_uri: str,
    oracle: pd.DataFrame,
    columns: Sequence[str],
    label: str,
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """:func:`codebert_metrics` of the pyfunc ``student_uri`` on ``oracle`` (CodeBERT's
    labels in ``label``); the teacher's outputs come from the soft-label cache."""
    import mlflow

    from ..distill.soft_labels import teacher_logits

    cols = list(columns)
    student: Any = mlflow.pyfunc.load_model(student_uri)
    student_pred = np.asarray(student.predict(oracle[cols]), dtype=float).argmax(axis=1)
    teacher_pred = teacher_logits(teacher_uri, oracle, cols).argmax(axis=1)
    return codebert_metrics(student_pred, teacher_pred, oracle[label].to_numpy(), samples, seed)
