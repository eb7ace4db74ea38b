"""Metamorphic augmentation shared by the ``morph`` and ``fidelity`` methods: training
and validation variants, with teacher logits computed once.

MORPH (Panichella, ICSE 2025) augments the distillation set with semantics-preserving
variants: renamed functions and renamed variables/parameters (:data:`MORPH_TRANSFORMS`,
chained by :func:`metamorphic`). ``fidelity`` takes every applicable transformation
separately (:func:`variant_table`). The variants come from the project's transformation
library (:mod:`mlflow_metacompress.transforms`). The teacher labels every variant once
through the cached soft-label path (:mod:`.soft_labels`), before training; the teacher
never enters the training loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .datasets import CodeExamples

logger = logging.getLogger(__name__)

MORPH_TRANSFORMS = ("rename_function", "rename_variables")
TASK_LANGUAGE = {"devign": "c", "bigclonebench": "java"}


def language_of(task: str, override: str | None = None) -> str:
    if override:
        return override
    try:
        return TASK_LANGUAGE[task]
    except KeyError:
        raise ValueError(f"no language known for task {task!r}; pass the 'language' option") from None


def chain(codes: list[str], names: Sequence[str], language: str, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Apply ``names`` in sequence to every code; returns the codes and a mask of the
    rows at least one transformation changed (unparsable rows stay unchanged)."""
    from ..transforms import transform_many

    out, changed = list(codes), np.zeros(len(codes), dtype=bool)
    for k, name in enumerate(names):
        results = transform_many(out, [name], language, seed=seed + k)[name]
        out = [r.code for r in results]
        changed |= np.array([r.changed for r in results], dtype=bool)
    return out, changed


def each_variant(codes: list[str], names: Sequence[str], language: str, seed: int = 0) -> dict[str, list[str | None]]:
    """One variant per transformation in ``names`` and code; ``None`` where it did not apply."""
    from ..transforms import transform_many

    results = transform_many(codes, list(names), language, seed=seed)
    return {n: [r.code if r.changed else None for r in rs] for n, rs in results.items()}


def metamorphic(
    examples: CodeExamples,
    language: str,
    names: Sequence[str] = MORPH_TRANSFORMS,
    seed: int = 0,
    keep_unchanged: bool = True,
) -> tuple[CodeExamples, np.ndarray]:
    """The variant of every row (both columns for pairs), labels kept, no teacher logits.

    With ``keep_unchanged=False`` only rows some transformation changed are returned;
    the second value is the index of the returned rows in ``examples``.
    """
    a, ch_a = chain(examples.texts, names, language, seed)
    b, ch_b = (
        chain(examples.texts_b, names, language, seed + 101)
        if examples.texts_b is not None
        else (None, np.zeros(len(a), dtype=bool))
    )
    rows = np.arange(len(a)) if keep_unchanged else np.flatnonzero(ch_a | ch_b)
    logger.info("metamorphic variants: %d/%d rows changed by %s", int((ch_a | ch_b).sum()), len(a), list(names))
    return CodeExamples(
        [a[i] for i in rows],
        None if b is None else [b[i] for i in rows],
        None if examples.labels is None else examples.labels[rows],
    ), rows


def frame_of(examples: CodeExamples, code_columns: Sequence[str]) -> pd.DataFrame:
    data = {code_columns[0]: examples.texts}
    if examples.texts_b is not None:
        data[code_columns[1]] = examples.texts_b
    return pd.DataFrame(data)


def with_teacher_logits(
    examples: CodeExamples, teacher_uri: str, code_columns: Sequence[str], cache_dir: str | Path | None
) -> CodeExamples:
    """``examples`` with the teacher's cached soft labels (one teacher pass, ever)."""
    from .soft_labels import teacher_logits

    if not teacher_uri:
        raise ValueError("labelling metamorphic variants needs the teacher URI (DistillContext.teacher_uri)")
    logits = teacher_logits(teacher_uri, frame_of(examples, code_columns), list(code_columns), cache_dir)
    return CodeExamples(examples.texts, examples.texts_b, examples.labels, logits)


def concat(parts: Sequence[CodeExamples]) -> CodeExamples:
    """Row-wise concatenation (all parts must carry the same fields)."""
    texts = [t for p in parts for t in p.texts]
    texts_b: list[str] | None = None
    if parts[0].texts_b is not None:
        texts_b = []
        for p in parts:
            if p.texts_b is None:  # was a TypeError
                raise ValueError("concat: every part must carry texts_b when the first one does")
            texts_b.extend(p.texts_b)
    labels = None if parts[0].labels is None else np.concatenate([p.labels for p in parts])
    logits = None if parts[0].teacher_logits is None else np.concatenate([p.teacher_logits for p in parts])
    return CodeExamples(texts, texts_b, labels, logits)


def variant_table(
    examples: CodeExamples, language: str, names: Sequence[str], seed: int = 0, rows: int | None = None
) -> tuple[CodeExamples, list[np.ndarray]]:
    """All changed variants of every row under each of ``names`` (first column
    transformed; a pair's second function is kept) and, per original, the indices of its
    variants in the table. ``rows``: only a seeded sample of that many rows gets variants
    (each variant costs one teacher pass; the others keep an empty list)."""
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 1):
        raise ValueError(f"variant_rows must be a positive integer or None, got {rows!r}")
    chosen = list(range(len(examples)))
    if rows is not None and rows < len(examples):
        chosen = sorted(int(i) for i in np.random.default_rng(seed).choice(len(examples), rows, replace=False))
    subset = each_variant([examples.texts[i] for i in chosen], names, language, seed)
    table: dict[str, list[str | None]] = {name: [None] * len(examples) for name in names}
    for name in names:
        for j, i in enumerate(chosen):
            table[name][i] = subset[name][j]
    texts: list[str] = []
    source_b = examples.texts_b
    texts_b: list[str] | None = [] if source_b is not None else None
    owner: list[int] = []
    for name in names:
        for i, code in enumerate(table[name]):
            if code is not None and code != examples.texts[i]:
                texts.append(code)
                owner.append(i)
                if texts_b is not None and source_b is not None:
                    texts_b.append(source_b[i])
    owner_arr = np.asarray(owner, dtype=np.int64)
    variant_of = [np.flatnonzero(owner_arr == i) for i in range(len(examples))]
    return CodeExamples(texts, texts_b), variant_of
