"""Teacher logits and last-layer ``[CLS]`` states for the ``fidelity`` method, computed
once per (teacher, inputs) and cached as ``.npz``; the teacher never enters training.

The teacher must be a logged :class:`~mlflow_metacompress.models.classifier.CodeClassifier`
(``models.pyfunc.log_code_classifier``), whose ``artifacts/hf`` folder holds the
encoder. The state is the first function's ``[CLS]`` vector (the head input for
single-function tasks).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import numpy as np

from .datasets import CodeExamples

logger = logging.getLogger(__name__)
VERSION = b"fidelity-teacher-outputs-v1"


def _key(uri: str, examples: CodeExamples) -> str:
    from .soft_labels import model_identity

    h = hashlib.sha256(VERSION + model_identity(uri).encode())
    for col in (examples.texts, examples.texts_b or []):
        h.update(b"\x00")
        for t in col:
            h.update(b"\x01" + t.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def load_teacher_classifier(uri: str) -> tuple[object, object]:
    """``(CodeClassifier, tokenizer)`` from a logged CodeClassifier pyfunc model."""
    import mlflow

    from ..models.classifier import META_FILE, CodeClassifier

    root = Path(mlflow.artifacts.download_artifacts(uri))
    folder = root / "artifacts" / "hf"
    if not (folder / META_FILE).exists():
        raise ValueError(f"teacher {uri} is not a logged CodeClassifier (no {folder.relative_to(root)}/{META_FILE}); "
                         "the fidelity method needs its hidden states")
    return CodeClassifier.load(folder)


def teacher_outputs(uri: str, examples: CodeExamples, cache_dir: str | Path | None, batch_size: int = 64,
                    progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(log-probabilities N×K, [CLS] states N×H)`` of the teacher on ``examples``."""
    import torch

    path = Path(cache_dir) / f"fidelity-{_key(uri, examples)}.npz" if cache_dir is not None else None
    if path is not None and path.exists():
        logger.info("teacher states: cache hit %s", path)
        data = np.load(path)
        return data["logits"], data["states"]
    from tqdm.auto import tqdm

    model, tokenizer = load_teacher_classifier(uri)
    n = len(examples)
    order = np.argsort([len(t) for t in examples.texts], kind="stable")
    logits = np.zeros((n, model.num_labels), dtype=np.float32)  # type: ignore[attr-defined]
    states: np.ndarray | None = None
    with torch.no_grad():
        for start in tqdm(range(0, n, batch_size), desc="teacher states", disable=not progress, leave=False):
            idx = order[start:start + batch_size]
            a = [examples.texts[i] for i in idx]
            b = [examples.texts_b[i] for i in idx] if examples.texts_b is not None else None
            out, hidden = model(**model.encode(tokenizer, a, b), output_hidden_states=True)  # type: ignore[operator]
            cls = hidden[-1][:, 0, :].float().numpy()
            if states is None:
                states = np.zeros((n, cls.shape[1]), dtype=np.float32)
            logits[idx] = torch.log_softmax(out.float(), dim=-1).numpy()
            states[idx] = cls
    states = states if states is not None else np.zeros((0, 1), dtype=np.float32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, logits=logits, states=states)
    return logits, states
