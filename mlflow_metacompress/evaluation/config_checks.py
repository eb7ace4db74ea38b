"""Type and range checks of every ``evaluator_config`` value, run before any model does.

Each error names the key and the value. ``bool`` is never accepted as a number (it is an
``int`` subclass in Python, so ``confidence_threshold=True`` would otherwise pass as 1).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

from ..adapters.checks import MetaCompressInputError
from .value_checks import bad_value as _bad
from .value_checks import check_int as _int
from .value_checks import check_names as _names

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig

MAX_BOOTSTRAP_SAMPLES = 100_000  # 0 turns intervals off
MAX_SEED = 2**63 - 1
COLUMN_KEYS = (
    "code_columns",
    "teacher_prob_columns",
    "student_prob_columns",
    "reference_prob_columns",
    "transform_columns",
)


def _real(key: str, value: Any, lo: float, hi: float = math.inf, lo_open: bool = False) -> None:
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = (v > lo if lo_open else v >= lo) and v <= hi
    if not ok:
        bounds = (
            f"{'(' if lo_open else '['}{lo:g}, {hi:g}]" if math.isfinite(hi) else f"{'>' if lo_open else '≥'} {lo:g}"
        )
        raise _bad(key, value, f"a number {bounds}")


def _flag(key: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _bad(key, value, "true or false")


def _text(key: str, value: Any, optional: bool = False) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        raise _bad(key, value, "a string" + (" or unset" if optional else ""))


def _threads(value: Any) -> None:
    """A positive integer, ``"auto"`` or unset (:func:`mlflow_metacompress.threads.parse_threads`)."""
    from ..threads import parse_threads

    if isinstance(value, float) or (value is not None and not isinstance(value, (Integral, str))):
        raise _bad("threads", value, "a positive integer, 'auto' or unset")
    try:
        parse_threads(value, "evaluator_config['threads']")
    except ValueError:
        raise _bad("threads", value, "a positive integer, 'auto' or unset") from None


def check_precision(value: Any) -> None:
    """``auto``, ``fp32``, ``bf16``, ``fp16`` (or a Lightning spelling such as ``32-true``), or unset."""
    from ..precision import requested

    if value is None:
        return
    if not isinstance(value, str):
        raise _bad("precision", value, "'auto', 'fp32', 'bf16', 'fp16' or unset")
    try:
        requested(value)
    except ValueError:
        raise _bad("precision", value, "'auto', 'fp32', 'bf16', 'fp16' or unset") from None


def _relation_params(cfg: EvaluatorConfig) -> None:
    """Each registered relation's parameter that is a config key, in its declared range."""
    from ..relations.base import relation_params

    for name, p in relation_params().items():
        if hasattr(cfg, name):
            if p.integer:
                _int(name, getattr(cfg, name), int(p.low), None if math.isinf(p.high) else int(p.high))
            else:
                _real(name, getattr(cfg, name), p.low, p.high, lo_open=p.low_open)


def check_values(cfg: EvaluatorConfig) -> None:
    """Raise :class:`MetaCompressInputError` naming the first key whose value has the wrong type or range."""
    _relation_params(cfg)
    _int("batch_size", cfg.batch_size, 1)
    _int("seed", cfg.seed, 0, MAX_SEED)
    _int("bootstrap_samples", cfg.bootstrap_samples, 0, MAX_BOOTSTRAP_SAMPLES)
    _int("max_examples", cfg.max_examples, 0)
    _int("attack_budget", cfg.attack_budget, 1)
    _int("attack_max_samples", cfg.attack_max_samples, 1, optional=True)
    _text("metric_prefix", cfg.metric_prefix)
    _text("cache_dir", cfg.cache_dir, optional=True)
    _text("attack_mlm", cfg.attack_mlm, optional=True)
    _text("language", cfg.language, optional=True)
    _flag("use_cache", cfg.use_cache)
    _flag("progress", cfg.progress)
    _flag("measure_speed", cfg.measure_speed)
    _threads(cfg.threads)
    check_precision(cfg.precision)
    if cfg.measure_speed and cfg.static:
        raise MetaCompressInputError(
            "evaluator_config['measure_speed'] needs models; static mode has only probabilities"
        )
    from ..adapters.onnx import INFERENCES

    if cfg.inference not in INFERENCES:
        known = " or ".join(map(repr, INFERENCES))
        raise MetaCompressInputError(f"evaluator_config['inference'] must be {known}; got {cfg.inference!r}")
    if cfg.inference == "onnxruntime" and cfg.engine != "local":
        raise MetaCompressInputError(
            f"evaluator_config['inference'] 'onnxruntime' runs in this process and needs engine 'local'; got engine "
            f"{cfg.engine!r}"
        )
    from .engines import engine_names

    if cfg.engine not in engine_names():
        known = " or ".join(map(repr, engine_names()))
        raise MetaCompressInputError(f"evaluator_config['engine'] must be {known}; got {cfg.engine!r}")
    if cfg.attack_engine not in ("driver", "spark"):
        raise MetaCompressInputError(
            f"evaluator_config['attack_engine'] must be 'driver' or 'spark'; got {cfg.attack_engine!r}"
        )
    if cfg.attack_engine == "spark" and cfg.engine != "spark":
        raise MetaCompressInputError(
            f"evaluator_config['attack_engine'] 'spark' needs engine 'spark'; got engine {cfg.engine!r}"
        )
    from .deviation_settings import check_deviation
    from .trained import check_value

    check_deviation(cfg)
    check_value(cfg.trained_transforms)
    if cfg.static and cfg.trained_transforms is not None:
        raise MetaCompressInputError(
            "evaluator_config['trained_transforms'] holds transformations apart, and static mode runs none; drop it or "
            "pass a student model and a teacher"
        )
    for key in COLUMN_KEYS:
        _names(key, getattr(cfg, key))
    _names("attacks", cfg.attacks)
    transforms = cfg.transforms
    if transforms is not None and not isinstance(transforms, str):
        if not isinstance(transforms, (tuple, list)):
            raise _bad("transforms", transforms, '"all", a transformation name or a list of names')
        _names("transforms", tuple(transforms))
