"""Lazy package exports: a package names ``{attribute: submodule}`` and the submodule is
imported on first access, so ``import mlflow_metacompress.<package>`` stays light."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` resolving ``exports`` on first use."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(f".{exports[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
