"""The attack skeleton every recipe fills in (TextAttack's ``Attack``).

An :class:`Attack` owns a :class:`~.goal.QueryModel`, a query budget and a seed. For
one sample it builds the goal function, queries the original input once, skips the
sample when the prediction is already wrong or the function has no renamable
identifiers, and otherwise hands a :class:`~.search.base.RenameSpace` to the
recipe's :meth:`Attack.search`. Identifier discovery and renaming come from
``mlflow_metacompress.transforms``; the attacks never edit code themselves.
"""

from __future__ import annotations

import logging
import random
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .constraints import RenameConstraints
from .goal import GoalFunction, GoalResult, PredictFn, QueryModel
from .results import AttackResult, AttackStatus
from .search.base import Candidate, RenameSpace
from .substitutes import IdentifierVocabulary

logger = logging.getLogger(__name__)


@dataclass
class AttackData:
    """The evaluation data an attack may learn from (vocabularies, references)."""

    frame: pd.DataFrame
    code_columns: list[str]
    labels: np.ndarray
    language: str

    @property
    def codes(self) -> list[str]:
        return [str(c) for c in self.frame[self.code_columns[0]]]


@dataclass
class Outcome:
    """What a search returns: the final candidate and any structure rewrites applied."""

    candidate: Candidate
    transformations: list[str] = field(default_factory=list)


@dataclass
class Context:
    """Everything a recipe's search needs for one sample."""

    index: Any
    position: int
    code: str
    names: list[str]
    goal: GoalFunction
    start: GoalResult
    rng: random.Random
    language: str

    def space(
        self,
        code: str | None = None,
        names: list[str] | None = None,
        start: GoalResult | None = None,
        max_changed: int | None = None,
    ) -> RenameSpace:
        """A rename space over ``code`` (default: the original function)."""
        from ..transforms import Source
        from ..transforms.identifiers import rename_in_source

        code = self.code if code is None else code
        names = self.names if names is None else names
        source = Source(code, self.language)  # parsed once; every candidate renames it by byte ranges
        constraints = RenameConstraints.for_code(source, self.language, names, max_changed)

        def apply(mapping: Mapping[str, str]) -> str:
            return rename_in_source(source, dict(mapping))

        return RenameSpace(self.goal, apply, names, constraints, start or self.start)


def renamable(code: str, language: str) -> list[str] | None:
    """Distinct renamable identifiers in order of first appearance; None if unparsable."""
    from ..transforms import TransformError, renamable_identifiers

    try:
        return list(dict.fromkeys(renamable_identifiers(code, language)))
    except TransformError as exc:
        logger.debug("could not list identifiers: %s", exc)
        return None


class Attack(ABC):
    """Base class of the recipes. ``model`` is a :class:`QueryModel` or a
    ``predict(df) -> N×K`` callable (wrapped on :meth:`prepare`)."""

    name: ClassVar[str] = "attack"
    renaming_only: ClassVar[bool] = True

    def __init__(
        self,
        model: QueryModel | PredictFn,
        budget: int = 500,
        seed: int = 0,
        max_changed: int | None = None,
        mlm: Any = None,
    ) -> None:
        if int(budget) < 1:
            raise ValueError(f"attack budget must be at least 1 query, got {budget}")
        self.model: QueryModel | None = model if isinstance(model, QueryModel) else None
        self._predict: PredictFn | None = None if isinstance(model, QueryModel) else model
        self.budget = int(budget)
        self.seed = int(seed)
        self.max_changed = max_changed
        self.mlm = mlm
        self.data: AttackData | None = None
        self.vocabulary = IdentifierVocabulary(Counter())
        self.details: dict[str, str] = {}

    def prepare(self, data: AttackData, progress: bool = False) -> None:
        """Learn from the evaluation data (the default mines a natural-identifier
        vocabulary from every code column)."""
        self.data = data
        if self.model is None and self._predict is not None:
            self.model = QueryModel(self._predict, data.code_columns)
        codes = [str(c) for col in data.code_columns for c in data.frame[col]]
        self.vocabulary = IdentifierVocabulary.mine(codes, data.language, progress=progress)

    def attack(self, index: Any, position: int, row: Mapping[str, str], label: int) -> AttackResult:
        """Attack one sample: ``row`` maps each code column to its text; only the
        first code column is changed."""
        if self.model is None or self.data is None:
            raise RuntimeError("call prepare(data) before attack()")
        language = self.data.language
        column = self.model.columns[0]
        code = str(row[column])
        goal = GoalFunction(self.model, row, column, int(label), self.budget)
        start = goal.get_results([code])[0]
        base = dict(index=index, original_code=code, label=int(label), original_probs=start.probs)
        if start.succeeded:
            return AttackResult(
                status=AttackStatus.SKIPPED,
                queries=goal.queries,
                adversarial_code=None,
                skip_reason="wrong_prediction",
                requests=goal.requests,
                **base,
            )
        names = renamable(code, language)
        if not names:
            return AttackResult(
                status=AttackStatus.SKIPPED,
                queries=goal.queries,
                adversarial_code=None,
                skip_reason="unparsable" if names is None else "no_identifiers",
                requests=goal.requests,
                **base,
            )
        rng = random.Random(zlib.crc32(f"{self.name}:{self.seed}:{position}".encode()))
        ctx = Context(index, position, code, names, goal, start, rng, language)
        outcome = self.search(ctx)
        cand = outcome.candidate
        status = AttackStatus.SUCCEEDED if cand.succeeded else AttackStatus.FAILED
        assert goal.queries <= self.budget, "goal function exceeded its budget"
        return AttackResult(
            status=status,
            queries=goal.queries,
            adversarial_code=cand.code if cand.code != code else None,
            adversarial_probs=cand.result.probs,
            renaming=dict(cand.mapping),
            transformations=list(outcome.transformations),
            requests=goal.requests,
            **base,
        )

    @abstractmethod
    def search(self, ctx: Context) -> Outcome:
        """Find an adversarial candidate for one sample."""
