"""One code column's transformation results as plain arrays, computed the same way by both
engines: here in the driver process (the local engine) or on Spark executors
(:mod:`.spark_transforms`). The transformations are those of :mod:`mlflow_metacompress.transforms`
(NatGen, Chakraborty et al., FSE 2022; CODA, Tian et al., ASE 2023; Rabin et al., IST 2021)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class ColumnTransforms:
    """One code column's transformation results as plain arrays, whichever engine computed
    them (:func:`column_transforms`, in the driver or on Spark executors by :mod:`.spark_transforms`)."""

    failed: np.ndarray  # bool per row: the sample does not parse
    over: list[str | None]  # per row: "too_large"/"too_deep" when over the limits, else None
    changed: dict[str, np.ndarray]  # per transformation: bool per row
    codes: dict[str, list[str | None]]  # per transformation: the new code where changed, else None


def column_transforms(
    codes: list[str], names: list[str], language: str, seed: int = 0, progress: bool = False
) -> ColumnTransforms:
    """Every named transformation of ``codes`` (each sample parsed once, results per sample
    independent of its neighbours, so any partitioning of the rows gives the same arrays)."""
    from ..transforms import TransformStatus, transform_many

    results = transform_many(codes, names, language, seed=seed, progress=progress)
    first = results[names[0]]  # parse status and limits are the same for every transformation of a sample
    failed = np.array([r.status == TransformStatus.PARSE_ERROR for r in first], dtype=bool)
    over = [str(getattr(r.reason, "value", r.reason)) if r.over_limit else None for r in first]
    changed = {n: np.array([r.status == TransformStatus.CHANGED for r in results[n]], dtype=bool) for n in names}
    new = {n: [r.code if c else None for r, c in zip(results[n], changed[n], strict=True)] for n in names}
    return ColumnTransforms(failed, over, changed, new)
