"""Transformation registry and discovery, result types, and the parse-once runner.

A transformation is a function ``(src: Source, rng: random.Random) -> str | None`` that
returns the rewritten code, or ``None`` when it does not apply. It lives in its own module
of this package and declares its name once, with :func:`register`; :func:`load_all` finds
the modules with :mod:`pkgutil`, so a new module is picked up with no other edit.
Semantics-preserving rewrites follow NatGen (Chakraborty et al., FSE 2022), CODA (Tian et
al., ASE 2023) and Rabin et al. (IST 2021).
"""

from __future__ import annotations

import enum
import importlib
import logging
import pkgutil
import random
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mlflow_metacompress.transforms._checks import compiles, parses_cleanly
from mlflow_metacompress.transforms._reparse import parses_cleanly_from
from mlflow_metacompress.transforms._tree import LANGUAGES, Source

logger = logging.getLogger(__name__)

TransformFn = Callable[[Source, random.Random], "str | None"]

_PACKAGE = "mlflow_metacompress.transforms"

__all__ = [
    "TransformStatus",
    "TransformReason",
    "TransformResult",
    "Transformation",
    "REGISTRY",
    "register",
    "load_all",
    "get",
    "run",
    "parses_cleanly",
    "parses_cleanly_memo",
    "count_reasons",
    "LIMIT_REASONS",
]


class TransformStatus(enum.Enum):
    """Outcome of one transformation on one sample."""

    CHANGED = "changed"
    NOT_APPLICABLE = "not_applicable"
    PARSE_ERROR = "parse_error"


class TransformReason(str, enum.Enum):
    """Why a sample was not changed (``None`` on a CHANGED result)."""

    NO_SITE = "no_site"  # NOT_APPLICABLE: nothing in the code to rewrite
    TOO_LARGE = "too_large"  # NOT_APPLICABLE: over TransformLimits.max_bytes
    TOO_DEEP = "too_deep"  # NOT_APPLICABLE: over TransformLimits.max_depth
    INVALID_OUTPUT = "invalid_output"  # NOT_APPLICABLE: output failed to re-parse/compile (a bug, logged)
    FAILED = "failed"  # NOT_APPLICABLE: the transformation raised (a bug, logged)
    UNPARSABLE = "unparsable"  # PARSE_ERROR: tree-sitter ERROR or MISSING nodes
    NOT_TEXT = "not_text"  # PARSE_ERROR: not a str, or not valid UTF-8 (lone surrogates)


LIMIT_REASONS = frozenset({TransformReason.TOO_LARGE, TransformReason.TOO_DEEP})
"""Reasons that mean "skipped by a per-sample limit"; counted like parse failures."""


@dataclass(frozen=True)
class TransformResult:
    """The (possibly unchanged) code, what happened, the transformation's name, and why."""

    code: str
    status: TransformStatus
    name: str
    reason: TransformReason | None = None

    @property
    def changed(self) -> bool:
        return self.status is TransformStatus.CHANGED

    @property
    def over_limit(self) -> bool:
        """True when the sample was skipped by a per-sample limit (too large or too deep)."""
        return self.reason in LIMIT_REASONS


def count_reasons(results: Iterable[TransformResult]) -> dict[str, int]:
    """How many results carry each reason (``"changed"`` for changed ones), e.g. to report
    ``too_large``/``too_deep`` samples beside parse failures."""
    counts: dict[str, int] = {}
    for r in results:
        key = "changed" if r.reason is None else r.reason.value
        counts[key] = counts.get(key, 0) + 1
    return counts


@dataclass(frozen=True)
class Transformation:
    name: str
    languages: tuple[str, ...]
    fn: TransformFn
    module: str = ""


REGISTRY: dict[str, Transformation] = {}
_LOADED = False


def register(name: str, languages: tuple[str, ...] = LANGUAGES) -> Callable[[TransformFn], TransformFn]:
    """Declare a transformation once, in its own module: ``@register("swap_if_else", ("c", "java"))``."""
    unknown = set(languages) - set(LANGUAGES)
    if unknown:
        raise ValueError(f"transformation {name!r} names unsupported languages {sorted(unknown)}")

    def deco(fn: TransformFn) -> TransformFn:
        old = REGISTRY.get(name)
        if old is not None and old.module != fn.__module__:
            raise ValueError(f"transformation {name!r} is declared by both {old.module} and {fn.__module__}")
        REGISTRY[name] = Transformation(name, tuple(languages), fn, fn.__module__)
        return fn

    return deco


