"""The differential goal: find an equivalent variant on which the student and the teacher disagree.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) asks whether a distilled student
behaves like its teacher on semantically equivalent inputs. A candidate ``x'`` (equivalent
to ``x`` by construction) *succeeds* when ``argmax p_s(x') != argmax p_t(x')``: a paired
query runs both models on the same variant. The fitness to maximise follows DFLARE (Tian
et al., "Finding Deviated Behaviors of the Compressed DNN Models for Image
Classifications", TOSEM 2023), whose fitness is the probability gap between the original
and the compressed model, and Hu et al. ("Characterizing and Understanding the Behavior
of Quantized Models for Reliable Deployment", 2022), who found that disagreements sit
where both models' top-1/top-2 margins are small::

    fitness = gap_weight * TV(p_t, p_s) + margin_weight * (1 - (margin_t + margin_s) / 2)

with ``TV`` the total-variation distance (half the L1 distance) and ``margin`` a model's
top-1 minus top-2 probability. DFLARE's *state novelty* is :class:`NoveltyTracker`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..goal import BudgetedQueries, QueryModel


def margin(probs: np.ndarray) -> float:
    """Top-1 minus top-2 probability (1.0 for a single class)."""
    top = np.sort(np.asarray(probs, dtype=float))[::-1]
    return float(top[0] - top[1]) if top.size > 1 else 1.0


@dataclass(frozen=True)
class Fitness:
    """Weights of the differential fitness (see the module docstring)."""

    gap_weight: float = 1.0
    margin_weight: float = 0.5

    def __post_init__(self) -> None:
        for key in ("gap_weight", "margin_weight"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"Fitness.{key} must be a non-negative number, got {value!r}")

    def __call__(self, teacher: np.ndarray, student: np.ndarray) -> float:
        gap = 0.5 * float(np.abs(np.asarray(teacher, float) - np.asarray(student, float)).sum())
        closeness = 1.0 - (margin(teacher) + margin(student)) / 2
        return self.gap_weight * gap + self.margin_weight * closeness


@dataclass(frozen=True)
class PairResult:
    """Both models' verdicts on one variant (duck-compatible with :class:`~..goal.GoalResult`)."""

    code: str
    teacher: np.ndarray
    student: np.ndarray
    score: float
    label: int = -1

    @property
    def probs(self) -> np.ndarray:
        """The student's probabilities (what an attack result records as adversarial)."""
        return self.student

    @property
    def prediction(self) -> int:
        return int(np.argmax(self.student))

    @property
    def succeeded(self) -> bool:
        """The two models disagree on this variant."""
        return int(np.argmax(self.teacher)) != int(np.argmax(self.student))


class DifferentialGoal(BudgetedQueries):
    """One sample's paired queries within a budget of distinct variants.

    Each distinct variant costs one *paired query* (one row to each model). Both models sit
    behind a :class:`QueryModel`, so a variant text seen before (by any sample) is not
    forwarded again; :attr:`budget` limits the variants this sample evaluates.
    """

    def __init__(
        self,
        teacher: QueryModel,
        student: QueryModel,
        row: Mapping[str, str],
        column: str,
        budget: int,
        fitness: Fitness | None = None,
    ) -> None:
        super().__init__(row, column, budget, teacher.columns)
        self.teacher, self.student = teacher, student
        self.fitness = fitness or Fitness()
        self.label = -1

    def get_results(self, codes: Sequence[str]) -> list[PairResult]:
        """Paired results for the longest prefix of ``codes`` within the budget, in one
        batch per model; codes already evaluated for this sample are free."""
        allowed, new = self.take(codes)
        rows = [self.model_row(c) for c in allowed]
        pt, ps = self.teacher.probabilities(rows), self.student.probabilities(rows)
        self.spend(new)
        return [PairResult(c, t, s, self.fitness(t, s)) for c, t, s in zip(allowed, pt, ps, strict=True)]


@dataclass(frozen=True)
class DifferentialGoalSpec:
    """The differential goal as a :class:`~..composition.GoalSpec`: the attack's model is the
    teacher; ``label`` is ignored (success is disagreement, not a flip)."""

    student: QueryModel
    fitness: Fitness = field(default_factory=Fitness)
    name: str = "teacher_student_disagreement"

    def build(
        self, model: QueryModel, row: Mapping[str, str], column: str, label: int, budget: int
    ) -> DifferentialGoal:
        return DifferentialGoal(model, self.student, row, column, budget, self.fitness)


@dataclass
class NoveltyTracker:
    """DFLARE's state novelty: the pair of probability vectors, each discretised into
    ``bins`` equal bins per class, is a *state*; :meth:`novel` is True the first time a
    state is seen (and records it)."""

    bins: int = 10
    seen: set[tuple[int, ...]] = field(default_factory=set)

    def state(self, result: PairResult) -> tuple[int, ...]:
        both = np.concatenate([np.asarray(result.teacher, float), np.asarray(result.student, float)])
        return tuple(np.minimum((both * self.bins).astype(int), self.bins - 1).tolist())

    def novel(self, result: PairResult) -> bool:
        key = self.state(result)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True
