"""The real input limit, in tokens, of a Hugging Face text-classification pipeline
(:mod:`.hf_pipeline`).

**Long code is cut to the model's real limit** (:func:`input_limit`): ``truncation=True``
alone truncates to the tokenizer's ``model_max_length``, which ``transformers`` sets to a
sentinel of about 1e30 when the tokenizer does not say (common for tokenizers trained with
``tokenizers``), so nothing is cut and the position embeddings overflow. The limit is the
tokenizer's ``model_max_length`` when it is set, otherwise the model's
``max_position_embeddings`` minus its position offset (RoBERTa numbers positions from
``padding_idx + 1``, so 514 embeddings hold 512 tokens); a tokenizer limit above what the
model's positions hold is capped to them. It is passed as ``max_length`` with
``truncation=True`` and recorded in ``summary.json`` (``input_limits``). Input that still
cannot run is a :class:`~.checks.MetaCompressInputError` naming the limit.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

logger = logging.getLogger(__name__)

# transformers' "no limit" sentinel for model_max_length is int(1e30); any value this large means unset
UNSET_MAX_LENGTH = 10**12


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


def positive_int(value: Any) -> int | None:
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
    tokenizer_limit = positive_int(getattr(getattr(pipeline, "tokenizer", None), "model_max_length", None))
    if tokenizer_limit is not None and tokenizer_limit >= UNSET_MAX_LENGTH:
        tokenizer_limit = None
    model = getattr(pipeline, "model", None)
    positions = positive_int(getattr(getattr(model, "config", None), "max_position_embeddings", None))
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
