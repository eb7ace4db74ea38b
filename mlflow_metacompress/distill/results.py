"""Shared bookkeeping for teacher and student runs: the result object, test accuracy,
and registration with the metacompress tags.

Every registered version carries ``metacompress.method``, ``metacompress.size_mb``
(parameters × 4 bytes / 10^6, as in Compressor, Shi et al., ASE 2022; for a quantized
copy, the bytes its weights are stored in, :func:`..models.quantization.stored_bytes`,
which is the same number for float32 weights), ``metacompress.params``,
``metacompress.gflops`` and ``metacompress.teacher``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

TAG_PREFIX = "metacompress."


@dataclass
class TrainingResult:
    """What :func:`train_teacher` and :func:`distill_student` return."""

    model_uri: str
    run_id: str
    registered_name: str | None = None
    version: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


def accuracy_on(
    model: Any, tokenizer: Any, df: pd.DataFrame, code_columns: tuple[str, ...], label_column: str, batch_size: int = 64
) -> float:
    """Accuracy of ``model`` on ``df`` (argmax of the predicted probabilities)."""
    texts = [str(x) for x in df[code_columns[0]]]
    texts_b = [str(x) for x in df[code_columns[1]]] if len(code_columns) > 1 else None
    probs = model.predict_proba(tokenizer, texts, texts_b, batch_size=batch_size)
    return float(np.mean(probs.argmax(axis=1) == df[label_column].to_numpy()))


def log_json(obj: Any, artifact_file: str) -> None:
    """Log ``obj`` as a JSON artifact of the active run."""
    import mlflow

    mlflow.log_dict(obj, artifact_file)


def register(
    model: Any,
    tokenizer: Any,
    *,
    method: str,
    registered_name: str | None,
    code_columns: tuple[str, ...],
    teacher: str = "",
    extra_tags: dict[str, Any] | None = None,
) -> tuple[str, str | None, dict[str, float]]:
    """Log the classifier as a pyfunc model (an ONNX classifier with ``mlflow.onnx``) in the
    active run, register it under ``registered_name`` with the metacompress tags, and return
    ``(model_uri, version, measurements)``."""
    from ..models.pyfunc import log_code_classifier
    from .arch import measure_model

    sizes = measure_model(model)
    tags = {
        f"{TAG_PREFIX}method": method,
        f"{TAG_PREFIX}size_mb": f"{sizes['size_mb']:.4f}",
        f"{TAG_PREFIX}params": str(int(sizes["params"])),
        f"{TAG_PREFIX}gflops": f"{sizes['gflops']:.6f}",
    }
    if teacher:
        tags[f"{TAG_PREFIX}teacher"] = teacher
    tags.update({f"{TAG_PREFIX}{k}": str(v) for k, v in (extra_tags or {}).items()})
    if hasattr(model, "measurements"):  # an ONNX classifier (onnx-int8): logged as mlflow.onnx, as deployed
        from ..models.onnx_logging import log_onnx_classifier

        info = log_onnx_classifier(
            model.path, registered_model_name=registered_name, code_columns=list(code_columns), tags=tags
        )
    else:
        info = log_code_classifier(
            model, tokenizer, registered_model_name=registered_name, code_columns=list(code_columns), tags=tags
        )
    version = str(info.registered_model_version) if registered_name else None
    uri = f"models:/{registered_name}/{version}" if registered_name else info.model_uri
    logger.info("logged %s model %s (%.3f MB, %.4f GFLOPs)", method, uri, sizes["size_mb"], sizes["gflops"])
    return uri, version, sizes
