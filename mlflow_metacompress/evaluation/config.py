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
from dataclasses import replace
from typing import Any

import pandas as pd

from ..adapters.checks import MetaCompressInputError
from .config_checks import check_values
from .config_model import EvaluatorConfig, Source, config_keys
from .slices import check_slice_config, check_slice_keys
from .validation import check_code_columns, check_probability_columns

logger = logging.getLogger(__name__)

LANGUAGES = ("c", "java", "python")
RESERVED = {"col_mapping"}  # read by mlflow.models.evaluate itself
LIST_KEYS = (
    "code_columns",
    "teacher_prob_columns",
    "student_prob_columns",
    "reference_prob_columns",
    "transform_columns",
    "attacks",
    "slice_columns",
)
DETECTION_SAMPLES = 50


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
    for key in ("transforms", "trained_transforms"):
        if isinstance(raw.get(key), list):
            raw[key] = tuple(raw[key])
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
    _check_reference(cfg, data)
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
        check_probability_columns(
            data,
            list(cfg.teacher_prob_columns) + list(cfg.student_prob_columns) + list(cfg.reference_prob_columns or ()),
        )
    if cfg.code_columns and cfg.transform_columns is None:
        cfg = replace(cfg, transform_columns=cfg.code_columns[:1])
        sources["transform_columns"] = "inferred"
    _check_variants(cfg, labels_given)
    if cfg.language is None and cfg.code_columns and _needs_language(cfg):
        cfg = replace(cfg, language=detect_language(data[cfg.code_columns[0]].tolist()))
        sources["language"] = "detected"
    cfg = replace(cfg, sources=tuple(sources.items()))
    cfg.transform_names()  # unknown transformation names fail here, before any model runs
    from .trained import check_names

    check_names(cfg)
    return cfg


def _check_reference(cfg: EvaluatorConfig, data: pd.DataFrame) -> None:
    """The reference model (issue 42): a model in model mode, columns in static mode, judged
    where the student is (the local engine)."""
    if cfg.static and cfg.reference is not None:
        raise MetaCompressInputError(
            "static mode judges given probabilities: name the reference's columns in reference_prob_columns "
            "instead of evaluator_config['reference']"
        )
    if not cfg.static and cfg.reference_prob_columns is not None:
        raise MetaCompressInputError(
            "reference_prob_columns is for static mode (with teacher_prob_columns and student_prob_columns); "
            "in model mode pass the reference model as evaluator_config['reference']"
        )
    if cfg.reference is not None and cfg.engine != "local":
        raise MetaCompressInputError(
            f"evaluator_config['reference'] is judged by engine 'local' only; got engine {cfg.engine!r}"
        )
    if cfg.reference_prob_columns is None:
        return
    if len(cfg.reference_prob_columns) != len(cfg.teacher_prob_columns or ()):
        raise MetaCompressInputError(
            "the reference and the teacher disagree on the number of classes: reference_prob_columns has "
            f"{len(cfg.reference_prob_columns)} columns, teacher_prob_columns has {len(cfg.teacher_prob_columns or ())}"
        )
    for col in cfg.reference_prob_columns:
        if col not in data.columns:
            raise MetaCompressInputError(
                f"reference_prob_columns: column {col!r} is missing from the data; columns are {list(data.columns)}"
            )


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
    return bool(cfg.attacks) or cfg.deviation not in (None, False) or cfg.transforms not in (None, [], (), "")


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
