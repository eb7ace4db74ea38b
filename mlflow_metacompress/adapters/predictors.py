"""Model adapters: anything a user may pass as teacher or student → N×K probabilities.

Accepted outputs (see :func:`to_probabilities`): a DataFrame with one column per class;
an (n, k) ndarray; lists of ``{label, score}`` dicts scoring every class, or a DataFrame of
such cells; sklearn models logged with ``pyfunc_predict_fn="predict_proba"``. Anything else
is a :class:`MetaCompressInputError` naming what came back. A text-classification pipeline
logged with ``mlflow.transformers`` is called directly (:mod:`.hf_pipeline`): code columns
become ``text``/``text_pair`` and every class is scored, in the model's label-id order.
Inference runs in length-sorted batches with a progress bar, and results are kept in the
one cache (:mod:`mlflow_metacompress.cache`) keyed by the model's identity
(:func:`~mlflow_metacompress.cache_keys.model_identity`) and a digest of the input rows, so a
second student evaluated against the same teacher never runs the teacher again. A cached
entry is validated like fresh predictions before use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import cache, cache_keys
from ..cache_keys import model_identity, rows_digest
from .checks import MetaCompressInputError, check_probabilities
from .hf_pipeline import is_text_classification, load_scorer
from .label_scores import is_label_score, label_scores_to_array
from .output_frames import EXPECTED, from_frame, plain, sample_text

logger = logging.getLogger(__name__)

# The one cache location (:func:`mlflow_metacompress.cache.location`), resolved when used.
DEFAULT_CACHE_DIR = cache.DEFAULT
KIND = "predictions"

__all__ = [
    "DEFAULT_CACHE_DIR",
    "Predictor",
    "declared_classes",
    "model_identity",
    "resolve_model",
    "rows_digest",
    "to_probabilities",
]


def to_probabilities(output: Any, n_rows: int, who: str = "model") -> tuple[np.ndarray, list[str] | None]:
    """Normalise one model output to ``(N×K array, class names or None)``; anything else
    raises :class:`MetaCompressInputError` naming ``who``, the output's type and a sample."""
    if isinstance(output, pd.DataFrame):
        return from_frame(output, who)
    if isinstance(output, pd.Series):
        output = output.tolist()
    if isinstance(output, dict):
        raise MetaCompressInputError(f"{who} returned a dict with keys {list(output)[:5]!r:.80}; expected {EXPECTED}")
    if isinstance(output, (list, tuple)) and output and is_label_score(output[0]):
        return label_scores_to_array(list(output), who=who)
    try:
        arr = np.asarray(output)
    except ValueError:  # ragged rows
        raise MetaCompressInputError(
            f"{who} returned {type(output).__name__} rows of different lengths (first row {sample_text(output)}); "
            f"expected {EXPECTED}"
        ) from None
    if arr.dtype.kind not in "biuf":
        flat = arr.ravel()
        sample = flat[0] if flat.size else output
        sample = plain(sample)
        raise MetaCompressInputError(
            f"{who} returned {type(output).__name__} holding {type(sample).__name__} values such as {sample!r:.80}; "
            f"expected {EXPECTED}"
        )
    if arr.ndim != 2:
        raise MetaCompressInputError(
            f"{who} output has shape {arr.shape} (e.g. {sample_text(output)}); metacompress needs class probabilities "
            "(N×K). Log sklearn models with pyfunc_predict_fn='predict_proba' and pipelines with top_k=None."
        )
    return arr.astype(np.float64), None


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


def inference_precision(model: Any) -> str | None:
    """The precision a loaded metacompress ``CodeClassifier`` pyfunc predicts in now
    (``$METACOMPRESS_PRECISION``, else ``auto``: :mod:`mlflow_metacompress.precision`), or
    None for any other model (sklearn, a transformers model, a callable)."""
    try:
        python_model = model.unwrap_python_model()
    except Exception:
        return None
    from ..models.pyfunc import CodeClassifierPyfunc

    if not isinstance(python_model, CodeClassifierPyfunc) or getattr(python_model, "_model", None) is None:
        return None
    return python_model.precision()


def _raw_model(model: Any) -> Any:
    try:
        return model.get_raw_model()
    except Exception:
        return None


