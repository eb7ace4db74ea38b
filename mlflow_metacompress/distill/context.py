"""What a distillation method receives and returns.

A method (a module of :mod:`.methods`) is called as ``run(ctx, options)`` with a
:class:`DistillContext` and its parsed options, and returns a :class:`StudentOutcome`.
The teacher itself is deliberately absent from the context: its outputs arrive as
cached soft labels (:mod:`.soft_labels`), following Compressor's protocol (Shi et al.,
ASE 2022), so no teacher weights reach the optimiser or a checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .datasets import CodeExamples
    from .training import FitConfig, FitResult


@dataclass
class DistillContext:
    """Everything a method needs; the teacher itself is deliberately absent."""

    task: str
    code_columns: tuple[str, ...]
    unlabeled: CodeExamples  # texts + teacher_logits (no labels)
    valid: CodeExamples  # texts + labels (+ teacher_logits when computed)
    labels: list[str]
    pair_mode: str | None
    size_mb: float
    max_length: int
    fit_config: FitConfig
    seed: int = 0
    # for methods that label extra inputs (augmented variants) once, before training:
    teacher_uri: str = ""  # pinned teacher URI (for cached soft labels, never the training loop)
    cache_dir: Path | None = None  # where such teacher outputs are cached

    def corpus(self) -> list[str]:
        """Every unlabeled code text (both functions of a pair): what tokenizers learn from."""
        return self.unlabeled.texts + (self.unlabeled.texts_b or [])


@dataclass
class StudentOutcome:
    """A trained student plus what the method searched and how training went."""

    model: Any
    tokenizer: Any
    config: dict[str, Any]
    fit: FitResult | None = None
    params: dict[str, Any] = field(default_factory=dict)
