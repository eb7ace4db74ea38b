"""``{label, score}`` outputs of a text-classification pipeline (as called by
:mod:`.hf_pipeline`, or MLflow's pyfunc output of one logged with
``model_config={"top_k": None}``) read as N×K class scores, every class scored once per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .checks import MetaCompressInputError


def is_label_score(item: Any) -> bool:
    """A pipeline's ``{label, score}`` dict, or a row (list) of them."""
    if isinstance(item, dict):
        return "label" in item and "score" in item
    return isinstance(item, (list, tuple)) and bool(item) and isinstance(item[0], dict) and "label" in item[0]


def label_scores_to_array(
    rows: Sequence[Any], who: str = "model", labels: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """``[[{label, score}, …], …]`` (each row in any order) → N×K scores, columns in
    ``labels`` order (sorted label names when not given). Every row must score every label."""
    rows = [list(r) if isinstance(r, (list, tuple)) else [r] for r in rows]
    for i, row in enumerate(rows):
        for cell in row:
            if not (isinstance(cell, dict) and "label" in cell and "score" in cell):
                raise MetaCompressInputError(
                    f"{who} output row {i} holds {type(cell).__name__} {cell!r:.80}; expected "
                    "{'label': <class name>, 'score': <probability>} entries, one per class"
                )
    names = list(labels) if labels is not None else sorted({str(d["label"]) for r in rows for d in r})
    idx = {name: j for j, name in enumerate(names)}
    out = np.zeros((len(rows), len(names)))
    for i, row in enumerate(rows):
        seen = {str(d["label"]) for d in row}
        if seen != set(names) or len(row) != len(names):
            raise MetaCompressInputError(
                f"{who} output row {i} scores the labels {[str(d['label']) for d in row]}, not every one of {names} "
                "once; a text-classification pipeline must return all class scores (top_k=None)"
            )
        for d in row:
            try:
                out[i, idx[str(d["label"])]] = float(d["score"])
            except (TypeError, ValueError):
                raise MetaCompressInputError(
                    f"{who} output row {i} gives label {d['label']!r} the score {d['score']!r:.40} "
                    f"({type(d['score']).__name__}); expected a probability"
                ) from None
    return out, names


def label_score_cells(frame: pd.DataFrame) -> list[list[Any]] | None:
    """The rows of a DataFrame whose cells are ``{label, score}`` dicts (MLflow's pyfunc
    output of a pipeline logged with ``model_config={"top_k": None}``), or None."""
    if frame.empty or not any(isinstance(v, dict) for v in frame.iloc[0].tolist()):
        return None
    return [[v for v in row if not _missing(v)] for row in frame.itertuples(index=False, name=None)]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
