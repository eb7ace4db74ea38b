"""Speed (and energy) of a registered student against its teacher, measured side by side.

Compressor (Shi et al., ASE 2022) reports a 4.31× faster student and AVATAR (Shi et al.,
ICSE-SEIS 2024) up to 76× lower latency and 184× less energy. A student is only worth
registering if it delivers that on the machine at hand, so every student gets:

- ``metacompress.latency_ms``: per-sample latency of the logged pyfunc on a batch of 32
  real inputs (best of ``repeats`` runs after a warm-up);
- ``metacompress.teacher_latency_ms`` and ``metacompress.speedup_vs_teacher``: the
  teacher on the same inputs, the runs alternating teacher, student, teacher, … so that
  both see the same machine load;
- ``metacompress.device``: where it ran (CPU model or GPU name);
- ``metacompress.speed_threads``: the torch threads both models ran on;
- with the ``energy`` extra (codecarbon), ``metacompress.energy_j_per_1k`` and
  ``metacompress.teacher_energy_j_per_1k`` (joules per 1,000 inferences) and
  ``metacompress.energy_note``: ``measured`` with power counters (RAPL, NVML), else
  ``estimated`` (codecarbon's model of the CPU's power; CPU-only containers often have
  no counters). Without codecarbon, no energy tag is written.

Timings run on the threads inference uses (:func:`mlflow_metacompress.adapters.timing.timing_threads`: the
distillation run's ``threads``, ``$METACOMPRESS_THREADS``, else the free cores;
:mod:`mlflow_metacompress.threads`), and the tag says how many: a speedup is a property
of the pair *and* the thread count (the same pair read 11.8× on one thread and 6.3× on
the default threads, issue 22).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..adapters.timing import BATCH, REPEATS, Clock, batch_of, side_by_side, timing_threads

logger = logging.getLogger(__name__)

TAG = "metacompress."


def has_power_counters() -> bool:
    """RAPL counters readable (Intel/AMD CPUs) or a CUDA GPU (NVML)."""
    import torch

    if torch.cuda.is_available():
        return True
    for path in Path("/sys/class/powercap").glob("intel-rapl:*/energy_uj"):
        try:
            path.read_text()
            return True
        except OSError:
            continue
    return False


@dataclass
class SpeedReport:
    """Side-by-side latency (ms per sample) of student and teacher, and energy when measured."""

    student_ms: float
    teacher_ms: float
    device: str
    batch_size: int = BATCH
    repeats: int = REPEATS
    energy: dict[str, float] = field(default_factory=dict)  # j_per_1k of student / teacher
    energy_note: str | None = None
    threads: int | None = None  # torch threads of the timings

    @property
    def speedup(self) -> float:
        return self.teacher_ms / self.student_ms if self.student_ms > 0 else float("inf")

    def tags(self) -> dict[str, str]:
        tags = {
            f"{TAG}latency_ms": f"{self.student_ms:.4f}",
            f"{TAG}teacher_latency_ms": f"{self.teacher_ms:.4f}",
            f"{TAG}speedup_vs_teacher": f"{self.speedup:.3f}",
            f"{TAG}device": self.device,
        }
        if self.threads is not None:
            tags[f"{TAG}speed_threads"] = str(self.threads)
        if "student" in self.energy:
            tags[f"{TAG}energy_j_per_1k"] = f"{self.energy['student']:.4g}"
        if "teacher" in self.energy:
            tags[f"{TAG}teacher_energy_j_per_1k"] = f"{self.energy['teacher']:.4g}"
        if self.energy and self.energy_note:
            tags[f"{TAG}energy_note"] = self.energy_note
        return tags

    def metrics(self) -> dict[str, float]:
        out = {"latency_ms": self.student_ms, "teacher_latency_ms": self.teacher_ms, "speedup_vs_teacher": self.speedup}
        out.update({f"{'' if k == 'student' else 'teacher_'}energy_j_per_1k": v for k, v in self.energy.items()})
        return out


def measure(
    student: Any,
    teacher: Any,
    frame: pd.DataFrame,
    columns: Sequence[str],
    *,
    batch_size: int = BATCH,
    repeats: int = REPEATS,
    clock: Clock = time.perf_counter,
    energy: bool = True,
    threads: int | str | None = None,
) -> SpeedReport:
    """Time the pyfunc ``student`` and ``teacher`` (URIs or loaded models) on the same
    ``batch_size`` rows of ``frame``, alternating, best of ``repeats``, on ``threads``
    torch threads (default: the inference threads); add energy per 1,000 inferences when
    codecarbon is installed."""
    import mlflow
    import torch

    from ..adapters.onnx import timed_model
    from .latency import device_name

    s = timed_model(mlflow.pyfunc.load_model(student) if isinstance(student, str) else student, student)
    t = timed_model(mlflow.pyfunc.load_model(teacher) if isinstance(teacher, str) else teacher, teacher)
    rows = batch_of(frame, columns, batch_size)
    device = "cuda" if torch.cuda.is_available() else "cpu"  # where the pyfuncs place themselves
    with timing_threads(device, threads) as count:
        best = side_by_side({"teacher": lambda: t.predict(rows), "student": lambda: s.predict(rows)}, repeats, clock)
        report = SpeedReport(
            1000 * best["student"] / batch_size,
            1000 * best["teacher"] / batch_size,
            device_name(device),
            batch_size,
            repeats,
            threads=count,
        )
        if energy:
            report.energy, report.energy_note = _energy(s, t, rows)
    logger.info(
        "student %.3f ms/sample, teacher %.3f ms/sample: %.2f× on %s, %d thread(s)",
        report.student_ms,
        report.teacher_ms,
        report.speedup,
        report.device,
        count,
    )
    return report


def _energy(student: Any, teacher: Any, rows: pd.DataFrame, rounds: int = 3) -> tuple[dict[str, float], str | None]:
    """Joules per 1,000 inferences of each model (codecarbon), and how they were obtained."""
    from . import energy

    if not energy.available():
        logger.info("codecarbon is not installed (extra 'energy'); no energy tags")
        return {}, None
    out: dict[str, float] = {}
    for name, model in (("student", student), ("teacher", teacher)):

        def predict_rounds(m: Any = model) -> list[Any]:
            return [m.predict(rows) for _ in range(rounds)]

        kwh = energy.energy_per_1000(predict_rounds, rounds * len(rows))
        if kwh is not None:
            out[name] = kwh * 3.6e6  # kWh → J
    note = "measured (power counters)" if has_power_counters() else "estimated (no power counters: codecarbon's model)"
    return out, note


def tag_student(
    student_uri: str,
    teacher_uri: str,
    frame: pd.DataFrame,
    columns: Sequence[str],
    registered_name: str | None = None,
    version: str | None = None,
    **kw: Any,
) -> dict[str, float]:
    """:func:`measure`, then tag the registered version (or the active run when
    unregistered) and return the run metrics (``latency_ms``, ``teacher_latency_ms``,
    ``speedup_vs_teacher`` and the energy values). A measurement that fails is logged
    as a warning and returns ``{}``: it never fails a training run."""
    import mlflow

    try:
        report = measure(student_uri, teacher_uri, frame, columns, **kw)
    except Exception as exc:  # noqa: BLE001 - speed is reported, not required: never lose a trained student
        logger.warning("could not measure the student's speed against %s: %s", teacher_uri, exc)
        return {}
    if registered_name and version:
        client = mlflow.MlflowClient()
        for key, value in report.tags().items():
            client.set_model_version_tag(registered_name, version, key, value)
    elif mlflow.active_run() is not None:
        mlflow.set_tags(report.tags())
    return report.metrics()