@dataclass
class Predictor:
    """A model as seen by the evaluator: ``predict(df) → (N×K probabilities, classes)``."""

    name: str
    fn: Callable[[pd.DataFrame], Any]
    identity: str | None = None
    classes: list[str] | None = None
    cache_dir: Path | str | cache.DefaultLocation | None = DEFAULT_CACHE_DIR  # None: no disk cache
    batch_size: int = 64
    progress: bool = True
    index_labels: bool = False  # class j is the model's label id j (integer targets may name it)
    input_limit: dict[str, Any] | None = None  # a pipeline's max input tokens and their source (InputLimit)
    # the resolved inference precision of a metacompress CodeClassifier pyfunc (fp32, bf16; precision.py), else None
    precision: str | None = None
    calls: int = field(default=0, init=False)
    rows_run: int = field(default=0, init=False)
    _memory: dict[str, tuple[np.ndarray, list[str] | None]] = field(default_factory=dict, init=False, repr=False)

    def predict(self, df: pd.DataFrame, code_columns: list[str]) -> tuple[np.ndarray, list[str] | None]:
        """Validated probabilities for every row of ``df`` (cached when possible)."""
        key = rows = None
        if self.identity is not None:
            rows = rows_digest(df, code_columns)
            key = cache_keys.entry_key(KIND, self.identity, rows)
            if key in self._memory:
                return self._memory[key]
            cached = self._load(key, rows, len(df))
            if cached is not None:
                logger.info("%s: %d predictions read from the cache", self.name, len(df))
                self._memory[key] = cached
                return cached
        result = self._run(df, code_columns)
        if key is not None and rows is not None:
            self._memory[key] = result
            self._store(key, rows, result)
        return result

    def uncached(self) -> Predictor:
        """The same model without disk cache or progress bar (attack queries cache themselves)."""
        return Predictor(
            self.name,
            self.fn,
            None,
            self.classes,
            cache_dir=None,
            batch_size=self.batch_size,
            progress=False,
            index_labels=self.index_labels,
            input_limit=self.input_limit,
            precision=self.precision,
        )

    def _run(self, df: pd.DataFrame, code_columns: list[str]) -> tuple[np.ndarray, list[str] | None]:
        from tqdm.auto import tqdm

        frame = df[code_columns]
        order = np.argsort(frame[code_columns[0]].str.len().to_numpy(), kind="stable")
        parts: list[np.ndarray] = []
        classes: list[str] | None = None
        with tqdm(total=len(frame), desc=f"{self.name} inference", disable=not self.progress, leave=False) as bar:
            for start in range(0, len(frame), self.batch_size):
                chunk = frame.iloc[order[start : start + self.batch_size]]
                probs, names = to_probabilities(self.fn(chunk), len(chunk), self.name)
                check_probabilities(probs, self.name, len(chunk))
                if parts and probs.shape[1] != parts[0].shape[1]:
                    raise MetaCompressInputError(
                        f"{self.name} scored {parts[0].shape[1]} classes ({classes}) on one batch and {probs.shape[1]} "
                        f"({names}) on another"
                    )
                if classes is None:
                    classes = names
                elif names is not None and names != classes:
                    if set(names) != set(classes):
                        raise MetaCompressInputError(
                            f"{self.name} named its classes {classes} on one batch and {names} on another"
                        )
                    probs = probs[:, [names.index(c) for c in classes]]
                parts.append(probs)
                self.calls += 1
                bar.update(len(chunk))
        self.rows_run += len(frame)
        out = np.empty((len(frame), parts[0].shape[1]))
        out[order] = np.concatenate(parts)
        probs = check_probabilities(out, self.name, len(frame))
        return probs, classes if classes is not None else self.classes

    def _load(self, key: str, rows: str, n_rows: int) -> tuple[np.ndarray, list[str] | None] | None:
        """The cached entry, checked like fresh predictions, or None (a bad entry is recomputed)."""
        if self.cache_dir is None:
            return None
        entry = cache.load(
            KIND, key, rows=rows, n_rows=n_rows, checks={"probs": "probabilities"}, cache_dir=self.cache_dir
        )
        if entry is None:
            return None
        classes = entry.classes
        if self.classes is not None and (classes is None or sorted(classes) != sorted(map(str, self.classes))):
            logger.warning(
                "discarding %s cache entry %s: classes %s differ from the model's %s",
                self.name,
                entry.path,
                classes,
                self.classes,
            )
            return None
        try:
            probs = check_probabilities(entry.arrays["probs"], f"cached {self.name}", n_rows)
        except MetaCompressInputError as exc:
            logger.warning("discarding %s cache entry %s: %s", self.name, entry.path, exc)
            return None
        return probs, classes

    def _store(self, key: str, rows: str, result: tuple[np.ndarray, list[str] | None]) -> None:
        if self.cache_dir is not None:
            cache.store(
                KIND,
                key,
                {"probs": result[0]},
                rows=rows,
                identity=self.identity or "",
                classes=result[1],
                cache_dir=self.cache_dir,
            )


def resolve_model(model: Any, name: str, inference: str = "torch", **kw: Any) -> Predictor:
    """Wrap a URI (``models:/``, ``runs:/``, any MLflow model path), a ``PyFuncModel`` or a
    callable ``DataFrame → probabilities`` as a :class:`Predictor`. A text-classification
    pipeline logged with ``mlflow.transformers`` is scored by calling the pipeline itself;
    an ``mlflow.onnx`` model, and with ``inference="onnxruntime"`` a code classifier, by
    ONNX Runtime (:mod:`.onnx`)."""
    uri = model if isinstance(model, str) else None
    if isinstance(model, str):
        import mlflow

        try:
            model = mlflow.pyfunc.load_model(model)
        except Exception as exc:
            from .model_refs import resolve_error

            raise resolve_error(model, name, exc) from exc
    from .onnx import onnx_backend

    on_onnx = onnx_backend(model, uri, name, inference, kw.get("cache_dir"))
    if on_onnx is not None:
        return Predictor(name, *on_onnx, **kw)
    if hasattr(model, "predict") and is_text_classification(model, name):
        scorer = load_scorer(model, uri, name)
        return Predictor(
            name,
            scorer,
            model_identity(model, uri),
            scorer.labels,
            index_labels=True,
            input_limit=scorer.limit.as_dict(),
            **kw,
        )
    if hasattr(model, "predict") and hasattr(model, "metadata"):
        identity, precision = model_identity(model, uri), inference_precision(model)
        if identity is not None and precision not in (None, "fp32"):  # bf16 probabilities are cached apart
            identity = f"{identity}|precision={precision}"
        return Predictor(name, model.predict, identity, declared_classes(model), precision=precision, **kw)
    if hasattr(model, "predict"):  # MLflow wraps a plain callable student in a metadata-less pyfunc
        return Predictor(name, model.predict, None, None, **kw)
    if callable(model):
        return Predictor(name, model, None, None, **kw)
    raise MetaCompressInputError(
        f"{name} must be a models:/ or runs:/ URI, a PyFuncModel or a callable returning probabilities; got "
        f"{type(model).__name__}"
    )
