"""Discovery of distillation methods: one module per method in :mod:`.methods`.

A method module declares, once each:

- ``NAME``: the method's name (``--method NAME``, ``-P methods=NAME``, the registered
  model ``metacompress-<dataset>-NAME`` and the ``metacompress.method`` tag);
- ``Options``: a frozen dataclass subclassing :class:`.options.MethodOptions`, whose
  defaults are the method's;
- ``run(ctx, options) -> StudentOutcome``;
- optionally ``TRAINS = False`` for a method that trains nothing (post-training
  quantization): the pipeline's remaining-time estimate then budgets it no training
  steps (:mod:`mlflow_metacompress.pipeline.budget`);
- optionally ``TRAINING_VARIANTS = k`` for a method that adds ``k`` metamorphic variants
  per unlabeled row to its training set (MORPH's 1): the estimate then budgets rewriting
  them, the teacher's labels on them and epochs ``1 + k`` times as long.

:func:`list_methods` imports every module of the package (``pkgutil``), so a new module
dropped there is found with no other edit. An import error of a module that exists is
never swallowed, and a module that breaks the contract is named in the error.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

from .options import MethodOptions, parse_options

PACKAGE = f"{__package__}.methods"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Method:
    """A discovered method: its name, options type, entry point and module."""

    name: str
    options: type[MethodOptions]
    run: Callable[..., Any]
    module: str
    summary: str = ""
    trains: bool = True
    training_variants: int = 0

    def parse(self, values: Mapping[str, Any] | None = None) -> Any:
        """This method's ``Options`` from ``values`` (unknown keys refused by name)."""
        return parse_options(self.options, values, method=self.name)


def _method_of(module: ModuleType) -> Method:
    name, options, run = (getattr(module, a, None) for a in ("NAME", "Options", "run"))
    problems = []
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append(f"NAME must be a name like 'compressor' (letters, digits, '_', '-'), got {name!r}")
    if not (
        isinstance(options, type)
        and dataclasses.is_dataclass(options)
        and issubclass(options, MethodOptions)
        and getattr(getattr(options, "__dataclass_params__", None), "frozen", False)  # dataclasses' marker, untyped
    ):
        problems.append("Options must be a frozen dataclass subclassing distill.options.MethodOptions")
    if not callable(run):
        problems.append("run(ctx, options) must be a function")
    if problems:
        raise TypeError(f"distillation method module {module.__name__}: {'; '.join(problems)}")
    summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
    return Method(
        cast(str, name),  # the three casts: checked above, problems raise
        cast("type[MethodOptions]", options),
        cast("Callable[..., Any]", run),
        module.__name__,
        summary,
        bool(getattr(module, "TRAINS", True)),
        int(getattr(module, "TRAINING_VARIANTS", 0)),
    )


def discover() -> dict[str, Method]:
    """Every method of :mod:`.methods`, by name (imports each module)."""
    package = importlib.import_module(PACKAGE)
    found: dict[str, Method] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        method = _method_of(importlib.import_module(f"{PACKAGE}.{info.name}"))
        if method.name in found:
            raise ValueError(
                f"distillation method {method.name!r} is declared by both {found[method.name].module} "
                f"and {method.module}"
            )
        found[method.name] = method
    return found


def list_methods() -> list[str]:
    """The names of every distillation method in :mod:`.methods`, sorted."""
    return sorted(discover())


def get_method(name: str) -> Method:
    """The method called ``name``; ``ValueError`` listing the known names otherwise."""
    methods = discover()
    try:
        return methods[name]
    except KeyError:
        raise ValueError(f"unknown distillation method {name!r}; known methods: {sorted(methods)}") from None
