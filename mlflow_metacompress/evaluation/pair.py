"""The teacher and the student side by side: one prediction call returns both models'
probabilities on the same rows, the student's columns in the teacher's class order.

The teacher is the oracle (MetaCompress, arXiv 2511.05476), so its class order is the
order of every probability table the evaluator writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .validation import align_classes, check_probabilities

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from .config import EvaluatorConfig


@dataclass(frozen=True, eq=False)
class PairPredictions:
    """Teacher and student probabilities (N×K each, same rows, same class order)."""

    teacher: np.ndarray
    student: np.ndarray

    def __len__(self) -> int:
        return len(self.teacher)

    def take(self, positions: np.ndarray) -> PairPredictions:
        """The rows at ``positions``."""
        return PairPredictions(self.teacher[positions], self.student[positions])

    @staticmethod
    def concat(parts: list[PairPredictions]) -> PairPredictions:
        """Row-wise concatenation, in order."""
        return PairPredictions(np.concatenate([p.teacher for p in parts]), np.concatenate([p.student for p in parts]))


@dataclass(frozen=True)
class ModelPair:
    """The two models under comparison, as :class:`~mlflow_metacompress.adapters.predictors.Predictor` adapters."""

    teacher: Predictor
    student: Predictor
    code_columns: tuple[str, ...]

    def predict(self, frame: pd.DataFrame) -> tuple[PairPredictions, list[str] | None]:
        """Both models on ``frame``; returns the predictions and the class names (None when unnamed)."""
        cols = list(self.code_columns)
        p_t, c_t = self.teacher.predict(frame, cols)
        p_s, c_s = self.student.predict(frame, cols)
        p_s, classes = align_classes(p_t, c_t, p_s, c_s)
        return PairPredictions(p_t, p_s), classes


def static_predictions(df: pd.DataFrame, cfg: EvaluatorConfig) -> PairPredictions:
    """Static mode: probabilities read from columns already in the data; the i-th column of
    each list is class i (labels are class indices)."""
    t_cols, s_cols = list(cfg.teacher_prob_columns or ()), list(cfg.student_prob_columns or ())
    p_t = check_probabilities(df[t_cols].to_numpy(dtype=np.float64, na_value=np.nan), "teacher (static columns)")
    p_s = check_probabilities(df[s_cols].to_numpy(dtype=np.float64, na_value=np.nan), "student (static columns)")
    return PairPredictions(p_t, p_s)


def attack_victim(
    predictor: Predictor, code_columns: list[str], classes: list[str] | None
) -> Callable[[pd.DataFrame], np.ndarray]:
    """``predictor`` as an attack's victim: uncached (attacks cache their own queries), columns
    in the teacher's class order so the labels (teacher class indices) mean the same class."""
    fn = predictor.uncached()

    def predict(frame: pd.DataFrame) -> np.ndarray:
        probs, names = fn.predict(frame, code_columns)
        if classes is not None and names is not None and names != classes:
            probs = probs[:, [names.index(c) for c in classes]]
        return probs

    return predict
