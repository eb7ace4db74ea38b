"""The registered relations over any weighted set of rows: per-row statistics, their sums
per original sample, and the metrics computed from (weighted) sums.

Every relation of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) is a function of sums
of per-row statistics (:class:`~.base.Relation`), so one code path judges the point
estimate (every weight 1), a bootstrap replicate (multinomial weights per original sample;
:mod:`mlflow_metacompress.statistics`) and a *paired* comparison of two sets of rows over the
same original samples under the same weights (:func:`paired_difference`: a student against
a reference model on the same rows, transformed rows against their own originals).

``any_violation`` is the OR of the relations' per-row flags. Flags that depend only on the
row (MR1–MR3) are summed once (``any.fixed``); a row whose flag depends on a verdict over a
group of rows (:class:`~.base.CellVerdict`, MR4's bins), which a replicate re-judges, is
counted per combination of its cells (``any.pending``) and counts when any of them is bad.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .base import Relation, RelationConfig, registered_relations

ANY_FIXED = "any.fixed"
ANY_PENDING = "any.pending"


def _relations(relations: Sequence[Relation] | None) -> Sequence[Relation]:
    return registered_relations() if relations is None else relations


def _any_statistics(
    columns: Mapping[str, np.ndarray], config: RelationConfig, relations: Sequence[Relation]
) -> dict[str, np.ndarray]:
    rows = len(np.asarray(columns[relations[0].flag])) if relations else 0
    fixed = np.zeros(rows, dtype=bool)
    for rel in relations:
        if rel.verdict is None:
            fixed |= np.asarray(columns[rel.flag], dtype=bool)
    out = {ANY_FIXED: fixed.astype(np.float64)}
    code, radix, pending = np.zeros(rows, dtype=np.int64), 1, np.zeros(rows, dtype=bool)
    for rel in relations:
        if rel.verdict is not None:
            candidate, cell = rel.verdict.candidates(columns, config)
            code += radix * np.where(candidate, np.asarray(cell, dtype=np.int64) + 1, 0)
            radix *= rel.verdict.cells(config) + 1
            pending |= np.asarray(candidate, dtype=bool)
    if radix > 1:
        out[ANY_PENDING] = np.eye(radix)[code] * (pending & ~fixed)[:, None]
    return out


def row_statistics(
    columns: Mapping[str, np.ndarray], config: RelationConfig, relations: Sequence[Relation] | None = None
) -> dict[str, np.ndarray]:
    """Per-row statistics of every relation (``<key>.<statistic>``) and of ``any_violation``,
    from per-sample columns (``per_sample.parquet``'s, or :func:`evaluate_relations`')."""
    rels = _relations(relations)
    out: dict[str, np.ndarray] = {}
    for rel in rels:
        out.update(
            {f"{rel.key}.{k}": np.asarray(v, dtype=np.float64) for k, v in rel.statistics(columns, config).items()}
        )
    out.update(_any_statistics(columns, config, rels))
    return out


def sample_totals(rows: np.ndarray, stats: Mapping[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """Sums of per-row ``stats`` per original sample ``rows[j]`` in ``0..n-1`` (arrays of
    length ``n``, or ``n × k``), plus ``count``, the number of rows of each sample."""
    rows = np.asarray(rows, dtype=np.int64)
    out: dict[str, np.ndarray] = {"count": np.bincount(rows, minlength=n).astype(np.float64)}
    for key, values in stats.items():
        v = np.asarray(values, dtype=np.float64)
        if v.ndim == 1:
            out[key] = np.bincount(rows, weights=v, minlength=n)
        else:
            flat = v.reshape(len(v), -1)
            cols = [np.bincount(rows, weights=flat[:, j], minlength=n) for j in range(flat.shape[1])]
            out[key] = np.stack(cols, axis=1).reshape(n, *v.shape[1:])
    return out


def _own(totals: Mapping[str, np.ndarray], rel: Relation) -> dict[str, np.ndarray]:
    head = f"{rel.key}."
    own = {k[len(head) :]: v for k, v in totals.items() if k.startswith(head)}
    own["count"] = totals["count"]
    return own


def _any_hits(totals: Mapping[str, np.ndarray], config: RelationConfig, relations: Sequence[Relation]) -> np.ndarray:
    hits = totals[ANY_FIXED]
    if ANY_PENDING not in totals:
        return hits
    pending = totals[ANY_PENDING]
    codes = np.arange(pending.shape[-1])
    bad = np.zeros(pending.shape, dtype=bool)
    radix = 1
    for rel in relations:
        if rel.verdict is None:
            continue
        digits = rel.verdict.cells(config) + 1
        cells = np.asarray(rel.verdict.bad(_own(totals, rel), config), dtype=bool)
        ext = np.concatenate([np.zeros((*cells.shape[:-1], 1), dtype=bool), cells], axis=-1)
        bad |= ext[..., (codes // radix) % digits]
        radix *= digits
    return hits + (pending * bad).sum(axis=-1)


def relation_metrics(
    totals: Mapping[str, np.ndarray], config: RelationConfig, relations: Sequence[Relation] | None = None
) -> dict[str, np.ndarray]:
    """Every relation's metrics and ``any_violation_rate`` from (weighted) totals of
    :func:`row_statistics` (leading axes: replicates); NaN where a ratio is undefined."""
    rels = _relations(relations)
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for rel in rels:
            out.update(rel.compute(_own(totals, rel), config))
        out["any_violation_rate"] = _any_hits(totals, config, rels) / totals["count"]
    return out


def weighted_metrics(
    rows: np.ndarray,
    columns: Mapping[str, np.ndarray],
    n: int,
    counts: np.ndarray,
    config: RelationConfig,
    relations: Sequence[Relation] | None = None,
) -> dict[str, np.ndarray]:
    """The relations' metrics over the rows ``columns`` (row ``j`` belongs to original sample
    ``rows[j]``) with each sample weighted by ``counts`` (replicates × n; a 1-D ``counts`` is
    one replicate): arrays of shape (replicates,)."""
    totals = sample_totals(rows, row_statistics(columns, config, relations), n)
    W = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    weighted = {k: np.tensordot(W, v, axes=(1, 0)) for k, v in totals.items()}
    return relation_metrics(weighted, config, relations)


def paired_difference(
    a: tuple[np.ndarray, Mapping[str, np.ndarray]],
    b: tuple[np.ndarray, Mapping[str, np.ndarray]],
    n: int,
    counts: np.ndarray,
    config: RelationConfig,
    relations: Sequence[Relation] | None = None,
) -> dict[str, np.ndarray]:
    """``metric(a) − metric(b)`` for every relation metric, both sides weighted by the same
    ``counts`` per original sample, so the pairing over rows is kept (a paired bootstrap:
    ``a`` a student's rows and ``b`` a reference model's on the same samples, or ``a``
    transformed rows and ``b`` their originals). ``a`` and ``b``: ``(rows, columns)``."""
    left = weighted_metrics(*a, n, counts, config, relations)
    right = weighted_metrics(*b, n, counts, config, relations)
    return {k: left[k] - right[k] for k in left if k in right}
