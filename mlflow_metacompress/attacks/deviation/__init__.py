"""Teacher–student deviations on equivalent code (issue 43): the differential goal
(:mod:`.goal`), the transformation over the whole rewrite space (:mod:`.space`), DFLARE's
Metropolis–Hastings search and a random baseline (:mod:`.search`) and the public entry
point :func:`find_deviations` (:mod:`.api`)."""

from __future__ import annotations

from .api import SEARCHES, Deviation, deviations_frame, find_deviations
from .goal import DifferentialGoal, DifferentialGoalSpec, Fitness, NoveltyTracker, PairResult

__all__ = [
    "SEARCHES",
    "Deviation",
    "DifferentialGoal",
    "DifferentialGoalSpec",
    "Fitness",
    "NoveltyTracker",
    "PairResult",
    "deviations_frame",
    "find_deviations",
]
