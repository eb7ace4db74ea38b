"""The ``metacompress`` MLflow evaluator plugin, one arrow per module:

config (``evaluator_config`` resolved once, language detection included → frozen
:class:`~.config.EvaluatorConfig`) → validation → model adapters (models → N×K
probabilities, :mod:`mlflow_metacompress.adapters`) → pair (teacher and student side by side) → variants (original,
transformed and adversarial inputs, one interface) → engine (one loop: predict, judge,
collect per variant; computes, never logs) → artifacts → evaluator (logs metrics and
artifacts in one go).

Importing this package is light; the plugin class is loaded on first use.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "MetaCompressEvaluator": "evaluator",
    "MetaCompressInputError": "validation",
    "EvaluatorConfig": "config",
    "parse_config": "config",
    "run_evaluation": "engine",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
