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

from typing import Any

from ..attack import Attack, Context, Outcome
from ..goal import PredictFn, QueryModel
from ..search import genetic, greedy_by_importance, rank_by_importance
from ..substitutes import MLMSubstitutes

NAME = "alert_yang_2022"


class ALERTYang2022(Attack):
    name = NAME

    def __init__(
        self, model: QueryModel | PredictFn, top_k: int = 30, use_ga: bool = True, children: int = 32, **kw: Any
    ) -> None:
        super().__init__(model, **kw)
        if isinstance(self.mlm, str):
            self.mlm = MLMSubstitutes.from_pretrained(self.mlm)
        self.top_k = top_k
        self.use_ga = use_ga
        self.children = children
        self.details = {
            "substitutes": f"masked language model {self.mlm.description}"
            if self.mlm is not None
            else "natural identifiers mined from the evaluation data, ranked by name similarity",
        }

    def _substitutes(self, ctx: Context, taken: frozenset[str], name: str) -> list[str]:
        if self.mlm is not None:
            return self.mlm.substitutes(ctx.code, name, ctx.language, self.top_k)
        return self.vocabulary.nearest(name, 3 * self.top_k, exclude=taken)

    def search(self, ctx: Context) -> Outcome:
        space = ctx.space(max_changed=self.max_changed)
        c = space.constraints
        subs = {n: c.substitutes(n, self._substitutes(ctx, c.taken, n))[: self.top_k] for n in ctx.names}
        order, flip = rank_by_importance(space)
        if flip is not None:
            return Outcome(flip)
        found = greedy_by_importance(space, order, subs)
        if found.succeeded or not self.use_ga or space.exhausted:
            return Outcome(found)
        evolved = genetic(space, subs, ctx.rng, children=self.children)
        return Outcome(evolved if (evolved.succeeded or evolved.score > found.score) else found)


def build(model: QueryModel | PredictFn, **budget: Any) -> ALERTYang2022:
    """ALERT with ``budget`` options (``budget``, ``seed``, ``mlm``, ``top_k``, ``use_ga``, ...)."""
    return ALERTYang2022(model, **budget)
