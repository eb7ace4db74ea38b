"""``compose``: apply k seed-chosen applicable transformations in sequence.

Composed semantics-preserving rewrites, as in NatGen's multi-transformation inputs
(Chakraborty et al., FSE 2022), CODA's combined structure perturbations (Tian et al.,
ASE 2023) and the sequential transformations of Rabin et al. (IST 2021). Each step
re-parses the previous output; steps that do not apply are skipped.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import REGISTRY, register, run

COMPOSE_K = (2, 3)


@register("compose", ("c", "java", "python"))
def compose(src: Source, rng: random.Random) -> str | None:
    """Apply k in {2, 3} randomly ordered, applicable transformations one after another."""
    k = rng.choice(COMPOSE_K)
    names = sorted(n for n, spec in REGISTRY.items() if n != "compose" and src.language in spec.languages)
    rng.shuffle(names)
    current, applied = src, 0
    for name in names:
        if applied == k:
            break
        result = run(current, name, seed=rng.randrange(2**31), verify=False)  # run() verifies the final output
        if result.changed:
            following = Source(result.code, src.language)
            if following.has_error:  # never build on a broken step (run() verifies the final output)
                continue
            current = following
            applied += 1
    return current.code if applied else None
