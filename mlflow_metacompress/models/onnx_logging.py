"""Log an exported classifier with MLflow's own ONNX flavor (``mlflow.onnx.log_model``).

That is the format teams deploy: any ONNX Runtime (or MLflow model server) can load it.
The ``.onnx`` file carries its tokenizer, labels and max length
(:mod:`.onnx_export`), so the metacompress evaluator judges it from code like any other
student or teacher (:mod:`mlflow_metacompress.adapters.onnx`). The MLmodel gets a tensor
signature (``int64`` token inputs with dynamic batch and sequence axes → ``logits``) and a
``metacompress`` metadata block (labels, pair mode, max length, code columns,
quantization) for people reading it; the file's own metadata is what the evaluator reads.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def signature(classifier: Any) -> Any:
    """Token tensors in (``-1 × -1`` int64 each), ``logits`` out (``-1 × K`` float32)."""
    import numpy as np
    from mlflow.models import ModelSignature
    from mlflow.types import Schema, TensorSpec

    inputs = Schema([TensorSpec(np.dtype("int64"), (-1, -1), name) for name in classifier.input_names])
    outputs = Schema([TensorSpec(np.dtype("float32"), (-1, classifier.num_labels), "logits")])
    return ModelSignature(inputs=inputs, outputs=outputs)


def log_onnx_classifier(
    onnx_path: str | Path,
    *,
    name: str = "model",
    registered_model_name: str | None = None,
    code_columns: list[str] | None = None,
    tags: dict[str, str] | None = None,
) -> Any:
    """Log the ONNX file at ``onnx_path`` (made by :mod:`.onnx_export`) with
    ``mlflow.onnx.log_model`` in the active run, registered as ``registered_model_name``
    when given (``tags`` go on that version). Returns MLflow's ``ModelInfo``."""
    import mlflow
    import onnx

    from .onnx_runtime import OnnxClassifier

    classifier = OnnxClassifier(onnx_path)
    metadata = {
        "metacompress": {
            "format": "onnx",
            "labels": classifier.labels,
            "pair_mode": classifier.pair_mode,
            "max_length": classifier.max_length,
            "code_columns": list(code_columns or (["func1", "func2"] if classifier.pair_mode else ["func"])),
            "quantization": classifier.quantization,
        }
    }
    info = mlflow.onnx.log_model(
        onnx.load(str(onnx_path)),
        name=name,
        registered_model_name=registered_model_name,
        signature=signature(classifier),
        metadata=metadata,
        pip_requirements=_requirements(),
        save_as_external_data=False,
        # int8 dynamic quantization runs ONNX Runtime's CPU integer kernels; a float model keeps MLflow's default list
        onnx_execution_providers=["CPUExecutionProvider"] if classifier.quantization else None,
    )
    if registered_model_name and tags:
        client = mlflow.MlflowClient()
        for key, value in tags.items():
            client.set_model_version_tag(registered_model_name, str(info.registered_model_version), key, str(value))
    return info


def _requirements() -> list[str]:
    from importlib.metadata import version

    reqs = []
    for pkg in ("mlflow", "onnx", "onnxruntime", "transformers", "tokenizers", "numpy"):
        try:
            reqs.append(f"{pkg}=={version(pkg)}")
        except Exception:
            reqs.append(pkg)
    return reqs
