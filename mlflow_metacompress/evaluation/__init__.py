"""The ``metacompress`` MLflow evaluator plugin, one arrow per module:

config (``evaluator_config`` resolved once, language detection included → frozen
:class:`~.config_model.EvaluatorConfig`) → validation → loop, in three steps: variants
(original, transformed and adversarial inputs, one interface) → predict (both models
through :mod:`mlflow_metacompress.adapters`, side by side in :mod:`.pair`, into the
:class:`~.predictions.PredictionTable`) → judge (every relation and metric from the table;
computes, never logs) → artifacts → evaluator (logs metrics and artifacts in one go).

Importing this package is light; the plugin class is loaded on first use.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "MetaCompressEvaluator": "evaluator",
    "MetaCompressInputError": ".adapters.checks",  # the package above: mlflow_metacompress.adapters.checks
    "EvaluatorConfig": "config_model",
    "PredictionTable": "predictions",
    "parse_config": "config",
    "run_evaluation": "loop",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
