"""The catalog of attack recipes: discovery of :mod:`.recipes` by name.

A recipe is a module of :mod:`.recipes` that declares its name once, as ``NAME``, and a
factory ``build(model, **budget) -> Attack``. Modules are discovered with
:mod:`pkgutil` (names starting with ``_`` are private helpers and skipped), so saving a
new module there makes it appear in :func:`list_attacks`, in the ``attacks`` key of the
evaluator and in ``metacompress attack`` with no other edit. An import error in a
recipe module propagates: a broken recipe is never silently missing.

The recipes are imported by name, never statically, so the recipes import the attack
machinery of this folder and nothing here imports a recipe (issue 45: imports between
folders point one way).

:data:`ATTACKS` is a live read-only mapping ``name -> build`` over the discovered recipes.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

Build = Callable[..., Any]


RECIPES = f"{__package__}.recipes"


def _recipe_modules() -> list[ModuleType]:
    importlib.invalidate_caches()  # modules saved since the last call are found too
    package = importlib.import_module(RECIPES)
    return [
        importlib.import_module(f"{RECIPES}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_") and not info.ispkg
    ]


def discover() -> dict[str, Build]:
    """``{name: build}`` of every recipe module, checked: each declares a string ``NAME``
    and a callable ``build``, and no two declare the same name."""
    found: dict[str, Build] = {}
    origin: dict[str, str] = {}
    for module in _recipe_modules():
        name, build = getattr(module, "NAME", None), getattr(module, "build", None)
        if not isinstance(name, str) or not name or not callable(build):
            raise TypeError(
                f"attack recipe module {module.__name__} must define NAME (a string) and "
                f"build(model, **budget); got NAME={name!r}, build={build!r}"
            )
        if name in found:
            raise ValueError(f"attack recipe name {name!r} is declared by both {origin[name]} and {module.__name__}")
        found[name], origin[name] = build, module.__name__
    return found


def list_attacks() -> list[str]:
    """Names of the discovered attack recipes, sorted."""
    return sorted(discover())


def get_attack(name: str) -> Build:
    """The ``build`` factory of recipe ``name``; ``KeyError`` naming the known recipes."""
    recipes = discover()
    if name not in recipes:
        raise KeyError(f"unknown attack {name!r}; available: {sorted(recipes)}")
    return recipes[name]


class _Registry(Mapping[str, Build]):
    """Read-only ``name -> build`` view, rediscovered on each access."""

    def __getitem__(self, name: str) -> Build:
        return get_attack(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list_attacks())

    def __len__(self) -> int:
        return len(discover())

    def __contains__(self, name: object) -> bool:
        return name in discover()

    def __repr__(self) -> str:
        return f"ATTACKS({list_attacks()})"


ATTACKS: Mapping[str, Build] = _Registry()

__all__ = ["ATTACKS", "discover", "get_attack", "list_attacks"]
