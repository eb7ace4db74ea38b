"""Deterministic, label-stratified train/valid/test splits for the generated datasets."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")


def split_frame(
    df: pd.DataFrame, fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0, stratify: str | None = None
) -> dict[str, pd.DataFrame]:
    """Split ``df`` into ``{"train", "valid", "test"}`` frames by ``fractions``.

    With ``stratify`` (a column name), each value of that column is split separately, so
    the label balance carries over to every split. Deterministic for ``seed``; indexes are
    reset. Every split of a frame with at least 3 rows per stratum is non-empty.
    """
    import numpy as np

    if len(fractions) != 3 or any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {tuple(fractions)}")
    if stratify is not None and stratify not in df.columns:
        raise KeyError(f"stratify column {stratify!r} is not in the frame; it has {list(df.columns)}")
    rng = np.random.default_rng(seed)
    groups = (
        [df.index.to_numpy()]
        if stratify is None
        else [df.index[df[stratify] == value].to_numpy() for value in sorted(df[stratify].unique())]
    )
    parts: dict[str, list] = {name: [] for name in SPLITS}
    for index in groups:
        index = rng.permutation(index)
        n = len(index)
        n_valid = int(round(n * fractions[1]))
        n_test = int(round(n * fractions[2]))
        if n >= 3:
            n_valid = max(n_valid, 1) if fractions[1] > 0 else 0
            n_test = max(n_test, 1) if fractions[2] > 0 else 0
        n_train = n - n_valid - n_test
        parts["train"].extend(index[:n_train])
        parts["valid"].extend(index[n_train : n_train + n_valid])
        parts["test"].extend(index[n_train + n_valid :])
    out = {}
    for name in SPLITS:
        order = rng.permutation(np.asarray(parts[name], dtype=df.index.to_numpy().dtype))
        out[name] = df.loc[order].reset_index(drop=True)
    return out


# the CodeXGLUE task each generator mimics, so callers may use either name
CODEXGLUE_ALIASES = {"devign": "vulnerability", "bigclonebench": "clone"}


def make_splits(
    task: str, n: int = 1000, seed: int = 0, fractions: Sequence[float] = (0.8, 0.1, 0.1)
) -> dict[str, pd.DataFrame]:
    """Generate ``n`` samples of ``task`` and split them. ``task`` is ``vulnerability``
    (Devign-shaped) or ``clone`` (BigCloneBench-shaped); the CodeXGLUE names ``devign``
    and ``bigclonebench`` name the same generators."""
    task = CODEXGLUE_ALIASES.get(task, task)
    if task == "vulnerability":
        from .vulnerability import generate_vulnerability

        return split_frame(generate_vulnerability(n, seed), fractions, seed, stratify="target")
    if task == "clone":
        from .clones import generate_clones

        return split_frame(generate_clones(n, seed), fractions, seed, stratify="label")
    raise ValueError(f"unknown task {task!r}; use 'vulnerability' or 'clone' ('devign' or 'bigclonebench')")
