"""Model size as Compressor (Shi et al., ASE 2022) defines it: parameters × 4 bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn


def parameter_count(model: nn.Module) -> int:
    """Number of parameters (each counted once)."""
    return sum(p.numel() for p in model.parameters())


def size_mb(model: nn.Module) -> float:
    """Model size as Compressor defines it: parameters × 4 bytes, in MB of 10^6 bytes."""
    return parameter_count(model) * 4 / 1e6
