"""Metropolis-Hastings sampling over identifier renamings (MHM).

Zhang, Li, Li, Ma, Liu, Jin, "Generating Adversarial Examples for Holding Robustness
of Source Code Processing Models", AAAI 2020. The chain's state is a renaming; its
target density is proportional to ``1 - p(label | code)``. Each step picks one
identifier uniformly at random, draws ``n_candidates`` new names for it (the
proposal is symmetric: uniform over a vocabulary), scores them in one batch, stops at
a label flip, and otherwise moves to the candidate with the lowest true-label
probability with the Metropolis acceptance probability
``alpha = min(1, (1 - p_new) / (1 - p_current))``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from ..rename_space import Candidate, RenameSpace, best

logger = logging.getLogger(__name__)

Proposal = Callable[[str, random.Random, int], list[str]]


def metropolis_hastings(
    space: RenameSpace,
    propose: Proposal,
    rng: random.Random,
    iterations: int = 100,
    n_candidates: int = 30,
    min_accept: float = 0.0,
) -> Candidate:
    """Run the chain; return the first success, else the best state visited.

    ``propose(name, rng, n)`` returns up to ``n`` candidate new names for the
    original identifier ``name``. ``min_accept`` > 0 additionally rejects moves whose
    acceptance ratio is below it (ALERT's port of MHM uses 0.95).
    """
    current = space.original
    best_seen = current
    for step in range(iterations):
        if space.exhausted or not space.names:
            break
        name = rng.choice(space.names)
        in_use = set(current.mapping.values())
        options = [c for c in propose(name, rng, n_candidates) if c not in in_use]
        found = space.evaluate([{**current.mapping, name: c} for c in options])
        if not found:
            continue
        top = best(found)
        assert top is not None
        if top.succeeded:
            logger.debug("MHM flip at step %d: %s -> %s", step, name, top.mapping.get(name))
            return top
        alpha = (top.score + 1e-10) / (current.score + 1e-10)
        if rng.random() < min(alpha, 1.0) and alpha >= min_accept:
            current = top
            if current.score > best_seen.score:
                best_seen = current
    return best_seen
