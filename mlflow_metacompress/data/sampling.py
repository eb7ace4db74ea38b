"""The one split sampler: at most ``n`` rows of a labelled table, stratified by label.

Used by the pipeline's per-split budgets (:mod:`mlflow_metacompress.pipeline.data`) and
by distillation's ``limit`` (:func:`mlflow_metacompress.distill.datasets.load_splits`),
so the same budget and seed select the same rows everywhere. Each label keeps its share
of the rows (at least one row per label), drawn with a seeded ``DataFrame.sample``; the
original row order is kept, so a capped split reads like the split itself.
"""

from __future__ import annotations

import pandas as pd


def cap_rows(df: pd.DataFrame, n: int | None, label: str, seed: int = 0) -> pd.DataFrame:
    """At most ``n`` rows of ``df``, sampled per ``label`` value in proportion (seeded);
    original order kept, index reset. ``n=None`` or a smaller table returns all rows."""
    if label not in df.columns:
        raise KeyError(f"cannot stratify by label column {label!r}; the table has {list(df.columns)}")
    if n is not None and n < 1:
        raise ValueError(f"a row cap must be ≥ 1, got {n}")
    return df.reset_index(drop=True).loc[cap_positions(df, n, label, seed)].reset_index(drop=True)


def cap_positions(df: pd.DataFrame, n: int | None, label: str, seed: int = 0) -> list[int]:
    """The positions (0-based, in order) of the rows :func:`cap_rows` keeps."""
    if n is None or len(df) <= n:
        return list(range(len(df)))
    df = df.reset_index(drop=True)
    keep: list[int] = []
    for _, group in df.groupby(label, sort=True):
        k = max(1, round(len(group) * n / len(df)))
        keep.extend(group.sample(n=min(k, len(group)), random_state=seed).index)
    return [int(i) for i in sorted(keep)[:n]]