def _module_names() -> list[str]:
    package = sys.modules[_PACKAGE]
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_"))


def load_all(refresh: bool = False, rescan: bool = False) -> dict[str, Transformation]:
    """Import every public module of the package once; each registers its transformation(s).

    Modules that register nothing (``api``, ``base``, ``identifiers``, ``compose``'s helpers)
    are infrastructure. Import errors propagate: a module that exists but fails to import is
    a bug, never silently skipped. ``rescan`` also imports modules added to the folder since
    the first load (listing and unknown-name lookups use it, so a new one-file
    transformation is found in a running process); ``refresh`` additionally forgets
    transformations whose module is gone.
    """
    global _LOADED
    if refresh:
        importlib.invalidate_caches()
        present = {f"{_PACKAGE}.{m}" for m in _module_names()}
        for name in [n for n, spec in REGISTRY.items() if spec.module not in present]:
            del REGISTRY[name]
        _LOADED = False
    if rescan and _LOADED:
        importlib.invalidate_caches()
        for mod in _module_names():
            if f"{_PACKAGE}.{mod}" not in sys.modules:
                importlib.import_module(f"{_PACKAGE}.{mod}")
    if not _LOADED:
        for mod in _module_names():
            importlib.import_module(f"{_PACKAGE}.{mod}")
        _LOADED = True
    return REGISTRY


def get(name: str, language: str) -> Transformation:
    """The registered transformation ``name``; ValueError naming the known ones otherwise."""
    registry = load_all()
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}; expected one of {LANGUAGES}")
    if name not in registry:
        registry = load_all(rescan=True)
    if name not in registry:
        raise ValueError(f"unknown transformation {name!r}; known: {sorted(registry)}")
    spec = registry[name]
    if language not in spec.languages:
        raise ValueError(f"transformation {name!r} does not support {language!r} (supports {spec.languages})")
    return spec


def _input_compiles(src: Source) -> bool:
    if "compiles" not in src.cache:
        src.cache["compiles"] = compiles(src.code)
    return bool(src.cache["compiles"])


def parses_cleanly_memo(src: Source, code: str, base: Source | None = None) -> bool:
    """:func:`parses_cleanly`, memoised per sample: ``compose`` records the steps it parsed,
    so a standalone transformation with the same output (or compose's own final output)
    is not parsed a second time. ``code`` is a rewrite of ``base`` (default ``src``), which
    lets :mod:`._reparse` parse it incrementally from the edits that made it."""
    memo: dict[str, bool] = src.cache.setdefault("clean_outputs", {})
    clean = memo.get(code)
    if clean is None:
        clean = memo[code] = parses_cleanly_from(base or src, code)
    return clean


def run(src: Source, name: str, seed: int = 0, verify: bool = True) -> TransformResult:
    """Apply one registered transformation to an already parsed, clean source.

    Never raises for a sample: a transformation that fails is logged and reported as not
    applicable (reason ``failed``). With ``verify`` the output is re-parsed, and Python
    output must ``compile()`` when the input did; a broken output (a bug) is logged and
    reported as not applicable (reason ``invalid_output``), so an evaluation never sees it.
    """
    spec = get(name, src.language)
    rng = random.Random(f"{name}:{seed}")
    try:
        out = spec.fn(src, rng)
    except Exception:  # noqa: BLE001 - one sample must never abort an evaluation
        logger.warning(
            "transformation %s failed on a %s sample; reported as not applicable", name, src.language, exc_info=True
        )
        return TransformResult(src.code, TransformStatus.NOT_APPLICABLE, name, TransformReason.FAILED)
    if out is None or out == src.code:
        return TransformResult(src.code, TransformStatus.NOT_APPLICABLE, name, TransformReason.NO_SITE)
    if verify:
        problem = None
        if not parses_cleanly_memo(src, out):
            problem = "unparsable"
        elif src.language == "python" and _input_compiles(src) and not compiles(out):
            problem = "non-compiling"
        if problem is not None:
            logger.warning(
                "transformation %s produced %s %s code; reported as not applicable", name, problem, src.language
            )
            return TransformResult(src.code, TransformStatus.NOT_APPLICABLE, name, TransformReason.INVALID_OUTPUT)
    return TransformResult(out, TransformStatus.CHANGED, name)
