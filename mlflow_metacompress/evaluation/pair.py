"""The teacher and the student side by side: one prediction call returns both models'
probabilities on the same rows, the student's columns in the teacher's class order
(:mod:`.predict` puts them into the :class:`~.predictions.PredictionTable`).

The teacher is the oracle (MetaCompress, arXiv 2511.05476), so its class order is the
order of every probability table the evaluator writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..adapters.checks import align_classes
from .predictions import PairPredictions

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor


@dataclass(frozen=True)
class ModelPair:
    """The two models under comparison, as :class:`~mlflow_metacompress.adapters.predictors.Predictor` adapters."""

    teacher: Predictor
    student: Predictor
    code_columns: tuple[str, ...]
    # a retrained teacher (``evaluator_config["reference"]``): the deviation search runs it against the
    # teacher too (:mod:`.deviation_reference`); the relations judge it apart (:mod:`.reference`)
    reference: Predictor | None = None

    def predict(self, frame: pd.DataFrame) -> tuple[PairPredictions, list[str] | None]:
        """Both models on ``frame``; returns the predictions and the class names (None when unnamed)."""
        cols = list(self.code_columns)
        p_t, c_t = self.teacher.predict(frame, cols)
        p_s, c_s = self.student.predict(frame, cols)
        p_s, classes = align_classes(p_t, c_t, p_s, c_s)
        return PairPredictions(p_t, p_s), classes


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
