"""Typed, validated recipe options: one frozen dataclass per recipe.

TextAttack's recipes (Morris et al., EMNLP 2020 demos) take their hyper-parameters as
constructor arguments; here each recipe declares them once as a frozen dataclass deriving
from :class:`AttackOptions` (the options every recipe takes: budget, seed, ...). Every
field is declared with :func:`option`, which records its type and bounds, so a bad value
fails on construction with an error naming the recipe, the option and the value, and an
unknown option fails naming the known ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T", bound="AttackOptions")

_KINDS: dict[type, tuple[type, ...]] = {int: (int,), float: (int, float), bool: (bool,), str: (str,)}


def option(
    default: Any,
    kind: type | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    optional: bool = False,
    check: Callable[[Any], Any] | None = None,
    doc: str = "",
) -> Any:
    """A dataclass field with its type (``kind``), bounds and an optional ``check``
    (which may normalise the value, e.g. a list into a tuple, or raise ``ValueError``)."""
    meta = {"kind": kind, "minimum": minimum, "maximum": maximum, "optional": optional, "check": check, "doc": doc}
    return field(default=default, metadata=meta)


def _describe(meta: dict[str, Any]) -> str:
    kind = meta["kind"].__name__ if meta["kind"] is not None else "value"
    bounds = []
    if meta["minimum"] is not None:
        bounds.append(f">= {meta['minimum']}")
    if meta["maximum"] is not None:
        bounds.append(f"<= {meta['maximum']}")
    text = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}" + (f" {' and '.join(bounds)}" if bounds else "")
    return text + (" or None" if meta["optional"] else "")


def _validate(name: str, value: Any, meta: dict[str, Any]) -> Any:
    if value is None and meta["optional"]:
        return None
    kind = meta["kind"]
    if kind is not None:
        ok = isinstance(value, _KINDS.get(kind, (kind,)))
        if kind is not bool and isinstance(value, bool):
            ok = False  # True is not a count
        if not ok:
            raise ValueError(f"option {name} must be {_describe(meta)}, got {value!r}")
    if meta["minimum"] is not None and value < meta["minimum"]:
        raise ValueError(f"option {name} must be {_describe(meta)}, got {value!r}")
    if meta["maximum"] is not None and value > meta["maximum"]:
        raise ValueError(f"option {name} must be {_describe(meta)}, got {value!r}")
    if meta["check"] is not None:
        value = meta["check"](value)
    return value


@dataclass(frozen=True)
class AttackOptions:
    """Options every recipe takes: the per-sample query ``budget``, the ``seed``, at most
    ``max_changed`` renamed identifiers (None: no cap) and ``mlm``, a masked language model
    for substitutes (a directory or an object; used by the recipes that take one)."""

    budget: int = option(500, int, minimum=1, doc="distinct model inputs per sample")
    seed: int = option(0, int, doc="seed of the search's random generator")
    max_changed: int | None = option(None, int, minimum=1, optional=True, doc="cap on renamed identifiers")
    mlm: Any = option(None, doc="masked language model for substitutes")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = _validate(f.name, getattr(self, f.name), dict(f.metadata))
            object.__setattr__(self, f.name, value)

    @classmethod
    def parse(cls: type[T], recipe: str, **values: Any) -> T:
        """Options for ``recipe`` from keyword arguments; ``TypeError`` for an unknown option,
        ``ValueError`` for a bad value, both naming the recipe and the option."""
        known = sorted(f.name for f in dataclasses.fields(cls))
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise TypeError(f"{recipe}: unknown option(s) {unknown}; known: {known}")
        try:
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"{recipe}: {exc}") from None

    def describe(self) -> dict[str, str]:
        """``{option: doc}`` for the documentation and ``--help`` texts."""
        return {f.name: str(f.metadata.get("doc", "")) for f in dataclasses.fields(self)}
