"""ONNX Runtime as the evaluator's and the attacks' inference backend.

Two cases reach ONNX Runtime (:class:`~mlflow_metacompress.models.onnx_runtime.OnnxClassifier`):

- a model logged with ``mlflow.onnx`` (fp32, or int8 from ``quantize_dynamic``; e.g. the
  ``onnx-int8`` method's students): always, since that is how it is deployed. Its file
  must carry the metacompress metadata (:mod:`mlflow_metacompress.models.onnx_export`),
  or it cannot tokenise code and the error says so;
- a ``CodeClassifier`` pyfunc (:func:`~mlflow_metacompress.models.pyfunc.log_code_classifier`)
  when ``inference="onnxruntime"`` (``evaluator_config["inference"]``, ``metacompress
  attack --inference``): exported once, cached by content
  (:func:`~mlflow_metacompress.models.onnx_export.cached_export`).

With ``inference="onnxruntime"`` the prediction cache's identity gets an
``|inference:onnxruntime`` suffix, so the two backends never read each other's entries.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from .checks import MetaCompressInputError

logger = logging.getLogger(__name__)

INFERENCES = ("torch", "onnxruntime")
SUFFIX = "|inference:onnxruntime"


def is_onnx_flavor(model: Any) -> bool:
    """A loaded MLflow model of the ``onnx`` flavor."""
    flavors = getattr(getattr(model, "metadata", None), "flavors", None)
    return isinstance(flavors, dict) and "onnx" in flavors


class OnnxPredict:
    """``DataFrame of code → DataFrame of class probabilities`` with an ONNX classifier
    (the first one or two columns, as its pair mode needs). ``predict`` is the same call,
    so timing code can treat it as a pyfunc."""

    def __init__(self, classifier: Any, name: str, batch_size: int = 32) -> None:
        self.classifier = classifier
        self.name = name
        self.batch_size = batch_size

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        need = 2 if self.classifier.pair_mode else 1
        if frame.shape[1] < need:
            raise MetaCompressInputError(
                f"{self.name} is a clone-pair classifier ({self.classifier.pair_mode}) and needs two code columns; "
                f"got {list(frame.columns)}"
            )
        texts = [str(x) for x in frame.iloc[:, 0]]
        texts_b = [str(x) for x in frame.iloc[:, 1]] if need == 2 else None
        probs = self.classifier.predict_proba(None, texts, texts_b, batch_size=self.batch_size)
        return pd.DataFrame(probs, columns=self.classifier.labels, index=frame.index)

    predict = __call__


def check_inference(value: Any, source: str = "inference") -> str:
    """``value`` if it names a backend (:data:`INFERENCES`), else ``ValueError`` naming ``source``."""
    if value not in INFERENCES:
        raise ValueError(f"{source} must be one of {list(INFERENCES)}; got {value!r}")
    return str(value)


def onnx_backend(model: Any, uri: str | None, name: str, inference: str, cache_dir: Any = None) -> Any:
    """``(predict, identity, labels)`` for running ``model`` on ONNX Runtime, from which
    :func:`~.predictors.resolve_model` builds its :class:`~.predictors.Predictor`; None
    when ``model`` runs in torch (``inference="torch"`` and not an ``mlflow.onnx`` model)."""
    from ..cache_keys import model_identity

    if is_onnx_flavor(model):
        classifier = _mlflow_onnx(model, uri, name)
        return OnnxPredict(classifier, name), model_identity(model, uri), classifier.labels
    if check_inference(inference) == "torch":
        return None
    classifier = _exported(model, name, cache_dir)
    identity = model_identity(model, uri) if hasattr(model, "metadata") else None
    return OnnxPredict(classifier, name), identity + SUFFIX if identity is not None else None, classifier.labels


def timed_model(model: Any, uri: Any = None) -> Any:
    """What answers ``predict(code DataFrame)`` for ``model``: itself, or for an
    ``mlflow.onnx`` model (whose own pyfunc takes token tensors) its :class:`OnnxPredict`."""
    if not is_onnx_flavor(model):
        return model
    return OnnxPredict(_mlflow_onnx(model, uri if isinstance(uri, str) else None, "model"), "model")


def _mlflow_onnx(model: Any, uri: str | None, name: str) -> Any:
    """The ONNX classifier of an ``mlflow.onnx`` model: from its file (sessions on the
    project's threads), else MLflow's own session."""
    from ..models.onnx_runtime import OnnxClassifier, onnx_file

    try:
        source = uri or _model_uri(model)
        if source is not None:
            import mlflow

            try:
                return OnnxClassifier(onnx_file(mlflow.artifacts.download_artifacts(artifact_uri=source)))
            except ValueError:
                raise
            except Exception as exc:  # the store is out of reach: MLflow's session still answers
                logger.info("%s: cannot fetch the ONNX file of %s (%s); using MLflow's session", name, source, exc)
        return OnnxClassifier(None, session=model.get_raw_model())
    except ValueError as exc:
        raise MetaCompressInputError(f"{name} is an mlflow.onnx model that metacompress cannot query: {exc}") from None


def _model_uri(model: Any) -> str | None:
    meta: Any = getattr(model, "metadata", None)
    if getattr(meta, "model_id", None):
        return f"models:/{meta.model_id}"
    if getattr(meta, "run_id", None) and getattr(meta, "artifact_path", None):
        return f"runs:/{meta.run_id}/{meta.artifact_path}"
    return None


def _exported(model: Any, name: str, cache_dir: Any) -> Any:
    """Export the ``CodeClassifier`` behind a metacompress pyfunc (cached) and open it."""
    from ..models.onnx_runtime import OnnxClassifier

    try:
        wrapped = model.unwrap_python_model()
    except Exception:
        wrapped = None
    classifier, tokenizer = getattr(wrapped, "_model", None), getattr(wrapped, "_tokenizer", None)
    if classifier is None:
        raise MetaCompressInputError(
            f"inference 'onnxruntime' runs metacompress code classifiers (log_code_classifier) and mlflow.onnx "
            f"models; {name} is a {type(wrapped if wrapped is not None else model).__name__}. Use inference 'torch'"
        )
    from ..models.onnx_export import cached_export

    try:
        path = cached_export(classifier, tokenizer, cache_dir)
    except ValueError as exc:
        raise MetaCompressInputError(f"{name} cannot run on ONNX Runtime: {exc}") from None
    return OnnxClassifier(path)
