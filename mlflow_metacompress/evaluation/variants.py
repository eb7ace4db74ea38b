"""Variants: original, semantics-preserving transformed and adversarial inputs as one
concept. A variant is a set of rows (positions into the evaluation data) with possibly
rewritten code; the same relations judge every variant (MetaCompress, arXiv 2511.05476,
checks its relations on original, transformed and adversarial code)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

VariantKind = Literal["original", "transform", "metamorphic", "attack"]


@dataclass
class Variant:
    """Rows ``positions`` of the data, with code columns possibly rewritten (``frame``)."""

    name: str
    kind: VariantKind
    positions: np.ndarray
    frame: pd.DataFrame
    code_column: str

    @property
    def suffix(self) -> str:
        """Metric-key suffix: ``""`` for the original, else ``/<name>``."""
        return "" if self.kind == "original" else f"/{self.name}"


@dataclass
class TransformOutcome:
    """Transformed variants plus what could not be transformed."""

    variants: list[Variant]
    applicable_rate: dict[str, float]
    parse_failures: list[int] = field(default_factory=list)
    language: str | None = None


def original_variant(df: pd.DataFrame, code_columns: list[str]) -> Variant:
    frame = df[code_columns].reset_index(drop=True)
    return Variant("original", "original", np.arange(len(df)), frame, code_columns[0])


def detect_language(codes: list[str]) -> str:
    """Majority vote of the transformation library's detector over up to 50 samples."""
    from ..transforms import detect_language as detect_one

    votes = Counter(detect_one(c) for c in codes[:50])
    language = votes.most_common(1)[0][0]
    logger.warning("evaluator_config has no 'language'; detected %r from the code (votes %s). Set it to be sure.", language, dict(votes))
    return language


def resolve_transform_names(spec: object, language: str) -> list[str]:
    """``"all"`` → every transformation for ``language``; a list is checked name by name."""
    from ..transforms import list_transforms
    from .validation import MetaCompressInputError

    available = list_transforms(language)
    if spec in (None, [], (), ""):
        return []
    if spec == "all":
        return list(available)
    names = [spec] if isinstance(spec, str) else list(spec)
    unknown = [n for n in names if n not in available]
    if unknown:
        raise MetaCompressInputError(f"transforms {unknown} are not available for {language!r}; available: {available}")
    return names


def transform_variants(
    df: pd.DataFrame, code_columns: list[str], transform_columns: list[str], names: list[str], language: str,
    seed: int = 0, progress: bool = True,
) -> TransformOutcome:
    """Apply each named transformation to ``transform_columns`` (each sample parsed once).

    A row enters variant ``t`` only when ``t`` changed it; rows that do not parse are
    skipped for every transformation and reported in ``parse_failures``.
    """
    from ..transforms import TransformStatus, transform_many

    base = df[code_columns].reset_index(drop=True)
    results = {col: transform_many(base[col].tolist(), names, language, seed=seed, progress=progress) for col in transform_columns}
    failed = np.zeros(len(base), dtype=bool)
    for col in transform_columns:  # parse status is the same for every transformation of a sample
        first = results[col][names[0]]
        failed |= np.array([r.status == TransformStatus.PARSE_ERROR for r in first])
    variants, rates = [], {}
    for name in names:
        changed = np.zeros(len(base), dtype=bool)
        frame = base.copy()
        for col in transform_columns:
            res = results[col][name]
            col_changed = np.array([r.status == TransformStatus.CHANGED for r in res])
            frame.loc[col_changed, col] = [r.code for r, c in zip(res, col_changed) if c]
            changed |= col_changed
        changed &= ~failed
        rates[name] = float(changed.sum() / max(1, (~failed).sum()))
        positions = np.flatnonzero(changed)
        variants.append(Variant(name, "transform", positions, frame.iloc[positions].reset_index(drop=True), transform_columns[0]))
    if failed.any():
        logger.warning("%d of %d samples do not parse as %s and were skipped for transformations", failed.sum(), len(base), language)
    return TransformOutcome(variants, rates, np.flatnonzero(failed).tolist(), language)


def pooled_variant(variants: list[Variant], name: str = "metamorphic") -> Variant | None:
    """All rows of all transformed variants together (``/metamorphic`` metrics)."""
    used = [v for v in variants if len(v.positions)]
    if not used:
        return None
    return Variant(
        name, "metamorphic", np.concatenate([v.positions for v in used]),
        pd.concat([v.frame for v in used], ignore_index=True), used[0].code_column,
    )
