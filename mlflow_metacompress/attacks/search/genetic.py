"""Genetic search over identifier renamings, as in ALERT.

Yang, Shi, He, Lo, "Natural Attack for Pre-trained Models of Code", ICSE 2022, §III-D.
A chromosome assigns every identifier either itself or one of its substitutes.
The initial population holds, for each identifier, the chromosome that renames only
that identifier to its single most damaging substitute. Each generation breeds
``children`` offspring — uniform crossover of two random parents with probability
``crossover`` (0.7), otherwise a one-gene mutation — scores them in one batch, stops
at a label flip, and lets each child replace the current least fit member when it is
fitter. Fitness is ``1 - p(label)``. ALERT runs ``max(5 × population, 10)``
generations; the query budget usually ends the run earlier.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

from ..rename_space import Candidate, RenameSpace, best

logger = logging.getLogger(__name__)


def _mutate(chromosome: dict[str, str], substitutes: Mapping[str, Sequence[str]], rng: random.Random) -> dict[str, str]:
    genes = [n for n in substitutes if substitutes[n]]
    child = dict(chromosome)
    if genes:
        name = rng.choice(genes)
        child[name] = rng.choice(list(substitutes[name]))
    return child


def _crossover(a: Mapping[str, str], b: Mapping[str, str], names: Sequence[str], rng: random.Random) -> dict[str, str]:
    child: dict[str, str] = {}
    for n in names:
        pick = a if rng.random() < 0.5 else b
        if n in pick:
            child[n] = pick[n]
    return child


def genetic(
    space: RenameSpace,
    substitutes: Mapping[str, Sequence[str]],
    rng: random.Random,
    children: int = 32,
    crossover: float = 0.7,
    generations: int | None = None,
) -> Candidate:
    """Run ALERT's genetic algorithm; return the first success, else the fittest."""
    names = [n for n in space.names if substitutes.get(n)]
    population: list[Candidate] = []
    for name in names:
        if space.exhausted:
            break
        top = best(space.evaluate([{name: s} for s in substitutes[name]]))
        if top is None:
            continue
        if top.succeeded:
            return top
        population.append(top if top.score > space.original.score else space.original)
    if not population:
        return space.original
    generations = generations if generations is not None else max(5 * len(population), 10)
    for _ in range(generations):
        if space.exhausted:
            break
        brood: list[dict[str, str]] = []
        for _ in range(children):
            p1, p2 = rng.choice(population), rng.choice(population)
            if rng.random() < crossover and p1.mapping != p2.mapping:
                child = _crossover(p1.mapping, p2.mapping, names, rng)
                if child in (p1.mapping, p2.mapping):
                    child = _mutate(p1.mapping, substitutes, rng)
            else:
                child = _mutate(p1.mapping, substitutes, rng)
            brood.append(child)
        found = space.evaluate(brood)
        top = best(found)
        if top is not None and top.succeeded:
            return top
        for cand in found:
            worst = min(range(len(population)), key=lambda i: population[i].score)
            if cand.score > population[worst].score:
                population[worst] = cand
    return max(population, key=lambda c: c.score)
