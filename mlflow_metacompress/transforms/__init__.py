"""Semantics-preserving code transformations for C, Java and Python (MetaCompress inputs).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) compares a teacher and its distilled
student on original code and on behaviour-preserving rewrites of it. The rewrites here
follow NatGen (Chakraborty et al., FSE 2022), CODA (Tian et al., ASE 2023) and Rabin et al.
(IST 2021); each lives in its own module and edits code by byte ranges over a tree-sitter
parse. This module stays light: tree-sitter is imported only when code is first parsed.

Public API::

    apply_transform(code, name, language, seed=0, limits=None) -> str
    transform(code, name, language, seed=0, limits=None) -> TransformResult
    transform_many(codes, names, language, seed=0, progress=False, limits=None) -> {name: [TransformResult]}
    list_transforms(language) -> [name], detect_language(code) -> "c" | "java" | "python"
    TransformLimits(max_bytes=200_000, max_depth=500); TransformResult.reason (TransformReason),
    count_reasons(results) -> {reason: n}; LIMIT_REASONS (too_large, too_deep)

A transformation is one module of this package that declares its name once with
``@register(name, languages)`` (see :mod:`.base`); ``list_transforms`` discovers it.
    renamable_identifiers / function_names / rename_identifiers / all_identifiers /
    is_valid_identifier / KEYWORDS   (the identifier API shared with the attacks)
"""

from __future__ import annotations

from mlflow_metacompress.transforms._checks import DEFAULT_LIMITS, TransformLimits
from mlflow_metacompress.transforms._tree import LANGUAGES, Source, TransformError
from mlflow_metacompress.transforms.api import (
    apply_transform,
    detect_language,
    list_transforms,
    transform,
    transform_many,
)
from mlflow_metacompress.transforms.base import (
    LIMIT_REASONS,
    TransformReason,
    TransformResult,
    TransformStatus,
    count_reasons,
)
from mlflow_metacompress.transforms.identifiers import (
    KEYWORDS,
    RESERVED,
    all_identifiers,
    function_names,
    is_valid_identifier,
    renamable_identifiers,
    rename_identifiers,
)

__all__ = [
    "LANGUAGES",
    "KEYWORDS",
    "RESERVED",
    "Source",
    "TransformError",
    "TransformResult",
    "TransformStatus",
    "TransformReason",
    "TransformLimits",
    "DEFAULT_LIMITS",
    "LIMIT_REASONS",
    "count_reasons",
    "apply_transform",
    "transform",
    "transform_many",
    "list_transforms",
    "detect_language",
    "renamable_identifiers",
    "function_names",
    "rename_identifiers",
    "all_identifiers",
    "is_valid_identifier",
]
