"""The parameters of the MLproject's ``main`` entry point (:class:`PipelineConfig`) and
what :func:`~.run.run_pipeline` produced (:class:`PipelineResult`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from .stages import ALL, GateOutcome

if TYPE_CHECKING:
    from ..distill.devices import TrainerSettings


@dataclass
class PipelineConfig:
    """Parameters of the MLproject's ``main`` entry point."""

    task: str = "vulnerability"
    data_dir: str | None = None  # None / "": the embedded generated data
    size_mb: float | None = None  # None / 0: the profile's target
    policy: str | None = None  # None / "auto": the profile's policy
    seed: int = 0
    profile: str = "quick"
    methods: str | Sequence[str] = ALL  # every discovered method, or a comma-separated list
    alias: str = "champion"
    progress: bool = True  # progress bars, shown only when output is a terminal
    # the run settings of every fit, inference and gate (distill/devices.py TrainerSettings, parsed once:
    # TrainerSettings.parse): devices=2, strategy="ddp" trains in two spawned processes; precision None/"auto":
    # bf16-mixed where the CPU (AVX512-BF16/AMX) or GPU runs bf16 natively, else 32-true; threads None/"auto":
    # $METACOMPRESS_THREADS, else the free cores. None: the defaults
    settings: TrainerSettings | None = None
    # a second teacher (another seed) judged beside each student; the gate bounds the excess (pipeline/reference.py)
    reference: bool = False


@dataclass
class PipelineResult:
    """What :func:`~.run.run_pipeline` produced."""

    run_id: str
    teacher_uri: str
    outcomes: list[GateOutcome]
    table: pd.DataFrame
    markdown: str
    policy: str
    errors: dict[str, str] = field(default_factory=dict)
