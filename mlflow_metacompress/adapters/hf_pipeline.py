"""Hugging Face text-classification pipelines logged with ``mlflow.transformers``, as
teacher or student, with every class's score.

MLflow's pyfunc wrapper of such a pipeline accepts only ``text``/``text_pair`` columns
and, depending on how it was logged, returns only the top label and its score (no
``top_k``, or ``top_k=None`` on the pipeline object, which MLflow does not keep) or a
DataFrame of ``{label, score}`` cells (``model_config={"top_k": None}``). MetaCompress
(arXiv 2511.05476) compares the teacher's and the student's full output distributions
(MR2's KL divergence, MR4's calibration), so neither is enough. :class:`PipelineScorer`
calls the pipeline itself instead: the first code column becomes ``text``, the second
(clone pairs) ``text_pair``, and it asks for all scores (``top_k=None``). Columns come
back in the model's label-id order (``config.id2label``), so labels are matched by name
between teacher and student, and integer targets are read as the teacher's label ids.

**Long code is cut to the model's real limit** (:func:`input_limit`): ``truncation=True``
alone truncates to the tokenizer's ``model_max_length``, which ``transformers`` sets to a
sentinel of about 1e30 when the tokenizer does not say (common for tokenizers trained with
``tokenizers``), so nothing is cut and the position embeddings overflow. The limit is the
tokenizer's ``model_max_length`` when it is set, otherwise the model's
``max_position_embeddings`` minus its position offset (RoBERTa numbers positions from
``padding_idx + 1``, so 514 embeddings hold 512 tokens); a tokenizer limit above what the
model's positions hold is capped to them. It is passed as ``max_length`` with
``truncation=True`` and recorded in ``summary.json`` (``input_limits``). Input that still
cannot run is a :class:`MetaCompressInputError` naming the limit.

``transformers`` is imported only when a pipeline is actually loaded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .checks import MetaCompressInputError

logger = logging.getLogger(__name__)

FLAVOR = "transformers"
TASKS = ("text-classification", "sentiment-analysis")  # the second is transformers' alias of the first
PIPELINE_TYPES = ("TextClassificationPipeline",)
# transformers' "no limit" sentinel for model_max_length is int(1e30); any value this large means unset
UNSET_MAX_LENGTH = 10**12

__all__ = [
    "InputLimit",
    "PipelineScorer",
    "input_limit",
    "is_label_score",
    "is_text_classification",
    "label_scores_to_array",
    "load_scorer",
]


@dataclass(frozen=True)
class InputLimit:
    """The most tokens a pipeline's model takes, and where that number comes from.

    ``source`` is ``"tokenizer.model_max_length"``, ``"model.max_position_embeddings"``
    (minus ``position_offset``), ``"model_config.max_length"`` (the logged model's
    ``model_config`` asks for fewer tokens) or ``"unknown"`` (``max_length`` None: nothing is cut)."""

    max_length: int | None
    source: str
    model_max_length: int | None = None
    max_position_embeddings: int | None = None
    position_offset: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or k == "max_length"}

    def describe(self) -> str:
        if self.max_length is None:
            return (
                "no input limit is known (the tokenizer sets no model_max_length and the model config no "
                "max_position_embeddings); set the tokenizer's model_max_length"
            )
        if self.source == "tokenizer.model_max_length":
            return f"input limit {self.max_length} tokens (the tokenizer's model_max_length)"
        if self.source == "model_config.max_length":
            return f"input limit {self.max_length} tokens (max_length in the logged model_config)"
        return (
            f"input limit {self.max_length} tokens (the model's max_position_embeddings {self.max_position_embeddings} "
            f"minus position offset {self.position_offset})"
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _position_offset(model: Any) -> int:
    """Positions the model's embeddings reserve below the first token: RoBERTa-style
    embeddings number positions from ``padding_idx + 1`` (``padding_idx`` is the pad token id)."""
    base = getattr(model, "base_model", model)
    embeddings = getattr(base, "embeddings", None)
    pad = getattr(embeddings, "padding_idx", None)
    if isinstance(pad, int) and pad >= 0 and hasattr(embeddings, "position_embeddings"):
        return pad + 1
    return 0


def input_limit(pipeline: Any) -> InputLimit:
    """The model's real input limit in tokens (module docstring): the tokenizer's
    ``model_max_length`` when set (below ~1e12), else ``max_position_embeddings`` minus the
    position offset; a tokenizer limit above the model's positions is capped to them."""
    tokenizer_limit = _int(getattr(getattr(pipeline, "tokenizer", None), "model_max_length", None))
    if tokenizer_limit is not None and tokenizer_limit >= UNSET_MAX_LENGTH:
        tokenizer_limit = None
    model = getattr(pipeline, "model", None)
    positions = _int(getattr(getattr(model, "config", None), "max_position_embeddings", None))
    offset = _position_offset(model) if positions is not None else None
    capacity = positions - offset if positions is not None and offset is not None and positions > offset else None
    if tokenizer_limit is not None and (capacity is None or tokenizer_limit <= capacity):
        return InputLimit(tokenizer_limit, "tokenizer.model_max_length", model_max_length=tokenizer_limit)
    if capacity is not None:
        if tokenizer_limit is not None:
            logger.warning(
                "the tokenizer's model_max_length %d exceeds the %d tokens the model's positions hold "
                "(max_position_embeddings %d - offset %d): cutting inputs to %d",
                tokenizer_limit,
                capacity,
                positions,
                offset,
                capacity,
            )
        return InputLimit(
            capacity,
            "model.max_position_embeddings",
            model_max_length=tokenizer_limit,
            max_position_embeddings=positions,
            position_offset=offset,
        )
    return InputLimit(None, "unknown")


