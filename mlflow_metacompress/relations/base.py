"""The :class:`Relation` type, its registry and :class:`RelationConfig`.

A metamorphic relation of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) states what a
student that deeply mimics its teacher must preserve; the teacher is the oracle. Each
relation is declared once, as a :class:`Relation`, in the torchmetrics manner (a metric is
sufficient statistics plus a compute step):

- ``judge(P_T, P_S, config)``: per-sample arrays (``<key>_violation`` among them) and the
  point metrics of one comparison;
- ``statistics(columns, config)``: per-row sufficient statistics, arrays of shape
  ``(rows,)`` or ``(rows, k)``, read from the per-sample columns ``judge`` wrote; any set of
  rows (a slice, a bootstrap replicate, the same rows of another model) is judged by
  summing them with weights;
- ``compute(totals, config)``: the metrics from (weighted) sums of those statistics plus
  ``count`` (the weighted number of rows), as arrays over replicates;
- its metrics (name, direction, definition, whether it gets an interval), its thresholds
  (:class:`Param`, default and range) and its documentation.

The evaluator, the bootstrap, the slices, the report, the metric catalogue and the gates
iterate :func:`registered_relations`; adding a relation is one :func:`register` call
(:func:`registered` undoes itself, for tests).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KL_EPS = 1e-12


@dataclass
class RelationResult:
    """Scalar metrics plus per-sample arrays (flags, KL, bins) of one comparison."""

    metrics: dict[str, float]
    per_sample: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Param:
    """A threshold of a relation: its ``evaluator_config`` key, default and valid range
    (``[low, high]``, ``(low, high]`` with ``low_open``; ``integer`` for a count)."""

    name: str
    default: float
    low: float = 0.0
    high: float = math.inf
    low_open: bool = False
    integer: bool = False


@dataclass(frozen=True)
class RelationMetric:
    """A metric a relation logs: name, direction (torchmetrics' ``higher_is_better``),
    definition for the catalogue, and whether the bootstrap gives it an interval."""

    name: str
    greater_is_better: bool
    definition: str
    interval: bool = True


@dataclass(frozen=True)
class CellVerdict:
    """For a relation whose per-row flag depends on a verdict over a group of rows (MR4: a
    row violates when its confidence bin violates and its own gap exceeds the threshold),
    which a bootstrap replicate re-judges: ``cells(config)`` groups, ``candidates(columns,
    config)`` → (rows that violate when their cell does, each row's cell), and
    ``bad(totals, config)`` → ``(..., cells)`` booleans from the relation's totals."""

    cells: Callable[[RelationConfig], int]
    candidates: Callable[[Mapping[str, np.ndarray], RelationConfig], tuple[np.ndarray, np.ndarray]]
    bad: Callable[[Mapping[str, np.ndarray], RelationConfig], np.ndarray]


Judge = Callable[[np.ndarray, np.ndarray, "RelationConfig"], RelationResult]
Statistics = Callable[[Mapping[str, np.ndarray], "RelationConfig"], dict[str, np.ndarray]]
Compute = Callable[[Mapping[str, np.ndarray], "RelationConfig"], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Relation:
    """One metamorphic relation, declared in one place (module docstring).

    ``key`` (``mr1``) prefixes its metrics and per-sample columns; ``<key>_violation`` is its
    per-sample flag (ORed into ``any_violation``) and ``<key>_violation_rate`` its rate (the
    report's, the slices' and the headline's). ``columns``: the per-sample columns
    ``statistics`` reads. A slice's rate is the mean of ``slice_flag`` (default: the flag)
    over its rows in ``slice_support`` (default: all). ``omitted``: when the metrics are
    left out (shown when a gate misses one).
    """

    key: str
    title: str
    doc: str
    metrics: tuple[RelationMetric, ...]
    judge: Judge
    statistics: Statistics
    compute: Compute
    columns: tuple[str, ...]
    params: tuple[Param, ...] = ()
    slice_flag: str | None = None
    slice_support: str | None = None
    verdict: CellVerdict | None = None
    omitted: str = ""

    @property
    def flag(self) -> str:
        return f"{self.key}_violation"

    @property
    def rate_metric(self) -> str:
        return f"{self.key}_violation_rate"

    @property
    def short(self) -> str:
        """``MR1``: the label of a table column."""
        return self.key.upper()


_REGISTRY: dict[str, Relation] = {}


def register(relation: Relation) -> Relation:
    """Add ``relation`` after the registered ones; ``ValueError`` when its key, a metric or a
    parameter name is taken (metric names and artifacts are a public interface)."""
    if relation.key in _REGISTRY:
        raise ValueError(f"a relation with key {relation.key!r} is already registered")
    names = {m.name for r in _REGISTRY.values() for m in r.metrics} | {"any_violation_rate"}
    taken = sorted(names & {m.name for m in relation.metrics})
    params = {p.name: p for r in _REGISTRY.values() for p in r.params}
    clash = sorted(p.name for p in relation.params if p.name in params and params[p.name] != p)
    if taken or clash:
        raise ValueError(f"relation {relation.key!r}: metric(s) {taken} or parameter(s) {clash} are taken")
    if relation.rate_metric not in {m.name for m in relation.metrics}:
        raise ValueError(f"relation {relation.key!r} must log its rate {relation.rate_metric!r}")
    _REGISTRY[relation.key] = relation
    return relation


def unregister(key: str) -> Relation:
    """Remove the relation ``key`` (``KeyError`` when it is not registered)."""
    return _REGISTRY.pop(key)


@contextmanager
def registered(relation: Relation) -> Iterator[Relation]:
    """Register ``relation`` for the ``with`` block, then remove it (also on error)."""
    register(relation)
    try:
        yield relation
    finally:
        unregister(relation.key)


def registered_relations() -> tuple[Relation, ...]:
    """Every registered relation, in registration order (MR1–MR4 first)."""
    return tuple(_REGISTRY.values())


def relation_params() -> dict[str, Param]:
    """Every registered relation's parameters by name (shared names are one parameter)."""
    return {p.name: p for r in _REGISTRY.values() for p in r.params}


class RelationConfig:
    """Thresholds of the relations by parameter name (defaults: each :class:`Param`'s,
    following the paper), e.g. ``RelationConfig(kl_threshold=0.05).kl_threshold``.

    Immutable and hashable; a parameter of a relation registered after the config was
    made reads as that parameter's default. An unknown name is a ``TypeError``.
    """

    __slots__ = ("_values",)

    def __init__(self, **values: Any) -> None:
        known = relation_params()
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TypeError(f"unknown relation parameter(s) {unknown}; known: {sorted(known)}")
        object.__setattr__(self, "_values", {k: values.get(k, p.default) for k, p in known.items()})

    def get(self, name: str) -> Any:
        """The value of parameter ``name`` (``AttributeError`` for a name no relation declares)."""
        values: dict[str, Any] = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        params = relation_params()
        if name in params:
            return params[name].default
        raise AttributeError(f"no registered relation has a parameter {name!r}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("RelationConfig is immutable")

    def as_dict(self) -> dict[str, Any]:
        """Every registered parameter's value."""
        return {name: self.get(name) for name in relation_params()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RelationConfig) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.as_dict().items())))

    def __repr__(self) -> str:
        return "RelationConfig(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"


def predict(P: np.ndarray) -> np.ndarray:
    """``ŷ = argmax_k P[i, k]``; NumPy's argmax already sends ties to the lowest index."""
    return np.asarray(P).argmax(axis=1)


def bin_index(conf: np.ndarray, bins: int) -> np.ndarray:
    """Equal-width bin of each confidence: ``min(floor(c·B), B − 1)``."""
    return np.minimum(np.floor(np.asarray(conf) * bins).astype(np.int64), bins - 1)
