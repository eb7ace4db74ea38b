"""``student_speedup``: how much faster the student answers than its teacher, measured by
the evaluator itself (``evaluator_config["measure_speed"] = True``).

Both models must be local pyfuncs (``PyFuncModel`` objects loaded in this process, as
``mlflow.models.evaluate`` makes of ``models:/`` and ``runs:/`` URIs): a callable or a
served endpoint would time the network or the wrapper, not the model. They run on the
same 32 rows of the evaluation data, alternating teacher and student, best of several
runs (:func:`mlflow_metacompress.adapters.timing.side_by_side`), on the torch threads of the
evaluation's inference (``evaluator_config["threads"]``, default ``$METACOMPRESS_THREADS``
or the free cores; :mod:`mlflow_metacompress.threads`), as the distillation's speed
tags are. ``summary.json`` records the count (``speed_threads``) and the run is tagged
``metacompress.speed_threads``. Compressor (Shi et al., ASE 2022) and AVATAR (Shi et al.,
ICSE-SEIS 2024) report such speedups for their students; a policy can require one,
e.g. ``student_speedup: ">= 2"``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from .config_model import EvaluatorConfig

logger = logging.getLogger(__name__)

METRICS = ("student_speedup", "student_latency_ms", "teacher_latency_ms")


def local_pyfunc(predictor: Predictor) -> Any:
    """The ``PyFuncModel`` behind ``predictor`` (or its ONNX Runtime runner, :mod:`..adapters.onnx`,
    which answers ``predict`` the same way), or None when it is something else."""
    from mlflow.pyfunc import PyFuncModel

    from ..adapters.onnx import OnnxPredict

    if isinstance(predictor.fn, OnnxPredict):
        return predictor.fn
    owner = getattr(predictor.fn, "__self__", None)
    return owner if isinstance(owner, PyFuncModel) else None


def speed_metrics(
    df: pd.DataFrame,
    cfg: EvaluatorConfig,
    teacher: Predictor,
    student: Predictor,
    *,
    repeats: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """``student_speedup`` (teacher time / student time), ``student_latency_ms`` and
    ``teacher_latency_ms`` (per sample) on a batch of 32 rows; ``{}`` with a warning
    when either model is not a local pyfunc."""
    from ..adapters.timing import BATCH, batch_of, side_by_side, timing_threads

    models = {"teacher": local_pyfunc(teacher), "student": local_pyfunc(student)}
    missing = [name for name, m in models.items() if m is None]
    if missing:
        logger.warning(
            "measure_speed: %s not a local pyfunc model; student_speedup is not measured",
            " and ".join(missing) + (" is" if len(missing) == 1 else " are"),
        )
        return {}
    rows = batch_of(df, list(cfg.code_columns or ()), BATCH)
    with timing_threads(threads=cfg.threads):
        best = side_by_side({n: functools.partial(m.predict, rows) for n, m in models.items()}, repeats, clock)
    t_ms, s_ms = 1000 * best["teacher"] / BATCH, 1000 * best["student"] / BATCH
    return {
        "student_speedup": t_ms / s_ms if s_ms > 0 else float("inf"),
        "student_latency_ms": s_ms,
        "teacher_latency_ms": t_ms,
    }
