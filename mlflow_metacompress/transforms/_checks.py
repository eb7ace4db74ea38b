"""Per-sample limits and output checks: tree-sitter re-parse, Python ``compile()``.

Issue 12 ("transformations never break an evaluation"): a sample larger than
``max_bytes`` or nested deeper than ``max_depth`` is not transformed (NOT_APPLICABLE,
reason ``too_large``/``too_deep``), and every output must re-parse (and, for Python,
compile) before MetaCompress (Awal et al., arXiv 2511.05476) compares models on it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from mlflow_metacompress.transforms._tree import _parser, encode_code


@dataclass(frozen=True)
class TransformLimits:
    """Per-sample limits: UTF-8 size in bytes and nesting depth (brackets and Python blocks)."""

    max_bytes: int = 200_000
    max_depth: int = 500

    def __post_init__(self) -> None:
        for key in ("max_bytes", "max_depth"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TransformLimits.{key} must be a positive int, got {value!r}")


DEFAULT_LIMITS = TransformLimits()


def parses_cleanly(code: str, language: str) -> bool:
    """True if tree-sitter parses ``code`` without ERROR or MISSING nodes."""
    return not _parser(language).parse(encode_code(code)).root_node.has_error


def compiles(code: str) -> bool:
    """True if CPython compiles ``code`` (never runs it); deep nesting counts as not compiling."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<transformed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True