def is_text_classification(model: Any, who: str = "model") -> bool:
    """Whether ``model`` (a ``PyFuncModel``) was logged by ``mlflow.transformers`` as a
    text-classification pipeline (read from its MLmodel's ``transformers`` flavor).

    A transformers pipeline of another task is refused, naming the task.
    """
    try:
        flavor = model.metadata.flavors.get(FLAVOR)
    except AttributeError:
        return False
    if not isinstance(flavor, dict):
        return False
    if flavor.get("task") in TASKS or flavor.get("instance_type") in PIPELINE_TYPES:
        return True
    raise MetaCompressInputError(
        f"{who} is a transformers {flavor.get('task') or flavor.get('instance_type')!r} pipeline; metacompress "
        "compares classifiers and reads text-classification pipelines (log one with task 'text-classification')"
    )


def load_scorer(model: Any, uri: str | None, who: str) -> PipelineScorer:
    """The pipeline behind a transformers-flavor ``PyFuncModel``, ready to score DataFrames.

    The pipeline MLflow already loaded is reused (``get_raw_model``); otherwise it is loaded
    with ``mlflow.transformers.load_model`` from ``uri`` (or the model's id / run).
    """
    pipeline = _raw_pipeline(model)
    if pipeline is None:
        import mlflow

        from .._optional import require

        require("transformers", "Hugging Face pipelines", "models")

        source = uri or _model_uri(model)
        if source is None:
            raise MetaCompressInputError(
                f"{who} is a transformers pipeline, but its location is unknown: pass its models:/ or runs:/ URI"
            )
        try:
            pipeline = mlflow.transformers.load_model(source)
        except Exception as exc:
            raise MetaCompressInputError(f"{who}: cannot load the transformers pipeline at {source!r}: {exc}") from exc
    config: dict[str, Any] = {}
    try:
        config = dict(model.model_config or {})
    except Exception:
        pass
    return PipelineScorer(pipeline, who, config)


def _raw_pipeline(model: Any) -> Any:
    try:
        raw = model.get_raw_model()
    except Exception:
        return None
    return raw if callable(raw) and hasattr(raw, "model") and hasattr(raw, "tokenizer") else None


def _model_uri(model: Any) -> str | None:
    meta = getattr(model, "metadata", None)
    model_id = getattr(meta, "model_id", None)
    if model_id:
        return f"models:/{model_id}"
    run_id, path = getattr(meta, "run_id", None), getattr(meta, "artifact_path", None)
    if run_id and path:
        return f"runs:/{run_id}/{path}"
    return None


