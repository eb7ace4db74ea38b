"""Turn a searched :class:`~..arch.ArchSpec` into a tokenizer and a student.

The tokenizer of the spec's kind (BPE, WordPiece or Unigram, as AVATAR searches them;
Shi et al., ICSE-SEIS 2024) is trained on the task code; the student is built with the
vocabulary the tokenizer actually reached (:meth:`.arch.ArchSpec.build`: RoBERTa for
absolute positions, ESM-style for rotary ones). GFLOPs are those of the RoBERTa
equivalent (:meth:`.arch.ArchSpec.gflops`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..arch import ArchSpec, seeded
from ..context import StudentOutcome

if TYPE_CHECKING:
    from ..context import DistillContext
    from ..training import FitResult

logger = logging.getLogger(__name__)


def gflops(c: ArchSpec, num_labels: int = 2, pair_mode: str | None = None) -> float:
    """GFLOPs of ``c`` with ``num_labels`` classes and ``pair_mode``."""
    return replace(c, num_labels=num_labels, pair_mode=pair_mode).gflops()


def train_kind_tokenizer(texts: list[str], c: ArchSpec) -> Any:
    """A tokenizer of ``c.tokenizer`` kind with at most ``c.vocab_size`` entries."""
    from ...models.tokenizer import train_tokenizer

    # c.tokenizer is a plain str in the config; train_tokenizer refuses an unknown kind by name
    return train_tokenizer(
        texts,
        vocab_size=c.vocab_size,
        kind=c.tokenizer,  # type: ignore[arg-type]
        model_max_length=c.max_length,
    )


def materialise(
    texts: list[str],
    c: ArchSpec,
    labels: list[str],
    pair_mode: str | None = None,
    tokenizers: dict[tuple[str, int], Any] | None = None,
    seed: int | None = None,
) -> tuple[Any, Any, ArchSpec]:
    """``(model, tokenizer, spec)``: trains the tokenizer (memoised in ``tokenizers``)
    and builds the student with the vocabulary the tokenizer actually reached, for
    ``labels`` and ``pair_mode``, from initial weights fixed by ``seed`` (:func:`..arch.seeded`)."""
    key = (c.tokenizer, c.vocab_size)
    cache = tokenizers if tokenizers is not None else {}
    if key not in cache:
        cache[key] = train_kind_tokenizer(texts, c)
    tokenizer = cache[key]
    real = replace(c, vocab_size=len(tokenizer), num_labels=len(labels), pair_mode=pair_mode)
    with seeded(seed):
        model = real.build(labels, pad_token_id=tokenizer.pad_token_id)
    return model, tokenizer, real


def describe_student(
    ctx: DistillContext,
    method: str,
    built: tuple[Any, Any, Any],
    fit: FitResult | None,
    search: dict[str, Any],
    *,
    fallback: bool | None = None,
    **details: Any,
) -> StudentOutcome:
    """The :class:`StudentOutcome` of a searched student (AVATAR, MORPH, fidelity): ``built``
    is ``(model, tokenizer, config)`` of :func:`materialise`; the config JSON
    holds the method, the student's :class:`~..arch.ArchSpec`, the size target, its size and
    GFLOPs (:mod:`.space`, :func:`gflops`), the method's ``details``, the
    ``search_fallback`` flag when ``fallback`` is given, and the ``search`` record; the
    params are ``arch.<field>``."""
    from .objective import FALLBACK_KEY
    from .space import size_mb

    model, tokenizer, config = built
    k, pm = len(ctx.labels), ctx.pair_mode
    out: dict[str, Any] = {
        "method": method,
        "student": config.to_dict(),
        "target_size_mb": ctx.size_mb,
        "size_mb": size_mb(config, k, pm),
        "gflops": gflops(config, k, pm),
        **details,
    }
    if fallback is not None:
        out[FALLBACK_KEY] = fallback
    out["search"] = search
    params = {f"arch.{name}": v for name, v in config.to_dict().items()}
    return StudentOutcome(model, tokenizer, out, fit, params)
