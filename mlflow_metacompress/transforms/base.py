"""Transformation registry, result types and the parse-once runner.

A transformation is a function ``(src: Source, rng: random.Random) -> str | None`` that
returns the rewritten code, or ``None`` when it does not apply. It is registered with
:func:`register` under a name and the languages it supports. Semantics-preserving rewrites
follow NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al., ASE 2023) and Rabin et al.
(IST 2021).
"""

from __future__ import annotations

import enum
import importlib
import logging
import random
from dataclasses import dataclass
from typing import Callable

from mlflow_metacompress.transforms._tree import LANGUAGES, Source, _parser

logger = logging.getLogger(__name__)

TransformFn = Callable[[Source, random.Random], "str | None"]

_MODULES = ("rename_variables", "rename_function", "insert_dead_code", "for_to_while", "while_to_for",
            "swap_if_else", "swap_operands", "expand_compound_assignment", "literal_to_constant",
            "compose")


class TransformStatus(enum.Enum):
    """Outcome of one transformation on one sample."""

    CHANGED = "changed"
    NOT_APPLICABLE = "not_applicable"
    PARSE_ERROR = "parse_error"


@dataclass(frozen=True)
class TransformResult:
    """The (possibly unchanged) code, what happened, and the transformation's name."""

    code: str
    status: TransformStatus
    name: str

    @property
    def changed(self) -> bool:
        return self.status is TransformStatus.CHANGED


@dataclass(frozen=True)
class Transformation:
    name: str
    languages: tuple[str, ...]
    fn: TransformFn


REGISTRY: dict[str, Transformation] = {}
_LOADED = False


def register(name: str, languages: tuple[str, ...] = LANGUAGES) -> Callable[[TransformFn], TransformFn]:
    """Class-free registration decorator: ``@register("swap_if_else", ("c", "java"))``."""

    def deco(fn: TransformFn) -> TransformFn:
        REGISTRY[name] = Transformation(name, tuple(languages), fn)
        return fn

    return deco


def load_all() -> dict[str, Transformation]:
    """Import every transformation module once (lazily: they are not needed at import)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for mod in _MODULES:
            try:
                importlib.import_module(f"mlflow_metacompress.transforms.{mod}")
            except ModuleNotFoundError as exc:  # a module not written yet
                if exc.name != f"mlflow_metacompress.transforms.{mod}":
                    raise
    return REGISTRY


def get(name: str, language: str) -> Transformation:
    registry = load_all()
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    if name not in registry:
        raise ValueError(f"unknown transformation {name!r}; known: {sorted(registry)}")
    spec = registry[name]
    if language not in spec.languages:
        raise ValueError(f"transformation {name!r} does not support {language!r} "
                         f"(supports {spec.languages})")
    return spec


def parses_cleanly(code: str, language: str) -> bool:
    """True if tree-sitter parses ``code`` without ERROR or MISSING nodes."""
    return not _parser(language).parse(code.encode("utf-8")).root_node.has_error


def run(src: Source, name: str, seed: int = 0, verify: bool = True) -> TransformResult:
    """Apply one registered transformation to an already parsed, clean source.

    With ``verify`` the output is re-parsed; an output with ERROR/MISSING nodes (a bug) is
    logged and reported as not applicable so that an evaluation never sees broken code.
    """
    spec = get(name, src.language)
    rng = random.Random(f"{name}:{seed}")
    out = spec.fn(src, rng)
    if out is None or out == src.code:
        return TransformResult(src.code, TransformStatus.NOT_APPLICABLE, name)
    if verify and not parses_cleanly(out, src.language):
        logger.warning("transformation %s produced unparsable %s code; reported as not applicable",
                       name, src.language)
        return TransformResult(src.code, TransformStatus.NOT_APPLICABLE, name)
    return TransformResult(out, TransformStatus.CHANGED, name)
