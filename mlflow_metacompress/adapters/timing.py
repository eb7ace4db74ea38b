"""The package's one timing primitive: models (or any callables) timed side by side, on a
known number of torch threads.

Shared by the evaluator's ``student_speedup`` (:mod:`mlflow_metacompress.evaluation.speed`),
the speed tags of every distilled student (:mod:`mlflow_metacompress.distill.speed`) and the
per-device latency model's calibration (:func:`mlflow_metacompress.distill.latency.time_shape`):
best wall time of each model over alternating rounds after a warm-up, so both see the same
machine load (Compressor, Shi et al., ASE 2022, and AVATAR, Shi et al., ICSE-SEIS 2024,
report such speedups). A speedup is a property of the pair *and* the thread count, so the
timings run inside :func:`timing_threads` (:mod:`mlflow_metacompress.threads`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pandas as pd

BATCH = 32
REPEATS = 5
Clock = Callable[[], float]

__all__ = ["BATCH", "REPEATS", "Clock", "batch_of", "side_by_side", "timing_threads"]


def side_by_side(
    runs: Mapping[str, Callable[[], Any]], repeats: int = REPEATS, clock: Clock = time.perf_counter, warmup: bool = True
) -> dict[str, float]:
    """Best wall time (seconds) of each callable over ``repeats`` alternating rounds
    (round ``r`` runs every callable once, in order), after one warm-up call each."""
    if repeats < 1:
        raise ValueError(f"repeats must be ≥ 1, got {repeats}")
    if warmup:
        for fn in runs.values():
            fn()
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            t = clock()
            fn()
            best[name] = min(best[name], clock() - t)
    return best


def batch_of(frame: pd.DataFrame, columns: Sequence[str], n: int = BATCH) -> pd.DataFrame:
    """``n`` rows of ``frame``'s code ``columns`` (cycled when it has fewer)."""
    if len(frame) == 0:
        raise ValueError("cannot time models on an empty table")
    rows = frame[list(columns)].reset_index(drop=True)
    return rows.iloc[[i % len(rows) for i in range(n)]].reset_index(drop=True)


@contextmanager
def timing_threads(device: str = "cpu", threads: int | str | None = None) -> Iterator[int]:
    """Run the block with ``threads`` torch threads (default None: the inference threads,
    :func:`mlflow_metacompress.threads.resolve`), restored afterwards; yields the count
    in effect. ``device`` is kept for callers: on a GPU the host threads still tokenise
    and launch kernels, so the same count applies."""
    from ..threads import using

    with using(threads) as count:
        yield count
