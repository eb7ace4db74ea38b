"""``evaluator_config`` resolved once into a frozen, validated :class:`EvaluatorConfig`.

:func:`parse_config` checks every key against the data and fills what the user left
unset: ``code_columns`` and ``transform_columns`` are *inferred* from the columns, and
``language`` is *detected* from the code when a transformation or attack needs it. All
of it happens before any model runs; afterwards the config never changes. The config
remembers which values the user gave, so ``summary.json`` never shows a detected value
as if the user had set it.
"""

from __future__ import annotations

import difflib
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..relations import RelationConfig
from .config_checks import check_values
from .slices import check_slice_config, check_slice_keys
from .validation import MetaCompressInputError, check_code_columns, check_probability_columns

logger = logging.getLogger(__name__)

LANGUAGES = ("c", "java", "python")
RESERVED = {"col_mapping"}  # read by mlflow.models.evaluate itself
LIST_KEYS = (
    "code_columns",
    "teacher_prob_columns",
    "student_prob_columns",
    "transform_columns",
    "attacks",
    "slice_columns",
)
DETECTION_SAMPLES = 50

Source = Literal["given", "default", "inferred", "detected"]


@dataclass(frozen=True)
class EvaluatorConfig:
    """Every key ``evaluator_config`` accepts (unknown keys are rejected by name).

    Column and attack lists are tuples (the config is immutable). ``sources`` is not a
    key: it records how :func:`parse_config` filled values the user left unset.
    """

    teacher: Any = None
    code_columns: tuple[str, ...] | None = None
    teacher_prob_columns: tuple[str, ...] | None = None
    student_prob_columns: tuple[str, ...] | None = None
    kl_threshold: float = 0.1
    confidence_threshold: float = 0.8
    calibration_bins: int = 10
    eca_threshold: float = 0.05
    batch_size: int = 64
    seed: int = 0
    bootstrap_samples: int = 1000
    metric_prefix: str = ""
    cache_dir: str | None = None
    use_cache: bool = True
    progress: bool = True
    language: str | None = None
    transforms: Any = "all"
    transform_columns: tuple[str, ...] | None = None
    attacks: tuple[str, ...] = ()
    attack_budget: int = 500
    attack_mlm: str | None = None
    attack_max_samples: int | None = None
    max_examples: int = 25
    slice_columns: tuple[str, ...] | None = None  # relation rates per value of these columns (evaluation/slices.py)
    max_slice_values: int = 20  # per slice column: the most frequent values sliced, the rest skipped
    measure_speed: bool = False  # student_speedup (evaluation/speed.py): both models local pyfuncs
    threads: Any = None  # torch threads of inference and timing (mlflow_metacompress/threads.py); None/"auto": default
    inference: str = "torch"  # "onnxruntime": both models queried through ONNX Runtime (adapters/onnx.py)
    engine: str = "local"  # "spark": transforms + inference on a SparkSession (evaluation/spark_engine.py)
    attack_engine: str = (
        "driver"  # "spark" (needs engine "spark"): attacked samples split over executors (evaluation/spark_attacks.py)
    )
    sources: tuple[tuple[str, Source], ...] = field(default=(), repr=False, compare=False, metadata={"internal": True})

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

    def transform_names(self) -> list[str]:
        """The transformations to run: ``"all"`` → every one for ``language``; none in static mode.

        A name the transformation library does not know for ``language`` is rejected with
        the known names (:func:`parse_config` calls this once, before any model runs).
        """
        if self.static or not self.code_columns or self.transforms in (None, [], (), ""):
            return []
        from ..transforms import list_transforms

        if self.language is None:
            raise MetaCompressInputError("transformations need the code's language; set evaluator_config['language']")
        available = list_transforms(self.language)
        if self.transforms == "all":
            return list(available)
        names = [self.transforms] if isinstance(self.transforms, str) else list(self.transforms)
        unknown = [n for n in names if n not in available]
        if unknown:
            raise MetaCompressInputError(
                f"transforms {unknown} are not available for {self.language!r}; available: {available}"
            )
        return names

    def config_sources(self) -> dict[str, Source]:
        """For every key: ``given`` by the user, ``default``, ``inferred`` from the columns
        or ``detected`` from the code."""
        resolved = dict(self.sources)
        return {key: resolved.get(key, "default") for key in config_keys()}

    def detected_values(self) -> dict[str, Any]:
        """The values :func:`parse_config` inferred or detected (JSON-safe)."""
        return {
            key: _loggable(getattr(self, key)) for key, source in self.sources if source in ("inferred", "detected")
        }

    def as_loggable(self) -> dict[str, Any]:
        """The config as the user set it, JSON-safe (the teacher shown by URI or type).

        Values that were inferred or detected appear as the user left them (``None``);
        :meth:`detected_values` and :meth:`config_sources` report them separately.
        """
        out = {}
        auto = {key for key, source in self.sources if source in ("inferred", "detected")}
        for key in config_keys():
            out[key] = None if key in auto else _loggable(getattr(self, key))
        if not isinstance(out["teacher"], (str, type(None))):
            out["teacher"] = f"<{type(self.teacher).__name__}>"
        return out


