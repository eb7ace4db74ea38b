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
from dataclasses import dataclass
from typing import Any

from ..attack import Attack, Context, Outcome
from ..composition import Composition, IdentifierRenames, RenameRules, Search, UntargetedFlip
from ..goal import PredictFn, QueryModel
from ..options import AttackOptions, option
from ..search import metropolis_hastings

NAME = "mhm_zhang_2020"


@dataclass(frozen=True)
class MHMOptions(AttackOptions):
    """MHM's options: chain length, candidates per step and ALERT's minimum acceptance."""

    iterations: int = option(100, int, minimum=1, doc="Metropolis-Hastings steps")
    n_candidates: int = option(30, int, minimum=1, doc="candidate names per step")
    min_accept: float = option(0.0, float, minimum=0.0, maximum=1.0, doc="minimum acceptance ratio of a move")


class MHMZhang2020(Attack):
    name = NAME
    Options = MHMOptions
    options: MHMOptions

    def compose(self) -> Composition:
        return Composition(
            goal=UntargetedFlip(),
            constraints=RenameRules(self.options.max_changed),
            transformation=IdentifierRenames("uniform draws from natural identifiers mined from the evaluation data"),
            search=Search("metropolis_hastings", self._search),
        )

    def _search(self, ctx: Context) -> Outcome:
        space = ctx.space()
        taken = space.constraints.taken

        def propose(name: str, rng: random.Random, n: int) -> list[str]:
            drawn = self.vocabulary.sample(rng, n, exclude=taken)
            return space.constraints.substitutes(name, drawn)

        o = self.options
        return Outcome(metropolis_hastings(space, propose, ctx.rng, o.iterations, o.n_candidates, o.min_accept))


def build(model: QueryModel | PredictFn, **options: Any) -> MHMZhang2020:
    """MHM with :class:`MHMOptions` (``budget``, ``seed``, ``iterations``, ``n_candidates``, ...)."""
    return MHMZhang2020(model, MHMOptions.parse(NAME, **options))
