"""A model's DataFrame output read as class probabilities (numeric class columns, or a
text-classification pipeline's ``{label, score}`` cells), and the wording of the errors
that name an output which is not class probabilities (:func:`~.predictors.to_probabilities`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .checks import MetaCompressInputError
from .label_scores import label_score_cells, label_scores_to_array

EXPECTED = (
    "class probabilities: a DataFrame with one numeric column per class, an N×K array, or a "
    "text-classification pipeline's {label, score} entries for every class"
)


def sample_text(output: Any) -> str:
    try:
        return f"{output[0]!r:.80}"
    except Exception:
        return f"{output!r:.80}"


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python value, so messages read ``0.9``, not ``np.float64(0.9)``."""
    return value.item() if isinstance(value, np.generic) else value


def from_frame(frame: pd.DataFrame, who: str) -> tuple[np.ndarray, list[str] | None]:
    """A DataFrame output: numeric class columns, or a pipeline's {label, score} cells."""
    if {"label", "score"} <= {str(c) for c in frame.columns} and len(frame):
        first = frame.iloc[0]
        raise MetaCompressInputError(
            f"{who} returned only its top label and score per row (columns {list(frame.columns)}; first row "
            f"label={plain(first['label'])!r}, score={plain(first['score'])!r}); expected {EXPECTED}. A pipeline "
            "logged with mlflow.transformers is called directly with top_k=None; other models must return every "
            "class's score"
        )
    rows = label_score_cells(frame)
    if rows is not None:
        return label_scores_to_array(rows, who=who)
    for col in frame.columns:
        values = frame[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            continue
        bad = ~values.map(
            lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        )
        if bad.any():
            pos = int(np.argmax(bad.to_numpy(dtype=bool)))
            value = plain(values.iloc[pos])
            raise MetaCompressInputError(
                f"{who} returned a DataFrame whose column {col!r} holds {type(value).__name__} {value!r:.80} (row "
                f"{pos}); expected {EXPECTED}"
            )
    return frame.to_numpy(dtype=np.float64), [str(c) for c in frame.columns]
