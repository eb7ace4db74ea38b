"""Published attacks as short recipes, one module each, named after its paper.

A recipe is a module in this package that declares its name once, as ``NAME``, and a
factory ``build(model, **budget) -> Attack``. Modules are discovered with
:mod:`pkgutil` (names starting with ``_`` are private helpers and skipped), so saving a
new module here makes it appear in :func:`list_attacks`, in the ``attacks`` key of the
evaluator and in ``metacompress attack`` with no other edit. An import error in a
recipe module propagates: a broken recipe is never silently missing.

:mod:`..catalog` discovers them (by name: nothing in the attack machinery imports a recipe);
this package's :data:`ATTACKS`, :func:`list_attacks`, :func:`get_attack` and :func:`discover`
are the catalog's.
"""

from __future__ import annotations

from ..catalog import ATTACKS, discover, get_attack, list_attacks

__all__ = ["ATTACKS", "discover", "get_attack", "list_attacks"]
