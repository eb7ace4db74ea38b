"""Model adapters: anything a user may pass as teacher or student → N×K probabilities.

Accepted outputs (see :func:`to_probabilities`): a DataFrame with one column per class;
an (n, k) ndarray; a ``mlflow.transformers`` text-classification pipeline's list of
``{label, score}`` dicts (``top_k=None``); sklearn models logged with
``pyfunc_predict_fn="predict_proba"``. Inference runs in length-sorted batches with a
progress bar, and results are cached on disk keyed by the model's identity (logged-model
UUID, registry version or run id) and a hash of the input rows, so a second student
evaluated against the same teacher never runs the teacher again.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .validation import MetaCompressInputError, check_probabilities

logger = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path(os.environ.get("METACOMPRESS_CACHE_DIR", Path.home() / ".cache" / "mlflow-metacompress"))


def to_probabilities(output: Any, n_rows: int) -> tuple[np.ndarray, list[str] | None]:
    """Normalise one model output to ``(N×K array, class names or None)``."""
    if isinstance(output, pd.DataFrame):
        return output.to_numpy(dtype=np.float64), [str(c) for c in output.columns]
    if isinstance(output, pd.Series):
        output = output.tolist()
    if isinstance(output, list) and output and _is_label_score(output[0]):
        return _from_label_scores(output)
    arr = np.asarray(output)
    if arr.dtype == object:
        raise MetaCompressInputError(f"cannot read probabilities from a model output of type {type(output).__name__}: {output!r:.120}")
    if arr.ndim != 2:
        raise MetaCompressInputError(
            f"model output has shape {arr.shape}; metacompress needs class probabilities (N×K). "
            "Log sklearn models with pyfunc_predict_fn='predict_proba' and pipelines with top_k=None."
        )
    return arr.astype(np.float64), None


def _is_label_score(item: Any) -> bool:
    if isinstance(item, dict):
        return "label" in item and "score" in item
    return isinstance(item, list) and bool(item) and isinstance(item[0], dict) and "label" in item[0]


def _from_label_scores(rows: list[Any]) -> tuple[np.ndarray, list[str]]:
    """``[[{label, score}, …], …]`` (sorted by score) → columns in sorted label order."""
    rows = [r if isinstance(r, list) else [r] for r in rows]
    labels = sorted({str(d["label"]) for r in rows for d in r})
    idx = {lab: j for j, lab in enumerate(labels)}
    out = np.zeros((len(rows), len(labels)))
    for i, r in enumerate(rows):
        if len(r) != len(labels):
            raise MetaCompressInputError(f"pipeline output row {i} scores {len(r)} labels, not all {len(labels)}; log the pipeline with top_k=None")
        for d in r:
            out[i, idx[str(d["label"])]] = float(d["score"])
    return out, labels


def declared_classes(model: Any) -> list[str] | None:
    """Class names a logged model declares before it runs: sklearn's ``classes_``, or the
    output columns of its signature (our pyfunc's class-probability columns)."""
    classes = getattr(_raw_model(model), "classes_", None)
    if classes is not None:
        return [str(c) for c in classes]
    try:
        schema = model.metadata.get_output_schema()
        names = schema.input_names() if schema is not None else None
    except Exception:
        return None
    return [str(n) for n in names] if names and len(names) >= 2 and all(isinstance(n, str) for n in names) else None


def _raw_model(model: Any) -> Any:
    try:
        return model.get_raw_model()
    except Exception:
        return None


def model_identity(model: Any, uri: str | None = None) -> str | None:
    """A stable identity for caching, or None when the model has none (plain callables).

    Prefers the logged model's UUID (content identity: unchanged when the same model is
    reached through an alias or a version number), then its model id and run id.
    """
    meta = getattr(model, "metadata", None)
    if meta is not None:
        for attr in ("model_uuid", "model_id"):
            value = getattr(meta, attr, None)
            if value:
                return f"{attr}:{value}"
        if getattr(meta, "run_id", None):
            return f"run:{meta.run_id}:{getattr(meta, 'artifact_path', '')}"
    return f"uri:{uri}" if uri and not uri.startswith(("models:/", "runs:/")) else None


def rows_digest(df: pd.DataFrame, columns: list[str]) -> str:
    """SHA-256 over the given columns' values (order-sensitive)."""
    h = hashlib.sha256()
    h.update("\x1f".join(columns).encode())
    h.update(pd.util.hash_pandas_object(df[columns], index=False).to_numpy().tobytes())
    return h.hexdigest()


@dataclass
class Predictor:
    """A model as seen by the evaluator: ``predict(df) → (N×K probabilities, classes)``."""

    name: str
    fn: Callable[[pd.DataFrame], Any]
    identity: str | None = None
    classes: list[str] | None = None
    cache_dir: Path | None = DEFAULT_CACHE_DIR
    batch_size: int = 64
    progress: bool = True
    calls: int = field(default=0, init=False)
    rows_run: int = field(default=0, init=False)
    _memory: dict[str, tuple[np.ndarray, list[str] | None]] = field(default_factory=dict, init=False, repr=False)

    def predict(self, df: pd.DataFrame, code_columns: list[str]) -> tuple[np.ndarray, list[str] | None]:
        """Validated probabilities for every row of ``df`` (cached when possible)."""
        key = None
        if self.identity is not None:
            key = hashlib.sha256(f"{self.identity}|{rows_digest(df, code_columns)}".encode()).hexdigest()
            if key in self._memory:
                return self._memory[key]
            cached = self._load(key)
            if cached is not None:
                logger.info("%s: %d predictions read from the cache", self.name, len(df))
                self._memory[key] = cached
                return cached
        result = self._run(df, code_columns)
        if key is not None:
            self._memory[key] = result
            self._store(key, result)
        return result

    def uncached(self) -> Predictor:
        """The same model without disk cache or progress bar (attack queries cache themselves)."""
        return Predictor(self.name, self.fn, None, self.classes, cache_dir=None, batch_size=self.batch_size, progress=False)

    def _run(self, df: pd.DataFrame, code_columns: list[str]) -> tuple[np.ndarray, list[str] | None]:
        from tqdm.auto import tqdm

        frame = df[code_columns]
        order = np.argsort(frame[code_columns[0]].str.len().to_numpy(), kind="stable")
        parts: list[np.ndarray] = []
        classes: list[str] | None = None
        with tqdm(total=len(frame), desc=f"{self.name} inference", disable=not self.progress, leave=False) as bar:
            for start in range(0, len(frame), self.batch_size):
                chunk = frame.iloc[order[start : start + self.batch_size]]
                probs, names = to_probabilities(self.fn(chunk), len(chunk))
                check_probabilities(probs, self.name, len(chunk))
                if classes is None:
                    classes = names
                elif names is not None and names != classes:
                    probs = probs[:, [names.index(c) for c in classes]]
                parts.append(probs)
                self.calls += 1
                bar.update(len(chunk))
        self.rows_run += len(frame)
        out = np.empty((len(frame), parts[0].shape[1]))
        out[order] = np.concatenate(parts)
        probs = check_probabilities(out, self.name, len(frame))
        return probs, classes if classes is not None else self.classes

    def _path(self, key: str) -> Path | None:
        return self.cache_dir / f"{key}.npz" if self.cache_dir is not None else None

    def _load(self, key: str) -> tuple[np.ndarray, list[str] | None] | None:
        path = self._path(key)
        if path is None or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                classes = [str(c) for c in z["classes"]] if "classes" in z.files else None
                return z["probs"], classes
        except Exception as exc:  # a corrupt cache entry is recomputed, never trusted
            logger.warning("ignoring unreadable prediction cache %s: %s", path, exc)
            return None

    def _store(self, key: str, result: tuple[np.ndarray, list[str] | None]) -> None:
        path = self._path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {"probs": result[0]}
        if result[1] is not None:
            arrays["classes"] = np.asarray(result[1], dtype=str)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)


def resolve_model(model: Any, name: str, **kw: Any) -> Predictor:
    """Wrap a URI (``models:/``, ``runs:/``, any MLflow model path), a ``PyFuncModel`` or a
    callable ``DataFrame → probabilities`` as a :class:`Predictor`."""
    uri = model if isinstance(model, str) else None
    if isinstance(model, str):
        import mlflow

        try:
            model = mlflow.pyfunc.load_model(model)
        except Exception as exc:
            raise MetaCompressInputError(f"{name} model URI {uri!r} does not resolve: {exc}") from exc
    if hasattr(model, "predict") and hasattr(model, "metadata"):
        return Predictor(name, model.predict, model_identity(model, uri), declared_classes(model), **kw)
    if hasattr(model, "predict"):  # MLflow wraps a plain callable student in a metadata-less pyfunc
        return Predictor(name, model.predict, None, None, **kw)
    if callable(model):
        return Predictor(name, model, None, None, **kw)
    raise MetaCompressInputError(
        f"{name} must be a models:/ or runs:/ URI, a PyFuncModel or a callable returning probabilities; got {type(model).__name__}"
    )