def config_keys() -> list[str]:
    """The keys ``evaluator_config`` accepts."""
    return [f.name for f in fields(EvaluatorConfig) if not f.metadata.get("internal")]


def _loggable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _normalised(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """``raw`` without reserved keys, lists as tuples; unknown keys are rejected by name,
    each with the known key it most resembles (:func:`difflib.get_close_matches`)."""
    if raw is not None and not isinstance(raw, Mapping):
        raise MetaCompressInputError(f"evaluator_config must be a dict of keys; got {type(raw).__name__}")
    raw = {k: v for k, v in (raw or {}).items() if k not in RESERVED}
    known = config_keys()
    unknown = sorted(set(raw) - set(known), key=str)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            if close:
                hints.append(f"{key!r} → {close[0]!r}")
        hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
        raise MetaCompressInputError(f"unknown evaluator_config key(s) {unknown}{hint}; known keys are {sorted(known)}")
    for key in LIST_KEYS:
        if isinstance(raw.get(key), str):
            raw[key] = (raw[key],)
        elif isinstance(raw.get(key), list):
            raw[key] = tuple(raw[key])
    if isinstance(raw.get("transforms"), list):
        raw["transforms"] = tuple(raw["transforms"])
    return raw


def check_config(raw: Mapping[str, Any] | None) -> None:
    """The checks of :func:`parse_config` that need neither the data nor a model: every
    key is known (with a "did you mean" for near misses) and every value has its type
    and range. Callers that load models (``metacompress evaluate``, ``gate_version``)
    run it first, so a typo costs no model load and leaves no FAILED run; MLflow's
    ``evaluate`` loads the student before any evaluator sees the config."""
    cfg = EvaluatorConfig(**_normalised(raw))
    check_values(cfg)
    check_slice_keys(cfg)


def parse_config(
    raw: dict[str, Any] | None, data: pd.DataFrame, model_given: bool, labels_given: bool = True
) -> EvaluatorConfig:
    """Validate ``raw`` against the data and resolve every value left unset, before any model runs.

    ``model_given``: a student model was passed (static mode needs none). ``labels_given``:
    the data has targets (attacks need them).
    """
    raw = _normalised(raw)
    sources: dict[str, Source] = {key: "given" for key in raw}
    cfg = EvaluatorConfig(**raw)
    check_values(cfg)
    check_slice_config(cfg, data)
    _check_mode(cfg, data, model_given)
    if cfg.language is not None and cfg.language not in LANGUAGES:
        raise MetaCompressInputError(f"language must be one of {LANGUAGES}; got {cfg.language!r}")
    if cfg.code_columns is None:
        inferred = _infer_code_columns(data, required=not cfg.static)
        if inferred is not None:
            cfg = replace(cfg, code_columns=inferred)
            sources["code_columns"] = "inferred"
    if cfg.code_columns:
        check_code_columns(data, list(cfg.code_columns))
    if cfg.teacher_prob_columns and cfg.student_prob_columns:  # static mode: _check_mode required both
        check_probability_columns(data, list(cfg.teacher_prob_columns) + list(cfg.student_prob_columns))
    if cfg.code_columns and cfg.transform_columns is None:
        cfg = replace(cfg, transform_columns=cfg.code_columns[:1])
        sources["transform_columns"] = "inferred"
    _check_variants(cfg, labels_given)
    if cfg.language is None and cfg.code_columns and _needs_language(cfg):
        cfg = replace(cfg, language=detect_language(data[cfg.code_columns[0]].tolist()))
        sources["language"] = "detected"
    cfg = replace(cfg, sources=tuple(sources.items()))
    cfg.transform_names()  # unknown transformation names fail here, before any model runs
    return cfg


def _check_mode(cfg: EvaluatorConfig, data: pd.DataFrame, model_given: bool) -> None:
    """Static mode (probability columns) versus model mode (a student and a teacher)."""
    if not cfg.static:
        if not model_given:
            raise MetaCompressInputError(
                "model is None: pass a student model, or name teacher_prob_columns and student_prob_columns for static "
                "mode"
            )
        if cfg.teacher is None:
            raise MetaCompressInputError(
                "evaluator_config must name a 'teacher' (a models:/ or runs:/ URI, a PyFuncModel or a callable)"
            )
        return
    if model_given:
        raise MetaCompressInputError(
            "pass model=None with teacher_prob_columns/student_prob_columns (static mode), or drop those keys"
        )
    if not cfg.teacher_prob_columns or not cfg.student_prob_columns:
        raise MetaCompressInputError("static mode needs both teacher_prob_columns and student_prob_columns")
    if len(cfg.teacher_prob_columns) != len(cfg.student_prob_columns):
        raise MetaCompressInputError(
            "teacher and student disagree on the number of classes: teacher_prob_columns has "
            f"{len(cfg.teacher_prob_columns)} columns, student_prob_columns has {len(cfg.student_prob_columns)}"
        )
    for col in cfg.teacher_prob_columns + cfg.student_prob_columns:
        if col not in data.columns:
            raise MetaCompressInputError(
                f"probability column {col!r} is missing from the data; columns are {list(data.columns)}"
            )
    if cfg.transforms not in ("all", None, [], ()) or cfg.attacks:
        raise MetaCompressInputError(
            "transforms and attacks need models and code_columns; static mode only judges the given probabilities"
        )


def _check_variants(cfg: EvaluatorConfig, labels_given: bool) -> None:
    """Transform columns, attack names and labels for attacks."""
    missing = [c for c in cfg.transform_columns or () if c not in (cfg.code_columns or ())]
    if missing:
        raise MetaCompressInputError(f"transform_columns {missing} are not code columns {list(cfg.code_columns or ())}")
    if not cfg.attacks:
        return
    if not labels_given:
        raise MetaCompressInputError("attacks need labels: pass targets=<label column> to mlflow.models.evaluate")
    from ..attacks.runner import list_attacks

    unknown = [a for a in cfg.attacks if a not in list_attacks()]
    if unknown:
        raise MetaCompressInputError(f"unknown attacks {unknown}; available: {list_attacks()}")


def _needs_language(cfg: EvaluatorConfig) -> bool:
    if cfg.static or not cfg.code_columns:
        return False
    return bool(cfg.attacks) or cfg.transforms not in (None, [], (), "")


def detect_language(codes: list[str]) -> str:
    """Majority vote of the transformation library's detector over up to 50 samples."""
    from ..transforms import detect_language as detect_one

    votes = Counter(detect_one(c) for c in codes[:DETECTION_SAMPLES] if c.strip())
    if not votes:
        raise MetaCompressInputError(
            "cannot detect the language: the code column is blank; set evaluator_config['language']"
        )
    language = votes.most_common(1)[0][0]
    logger.warning(
        "evaluator_config has no 'language'; detected %r from the code (votes %s). Set it to be sure.",
        language,
        dict(votes),
    )
    return language


def _infer_code_columns(data: pd.DataFrame, required: bool) -> tuple[str, ...] | None:
    if {"func1", "func2"} <= set(data.columns):
        return ("func1", "func2")
    for name in ("func", "code", "text"):
        if name in data.columns:
            return (name,)
    if required:
        raise MetaCompressInputError(
            "cannot tell which column holds the code: set evaluator_config['code_columns'] (columns are "
            f"{list(data.columns)})"
        )
    return None
