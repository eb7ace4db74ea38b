"""Moved to the model-adapter layer, :mod:`mlflow_metacompress.adapters.predictors` (shared
with the attacks); this module keeps the old import path working."""

from __future__ import annotations

from ..adapters.predictors import (
    DEFAULT_CACHE_DIR,
    EXPECTED,
    KIND,
    Predictor,
    declared_classes,
    model_identity,
    resolve_model,
    rows_digest,
    to_probabilities,
)

__all__ = [
    "DEFAULT_CACHE_DIR",
    "EXPECTED",
    "KIND",
    "Predictor",
    "declared_classes",
    "model_identity",
    "resolve_model",
    "rows_digest",
    "to_probabilities",
]
