"""A deterministic inference cost for the architecture searches: FLOPs, not the clock.

The ``latency`` objective of Compressor (Shi et al., ASE 2022) and AVATAR (Shi et al.,
ICSE-SEIS 2024) bounds a candidate's cost by that of the teacher-shaped student of the
same size (:mod:`.search.objective`). That cost used to be the latency predicted by a
model fitted to wall-clock timings on the machine at hand (:mod:`.latency`), so two runs
with one seed searched different architectures whenever the timings moved: two main
jobs with seed 0 on one machine chose Compressor students of 57,794 and 63,810
parameters, and the student's MR1 moved from 0.260 to 0.345 (issue 31).

:class:`FlopCost` counts the arithmetic of one encoder forward pass per sample instead.
It depends on the shape only, so it is the same on every machine and every run:

- **matrix products** (``gemm``), per layer: ``8·s·h²`` (query, key, value and output
  projections), ``4·s·h·f`` (the feed-forward network) and ``4·s²·h`` (``QKᵀ`` and the
  weighted values), the counts of ``torch.utils.flop_counter`` (2 FLOPs a
  multiply-add); plus the pooler, ``2·h²``;
- **element-wise work** (``other``), per layer: ``5·A·s²`` for the softmax of ``A``
  heads (max, subtract, exp, sum, divide), ``9·s·f`` for GELU and the FFN bias, and
  ``23·s·h`` for two LayerNorms, the residual adds and the biases; ``10·s·h`` for the
  embeddings' sum and LayerNorm. It is memory-bound on a CPU, so each of its FLOPs
  counts :data:`ELEMENTWISE_WEIGHT` matrix-product FLOPs (the shapes that made FLOPs a
  poor proxy, head dimension 2 or an FFN 64× the hidden size, pay for it here);
- **operator overhead**: :data:`LAYER_OVERHEAD` FLOP-equivalents per layer and batch
  (dispatching a layer's ~20 operators), shared by the ``batch_size`` rows of a batch.

The two constants were fitted once (``benchmarks/bench_distill.py --cost-fit``) to the
measured latencies of :data:`.latency.CALIBRATION`'s shapes on a shared 2-core AMD EPYC
(sequence lengths 64 and 256, batch 16, 1 and 2 threads: element-wise weight 18–47,
overhead 0–2·10⁸ per layer and batch, the GEMMs at 100–250 GFLOP/s) and rounded; they
are constants of the code, not of the machine. The measured latency stays a reported
number (the ``metacompress.latency_ms`` tag, :mod:`.speed`), and ``cost="measured"``
still searches with :mod:`.latency`'s fitted latency model for those who want the
machine's own (non-reproducible) figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from .arch import ArchSpec

COSTS = ("flops", "measured")
ELEMENTWISE_WEIGHT = 24.0  # matrix-product FLOPs one element-wise FLOP costs on a CPU (fitted once, rounded)
LAYER_OVERHEAD = 2.0e7  # FLOP-equivalents of dispatching one layer's operators, per batch (fitted once, rounded)


class SearchCost(Protocol):
    """What a latency search bounds: :class:`FlopCost` or a measured :class:`.latency_fit.LatencyModel`."""

    name: ClassVar[str]  # "flops" or "measured"
    unit: ClassVar[str]  # "MFLOP" or "ms"

    def cost(self, spec: ArchSpec) -> float: ...


def check_cost(cost: str) -> str:
    """``cost`` when it is one of :data:`COSTS`, else ``ValueError`` naming the option."""
    if cost not in COSTS:
        raise ValueError(f"cost must be one of {COSTS}, got {cost!r}")
    return cost


def terms(spec: ArchSpec, seq_len: int | None = None) -> tuple[float, float, float]:
    """``(gemm, other, layers)`` of one sample of ``seq_len`` tokens (default: the
    spec's ``max_length``): matrix-product FLOPs, element-wise FLOPs, layer count."""
    s = float(seq_len or spec.max_length)
    L, h, A, f = (
        float(spec.num_hidden_layers),
        float(spec.hidden_size),
        float(spec.num_attention_heads),
        float(spec.intermediate_size),
    )
    gemm = L * (8 * s * h * h + 4 * s * h * f + 4 * s * s * h) + 2 * h * h
    other = L * (5 * A * s * s + 9 * s * f + 23 * s * h) + 10 * s * h
    return gemm, other, L


@dataclass(frozen=True)
class FlopCost:
    """Per-sample cost in MFLOP-equivalents (module docstring) at ``batch_size``."""

    batch_size: int = 16
    name: ClassVar[str] = "flops"
    unit: ClassVar[str] = "MFLOP"

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"FlopCost.batch_size must be at least 1, got {self.batch_size}")

    def cost(self, spec: ArchSpec) -> float:
        """The cost of ``spec`` at its own ``max_length``; equal for equal shapes, everywhere."""
        gemm, other, layers = terms(spec)
        total = gemm + ELEMENTWISE_WEIGHT * other + LAYER_OVERHEAD * layers / self.batch_size
        return round(total / 1e6, 6)


def search_cost(
    cost: str, seq_len: int, batch_size: int, *, cache_dir: Any = None, progress: bool = False
) -> SearchCost:
    """The cost a latency search bounds: ``"flops"`` (default of the methods) is
    :class:`FlopCost`; ``"measured"`` is this machine's cached, fitted
    :func:`.latency.latency_model` at ``seq_len`` × ``batch_size`` (not reproducible
    across machines or when its cache is cleared)."""
    if check_cost(cost) == "flops":
        return FlopCost(batch_size)
    from .latency import latency_model

    return latency_model(seq_len, batch_size, cache_dir=cache_dir, progress=progress)
