"""Paired comparisons over the per-sample table: the excess over a reference model and the
metamorphic increment, with paired percentile-bootstrap intervals (issue 42).

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) judges a student by how often it departs
from its teacher under four relations; a teacher retrained with another seed departs from
the first one too. With a reference model (``evaluator_config["reference"]``) judged against
the teacher on the same rows, the per-sample table holds both models' relation columns side
by side (the reference's prefixed ``reference_``), and every input kind (the original, each
transformation, ``/metamorphic`` pooled, each attack) gets, per relation metric ``<m>``
(names: :mod:`.families`):

- ``reference/<m>`` and ``excess/<m> = <m>(student) − <m>(reference)`` on the same rows;
- for transformed kinds, ``increment/<m> = <m>(transformed rows) − <m>(the same rows'
  originals)`` (each transformed row paired with its own original, so a sample enters both
  sides as often), ``reference/increment/<m>`` and ``excess/increment/<m>``.

Each side is a weighted sum of per-row statistics (:func:`.relations.pairing.weighted_metrics`),
so a bootstrap replicate weights every side by the same multinomial counts of original
samples (:func:`.resampling.weight_chunks`: the very resamples of the other intervals,
:mod:`.statistics`) and the difference is taken inside each replicate: a paired percentile
bootstrap (Efron & Tibshirani 1993, ch. 13), logged as ``<family><m>_ci_low<suffix>`` /
``_ci_high``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .families import EXCESS, EXCESS_INCREMENT, FAMILIES, INCREMENT, REFERENCE, REFERENCE_INCREMENT
from .relations import RelationConfig, registered_relations
from .relations.pairing import relation_metrics, row_statistics, sample_totals
from .resampling import one_blas_thread, weight_chunks
from .statistics import LEVEL, interval_key

logger = logging.getLogger(__name__)

REFERENCE_COLUMN = "reference_"
"""Prefix of the reference's per-sample columns (``reference_mr1_violation``, ``reference_prob_<c>``, …)."""

Side = tuple[np.ndarray, dict[str, np.ndarray]]


def relation_columns() -> list[str]:
    """The per-sample columns the registered relations' statistics read (and their flags)."""
    return list(dict.fromkeys(c for r in registered_relations() for c in (*r.columns, r.flag)))


def _take(table: Any, names: Sequence[str], prefix: str, index: np.ndarray) -> dict[str, np.ndarray]:
    return {c: np.asarray(table[prefix + c])[index] for c in names}


def paired_kinds(table: Any, pooled: Mapping[str, Sequence[str]]) -> list[tuple[str, np.ndarray, bool]]:
    """``(suffix, per-sample row indices, has an increment)`` of every input kind, in the
    table's variant order: the original, each variant (transformations have an increment),
    then each pooled variant over its members' rows."""
    variant = np.asarray(table["variant"]).astype(str)
    members = {m for ms in pooled.values() for m in ms}
    out = [("", np.flatnonzero(variant == "original"), False)]
    for name in dict.fromkeys(variant.tolist()):
        if name != "original":
            out.append((f"/{name}", np.flatnonzero(variant == name), name in members))
    for name, ms in pooled.items():
        index = np.flatnonzero(np.isin(variant, list(ms)))
        if len(index):
            out.append((f"/{name}", index, True))
    return out


def _sides(table: Any, index: np.ndarray, increment: bool, origin: np.ndarray) -> dict[str, Side]:
    """The student's and the reference's rows of one kind; with ``increment``, also the
    originals of the same rows (``origin``: each sample's original row in the table)."""
    names = relation_columns()
    rows = np.asarray(table["row"], dtype=np.int64)[index]
    sides = {"s": (rows, _take(table, names, "", index)), "r": (rows, _take(table, names, REFERENCE_COLUMN, index))}
    if increment:
        at = origin[rows]
        if (at < 0).any():
            raise ValueError("a transformed row has no original row in the per-sample table")
        sides["os"] = (rows, _take(table, names, "", at))
        sides["or"] = (rows, _take(table, names, REFERENCE_COLUMN, at))
    return sides


def _families(m: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    s, r = m["s"], m["r"]
    out = {REFERENCE: dict(r), EXCESS: {k: s[k] - r[k] for k in s if k in r}}
    if "os" in m:
        inc = {k: s[k] - m["os"][k] for k in s}
        ref_inc = {k: r[k] - m["or"][k] for k in r}
        out.update({INCREMENT: inc, REFERENCE_INCREMENT: ref_inc})
        out[EXCESS_INCREMENT] = {k: inc[k] - ref_inc[k] for k in inc if k in ref_inc}
    return out


def _weighted(totals: Mapping[str, Mapping[str, np.ndarray]], W: np.ndarray, config: RelationConfig) -> dict:
    """Every family's metrics with samples weighted by ``W`` (replicates × n)."""
    metrics = {}
    for side, t in totals.items():
        metrics[side] = relation_metrics({k: np.tensordot(W, v, axes=(1, 0)) for k, v in t.items()}, config)
    return _families(metrics)


def paired_metrics(
    table: Any,
    n: int,
    pooled: Mapping[str, Sequence[str]] | None = None,
    samples: int = 1000,
    seed: int = 0,
    config: RelationConfig | None = None,
    level: float = LEVEL,
) -> dict[str, float]:
    """The families' point estimates (every weight 1) and, with ``samples > 0``, the paired
    bootstrap intervals of those with one, for every input kind of the per-sample ``table``
    (its ``variant`` and ``row`` columns, the student's relation columns and the reference's,
    prefixed :data:`REFERENCE_COLUMN`). ``pooled``: ``{"metamorphic": [transform names]}``.
    A metric undefined on a kind (MR3 with no confident row) is left out, as is an interval
    no replicate defines."""
    cfg = config or RelationConfig()
    variant = np.asarray(table["variant"]).astype(str)
    origin = np.full(n, -1, dtype=np.int64)
    is_orig = np.flatnonzero(variant == "original")
    origin[np.asarray(table["row"], dtype=np.int64)[is_orig]] = is_orig
    q = 100 * np.array([(1 - level) / 2, (1 + level) / 2])
    out: dict[str, float] = {}
    for suffix, index, increment in paired_kinds(table, pooled or {}):
        sides = _sides(table, index, increment, origin)
        totals = {k: sample_totals(rows, row_statistics(cols, cfg), n) for k, (rows, cols) in sides.items()}
        point = _weighted(totals, np.ones((1, n)), cfg)
        reps: dict[str, dict[str, list[np.ndarray]]] = {}
        if samples > 0:
            with one_blas_thread():
                for _, W in weight_chunks(n, samples, seed):
                    for fam, values in _weighted(totals, W, cfg).items():
                        for name, v in values.items():
                            reps.setdefault(fam, {}).setdefault(name, []).append(v)
        for fam, values in point.items():
            for name, v in values.items():
                key = f"{fam}{name}{suffix}"
                if not np.isfinite(v[0]):
                    continue
                out[key] = float(v[0])
                if not FAMILIES[fam][1] or fam not in reps:
                    continue
                r = np.concatenate(reps[fam][name])
                r = r[np.isfinite(r)]
                if not len(r):
                    logger.warning("no bootstrap replicate defines %s; its interval is not logged", key)
                    continue
                low, high = np.percentile(r, q)
                out[interval_key(key, "low")], out[interval_key(key, "high")] = float(low), float(high)
    return out
