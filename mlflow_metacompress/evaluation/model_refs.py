"""Moved to the model-adapter layer, :mod:`mlflow_metacompress.adapters.model_refs`; this
module keeps the old import path working."""

from __future__ import annotations

from ..adapters.model_refs import check_model_uri, resolve_error

__all__ = ["check_model_uri", "resolve_error"]
