"""``evaluator_config`` parsed into a typed, validated :class:`EvaluatorConfig`."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from ..relations import RelationConfig
from .validation import MetaCompressInputError

LANGUAGES = ("c", "java", "python")
RESERVED = {"col_mapping"}  # read by mlflow.models.evaluate itself


@dataclass
class EvaluatorConfig:
    """Every key ``evaluator_config`` accepts (unknown keys are rejected by name)."""

    teacher: Any = None
    code_columns: list[str] | None = None
    teacher_prob_columns: list[str] | None = None
    student_prob_columns: list[str] | None = None
    kl_threshold: float = 0.1
    confidence_threshold: float = 0.8
    calibration_bins: int = 10
    eca_threshold: float = 0.05
    batch_size: int = 64
    seed: int = 0
    metric_prefix: str = ""
    cache_dir: str | None = None
    use_cache: bool = True
    progress: bool = True
    language: str | None = None
    transforms: Any = "all"
    transform_columns: list[str] | None = None
    attacks: list[str] = field(default_factory=list)
    attack_budget: int = 500
    attack_mlm: str | None = None
    attack_max_samples: int | None = None
    max_examples: int = 25

    @property
    def static(self) -> bool:
        return self.teacher_prob_columns is not None or self.student_prob_columns is not None

    @property
    def relation_config(self) -> RelationConfig:
        return RelationConfig(self.kl_threshold, self.confidence_threshold, self.calibration_bins, self.eca_threshold)

    @property
    def cache_path(self) -> Path | None:
        """Where predictions are cached (:func:`mlflow_metacompress.cache.location`, resolved
        now), or None when ``use_cache`` is false."""
        from ..cache import location

        if not self.use_cache:
            return None
        return location(self.cache_dir)

    def as_loggable(self) -> dict[str, Any]:
        """The config as JSON-safe values (the teacher shown by URI or type)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if not isinstance(out["teacher"], (str, type(None))):
            out["teacher"] = f"<{type(out['teacher']).__name__}>"
        return out


def parse_config(raw: dict[str, Any] | None, data: pd.DataFrame, model_given: bool) -> EvaluatorConfig:
    """Validate ``raw`` against the data; infer ``code_columns`` when not given."""
    raw = dict(raw or {})
    for key in RESERVED:
        raw.pop(key, None)
    known = {f.name for f in fields(EvaluatorConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise MetaCompressInputError(f"unknown evaluator_config key(s) {unknown}; known keys are {sorted(known)}")
    for key in ("code_columns", "teacher_prob_columns", "student_prob_columns", "transform_columns"):
        if isinstance(raw.get(key), str):
            raw[key] = [raw[key]]
    if isinstance(raw.get("attacks"), str):
        raw["attacks"] = [raw["attacks"]]
    cfg = EvaluatorConfig(**raw)
    _check_numbers(cfg)
    if cfg.static:
        if model_given:
            raise MetaCompressInputError("pass model=None with teacher_prob_columns/student_prob_columns (static mode), or drop those keys")
        if not cfg.teacher_prob_columns or not cfg.student_prob_columns:
            raise MetaCompressInputError("static mode needs both teacher_prob_columns and student_prob_columns")
        if len(cfg.teacher_prob_columns) != len(cfg.student_prob_columns):
            raise MetaCompressInputError(
                f"teacher and student disagree on the number of classes: teacher_prob_columns has {len(cfg.teacher_prob_columns)} "
                f"columns, student_prob_columns has {len(cfg.student_prob_columns)}"
            )
        for col in cfg.teacher_prob_columns + cfg.student_prob_columns:
            if col not in data.columns:
                raise MetaCompressInputError(f"probability column {col!r} is missing from the data; columns are {list(data.columns)}")
    else:
        if not model_given:
            raise MetaCompressInputError("model is None: pass a student model, or name teacher_prob_columns and student_prob_columns for static mode")
        if cfg.teacher is None:
            raise MetaCompressInputError("evaluator_config must name a 'teacher' (a models:/ or runs:/ URI, a PyFuncModel or a callable)")
    if cfg.code_columns is None:
        cfg.code_columns = _infer_code_columns(data, required=not cfg.static)
    if cfg.language is not None and cfg.language not in LANGUAGES:
        raise MetaCompressInputError(f"language must be one of {LANGUAGES}; got {cfg.language!r}")
    if cfg.code_columns and cfg.transform_columns is None:
        cfg.transform_columns = cfg.code_columns[:1]
    return cfg


def _check_numbers(cfg: EvaluatorConfig) -> None:
    checks = [
        ("kl_threshold", cfg.kl_threshold >= 0),
        ("confidence_threshold", 0 < cfg.confidence_threshold <= 1),
        ("calibration_bins", isinstance(cfg.calibration_bins, int) and cfg.calibration_bins >= 1),
        ("eca_threshold", cfg.eca_threshold >= 0),
        ("batch_size", isinstance(cfg.batch_size, int) and cfg.batch_size >= 1),
        ("attack_budget", isinstance(cfg.attack_budget, int) and cfg.attack_budget >= 1),
    ]
    for key, ok in checks:
        if not ok:
            raise MetaCompressInputError(f"evaluator_config[{key!r}] has an invalid value {getattr(cfg, key)!r}")


def _infer_code_columns(data: pd.DataFrame, required: bool) -> list[str] | None:
    if {"func1", "func2"} <= set(data.columns):
        return ["func1", "func2"]
    for name in ("func", "code", "text"):
        if name in data.columns:
            return [name]
    if required:
        raise MetaCompressInputError(
            f"cannot tell which column holds the code: set evaluator_config['code_columns'] (columns are {list(data.columns)})"
        )
    return None
