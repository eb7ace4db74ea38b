"""ALERT: naturalness-aware greedy search, then a genetic algorithm.

Yang, Shi, He, Lo, "Natural Attack for Pre-trained Models of Code", ICSE 2022.

Recipe: goal = untargeted label flip; constraints = valid, non-keyword, collision-free
identifiers renamed consistently; transformation = identifier renaming with the
top-30 substitutes per identifier; search = greedy in identifier-importance order
(importance by masking), then ALERT's genetic algorithm when greedy fails.

Substitutes come from a masked language model when one is supplied (``mlm``: a
local fill-mask model directory or an :class:`~..substitutes.MLMSubstitutes`), e.g.
the teacher's own MLM. Otherwise they are natural identifiers mined from the
evaluation data, ranked by name similarity to the original identifier. Which one was
used is recorded in ``attack.details["substitutes"]`` and in the run's report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..attack import Attack, Context, Outcome
from ..composition import Composition, IdentifierRenames, RenameRules, Search, UntargetedFlip
from ..goal import PredictFn, QueryModel
from ..options import AttackOptions, option
from ..search import genetic, greedy_by_importance, rank_by_importance
from ..substitutes import MLMSubstitutes

NAME = "alert_yang_2022"


@dataclass(frozen=True)
class ALERTOptions(AttackOptions):
    """ALERT's options: ``top_k`` substitutes per identifier, the genetic stage
    (``use_ga``) and its brood size (``children``)."""

    top_k: int = option(30, int, minimum=1, doc="substitutes per identifier")
    use_ga: bool = option(True, bool, doc="run the genetic algorithm when greedy fails")
    children: int = option(32, int, minimum=1, doc="offspring per generation")


class ALERTYang2022(Attack):
    name = NAME
    Options = ALERTOptions
    options: ALERTOptions

    def __init__(self, model: QueryModel | PredictFn, options: ALERTOptions | None = None, **values: Any) -> None:
        super().__init__(model, options, **values)
        if isinstance(self.mlm, str):
            self.mlm = MLMSubstitutes.from_pretrained(self.mlm)
            self.composition = self.compose()
            self.details["substitutes"] = self.composition.transformation.substitutes
        self.top_k = self.options.top_k
        self.use_ga = self.options.use_ga
        self.children = self.options.children

    def compose(self) -> Composition:
        subs = (
            f"masked language model {self.mlm.description}"
            if self.mlm is not None and not isinstance(self.mlm, str)
            else "natural identifiers mined from the evaluation data, ranked by name similarity"
        )
        return Composition(
            goal=UntargetedFlip(),
            constraints=RenameRules(self.options.max_changed),
            transformation=IdentifierRenames(subs),
            search=Search("greedy_by_importance_then_genetic", self._search),
        )

    def _substitutes(self, ctx: Context, taken: frozenset[str], name: str) -> list[str]:
        if self.mlm is not None:
            return list(self.mlm.substitutes(ctx.code, name, ctx.language, self.options.top_k))
        return self.vocabulary.nearest(name, 3 * self.options.top_k, exclude=taken)

    def _search(self, ctx: Context) -> Outcome:
        top_k = self.options.top_k
        space = ctx.space()
        c = space.constraints
        subs = {n: c.substitutes(n, self._substitutes(ctx, c.taken, n))[:top_k] for n in ctx.names}
        order, flip = rank_by_importance(space)
        if flip is not None:
            return Outcome(flip)
        found = greedy_by_importance(space, order, subs)
        if found.succeeded or not self.options.use_ga or space.exhausted:
            return Outcome(found)
        evolved = genetic(space, subs, ctx.rng, children=self.options.children)
        return Outcome(evolved if (evolved.succeeded or evolved.score > found.score) else found)


def build(model: QueryModel | PredictFn, **options: Any) -> ALERTYang2022:
    """ALERT with :class:`ALERTOptions` (``budget``, ``seed``, ``mlm``, ``top_k``, ``use_ga``, ...)."""
    return ALERTYang2022(model, ALERTOptions.parse(NAME, **options))
