"""What a saved :class:`~.classifier.CodeClassifier` needs besides its weights.

Saved layout (``CodeClassifier.save``): ``encoder/`` (``save_pretrained``), ``tokenizer/``,
``head.pt`` and ``metacompress.json`` (:data:`META_FILE`: a :class:`ClassifierMeta` with the
labels, pair mode and max length). A quantized classifier (:mod:`.quantization`) keeps
only the encoder's config in ``encoder/`` and its quantized state dict in ``quantized.pt``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PairMode = Literal["concat_cls", "single_sequence", "siamese"]  # batching.PAIR_MODES, as a type
META_FILE = "metacompress.json"


@dataclass
class ClassifierMeta:
    """What a saved classifier needs besides its weights."""

    labels: list[str] = field(default_factory=lambda: ["0", "1"])
    pair_mode: PairMode | None = None
    max_length: int = 256
    extra: dict[str, Any] = field(default_factory=dict)
