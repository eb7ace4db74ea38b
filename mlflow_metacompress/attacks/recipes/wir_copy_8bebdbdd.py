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

from dataclasses import dataclass
from typing import Any

from ..attack import Attack, Context, Outcome
from ..composition import Composition, IdentifierRenames, RenameRules, Search, UntargetedFlip
from ..goal import PredictFn, QueryModel
from ..options import AttackOptions, option
from ..search import greedy_by_importance, rank_by_importance

NAME = "wir_copy_8bebdbdd"


@dataclass(frozen=True)
class WIRRandomOptions(AttackOptions):
    """WIR-Random's option: random substitutes tried per identifier."""

    n_random: int = option(30, int, minimum=1, doc="random substitutes per identifier")


class WIRRandomZeng2022(Attack):
    name = NAME
    Options = WIRRandomOptions
    options: WIRRandomOptions

    def compose(self) -> Composition:
        return Composition(
            goal=UntargetedFlip(),
            constraints=RenameRules(self.options.max_changed),
            transformation=IdentifierRenames("uniform draws from natural identifiers mined from the evaluation data"),
            search=Search("greedy_by_importance", self._search),
        )

    def _search(self, ctx: Context) -> Outcome:
        n = self.options.n_random
        space = ctx.space()
        c = space.constraints
        order, flip = rank_by_importance(space)
        if flip is not None:
            return Outcome(flip)
        subs = {name: c.substitutes(name, self.vocabulary.sample(ctx.rng, n, exclude=c.taken))[:n] for name in order}
        return Outcome(greedy_by_importance(space, order, subs))


def build(model: QueryModel | PredictFn, **options: Any) -> WIRRandomZeng2022:
    """WIR-Random with :class:`WIRRandomOptions` (``budget``, ``seed``, ``n_random``, ...)."""
    return WIRRandomZeng2022(model, WIRRandomOptions.parse(NAME, **options))
