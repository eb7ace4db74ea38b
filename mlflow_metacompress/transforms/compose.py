"""``compose``: apply k seed-chosen applicable transformations in sequence.

Composed semantics-preserving rewrites, as in NatGen's multi-transformation inputs
(Chakraborty et al., FSE 2022), CODA's combined structure perturbations (Tian et al.,
ASE 2023) and the sequential transformations of Rabin et al. (IST 2021). A step that
changes the code re-parses its output once, incrementally from the step's edits
(:mod:`._reparse`); only a step that another step will build on is flattened into a tree
snapshot (the last step's output is only checked to parse). The
outcome of each parse is remembered on the sample, so the final verification in
:func:`~.base.run` and a standalone transformation with the same output do not parse it
again. Steps that do not apply, or whose output does not parse, are skipped.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._reparse import source_from
from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import REGISTRY, parses_cleanly_memo, register, run

COMPOSE_K = (2, 3)


@register("compose", ("c", "java", "python"))
def compose(src: Source, rng: random.Random) -> str | None:
    """Apply k in {2, 3} randomly ordered, applicable transformations one after another."""
    k = rng.choice(COMPOSE_K)
    names = sorted(n for n, spec in REGISTRY.items() if n != "compose" and src.language in spec.languages)
    rng.shuffle(names)
    current, final, applied = src, None, 0
    for name in names:
        if applied == k:
            break
        result = run(current, name, seed=rng.randrange(2**31), verify=False)  # run() verifies the final output
        if not result.changed:
            continue
        if applied + 1 == k:  # the last step: no transformation walks its tree, so only check it parses
            if parses_cleanly_memo(src, result.code, base=current):
                final, applied = result.code, applied + 1
            continue  # never keep a broken step (run() verifies the final output)
        following = source_from(current, result.code)  # incremental: re-uses current's untouched subtrees
        src.cache.setdefault("clean_outputs", {})[result.code] = not following.has_error
        if following.has_error:  # never build on a broken step
            following.release()
            continue
        if current is not src:
            current.release()
        current, final, applied = following, result.code, applied + 1
    if current is not src:
        current.release()
    return final if applied else None
