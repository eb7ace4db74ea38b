"""``rename_variables``: consistently rename local variables (and C/Java parameters).

Variable renaming is NatGen's "variable renaming" (Chakraborty et al., FSE 2022), Rabin et
al.'s "Variable Renaming" (IST 2021) and the identifier substitution at the heart of CODA
(Tian et al., ASE 2023). All renaming goes through the single identifier renamer in
:mod:`mlflow_metacompress.transforms.identifiers`; new names are fresh (they collide with
no identifier, keyword, macro or type in the code). Python parameters are never renamed
because callers may pass them by keyword.
"""

from __future__ import annotations

import random

from mlflow_metacompress.transforms._common import NameFactory
from mlflow_metacompress.transforms._tree import Source
from mlflow_metacompress.transforms.base import register
from mlflow_metacompress.transforms.identifiers import _renamable, rename_in_source


@register("rename_variables", ("c", "java", "python"))
def rename_variables(src: Source, rng: random.Random) -> str | None:
    """Rename every renamable local to a fresh, seed-chosen name."""
    names = _renamable(src)
    if not names:
        return None
    fresh = NameFactory(src, rng)
    return rename_in_source(src, {old: fresh() for old in names})
