"""The outcome record of a post-training method (nothing trained): ``quantize`` and
``onnx-int8`` compress the teacher itself, and describe the result the same way."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .context import StudentOutcome

if TYPE_CHECKING:
    from .context import DistillContext

logger = logging.getLogger(__name__)


def post_training_outcome(
    ctx: DistillContext,
    method: str,
    teacher: Any,
    built: tuple[Any, Any],
    *,
    before: dict[str, float],
    after: dict[str, float],
    quantization: dict[str, Any] | None,
    gflops: float,
    params: dict[str, Any],
    action: str,
    **details: Any,
) -> StudentOutcome:
    """The :class:`StudentOutcome` of ``built`` (``(model, tokenizer)``), a compressed copy
    of ``teacher`` (pinned at ``ctx.teacher_uri``): its config JSON holds the method, the
    ``quantization``, the teacher's URI and :class:`~.arch.ArchSpec`, both sizes
    (``before`` and ``after``: :func:`.arch.measure_model`), their ratio, ``gflops``, the
    method's ``details`` and ``trained: False``; its params are ``arch.<field>`` plus
    ``params``. Logs ``action`` with the sizes."""
    from .arch import spec_of

    ratio = after["size_mb"] / before["size_mb"]
    logger.info(
        "%s (%s): %.3f MB → %.3f MB (%.2f×)", action, ctx.teacher_uri, before["size_mb"], after["size_mb"], ratio
    )
    arch = spec_of(teacher).to_dict()
    config: dict[str, Any] = {
        "method": method,
        "quantization": quantization,
        "teacher": ctx.teacher_uri,
        "arch": arch,
        "teacher_size_mb": before["size_mb"],
        "size_mb": after["size_mb"],
        "size_ratio": ratio,
        "gflops": gflops,
        **details,
        "trained": False,
    }
    model, tokenizer = built
    return StudentOutcome(model, tokenizer, config, None, {f"arch.{k}": v for k, v in arch.items()} | params)
