"""The attack skeleton every recipe fills in (TextAttack's ``Attack``).

An :class:`Attack` owns a :class:`~.goal.QueryModel`, typed options (query budget,
seed, ...) and a :class:`~.composition.Composition`. For one sample it builds the
composition's goal function, queries the original input once, skips the sample when the
goal is already met (e.g. the prediction is already wrong) or the transformation cannot
change it (no renamable identifiers), and otherwise hands a :class:`Context` to the
composition's search. Identifier discovery and renaming come from
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

from .composition import Composition, GoalSpec, RenameRules
from .goal import GoalFunction, GoalResult, PredictFn, QueryModel
from .options import AttackOptions
from .rename_space import Candidate, RenameSpace
from .results import AttackResult, AttackStatus
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
    rules: RenameRules = field(default_factory=RenameRules)

    def space(
        self,
        code: str | None = None,
        names: list[str] | None = None,
        start: GoalResult | None = None,
        max_changed: int | None = None,
    ) -> RenameSpace:
        """A rename space over ``code`` (default: the original function) under the
        recipe's constraints (``max_changed`` overrides their cap)."""
        from ..transforms import Source
        from ..transforms.identifiers import rename_in_source

        code = self.code if code is None else code
        names = self.names if names is None else names
        source = Source(code, self.language)  # parsed once; every candidate renames it by byte ranges
        rules = self.rules if max_changed is None else RenameRules(max_changed)
        constraints = rules.build(source, self.language, names)

        def apply(mapping: Mapping[str, str]) -> str:
            return rename_in_source(source, dict(mapping))

        return RenameSpace(self.goal, apply, names, constraints, start or self.start)


class Attack(ABC):
    """Base class of the recipes: a :class:`~.composition.Composition` of goal,
    constraints, transformation and search (:meth:`compose`), run sample by sample.
    ``model`` is a :class:`QueryModel` or a ``predict(df) -> N×K`` callable (wrapped on
    :meth:`prepare`); ``options`` are the recipe's typed :class:`~.options.AttackOptions`."""

    name: ClassVar[str] = "attack"
    renaming_only: ClassVar[bool] = True
    Options: ClassVar[type[AttackOptions]] = AttackOptions

    def __init__(self, model: QueryModel | PredictFn, options: AttackOptions | None = None, **values: Any) -> None:
        if options is None:
            options = self.Options.parse(self.name, **values)
        elif values:
            raise TypeError(f"{self.name}: pass either options or keyword options, not both")
        if not isinstance(options, self.Options):
            raise TypeError(f"{self.name} takes {self.Options.__name__}, got {type(options).__name__}")
        self.options = options
        self.model: QueryModel | None = model if isinstance(model, QueryModel) else None
        self._predict: PredictFn | None = None if isinstance(model, QueryModel) else model
        self.budget = options.budget
        self.seed = options.seed
        self.max_changed = options.max_changed
        self.mlm = options.mlm
        self.data: AttackData | None = None
        self.vocabulary = IdentifierVocabulary(Counter())
        self.composition = self.compose()
        self.details: dict[str, str] = {}
        if self.composition.transformation.substitutes:
            self.details["substitutes"] = self.composition.transformation.substitutes

    @abstractmethod
    def compose(self) -> Composition:
        """The recipe's goal, constraints, transformation and search."""

    def retarget(self, goal: GoalSpec) -> Attack:
        """Point this recipe's search at another goal (e.g. the differential goal)."""
        self.composition = self.composition.retarget(goal)
        return self

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
        parts = self.composition
        goal = parts.goal.build(self.model, row, column, int(label), self.budget)
        start = goal.get_results([code])[0]
        base = dict(index=index, original_code=code, label=int(label), original_probs=start.probs)
        names, reason = (None, "wrong_prediction") if start.succeeded else parts.transformation.sites(code, language)
        if reason is not None:
            return AttackResult(
                status=AttackStatus.SKIPPED,
                queries=goal.queries,
                adversarial_code=None,
                skip_reason=reason,
                requests=goal.requests,
                **base,
            )
        rng = random.Random(zlib.crc32(f"{self.name}:{self.seed}:{position}".encode()))
        ctx = Context(index, position, code, names or [], goal, start, rng, language, parts.constraints)
        outcome = parts.search.run(ctx)
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

    def search(self, ctx: Context) -> Outcome:
        """Run the composition's search on one sample."""
        return self.composition.search.run(ctx)
