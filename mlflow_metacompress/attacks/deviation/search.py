"""Searches over the whole variant space for a teacher–student disagreement.

* :func:`dflare` — DFLARE (Tian, Zhang, Wang, Zhou, Cheung, "Finding Deviated Behaviors of
  the Compressed DNN Models for Image Classifications", TOSEM 2023): a chain of mutants;
  each step picks an operator by Metropolis–Hastings over the operators ranked by their
  success rate so far (the MCMC operator selection DFLARE takes from Le et al., EMI, OOPSLA
  2015): with ``p = 1 / #operators``, a uniformly proposed operator of rank ``k2`` replaces
  the last one (rank ``k1``) with probability ``min(1, (1 - p) ** (k2 - k1))``. A mutant is
  kept as the next seed when its fitness does not fall (and, with ``novelty``, also when its
  discretised pair of probability vectors is a state not seen before); the operator that
  made a kept mutant scores a success. ``batch`` mutants are queried together.
* :func:`random_compositions` — the baseline: each candidate is the original program under
  a random composition of 1–3 operators, ``batch`` candidates per paired query batch.

Both stop at the first disagreement or when the goal's budget of paired queries is spent.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field

from .goal import DifferentialGoal, NoveltyTracker, PairResult
from .space import VariantSpace

logger = logging.getLogger(__name__)


@dataclass
class Found:
    """A search's outcome: the disagreement (or the fittest variant), the operators that
    made it, and the paired queries spent when the first disagreement was seen."""

    result: PairResult
    operators: list[str] = field(default_factory=list)
    queries_to_first: int | None = None


class OperatorSelector:
    """DFLARE's success-weighted Metropolis–Hastings choice of the next operator."""

    def __init__(self, operators: list[str], rng: random.Random) -> None:
        self.operators = list(operators)
        self.rng = rng
        self.uses = dict.fromkeys(operators, 0)
        self.wins = dict.fromkeys(operators, 0)
        self.last = rng.choice(self.operators)

    def rate(self, op: str) -> float:
        return self.wins[op] / self.uses[op] if self.uses[op] else 0.0

    def rank(self) -> dict[str, int]:
        order = sorted(self.operators, key=lambda o: (-self.rate(o), self.operators.index(o)))
        return {o: i for i, o in enumerate(order)}

    def choose(self) -> str:
        p = 1.0 / len(self.operators)
        ranks = self.rank()
        for _ in range(64):
            proposal = self.rng.choice(self.operators)
            if self.rng.random() < min(1.0, (1 - p) ** (ranks[proposal] - ranks[self.last])):
                self.last = proposal
                return proposal
        return self.last

    def record(self, op: str, success: bool) -> None:
        self.uses[op] += 1
        self.wins[op] += int(success)


def _first(results: list[PairResult], before: int) -> int | None:
    for i, r in enumerate(results):
        if r.succeeded:
            return before + i + 1
    return None


def dflare(
    goal: DifferentialGoal,
    space: VariantSpace,
    start: PairResult,
    rng: random.Random,
    batch: int = 4,
    novelty: bool = False,
    bins: int = 10,
    depth: int = 1,
) -> Found:
    """Run DFLARE's chain from ``start``; return the first disagreement, else the fittest.

    ``depth``: each mutant applies 1 to ``depth`` operators (a uniform draw), each chosen by
    the selector and each credited with the mutant's outcome; 1 is DFLARE's single mutation."""
    selector = OperatorSelector(space.operators, rng)
    tracker = NoveltyTracker(bins)
    tracker.novel(start)
    current, path = start, list[str]()
    best = Found(start)
    idle = 0
    while not goal.exhausted and idle < 4:
        codes: list[str] = []
        ops: list[list[str]] = []
        for _ in range(8 * batch):
            if len(codes) == batch:
                break
            chosen = [selector.choose() for _ in range(rng.randint(1, depth) if depth > 1 else 1)]
            out, applied = space.compose(current.code, chosen, rng)  # one operator: exactly one apply()
            if not applied or out in codes:
                for op in chosen:
                    selector.record(op, False)  # a failed mutation is no query, but no success either
                continue
            codes.append(out)
            ops.append(applied)
        if not codes:  # nothing applies to this seed: restart from the original program
            idle += 1
            current, path = start, []
            continue
        before = goal.queries
        results = goal.get_results(codes)
        first = _first(results, before)
        if first is not None:
            k = next(i for i, r in enumerate(results) if r.succeeded)
            for op in ops[k]:
                selector.record(op, True)
            return Found(results[k], [*path, *ops[k]], min(first, goal.queries))
        kept = []
        for applied, r in zip(ops, results, strict=False):
            keep = r.score >= current.score or (novelty and tracker.novel(r))
            for op in applied:
                selector.record(op, keep)
            if keep:
                kept.append((r.score, applied, r))
            if r.score > best.result.score:
                best = Found(r, [*path, *applied])
        idle = idle + 1 if goal.queries == before else 0  # only cached repeats: the chain is stuck
        if kept:
            _, applied, nxt = max(kept, key=lambda t: t[0])
            current, path = nxt, [*path, *applied]
    return best


def random_compositions(
    goal: DifferentialGoal, space: VariantSpace, start: PairResult, rng: random.Random, batch: int = 4
) -> Found:
    """The baseline: random compositions of 1–3 operators applied to the original program."""
    best = Found(start)
    idle = 0
    while not goal.exhausted and idle < 4:
        codes: list[str] = []
        paths: list[list[str]] = []
        for _ in range(8 * batch):
            if len(codes) == batch:
                break
            ops = [rng.choice(space.operators) for _ in range(rng.randint(1, 3))]
            code, applied = space.compose(space.original, ops, rng)
            if applied and code not in codes:
                codes.append(code)
                paths.append(applied)
        if not codes:
            idle += 1
            continue
        before = goal.queries
        results = goal.get_results(codes)
        first = _first(results, before)
        if first is not None:
            k = next(i for i, r in enumerate(results) if r.succeeded)
            return Found(results[k], paths[k], min(first, goal.queries))
        for applied, r in zip(paths, results, strict=False):
            if r.score > best.result.score:
                best = Found(r, applied)
        idle = idle + 1 if goal.queries == before else 0  # only cached repeats: the space is small
    return best
