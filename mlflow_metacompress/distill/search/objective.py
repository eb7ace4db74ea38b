"""What the architecture searches optimise, and what they do when the size band is empty.

Two objectives (option ``objective`` of Compressor and AVATAR):

- ``paper``: the published objectives, unchanged. Compressor (Shi et al., ASE 2022)
  maximises ``GFLOPs − |size − target|``; AVATAR (Shi et al., ICSE-SEIS 2024) minimises
  ``|size − target|``, ``−predicted accuracy`` and GFLOPs. On a CPU both reward
  memory-bound shapes (hidden 16 with an FFN of 2,304; head dimension 2) that run
  slower than the teacher.
- ``latency`` (the default): the same searches over *structurally sound* shapes (head
  dimension ≥ 16, hidden a multiple of the head count, FFN ≤ 4 × hidden, as in BERT,
  DistilBERT and TinyBERT) with a per-sample inference cost bounded by a budget:
  ``latency_slack`` × the cost of the teacher-shaped student of the same size
  (:mod:`.teacher_shaped`). The cost (option ``cost``, :mod:`..cost`) is
  ``"flops"`` by default, a deterministic FLOP count with memory-bound work weighted
  (the same architecture for one seed on every run and machine), or ``"measured"``,
  the latency predicted by the machine's fitted :class:`~..latency_fit.LatencyModel`.
  Compressor keeps its fitness inside the budget (the most computation that runs as fast
  as a standard small transformer); AVATAR replaces GFLOPs by the cost.

Both latency searches are warm-started with teacher-shaped students (AVATAR also with its
probed configurations), so small budgets (a population of 4 × 2 generations) no longer end
empty as a rule. When a search still finds nothing inside the size band (and, for AVATAR,
the latency budget), :func:`fallback` returns the nearest feasible
configuration instead of failing: the teacher-shaped student at the target when one
fits, else the evaluated candidate nearest the target size. The student is then tagged
``metacompress.search_fallback=true`` (:data:`FALLBACK_KEY` in the method's config).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..arch import ArchSpec
from .space import MAX_FFN_RATIO, MIN_HEAD_DIM, size_mb, structurally_sound

if TYPE_CHECKING:
    from ..cost import SearchCost

logger = logging.getLogger(__name__)

OBJECTIVES = ("latency", "paper")
FALLBACK_KEY = "search_fallback"  # key of a method's config → tag metacompress.search_fallback
__all__ = [
    "FALLBACK_KEY",
    "OBJECTIVES",
    "check_objective",
    "fallback",
    "latency_budget",
    "reference",
    "repair",
    "structurally_sound",
]


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return objective


def repair(values: dict[str, Any], heads: Sequence[int], ffn: Sequence[int]) -> dict[str, Any]:
    """``values`` made structurally sound: the largest head count of ``heads`` ≤ the
    gene's that divides the hidden size with a head dimension ≥ 16 (else the smallest
    allowed), and the largest FFN width of ``ffn`` ≤ the gene's and ≤ 4 × hidden."""
    h = values["hidden_size"]
    ok = [a for a in heads if h % a == 0 and h // a >= MIN_HEAD_DIM]
    below = [a for a in ok if a <= values["num_attention_heads"]]
    values["num_attention_heads"] = max(below) if below else (min(ok) if ok else 1)
    widths = [f for f in ffn if f <= min(values["intermediate_size"], MAX_FFN_RATIO * h)]
    values["intermediate_size"] = max(widths) if widths else min(ffn)
    return values


def reference(
    target_mb: float,
    *,
    num_labels: int = 2,
    pair_mode: str | None = None,
    max_length: int = 256,
    max_vocab: int = 46000,
    lower: float = 0.8,
) -> ArchSpec | None:
    """The teacher-shaped student at ``target_mb`` (vocabulary ≥ 1000, ≤ ``max_vocab``; size
    in ``[lower, 1] × target``), or None when none fits."""
    from .teacher_shaped import teacher_shaped

    for floor in (4000, 1000):
        try:
            return teacher_shaped(
                target_mb,
                num_labels=num_labels,
                pair_mode=pair_mode,
                max_length=max_length,
                min_vocab=min(floor, max_vocab),
                max_vocab=max_vocab,
                lower=lower,
            )
        except ValueError:
            continue
    return None


def latency_budget(
    model: SearchCost, target_mb: float, slack: float = 1.0, **shape: Any
) -> tuple[float, ArchSpec | None]:
    """``(budget per sample in the cost's unit, reference)``: ``slack`` × the cost
    (:mod:`..cost`: FLOPs, or predicted ms) of the teacher-shaped :func:`reference`
    student; unbounded (``inf``) when none fits."""
    if slack <= 0:
        raise ValueError(f"latency_slack must be > 0, got {slack}")
    ref = reference(target_mb, **shape)
    if ref is None:
        logger.warning("no teacher-shaped student fits %.2f MB; the latency objective has no budget", target_mb)
        return math.inf, None
    return slack * model.cost(ref), ref


def fallback(
    target_mb: float,
    candidates: Sequence[ArchSpec],
    *,
    num_labels: int = 2,
    pair_mode: str | None = None,
    max_length: int = 256,
    max_vocab: int = 46000,
    lower: float = 0.5,
    teacher_shaped_first: bool = True,
) -> tuple[ArchSpec, str]:
    """The nearest feasible configuration when a search found none in its size band:
    ``(config, "teacher_shaped")`` when a teacher-shaped student fits within
    ``[lower, 1] × target`` (and ``teacher_shaped_first``), else ``(candidate nearest
    the target size, "nearest")``. Logs a warning either way."""
    if teacher_shaped_first:
        ref = reference(
            target_mb, num_labels=num_labels, pair_mode=pair_mode, max_length=max_length, max_vocab=max_vocab
        )
        if ref is not None and lower * target_mb <= size_mb(ref, num_labels, pair_mode) <= target_mb:
            logger.warning(
                "the search found no configuration within the size band of %.2f MB; falling back to the "
                "teacher-shaped student %s",
                target_mb,
                ref,
            )
            return ref, "teacher_shaped"
    if not candidates:
        raise ValueError(f"no configuration fits {target_mb} MB and the search evaluated none; raise the target")
    best = min(candidates, key=lambda c: (abs(size_mb(c, num_labels, pair_mode) - target_mb), str(c)))
    best = replace(best, num_labels=num_labels, pair_mode=pair_mode)
    logger.warning(
        "the search found no configuration within the size band of %.2f MB; falling back to the "
        "candidate nearest the target (%.3f MB): %s",
        target_mb,
        size_mb(best, num_labels, pair_mode),
        best,
    )
    return best, "nearest"
