"""WIR-Random: word-importance ranking with random identifier substitution.

Zeng, Tan, Zhang, Li, Zhang, Zhang, "An Extensive Study on Pre-trained Models for
Program Understanding and Generation", ISSTA 2022.

Recipe: goal = untargeted label flip; constraints = valid, non-keyword, collision-free
identifiers renamed consistently; transformation = identifier renaming; search =
importance from masking each identifier, then, in importance order, 30 random valid
identifiers per position (drawn from the natural identifiers of the evaluation data),
keeping the most damaging one until the label flips.
"""

from __future__ import annotations

from typing import Any

from ..attack import Attack, Context, Outcome
from ..goal import PredictFn, QueryModel
from ..search import greedy_by_importance, rank_by_importance

NAME = "wir_random_zeng_2022"


class WIRRandomZeng2022(Attack):
    name = NAME

    def __init__(self, model: QueryModel | PredictFn, n_random: int = 30, **kw: Any) -> None:
        super().__init__(model, **kw)
        self.n_random = n_random
        self.details = {"substitutes": "uniform draws from natural identifiers mined from the evaluation data"}

    def search(self, ctx: Context) -> Outcome:
        space = ctx.space(max_changed=self.max_changed)
        c = space.constraints
        order, flip = rank_by_importance(space)
        if flip is not None:
            return Outcome(flip)
        subs = {
            n: c.substitutes(n, self.vocabulary.sample(ctx.rng, self.n_random, exclude=c.taken))[: self.n_random]
            for n in order
        }
        return Outcome(greedy_by_importance(space, order, subs))


def build(model: QueryModel | PredictFn, **budget: Any) -> WIRRandomZeng2022:
    """WIR-Random with ``budget`` options (``budget``, ``seed``, ``n_random``, ...)."""
    return WIRRandomZeng2022(model, **budget)
