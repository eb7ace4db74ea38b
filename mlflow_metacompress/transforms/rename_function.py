"""``rename_function``: rename one function or method with all its call sites.

Rabin et al.'s "Method Name" renaming (IST 2021) and NatGen's function renaming
(Chakraborty et al., FSE 2022). Every definition, prototype, call, function-pointer use
and method reference is renamed through the single identifier renamer; ``main``,
``@Override`` and JDK interface methods, and Python methods are never renamed (issue 3).
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import NameFactory
from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import register
from mlflow_metacompress.transforms.identifiers import _function_sites, rename_in_source

_FN_POOL = (
    "process",
    "compute",
    "handle",
    "run_step",
    "do_work",
    "helper",
    "impl",
    "routine",
    "worker",
    "apply_op",
    "execute_task",
    "perform",
)


@register("rename_function", ("c", "java", "python"))
def rename_function(src: Source, rng: random.Random) -> str | None:
    """Rename one seed-chosen renamable function to a fresh name."""
    names = list(_function_sites(src))
    if not names:
        return None
    old = rng.choice(names)
    fresh = NameFactory(src, rng)
    return rename_in_source(src, {old: fresh(rng.choice(_FN_POOL))})
