"""Architecture specs for RoBERTa-style students and teachers, with size and FLOPs.

Size follows Compressor (Shi et al., ASE 2022): parameters × 4 bytes, in MB of 10^6
bytes (``models.classifier.size_mb``). FLOPs are counted by
``torch.utils.flop_counter.FlopCounterMode`` on one full-length input of ``max_length``
tokens. Both are computed on the ``meta`` device, so no weights are allocated and the
search can evaluate hundreds of candidates per second.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models.classifier import CodeClassifier, PairMode


@dataclass(frozen=True)
class ArchSpec:
    """A RoBERTa-style encoder + classification head; hashable, JSON-friendly."""

    vocab_size: int = 8000
    num_hidden_layers: int = 2
    hidden_size: int = 64
    num_attention_heads: int = 2
    intermediate_size: int = 128
    max_length: int = 256
    num_labels: int = 2
    pair_mode: str | None = None
    hidden_act: str = "gelu"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "max_length"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"ArchSpec.{name} must be ≥ 1, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by num_attention_heads {self.num_attention_heads}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def build(self, labels: list[str] | None = None, dropout: float = 0.1) -> CodeClassifier:
        """A randomly initialised :class:`CodeClassifier` with this architecture."""
        from ..models.classifier import CodeClassifier

        labels = list(labels or [str(i) for i in range(self.num_labels)])
        if len(labels) != self.num_labels:
            raise ValueError(f"{len(labels)} labels given for an ArchSpec with num_labels={self.num_labels}")
        pair: PairMode | None = self.pair_mode  # type: ignore[assignment]
        return CodeClassifier.from_config(
            vocab_size=self.vocab_size, labels=labels, pair_mode=pair, hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers, num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size, max_length=self.max_length, hidden_act=self.hidden_act,
            dropout=dropout,
        )

    def parameter_count(self) -> int:
        return _measure(self)[0]

    def size_mb(self) -> float:
        """Parameters × 4 bytes / 10^6, as Compressor computes model size."""
        return self.parameter_count() * 4 / 1e6

    def gflops(self) -> float:
        """Forward GFLOPs for one input of ``max_length`` tokens (both inputs for pairs)."""
        return _measure(self)[1] / 1e9


def _measure(spec: ArchSpec) -> tuple[int, int]:
    """``(parameters, forward FLOPs)``.

    Neither depends on the number of heads; the vocabulary only adds
    ``vocab_size × hidden_size`` embedding parameters (a lookup costs no FLOPs); and
    every encoder layer is identical, so both grow linearly with the layer count. The
    counter therefore runs on one- and two-layer models per remaining shape, and the
    results are extrapolated exactly and shared through the cache.
    """
    ref = 8  # > pad_token_id
    shape = replace(spec, vocab_size=ref, num_attention_heads=1, num_hidden_layers=1)
    p1, f1 = _measure_shape(shape)
    p2, f2 = _measure_shape(replace(shape, num_hidden_layers=2))
    extra = spec.num_hidden_layers - 1
    return p1 + extra * (p2 - p1) + (spec.vocab_size - ref) * spec.hidden_size, f1 + extra * (f2 - f1)


@functools.lru_cache(maxsize=4096)
def _measure_shape(spec: ArchSpec) -> tuple[int, int]:
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.utils import logging as hf_logging

    from ..models.classifier import parameter_count

    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with torch.device("meta"):
            model = spec.build(dropout=0.0).eval()
        params = parameter_count(model)
        ids = torch.ones(1, spec.max_length, dtype=torch.long, device="meta")
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            # no attention mask: a full-length input, and meta tensors cannot be inspected
            inner = model.encoder(input_ids=ids).last_hidden_state[:, 0, :]
            if spec.pair_mode == "concat_cls":
                inner = torch.cat([inner, model.encoder(input_ids=ids).last_hidden_state[:, 0, :]], dim=-1)
            model.head(inner)
        return params, int(counter.get_total_flops())
    finally:
        hf_logging.set_verbosity(previous)


def spec_of(model: Any) -> ArchSpec:
    """The :class:`ArchSpec` of a RoBERTa-like :class:`CodeClassifier` (best effort for others)."""
    cfg = model.encoder.config
    return ArchSpec(
        vocab_size=cfg.vocab_size, num_hidden_layers=cfg.num_hidden_layers, hidden_size=cfg.hidden_size,
        num_attention_heads=cfg.num_attention_heads, intermediate_size=cfg.intermediate_size,
        max_length=model.meta.max_length, num_labels=model.num_labels, pair_mode=model.meta.pair_mode,
        hidden_act=str(getattr(cfg, "hidden_act", "gelu")),
    )


def measure_model(model: Any) -> dict[str, float]:
    """``params`` and ``size_mb`` of a built classifier, and the ``gflops`` of its
    RoBERTa-equivalent :class:`ArchSpec`.

    FLOPs are counted on the meta device because on real CPU tensors PyTorch's fused
    attention kernel is invisible to ``FlopCounterMode``, which would drop the
    attention FLOPs; on meta tensors the attention matmuls are counted.
    """
    from ..models.classifier import parameter_count, size_mb

    return {"params": float(parameter_count(model)), "size_mb": size_mb(model), "gflops": spec_of(model).gflops()}
