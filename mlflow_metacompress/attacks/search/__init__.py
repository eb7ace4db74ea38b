"""Search methods over identifier renamings: greedy by importance, Metropolis-Hastings
and genetic. Each works on a :class:`~..rename_space.RenameSpace` and returns a
:class:`~..rename_space.Candidate` (a success, or the best attempt)."""

from ..rename_space import Candidate, RenameSpace, best
from .genetic import genetic
from .greedy import greedy_by_importance, rank_by_importance
from .metropolis_hastings import metropolis_hastings

__all__ = [
    "Candidate",
    "RenameSpace",
    "best",
    "genetic",
    "greedy_by_importance",
    "metropolis_hastings",
    "rank_by_importance",
]
