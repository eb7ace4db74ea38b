"""Moved to the model-adapter layer, :mod:`mlflow_metacompress.adapters.hf_pipeline`; this
module keeps the old import path working."""

from __future__ import annotations

from ..adapters.hf_pipeline import (
    InputLimit,
    PipelineScorer,
    input_limit,
    is_label_score,
    is_text_classification,
    label_scores_to_array,
    load_scorer,
)

__all__ = [
    "InputLimit",
    "PipelineScorer",
    "input_limit",
    "is_label_score",
    "is_text_classification",
    "label_scores_to_array",
    "load_scorer",
]
