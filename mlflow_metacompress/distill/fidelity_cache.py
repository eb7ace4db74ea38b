"""Teacher logits and last-layer ``[CLS]`` states for the ``fidelity`` method, computed
once per (teacher, inputs) and kept in the one cache (:mod:`mlflow_metacompress.cache`,
validated on load like fresh outputs); the teacher never enters training.

The teacher must be a logged :class:`~mlflow_metacompress.models.classifier.CodeClassifier`
(``models.pyfunc.log_code_classifier``), whose ``artifacts/hf`` folder holds the
encoder. The state is the first function's ``[CLS]`` vector (the head input for
single-function tasks).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import cache, cache_keys
from .datasets import CodeExamples
from .soft_labels import model_identity

if TYPE_CHECKING:
    from ..models.classifier import CodeClassifier

logger = logging.getLogger(__name__)
KIND = "fidelity"
VERSION = "fidelity-teacher-outputs-v2"
CHECKS: dict[str, cache.Check] = {"logits": "log_probabilities", "states": "finite"}


def _rows(examples: CodeExamples) -> str:
    return cache_keys.texts_digest([("texts", examples.texts), ("texts_b", examples.texts_b or [])])


def _key(uri: str, examples: CodeExamples) -> str:
    return cache_keys.entry_key(KIND, model_identity(uri), _rows(examples), VERSION)


def load_teacher_classifier(
    uri: str, needs: str = "the fidelity method needs its hidden states"
) -> tuple[CodeClassifier, Any]:
    """``(CodeClassifier, tokenizer)`` from a logged CodeClassifier pyfunc model; ``needs``
    ends the error when ``uri`` is not one (what the caller needs it for)."""
    import mlflow

    from ..models.classifier import CodeClassifier
    from ..models.meta import META_FILE

    root = Path(mlflow.artifacts.download_artifacts(uri))
    folder = root / "artifacts" / "hf"
    if not (folder / META_FILE).exists():
        raise ValueError(
            f"teacher {uri} is not a logged CodeClassifier (no {folder.relative_to(root)}/{META_FILE}); {needs}"
        )
    return CodeClassifier.load(folder)


def load_float_teacher(uri: str | None, method: str, needs: str, action: str) -> tuple[CodeClassifier, Any]:
    """:func:`load_teacher_classifier` for a method that copies the teacher's float weights
    (``quantize``, ``onnx-int8``): a clear error when ``uri`` is empty or names a teacher
    that is already quantized (``action`` says what to give it instead)."""
    if not uri:
        raise ValueError(f"the {method} method needs the teacher's URI (ctx.teacher_uri is empty)")
    teacher, tokenizer = load_teacher_classifier(uri, needs=needs)
    if teacher.meta.extra.get("quantization"):
        raise ValueError(f"teacher {uri} is already quantized ({teacher.meta.extra['quantization']}); {action}")
    return teacher, tokenizer


def teacher_outputs(
    uri: str,
    examples: CodeExamples,
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    progress: bool = False,
    *,
    use_cache: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """``(log-probabilities N×K, [CLS] states N×H)`` of the teacher on ``examples``.

    Cached under ``cache_dir``, or the one cache location when it is None;
    ``use_cache=False`` neither reads nor writes.
    """
    import torch

    key = rows = identity = None
    if use_cache:
        identity, rows = model_identity(uri), _rows(examples)
        key = cache_keys.entry_key(KIND, identity, rows, VERSION)
        hit = cache.load(KIND, key, rows=rows, n_rows=len(examples), checks=CHECKS, cache_dir=cache_dir)
        if hit is not None:
            logger.info("teacher states: cache hit %s", hit.path)
            return hit.arrays["logits"], hit.arrays["states"]
    from tqdm.auto import tqdm

    model, tokenizer = load_teacher_classifier(uri)
    n = len(examples)
    order = np.argsort([len(t) for t in examples.texts], kind="stable")
    logits = np.zeros((n, model.num_labels), dtype=np.float32)
    states: np.ndarray | None = None
    with torch.no_grad():
        for start in tqdm(range(0, n, batch_size), desc="teacher states", disable=not progress, leave=False):
            idx = order[start : start + batch_size]
            a = [examples.texts[i] for i in idx]
            b = [examples.texts_b[i] for i in idx] if examples.texts_b is not None else None
            out, hidden = model(**model.encode(tokenizer, a, b), output_hidden_states=True)
            cls = hidden[-1][:, 0, :].float().numpy()
            if states is None:
                states = np.zeros((n, cls.shape[1]), dtype=np.float32)
            logits[idx] = torch.log_softmax(out.float(), dim=-1).numpy()
            states[idx] = cls
    states = states if states is not None else np.zeros((0, 1), dtype=np.float32)
    if key is not None and rows is not None:
        cache.store(
            KIND, key, {"logits": logits, "states": states}, rows=rows, identity=identity or "", cache_dir=cache_dir
        )
    return logits, states
