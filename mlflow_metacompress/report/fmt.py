"""Number formatting shared by every page and by the tests that read the pages back.

One formatter per kind of number, so that a test can format a logged metric the way the
report does and find it in the rendered DOM.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

DASH = "–"


def is_number(value: Any) -> TypeGuard[int | float]:
    """A finite real number (bool excluded)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))


def rate(value: Any) -> str:
    """A rate, accuracy or mean: three decimals (``0.342``); ``–`` when absent or NaN."""
    return f"{float(value):.3f}" if is_number(value) else DASH


def signed(value: Any) -> str:
    """A difference with its sign (``+0.045``, ``−0.012``)."""
    if not is_number(value):
        return DASH
    text = f"{float(value):+.3f}"
    return text.replace("-", "−")


def interval(low: Any, high: Any) -> str:
    """A 95% interval (``[0.301, 0.388]``); empty when either end is absent."""
    if not (is_number(low) and is_number(high)):
        return ""
    return f"[{rate(low)}, {rate(high)}]"


def pvalue(value: Any) -> str:
    """A p-value: ``p = 0.043``, ``p < 0.001``; empty when absent."""
    if not is_number(value):
        return ""
    v = float(value)
    return "p < 0.001" if v < 0.001 else f"p = {v:.3f}"


def count(value: Any) -> str:
    """A count or a mean count (``31``, ``41.9``)."""
    if not is_number(value):
        return DASH
    v = float(value)
    return f"{int(v):,}" if v.is_integer() else f"{v:,.1f}"


def percent(value: Any) -> str:
    """A percentage (``285%``)."""
    return f"{float(value):.0f}%" if is_number(value) else DASH


def prob(value: Any) -> str:
    """A probability in an example (``0.8438``)."""
    return f"{float(value):.4f}" if is_number(value) else DASH
