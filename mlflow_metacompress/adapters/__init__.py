"""The model-adapter layer, below the evaluator and the attacks, which both use it:
anything a user passes as a model (a ``models:/`` or ``runs:/`` URI, a ``PyFuncModel``, a
text-classification pipeline logged with ``mlflow.transformers``, a callable) becomes a
:class:`~.predictors.Predictor` returning validated N×K class probabilities.

Modules: :mod:`.predictors` (the adapter, batching, the prediction cache keyed by the
model's identity, :func:`mlflow_metacompress.cache_keys.model_identity`), :mod:`.hf_pipeline`
(Hugging Face pipelines), :mod:`.model_refs` (URIs checked before anything loads),
:mod:`.checks` (probabilities, classes, labels; :class:`~.checks.MetaCompressInputError`),
:mod:`.timing` (two models timed side by side on known threads).

This package imports nothing of the evaluator, the attacks or the distillation.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_EXPORTS = {
    "MetaCompressInputError": "checks",
    "Predictor": "predictors",
    "check_model_uri": "model_refs",
    "resolve_model": "predictors",
    "side_by_side": "timing",
    "to_probabilities": "predictors",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
