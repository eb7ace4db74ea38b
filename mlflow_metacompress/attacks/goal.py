"""The goal function: the one place where model queries are made, cached and counted.

Follows TextAttack's ``UntargetedClassification`` (Morris et al., EMNLP 2020 demos):
an attack succeeds when the predicted class differs from the ground-truth label, and
the score to maximise is ``1 - p(label)``. Two layers:

* :class:`QueryModel` wraps the victim ``predict(df) -> N×K probabilities`` callable.
  It batches every request into as few ``predict`` calls as possible and caches
  probabilities by a hash of the full input row, so an input already seen — by any
  sample or any attack sharing the model — is never run through the model again.
  It counts the rows actually forwarded (``forward_rows``) and the time spent.
* :class:`GoalFunction` is one sample's view: it counts that sample's queries (each
  distinct input once, cache hits from *other* samples included, so budgets do not
  depend on the order samples are attacked in) and refuses to go over the budget.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

PredictFn = Callable[[pd.DataFrame], np.ndarray]


def row_key(values: Sequence[str]) -> str:
    """Hash of one model input (all code columns, in order)."""
    h = hashlib.blake2b(digest_size=16)
    for v in values:
        h.update(v.encode("utf-8", "surrogatepass"))
        h.update(b"\x00\x1f\x00")
    return h.hexdigest()


class QueryModel:
    """A victim model behind a batching, caching, counting front.

    ``columns`` are the code columns the model reads, in order; inputs are tuples
    of strings with one entry per column.
    """

    def __init__(self, predict: PredictFn, columns: Sequence[str], max_batch: int = 256) -> None:
        if not columns:
            raise ValueError("QueryModel needs at least one code column")
        self.predict = predict
        self.columns = list(columns)
        self.max_batch = int(max_batch)
        self._cache: dict[str, np.ndarray] = {}
        self.forward_rows = 0
        self.forward_calls = 0
        self.forward_seconds = 0.0
        self.num_classes: int | None = None

    def cached(self, key: str) -> bool:
        return key in self._cache

    def remember(self, rows: Sequence[Sequence[str]], probs: np.ndarray) -> None:
        """Seed the cache with probabilities already computed for ``rows`` (e.g. the
        evaluator's predictions on the original inputs), so they are not forwarded again."""
        probs = _as_probabilities(probs, len(rows))
        if self.num_classes is None and len(rows):
            self.num_classes = probs.shape[1]
        for r, p in zip(rows, probs, strict=True):
            self._cache.setdefault(row_key(r), p)

    def probabilities(self, rows: Sequence[Sequence[str]]) -> np.ndarray:
        """Probabilities (len(rows)×K) for ``rows``, forwarding only unseen inputs."""
        keys = [row_key(r) for r in rows]
        missing: dict[str, Sequence[str]] = {}
        for k, r in zip(keys, rows, strict=True):
            if k not in self._cache and k not in missing:
                missing[k] = r
        items = list(missing.items())
        for start in range(0, len(items), self.max_batch):
            chunk = items[start : start + self.max_batch]
            probs = self._forward([r for _, r in chunk])
            for (k, _), p in zip(chunk, probs, strict=True):
                self._cache[k] = p
        if not keys:
            return np.zeros((0, self.num_classes or 0))
        return np.stack([self._cache[k] for k in keys])

    def _forward(self, rows: list[Sequence[str]]) -> np.ndarray:
        frame = pd.DataFrame({c: [r[i] for r in rows] for i, c in enumerate(self.columns)})
        t0 = time.perf_counter()
        out = self.predict(frame)
        self.forward_seconds += time.perf_counter() - t0
        probs = _as_probabilities(out, len(rows))
        if self.num_classes is None:
            self.num_classes = probs.shape[1]
        elif probs.shape[1] != self.num_classes:
            raise ValueError(f"predict returned {probs.shape[1]} classes, earlier {self.num_classes}")
        self.forward_rows += len(rows)
        self.forward_calls += 1
        return probs


def _as_probabilities(out: object, n: int) -> np.ndarray:
    if isinstance(out, pd.DataFrame):
        out = out.to_numpy()
    probs = np.asarray(out, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[0] != n:
        raise ValueError(f"predict must return an N×K array of probabilities; got shape {probs.shape} for N={n}")
    if not np.all(np.isfinite(probs)) or probs.min() < -1e-6 or np.abs(probs.sum(axis=1) - 1).max() > 1e-3:
        raise ValueError("predict must return class probabilities (non-negative rows summing to 1), not logits")
    return probs


@dataclass(frozen=True)
class GoalResult:
    """The model's verdict on one candidate input."""

    code: str
    probs: np.ndarray
    label: int

    @property
    def prediction(self) -> int:
        return int(np.argmax(self.probs))

    @property
    def score(self) -> float:
        """``1 - p(label)``: higher is closer to a flip."""
        return float(1.0 - self.probs[self.label])

    @property
    def succeeded(self) -> bool:
        return self.prediction != self.label


class BudgetedQueries:
    """One sample's query budget: the distinct inputs it has evaluated (free when seen
    again), what is left, and the longest prefix of a batch that fits (:meth:`take`).
    Shared by the label-flip goal (:class:`GoalFunction`) and the teacher–student goal
    (:class:`~.deviation.goal.DifferentialGoal`); ``columns`` orders the model's row."""

    def __init__(self, row: Mapping[str, str], column: str, budget: int, columns: Sequence[str]) -> None:
        if column not in row:
            raise KeyError(f"attacked column {column!r} is not among the code columns {list(row)}")
        self.row = dict(row)
        self.column = column
        self.budget = int(budget)
        self._columns = tuple(columns)
        self._seen: set[str] = set()
        self.requests = 0

    @property
    def queries(self) -> int:
        """Distinct inputs evaluated for this sample (what the budget limits)."""
        return len(self._seen)

    @property
    def remaining(self) -> int:
        return max(self.budget - self.queries, 0)

    @property
    def exhausted(self) -> bool:
        return self.queries >= self.budget

    def model_row(self, code: str) -> tuple[str, ...]:
        """The model's row with ``code`` in the attacked column."""
        return tuple(code if c == self.column else self.row[c] for c in self._columns)

    def take(self, codes: Sequence[str]) -> tuple[list[str], set[str]]:
        """The longest prefix of ``codes`` within the budget, and the new keys it spends
        (pass them to :meth:`spend` once the models answered)."""
        allowed: list[str] = []
        new: set[str] = set()
        for code in codes:
            key = row_key(self.model_row(code))
            if key not in self._seen and key not in new:
                if self.queries + len(new) >= self.budget:
                    break
                new.add(key)
            allowed.append(code)
        self.requests += len(allowed)
        return allowed, new

    def spend(self, new: set[str]) -> None:
        self._seen |= new


class GoalFunction(BudgetedQueries):
    """Untargeted label flip for one sample, within a query budget.

    ``row`` maps every code column to its original text; only ``column`` is attacked
    (for clone pairs, the first function, as in ALERT's protocol).
    """

    def __init__(self, model: QueryModel, row: Mapping[str, str], column: str, label: int, budget: int) -> None:
        super().__init__(row, column, budget, model.columns)
        self.model = model
        self.label = int(label)

    def _row(self, code: str) -> tuple[str, ...]:
        return self.model_row(code)

    def get_results(self, codes: Sequence[str]) -> list[GoalResult]:
        """Results for the longest prefix of ``codes`` that fits in the budget.

        Codes already evaluated for this sample are free; new ones each cost one query.
        The returned list is shorter than ``codes`` exactly when the budget ran out.
        """
        allowed, new = self.take(codes)
        probs = self.model.probabilities([self.model_row(c) for c in allowed])
        self.spend(new)
        return [GoalResult(c, p, self.label) for c, p in zip(allowed, probs, strict=True)]