class PipelineScorer:
    """``DataFrame → DataFrame`` of class probabilities, one column per label in label-id order.

    The frame's first column is the pipeline's ``text``, its second (if any) ``text_pair``.
    ``model_config`` (from the logged model) is passed on, with ``top_k=None``,
    ``truncation=True`` and ``max_length`` (:func:`input_limit`) forced so every class is
    scored and long code is cut to the model's maximum length instead of failing.
    """

    def __init__(self, pipeline: Any, who: str, model_config: dict[str, Any] | None = None) -> None:
        self.pipeline = pipeline
        self.who = who
        id2label = getattr(getattr(pipeline.model, "config", None), "id2label", None) or {}
        self.labels = [str(id2label[i]) for i in sorted(id2label, key=int)]
        if len(self.labels) < 2:
            raise MetaCompressInputError(
                f"{who} is a pipeline whose model scores {len(self.labels)} label(s) {self.labels}; "
                "metacompress needs a classifier with at least 2 labels (config.id2label)"
            )
        self.limit = input_limit(pipeline)
        given = _int((model_config or {}).get("max_length"))
        if given is not None and (self.limit.max_length is None or given < self.limit.max_length):
            self.limit = InputLimit(given, "model_config.max_length")  # the logged model asks for less
        self.call_kwargs = {**(model_config or {}), "top_k": None, "truncation": True}
        if self.limit.max_length is not None:
            self.call_kwargs["max_length"] = self.limit.max_length
        tokenizer = getattr(pipeline, "tokenizer", None)
        self.can_batch = getattr(tokenizer, "pad_token_id", None) is not None

    def __call__(self, frame: pd.DataFrame) -> pd.DataFrame:
        if frame.shape[1] not in (1, 2):
            raise MetaCompressInputError(
                f"{self.who}: a text-classification pipeline takes one code column (text) or two (text, text_pair); "
                f"got {list(frame.columns)}"
            )
        texts = frame.iloc[:, 0].tolist()
        if frame.shape[1] == 2:
            inputs: list[Any] = [
                {"text": a, "text_pair": b} for a, b in zip(texts, frame.iloc[:, 1].tolist(), strict=True)
            ]
        else:
            inputs = texts
        kwargs = {"batch_size": max(1, len(inputs)) if self.can_batch else 1, **self.call_kwargs}
        try:
            out = self.pipeline(inputs, **kwargs)
        except (RuntimeError, IndexError) as exc:  # e.g. "index 130 is out of bounds" from the position embeddings
            first = (str(exc).strip().splitlines() or [""])[0]
            raise MetaCompressInputError(
                f"{self.who} cannot run on inputs of up to {self._longest(frame)} tokens: {self.limit.describe()}; "
                f"the model failed with {type(exc).__name__}: {first:.200}"
            ) from None
        if len(inputs) == 1 and out and isinstance(out[0], dict):  # one input: transformers returns its list unwrapped
            out = [out]
        probs, _ = label_scores_to_array(out, who=self.who, labels=self.labels)
        return pd.DataFrame(probs, columns=self.labels, index=frame.index)

    def _longest(self, frame: pd.DataFrame) -> str:
        """The longest input's token count (untruncated), for an error message."""
        try:
            columns = [frame.iloc[:, j].tolist() for j in range(frame.shape[1])]
            lengths = [len(ids) for ids in self.pipeline.tokenizer(*columns, truncation=False)["input_ids"]]
            return str(max(lengths))
        except Exception:
            return "?"


def is_label_score(item: Any) -> bool:
    """A pipeline's ``{label, score}`` dict, or a row (list) of them."""
    if isinstance(item, dict):
        return "label" in item and "score" in item
    return isinstance(item, (list, tuple)) and bool(item) and isinstance(item[0], dict) and "label" in item[0]


def label_scores_to_array(
    rows: Sequence[Any], who: str = "model", labels: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """``[[{label, score}, …], …]`` (each row in any order) → N×K scores, columns in
    ``labels`` order (sorted label names when not given). Every row must score every label."""
    rows = [list(r) if isinstance(r, (list, tuple)) else [r] for r in rows]
    for i, row in enumerate(rows):
        for cell in row:
            if not (isinstance(cell, dict) and "label" in cell and "score" in cell):
                raise MetaCompressInputError(
                    f"{who} output row {i} holds {type(cell).__name__} {cell!r:.80}; expected "
                    "{'label': <class name>, 'score': <probability>} entries, one per class"
                )
    names = list(labels) if labels is not None else sorted({str(d["label"]) for r in rows for d in r})
    idx = {name: j for j, name in enumerate(names)}
    out = np.zeros((len(rows), len(names)))
    for i, row in enumerate(rows):
        seen = {str(d["label"]) for d in row}
        if seen != set(names) or len(row) != len(names):
            raise MetaCompressInputError(
                f"{who} output row {i} scores the labels {[str(d['label']) for d in row]}, not every one of {names} "
                "once; a text-classification pipeline must return all class scores (top_k=None)"
            )
        for d in row:
            try:
                out[i, idx[str(d["label"])]] = float(d["score"])
            except (TypeError, ValueError):
                raise MetaCompressInputError(
                    f"{who} output row {i} gives label {d['label']!r} the score {d['score']!r:.40} "
                    f"({type(d['score']).__name__}); expected a probability"
                ) from None
    return out, names


def label_score_cells(frame: pd.DataFrame) -> list[list[Any]] | None:
    """The rows of a DataFrame whose cells are ``{label, score}`` dicts (MLflow's pyfunc
    output of a pipeline logged with ``model_config={"top_k": None}``), or None."""
    if frame.empty or not any(isinstance(v, dict) for v in frame.iloc[0].tolist()):
        return None
    return [[v for v in row if not _missing(v)] for row in frame.itertuples(index=False, name=None)]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
