"""Typed, frozen options of distillation methods and their parsing.

Every method declares an ``Options`` dataclass (a subclass of :class:`MethodOptions`);
its field defaults are the method's defaults, in one place. :func:`parse_options` turns
a mapping (``--option key=value`` pairs, a profile's ``method_options``, keyword
arguments of :func:`.student.distill_student`) into it: unknown keys are refused by
name, and values are converted to the field's type (``"3"`` → 3 for an ``int``,
``"a,b"`` → ``("a", "b")`` for a tuple, a mapping → an :class:`~.arch.ArchSpec`),
with an error naming the option and the expected type otherwise.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")
_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


@dataclasses.dataclass(frozen=True)
class MethodOptions:
    """Options every method takes: the student's learning rate (AdamW)."""

    lr: float = 1e-3


@dataclasses.dataclass(frozen=True)
class SearchOptions(MethodOptions):
    """Budget of an evolutionary architecture search (Compressor's GA, AVATAR's NSGA-II,
    MORPH's AGE-MOEA) and the largest vocabulary a tokenizer may learn."""

    population: int = 20
    generations: int = 15
    max_vocab: int = 46000


def option_names(cls: type) -> list[str]:
    """The option names of an options dataclass, in declaration order."""
    return [f.name for f in dataclasses.fields(cls)]


def parse_options(cls: type[T], values: Mapping[str, Any] | None = None, *, method: str = "") -> T:
    """``cls(**values)`` with every value converted to its field's type.

    Raises ``ValueError`` naming unknown keys (and the known ones), or the option whose
    value does not convert.
    """
    values = dict(values or {})
    known = option_names(cls)
    owner = f" of method {method!r}" if method else ""
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}{owner}; known options: {sorted(known)}")
    hints = typing.get_type_hints(cls)
    converted = {}
    for key, value in values.items():
        try:
            converted[key] = coerce(value, hints[key])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"option {key}={value!r}{owner}: {exc}") from None
    return cls(**converted)


def coerce(value: Any, tp: Any) -> Any:
    """``value`` as type ``tp`` (int, float, bool, str, Literal, Optional/Union, tuple,
    list, dict, a dataclass, Any); raises ``ValueError`` when it does not convert."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            if type(None) in args:
                return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return coerce(value, arg)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        raise ValueError("; ".join(errors))
    if origin is Literal:
        for choice in args:
            if value == choice or (isinstance(value, str) and str(choice) == value):
                return choice
        raise ValueError(f"expected one of {list(args)}")
    if origin in (tuple, list):
        items = [s.strip() for s in value.split(",") if s.strip()] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ValueError(f"expected a list, got {type(value).__name__}")
        item_type = args[0] if args else Any
        out = [coerce(v, item_type) for v in items]
        return tuple(out) if origin is tuple else out
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a mapping, got {type(value).__name__}")
        return dict(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a mapping of {tp.__name__} fields, got {type(value).__name__}")
        return parse_options(tp, value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise ValueError("expected a boolean (true/false)")
    if tp is int:
        if isinstance(value, bool):
            raise ValueError("expected an integer, got a boolean")
        if isinstance(value, int):
            return value
        try:
            number = float(value) if isinstance(value, (float, str)) else None
        except ValueError:
            number = None
        if number is None or not number.is_integer():
            raise ValueError("expected an integer")
        return int(number)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError("expected a number")
        try:
            return float(value)
        except ValueError:
            raise ValueError("expected a number") from None
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {type(value).__name__}")
        return value
    raise TypeError(f"options of type {tp!r} are not supported")
