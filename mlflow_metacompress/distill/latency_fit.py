"""The fitted per-sample latency law of :mod:`.latency`: the cost terms of one encoder layer
(:func:`features`: projections, FFN, attention products, softmax per head, element-wise
traffic, layers, a constant) and the :class:`LatencyModel` that weighs them, measured on
the target device as hardware-aware searches do (HAT, Wang et al., ACL 2020; nn-Meter,
Zhang et al., MobiSys 2021).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from .arch import ArchSpec

FORMAT = 1
TERMS = ("constant", "layers", "projections", "ffn", "attention", "softmax", "elementwise")


def features(spec: ArchSpec, seq_len: int | None = None) -> np.ndarray:
    """The cost terms of :data:`TERMS` for one sample of ``seq_len`` (default: the
    spec's ``max_length``) tokens, scaled to be of order one for typical students."""
    s = float(seq_len or spec.max_length)
    L, h, A, f = (
        float(spec.num_hidden_layers),
        float(spec.hidden_size),
        float(spec.num_attention_heads),
        float(spec.intermediate_size),
    )
    return np.array(
        [
            1.0,
            L,
            L * s * h * h / 1e7,
            L * s * h * f / 1e7,
            L * s * s * h / 1e7,
            L * A * s * s / 1e6,
            L * s * (h + f) / 1e5,
        ]
    )


@dataclass(frozen=True)
class LatencyModel:
    """Per-sample latency in ms = ``coef · features(spec)`` on ``device``."""

    coef: tuple[float, ...]
    device: str
    torch_version: str
    threads: int
    seq_len: int
    batch_size: int
    samples: tuple[tuple[dict[str, int], float], ...] = ()  # (shape, measured ms/sample)
    residual: float = 0.0  # relative RMS error of the fit on the calibration shapes
    name: ClassVar[str] = "measured"  # as a search cost (:mod:`.cost`): ``cost="measured"``
    unit: ClassVar[str] = "ms"

    def cost(self, spec: ArchSpec) -> float:
        """:meth:`predict_ms`, as a search cost (:class:`.cost.SearchCost`)."""
        return self.predict_ms(spec)

    def predict_ms(self, spec: ArchSpec) -> float:
        """Predicted per-sample latency (ms) of ``spec`` at its own ``max_length``."""
        return float(np.dot(self.coef, features(spec)))

    def predict_many(self, specs: Sequence[ArchSpec]) -> np.ndarray:
        return np.array([self.predict_ms(s) for s in specs], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "format": FORMAT, "terms": list(TERMS)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyModel:
        if data.get("format") != FORMAT or list(data.get("terms", [])) != list(TERMS):
            raise ValueError("latency model of another format")
        coef = tuple(float(c) for c in data["coef"])
        if len(coef) != len(TERMS) or not all(np.isfinite(coef)) or min(coef) < 0:
            raise ValueError(f"bad latency coefficients {coef}")
        samples = tuple((dict(shape), float(ms)) for shape, ms in data.get("samples", ()))
        return cls(
            coef,
            str(data["device"]),
            str(data["torch_version"]),
            int(data["threads"]),
            int(data["seq_len"]),
            int(data["batch_size"]),
            samples,
            float(data.get("residual", 0.0)),
        )
