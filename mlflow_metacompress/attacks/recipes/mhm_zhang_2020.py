"""MHM: Metropolis-Hastings identifier renaming.

Zhang, Li, Li, Ma, Liu, Jin, "Generating Adversarial Examples for Holding Robustness
of Source Code Processing Models", AAAI 2020.

Recipe: goal = untargeted label flip; constraints = valid, non-keyword, collision-free
identifiers renamed consistently; transformation = identifier renaming (the
transformation library's renamer); search = Metropolis-Hastings with 30 candidates
per step and 100 iterations. Candidates are drawn uniformly from the natural
identifiers mined from the evaluation data, as MHM draws from its dataset vocabulary.
"""

from __future__ import annotations

import random
from typing import Any

from ..attack import Attack, Context, Outcome
from ..goal import PredictFn, QueryModel
from ..search import metropolis_hastings

NAME = "mhm_zhang_2020"


class MHMZhang2020(Attack):
    name = NAME

    def __init__(
        self,
        model: QueryModel | PredictFn,
        iterations: int = 100,
        n_candidates: int = 30,
        min_accept: float = 0.0,
        **kw: Any,
    ) -> None:
        super().__init__(model, **kw)
        self.iterations = iterations
        self.n_candidates = n_candidates
        self.min_accept = min_accept
        self.details = {"substitutes": "uniform draws from natural identifiers mined from the evaluation data"}

    def search(self, ctx: Context) -> Outcome:
        space = ctx.space(max_changed=self.max_changed)
        taken = space.constraints.taken

        def propose(name: str, rng: random.Random, n: int) -> list[str]:
            drawn = self.vocabulary.sample(rng, n, exclude=taken)
            return space.constraints.substitutes(name, drawn)

        best = metropolis_hastings(space, propose, ctx.rng, self.iterations, self.n_candidates, self.min_accept)
        return Outcome(best)


def build(model: QueryModel | PredictFn, **budget: Any) -> MHMZhang2020:
    """MHM with ``budget`` options (``budget``, ``seed``, ``iterations``, ``n_candidates``, ...)."""
    return MHMZhang2020(model, **budget)
