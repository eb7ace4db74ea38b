"""The shared checks of one ``evaluator_config`` value (an integer in a range, a list of
names), used by :mod:`.config_checks` and :mod:`.slices`; each error names the key and the
value. ``bool`` is never accepted as a number (it is an ``int`` subclass in Python).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from ..adapters.checks import MetaCompressInputError


def bad_value(key: str, value: Any, expected: str) -> MetaCompressInputError:
    """The error for ``evaluator_config[key]``: what was expected, the value and its type."""
    return MetaCompressInputError(
        f"evaluator_config[{key!r}] must be {expected}; got {value!r} ({type(value).__name__})"
    )


def check_int(key: str, value: Any, lo: int, hi: int | None = None, optional: bool = False) -> None:
    """An integer (never a bool) in ``[lo, hi]`` (``hi`` None: no upper bound), or None when ``optional``."""
    if optional and value is None:
        return
    ok = (
        isinstance(value, Integral)
        and not isinstance(value, bool)
        and int(value) >= lo
        and (hi is None or int(value) <= hi)
    )
    if not ok:
        rng = f"an integer ≥ {lo}" + (f" and ≤ {hi}" if hi is not None else "")
        raise bad_value(key, value, rng + (" or unset" if optional else ""))


def check_names(key: str, values: Any) -> None:
    """A tuple of distinct, non-empty strings (or unset); lists arrive as tuples, and one
    name as a one-element tuple (:func:`~.config.parse_config`)."""
    if values is None:
        return
    if not isinstance(values, (tuple, list)):
        raise bad_value(key, values, "a list of names (or one name)")
    for v in values:
        if not isinstance(v, str) or not v:
            raise bad_value(key, v, "a list of non-empty column/attack names (an entry)")
    seen: set[str] = set()
    for v in values:
        if v in seen:
            raise MetaCompressInputError(f"evaluator_config[{key!r}] names {v!r} twice: {list(values)}")
        seen.add(v)
