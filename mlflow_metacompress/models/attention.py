"""The attention kernel of every encoder this project builds or loads: PyTorch's fused
``scaled_dot_product_attention`` (SDPA), except for bf16 on a CPU, where two plain matrix
products beat it.

Measured on this project's shapes (AMD EPYC with AVX512-BF16, one thread, forward and
backward; ``benchmarks/bench_cpu_efficiency.py`` reports it as ``attention``): under bf16
autocast, SDPA's CPU kernel runs 2-5× slower than ``softmax(q kᵀ) v`` for head sizes of 16-32
(the quick profile's teacher, 3 MB students) and no faster at 64 (the study's teacher),
so whole training steps were 1.24-1.48× slower with it than with the matrix products. In
fp32, SDPA is the faster of the two and stays.

The choice is made per call from the query's dtype and device, inside one kernel
registered with transformers' ``AttentionInterface`` as :data:`KERNEL` (and SDPA's mask
format with ``AttentionMaskInterface``). Nothing is toggled on a shared config, so
concurrent fp32 and bf16 calls on one model stay correct. The name is not saved with a
model (transformers keeps ``_attn_implementation`` out of ``config.json``): a saved
encoder loads anywhere with its default kernel.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

logger = logging.getLogger(__name__)

KERNEL = "metacompress_sdpa"
_registered = False


def matmul_path(query: torch.Tensor) -> bool:
    """Whether this call runs the matrix-product path: bf16 queries on a CPU."""
    return query.dtype == torch.bfloat16 and query.device.type == "cpu"


def attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' attention signature: ``(batch, heads, length, head size)`` in, the
    output as ``(batch, length, heads, head size)`` and no weights out. SDPA's masks
    (boolean, True = attend; or additive floats; or None) are read in both paths."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not matmul_path(query) or kwargs.get("output_attentions") or kwargs.get("softcap") is not None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    scale = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scale
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask.to(scores.dtype)
    weights = torch.nn.functional.softmax(scores, dim=-1)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), None


def register() -> str:
    """Register :data:`KERNEL` with transformers (once per process) and return its name;
    ``"sdpa"`` when this transformers has no attention registry."""
    global _registered
    if _registered:
        return KERNEL
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
    except ImportError as exc:  # transformers before the attention registry (4.48)
        logger.debug("no attention registry in this transformers (%s): plain SDPA", exc)
        return "sdpa"
    AttentionInterface.register(KERNEL, attention_forward)
    AttentionMaskInterface.register(KERNEL, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
    _registered = True
    return KERNEL
