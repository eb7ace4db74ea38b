"""How sure each number is: percentile-bootstrap intervals and McNemar's exact test.

The relations of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476; :mod:`.relations`)
give point estimates; on a few hundred test rows a violation rate of 0.34 is uncertain by
about ±0.05. This module adds, as pure NumPy:

- **Percentile-bootstrap intervals** (Efron & Tibshirani, *An Introduction to the
  Bootstrap*, 1993, ch. 13) for every rate and mean metric on the original inputs and on
  the pooled ``/metamorphic`` variant. The resampling unit is the *original sample*: a
  replicate draws ``n`` original samples with replacement (multinomial counts ``w_i``), and
  every row derived from sample ``i`` (its transformed variants) enters with weight
  ``w_i``, so all variants of one sample move together (a cluster bootstrap; Field &
  Welsh, JASA 2007). Each metric is a function of weighted per-sample sums, so a replicate
  is one row of ``W @ S`` (``W``: replicates × samples counts, ``S``: samples × sums) and
  the whole bootstrap is a few matrix products. The interval is the 2.5th and 97.5th
  percentile of the replicates (``numpy.percentile``, linear interpolation; replicates where
  a ratio is undefined, e.g. MR3 with an empty high-confidence set, are left out).
- **McNemar's exact test** on paired correctness for ``accuracy_drop_pvalue``
  (:mod:`.mcnemar`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .families import split_family
from .mcnemar import mcnemar_exact
from .relations import RelationConfig, registered_relations
from .relations.pairing import relation_metrics, row_statistics, sample_totals
from .resampling import one_blas_thread, resample_counts, weight_chunks  # noqa: F401 - resample_counts is public here too

logger = logging.getLogger(__name__)

LEVEL = 0.95
OTHER_INTERVAL_METRICS = (
    "teacher_accuracy",
    "student_accuracy",
    "accuracy_drop",
    "teacher_flip_rate",
    "student_flip_rate",
)
"""Interval metrics that are not a relation's: accuracy (labels) and MORPH's flip rates."""


def interval_metrics() -> tuple[str, ...]:
    """Metrics that get ``<metric>_ci_low`` / ``<metric>_ci_high`` (on original and
    ``/metamorphic``): every registered relation's metrics marked ``interval``,
    ``any_violation_rate``, then :data:`OTHER_INTERVAL_METRICS`."""
    names = [m.name for r in registered_relations() for m in r.metrics if m.interval]
    return (*names, "any_violation_rate", *OTHER_INTERVAL_METRICS)


def __getattr__(name: str) -> Any:
    if name == "INTERVAL_METRICS":  # computed per access: a relation registered later is included
        return interval_metrics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


INTERVAL_SUFFIXES = ("_ci_low", "_ci_high")


def interval_key(key: str, end: str) -> str:
    """``mr1_violation_rate/metamorphic``, ``"high"`` → ``mr1_violation_rate_ci_high/metamorphic``
    (the variant suffix stays last; a family prefix stays first, :mod:`.families`:
    ``excess/mr1_violation_rate_ci_high/metamorphic``)."""
    if end not in ("low", "high"):
        raise ValueError(f"interval end must be 'low' or 'high', got {end!r}")
    family, rest = split_family(key)
    head, sep, tail = rest.partition("/")
    return f"{family}{head}_ci_{end}{sep}{tail}"


def point_key(key: str) -> str:
    """Inverse of :func:`interval_key`: ``x_ci_high/metamorphic`` → ``x/metamorphic``."""
    family, rest = split_family(key)
    head, sep, tail = rest.partition("/")
    for suffix in INTERVAL_SUFFIXES:
        if head.endswith(suffix):
            return f"{family}{head[: -len(suffix)]}{sep}{tail}"
    return key


@dataclass(frozen=True)
class Group:
    """Rows judged together (the original inputs, or every transformed variant pooled),
    each tied to its original sample ``rows[j]`` in ``0..n-1``."""

    suffix: str
    rows: np.ndarray
    columns: Mapping[str, np.ndarray]


def _col(table: Any, name: str, mask: np.ndarray) -> np.ndarray:
    return np.asarray(table[name])[mask]


def groups_from_table(table: Any, pooled: Mapping[str, Sequence[str]] | None = None) -> list[Group]:
    """The original group and one group per pooled variant (``{"metamorphic": [transform
    names]}``) from a per-sample table (``per_sample.parquet``'s columns: ``variant``,
    ``row``, the relations' flags, ``teacher_pred``/``student_pred`` and ``label``).

    Pooled rows get ``teacher_flip``/``student_flip`` against the original prediction of
    their sample (MORPH's flips, Panichella, ICSE 2025)."""
    variant = table["variant"]
    names = list(dict.fromkeys(c for r in registered_relations() for c in (*r.columns, r.flag)))
    names += ["teacher_pred", "student_pred"]
    if "label" in getattr(table, "columns", table):
        names.append("label")
    orig = np.asarray(variant == "original", dtype=bool)
    groups = [Group("", _col(table, "row", orig).astype(np.int64), {c: _col(table, c, orig) for c in names})]
    n = int(groups[0].rows.max()) + 1 if len(groups[0].rows) else 0
    base_t = np.zeros(n, dtype=np.int64)
    base_s = np.zeros(n, dtype=np.int64)
    base_t[groups[0].rows] = groups[0].columns["teacher_pred"]
    base_s[groups[0].rows] = groups[0].columns["student_pred"]
    for name, members in (pooled or {}).items():
        mask = (
            np.asarray(variant.isin(list(members)))
            if hasattr(variant, "isin")
            else np.isin(np.asarray(variant).astype(str), list(members))
        )
        if not mask.any():
            continue
        rows = _col(table, "row", mask).astype(np.int64)
        cols = {c: _col(table, c, mask) for c in names}
        cols["teacher_flip"] = cols["teacher_pred"] != base_t[rows]
        cols["student_flip"] = cols["student_pred"] != base_s[rows]
        groups.append(Group(f"/{name}", rows, cols))
    return groups


def _sums(group: Group, n: int, config: RelationConfig) -> dict[str, np.ndarray]:
    """Per original sample sums (length ``n``, or ``n × k``) of every quantity a metric of
    :func:`interval_metrics` is a function of: the registered relations' per-row statistics
    and ``any_violation``'s (:mod:`.relations.pairing`), correctness (labels) and flips."""
    c = group.columns
    stats = row_statistics(c, config)
    if "label" in c:
        stats["tc"] = np.asarray(c["teacher_pred"] == c["label"], dtype=np.float64)
        stats["sc"] = np.asarray(c["student_pred"] == c["label"], dtype=np.float64)
    for key, name in (("tflip", "teacher_flip"), ("sflip", "student_flip")):
        if name in c:
            stats[key] = np.asarray(c[name], dtype=np.float64)
    return sample_totals(group.rows, stats, n)


def _metrics(t: Mapping[str, np.ndarray], config: RelationConfig) -> dict[str, np.ndarray]:
    """Every metric of one group from (weighted) totals; arrays of shape (replicates,)."""
    m = relation_metrics(t, config)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = t["count"]
        if "tc" in t:
            m["teacher_accuracy"], m["student_accuracy"] = t["tc"] / n, t["sc"] / n
            m["accuracy_drop"] = (t["tc"] - t["sc"]) / n
        if "tflip" in t:
            m["teacher_flip_rate"], m["student_flip_rate"] = t["tflip"] / n, t["sflip"] / n
    return m


def _layout(
    groups: Sequence[Group], n: int, config: RelationConfig
) -> tuple[np.ndarray, list[tuple[int, str, slice, tuple[int, ...]]]]:
    """Every group's per-sample sums side by side (``n × width``) and where each sits."""
    layout: list[tuple[int, str, slice, tuple[int, ...]]] = []
    columns: list[np.ndarray] = []
    width = 0
    for gi, group in enumerate(groups):
        for key, arr in _sums(group, n, config).items():
            block = arr.reshape(n, -1)
            layout.append((gi, key, slice(width, width + block.shape[1]), arr.shape[1:]))
            columns.append(block)
            width += block.shape[1]
    return np.concatenate(columns, axis=1), layout


def _replicates(
    groups: Sequence[Group], n: int, chunks: Iterable[tuple[int, np.ndarray]], samples: int, config: RelationConfig
) -> dict[str, np.ndarray]:
    S, layout = _layout(groups, n, config)
    live = np.flatnonzero(np.any(S != 0, axis=0))  # empty bins stay empty in every replicate
    S_live = S[:, live].astype(np.float32)  # integer sums stay exact below 2**24
    T = np.zeros((samples, S.shape[1]))
    with one_blas_thread():
        for start, W in chunks:
            T[start : start + len(W), live] = W @ S_live
    out: dict[str, np.ndarray] = {}
    for gi, group in enumerate(groups):
        totals = {key: T[:, sl].reshape((samples, *shape)) for g, key, sl, shape in layout if g == gi}
        out.update({f"{name}{group.suffix}": v for name, v in _metrics(totals, config).items()})
    return out


def replicate_metrics(
    groups: Sequence[Group], n: int, counts: np.ndarray, config: RelationConfig | None = None
) -> dict[str, np.ndarray]:
    """Every metric of every group in each replicate given by ``counts`` (replicates × n:
    how often each original sample was drawn; a sample's rows all carry its count)."""
    counts = np.atleast_2d(np.asarray(counts, dtype=np.float32))
    return _replicates(groups, n, [(0, counts)], len(counts), config or RelationConfig())


def bootstrap_intervals(
    groups: Sequence[Group],
    n: int,
    samples: int = 1000,
    seed: int = 0,
    config: RelationConfig | None = None,
    level: float = LEVEL,
    keys: Sequence[str] | None = None,
) -> dict[str, float]:
    """Percentile-bootstrap ``level`` intervals, ``{<metric>_ci_low<suffix>: …, <metric>_ci_high<suffix>: …}``.

    ``samples`` replicates each draw ``n`` original samples with replacement
    (:func:`resample_counts`); one weight matrix serves every group, so a sample's original
    and transformed rows move together. ``keys``: only metrics whose point estimate is in
    ``keys`` (e.g. the logged metrics, so MR3 gets no interval when it was omitted) get one.
    """
    cfg = config or RelationConfig()
    if samples <= 0 or n <= 0 or not groups:
        return {}
    reps_by_key = _replicates(groups, n, weight_chunks(n, samples, seed), samples, cfg)
    q = 100 * np.array([(1 - level) / 2, (1 + level) / 2])
    keep = None if keys is None else set(keys)
    wanted = [k for k in reps_by_key if keep is None or k in keep]
    ends: dict[str, np.ndarray] = {}
    finite = [k for k in wanted if np.isfinite(reps_by_key[k]).all()]
    if finite:  # one percentile call for every metric defined in all replicates (the same values as one by one)
        both = np.percentile(np.stack([reps_by_key[k] for k in finite], axis=1), q, axis=0)
        ends.update({k: both[:, i] for i, k in enumerate(finite)})
    out: dict[str, float] = {}
    for key in wanted:
        if key not in ends:
            reps = reps_by_key[key][np.isfinite(reps_by_key[key])]
            if not len(reps):
                logger.warning("no bootstrap replicate defines %s; its interval is not logged", key)
                continue
            ends[key] = np.percentile(reps, q)
        out[interval_key(key, "low")], out[interval_key(key, "high")] = float(ends[key][0]), float(ends[key][1])
    return out


def point_estimates(groups: Sequence[Group], n: int, config: RelationConfig | None = None) -> dict[str, float]:
    """The metrics as :func:`bootstrap_intervals` computes them with every weight 1 (the
    point estimates; equal to :func:`~.relations.evaluate_relations` up to rounding)."""
    cfg = config or RelationConfig()
    out = {}
    for group in groups:
        totals = {k: v.sum(axis=0)[None, ...] for k, v in _sums(group, n, cfg).items()}
        out.update({f"{k}{group.suffix}": float(v[0]) for k, v in _metrics(totals, cfg).items()})
    return out


def evaluation_statistics(
    table: Any,
    n: int,
    metrics: Mapping[str, float],
    pooled: Mapping[str, Sequence[str]] | None = None,
    samples: int = 1000,
    seed: int = 0,
    config: RelationConfig | None = None,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The evaluator's hook: interval metrics for the logged ``metrics`` (original and pooled
    groups of the per-sample ``table``) and, with labels, ``accuracy_drop_pvalue``. Returns
    ``(new metrics, summary section)``."""
    groups = groups_from_table(table, pooled)
    new = bootstrap_intervals(groups, n, samples, seed, config, keys=list(metrics)) if samples > 0 else {}
    section: dict[str, Any] = {
        "bootstrap_samples": samples,
        "seed": seed,
        "level": LEVEL,
        "method": "percentile bootstrap over original samples (variants move with their sample)",
    }
    section["intervals"] = {
        point_key(k): {"estimate": metrics[point_key(k)], "low": v, "high": new[interval_key(point_key(k), "high")]}
        for k, v in new.items()
        if k.partition("/")[0].endswith("_ci_low")
    }
    orig = groups[0].columns
    if "label" in orig:
        p, b, c = mcnemar_exact(orig["teacher_pred"] == orig["label"], orig["student_pred"] == orig["label"])
        new["accuracy_drop_pvalue"] = p
        section["accuracy_drop_pvalue"] = {
            "pvalue": p,
            "teacher_right_student_wrong": b,
            "teacher_wrong_student_right": c,
            "test": "McNemar exact (two-sided binomial on discordant pairs)",
        }
    return new, section
