"""Loading and inspecting the encoder of a :class:`~.classifier.CodeClassifier`: PyTorch's
fused attention (SDPA, through :mod:`.attention`'s kernel) where the architecture allows
it, no unused pooler, the padding id a batch is padded with, and the attention kernel a
loaded encoder runs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn
    from transformers import PreTrainedModel

logger = logging.getLogger(__name__)


def prefer_sdpa(config: Any, model_class: Any) -> None:
    """Ask for PyTorch's fused attention (``scaled_dot_product_attention``) where the
    model class supports it, through :mod:`.attention`'s kernel (SDPA, except for bf16 on a
    CPU); transformers ≥ 4.4x already defaults to SDPA, older ones to the eager kernel.
    Hidden states are unaffected; ``output_attentions`` falls back."""
    from .attention import register

    if getattr(model_class, "_supports_sdpa", False):
        try:
            config._attn_implementation = register()
        except (AttributeError, ValueError) as exc:  # read-only or refused on an old transformers
            logger.debug("cannot select SDPA attention: %s", exc)


def pad_id(tokenizer: Any, encoder: nn.Module) -> int:
    """The tokenizer's padding id, else the encoder config's."""
    pad = getattr(tokenizer, "pad_token_id", None)
    if pad is None:
        pad = getattr(encoder.config, "pad_token_id", None)
    if pad is None:
        raise ValueError(
            "the tokenizer has no pad token and the encoder config no pad_token_id; set tokenizer.pad_token"
        )
    return int(pad)


def load_encoder(auto: Any, path: Any) -> PreTrainedModel:
    """Load an encoder with SDPA attention (:mod:`.attention`'s kernel) and without the
    (unused) pooler, each where the architecture (and the installed transformers) allows it."""
    from transformers.utils import logging as hf_logging

    from .attention import register

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    kernel = register()
    attempts: list[dict[str, Any]] = [
        {"add_pooling_layer": False, "attn_implementation": kernel},
        {"attn_implementation": kernel},
        {"add_pooling_layer": False},
        {},
    ]
    try:
        for kwargs in attempts[:-1]:
            try:
                return auto.from_pretrained(path, **kwargs)
            except (TypeError, ValueError, ImportError) as exc:
                logger.debug("loading %s with %s failed (%s); trying without", path, kwargs, exc)
        return auto.from_pretrained(path)
    finally:
        hf_logging.set_verbosity(previous)


def attention_implementation(model: nn.Module) -> str | None:
    """The attention kernel family an encoder runs (``sdpa``, ``eager``, ...), if known."""
    encoder = getattr(model, "encoder", model)
    return getattr(getattr(encoder, "config", None), "_attn_implementation", None)
