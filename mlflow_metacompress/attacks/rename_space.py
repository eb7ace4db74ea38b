"""What every search method works on: a space of renamings behind the goal function.

A search never touches code or the model directly. It proposes renamings (mappings
from original identifier to new name); :class:`RenameSpace` checks them against the
constraints, turns them into code through an abstract ``apply`` callable (in practice
the transformation library's renamer over the function being attacked), and scores
them in one batch through the goal function, which counts and caps the queries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .constraints import RenameConstraints
from .goal import GoalFunction, GoalResult

logger = logging.getLogger(__name__)

ApplyFn = Callable[[Mapping[str, str]], str]


@dataclass(frozen=True)
class Candidate:
    """A renaming and the model's verdict on the code it produces."""

    mapping: dict[str, str]
    result: GoalResult

    @property
    def code(self) -> str:
        return self.result.code

    @property
    def score(self) -> float:
        return self.result.score

    @property
    def succeeded(self) -> bool:
        return self.result.succeeded


class RenameSpace:
    """Renamings of ``names`` evaluated through ``goal``.

    ``apply(mapping) -> code`` may raise ``ValueError`` for a renaming it refuses
    (e.g. a collision the constraints could not see); such candidates are dropped
    without a query.
    """

    def __init__(
        self,
        goal: GoalFunction,
        apply: ApplyFn,
        names: Sequence[str],
        constraints: RenameConstraints,
        start: GoalResult,
    ) -> None:
        self.goal = goal
        self.apply = apply
        self.names = list(names)
        self.constraints = constraints
        self.original = Candidate({}, start)
        self.rejected = 0

    @property
    def exhausted(self) -> bool:
        return self.goal.exhausted

    def evaluate(self, mappings: Sequence[Mapping[str, str]]) -> list[Candidate]:
        """Score the valid renamings among ``mappings`` (one batch, in order).

        Invalid and duplicate renamings are dropped; when the budget runs out, the
        list is cut short (check :attr:`exhausted`).
        """
        seen: set[tuple[tuple[str, str], ...]] = set()
        kept: list[dict[str, str]] = []
        codes: list[str] = []
        for m in mappings:
            norm = self.constraints.normalise(m)
            key = tuple(sorted(norm.items()))
            if key in seen:
                continue
            seen.add(key)
            if not self.constraints.check(norm):
                self.rejected += 1
                continue
            if not norm:
                code = self.original.code
            else:
                try:
                    code = self.apply(norm)
                except ValueError as exc:
                    logger.debug("renaming %s refused: %s", norm, exc)
                    self.rejected += 1
                    continue
            kept.append(norm)
            codes.append(code)
        results = self.goal.get_results(codes)
        # the goal stops at its query budget: results cover a prefix of ``kept``
        return [Candidate(m, r) for m, r in zip(kept, results, strict=False)]


def best(candidates: Sequence[Candidate]) -> Candidate | None:
    """The highest-scoring candidate, successes first (first one wins ties)."""
    if not candidates:
        return None
    return max(candidates, key=lambda c: (c.succeeded, c.score))
