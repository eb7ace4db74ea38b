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

Long code is cut to the model's real limit (:mod:`.input_limits`); input that still cannot
run is a :class:`MetaCompressInputError` naming the limit. ``{label, score}`` outputs are read
by :mod:`.label_scores`.

``transformers`` is imported only when a pipeline is actually loaded.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from .checks import MetaCompressInputError
from .input_limits import InputLimit, input_limit, positive_int
from .label_scores import label_scores_to_array

logger = logging.getLogger(__name__)

FLAVOR = "transformers"
TASKS = ("text-classification", "sentiment-analysis")  # the second is transformers' alias of the first
PIPELINE_TYPES = ("TextClassificationPipeline",)

__all__ = [
    "PipelineScorer",
    "is_text_classification",
    "load_scorer",
]


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
    ``truncation=True`` and ``max_length`` (:func:`~.input_limits.input_limit`) forced so every class is
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
        given = positive_int((model_config or {}).get("max_length"))
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
