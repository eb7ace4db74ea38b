"""Greedy search by identifier importance.

Importance follows ALERT (Yang et al., "Natural Attack for Pre-trained Models of
Code", ICSE 2022, §III-C) and WIR (Zeng et al., "An Extensive Study on Pre-trained
Models for Program Understanding and Generation", ISSTA 2022): each identifier is
masked — renamed to a neutral placeholder at every occurrence — and its importance is
the drop in the probability of the true label. The greedy pass then visits
identifiers from most to least important, tries every substitute for the current one
in a single batch, stops at the first label flip, and otherwise keeps the substitute
that lowers the true-label probability most (if any lowers it at all).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ..rename_space import Candidate, RenameSpace, best

logger = logging.getLogger(__name__)


def placeholder(space: RenameSpace, stem: str = "unk") -> str:
    """A valid identifier unused in the program, used to mask a name."""
    name, i = stem, 0
    while name in space.constraints.taken or not space.constraints.valid_name(name):
        i += 1
        name = f"{stem}{i}"
    return name


def rank_by_importance(space: RenameSpace) -> tuple[list[str], Candidate | None]:
    """Names sorted by importance (most important first; ties keep program order).

    Returns also a successful candidate when masking alone already flips the label.
    Costs one query per name.
    """
    mask = placeholder(space)
    scored = space.evaluate([{n: mask} for n in space.names])
    base = space.original.score
    importance = {next(iter(c.mapping)): c.score - base for c in scored if c.mapping}
    flip = next((c for c in scored if c.succeeded), None)
    order = sorted(space.names, key=lambda n: -importance.get(n, float("-inf")))
    return order, flip


def greedy_by_importance(
    space: RenameSpace,
    order: Sequence[str],
    substitutes: Mapping[str, Sequence[str]],
    start: Candidate | None = None,
) -> Candidate:
    """Greedy substitution in ``order``; returns a success or the best candidate seen."""
    current = start or space.original
    for name in order:
        if space.exhausted:
            break
        options = [s for s in substitutes.get(name, ()) if s not in current.mapping.values()]
        if not options:
            continue
        found = space.evaluate([{**current.mapping, name: s} for s in options])
        top = best(found)
        if top is None:
            continue
        if top.succeeded:
            logger.debug("greedy flip after renaming %s -> %s", name, top.mapping[name])
            return top
        if top.score > current.score:
            current = top
    return current
