"""How the reproduction's page (:mod:`.markdown`) writes one number: percentages, signed
differences, p-values at the bootstrap's floor (B resamples), intervals over seeds and
per-method cells.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard


def num(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not math.isnan(x)


def pct(x: float | None) -> str:
    return f"{100 * x:.1f}%" if num(x) else "–"


def signed(x: float | None, scale: float = 1.0, digits: int = 3) -> str:
    """``x × scale`` with its sign, or ``–`` (a t-interval over fewer than 2 seeds)."""
    return f"{scale * x:+.{digits}f}" if num(x) else "–"


def pv(p: float | None, resamples: int | None = None) -> str:
    """``= p`` or, for a bootstrap p-value at its floor k/(B+1) (k = 1 one-sided, 2 two-sided), ``≤ k/(B+1)``."""
    if not num(p):
        return "= –"
    if resamples and p <= 2 / (resamples + 1) + 1e-12:
        return f"≤ {round(p * (resamples + 1))}/{resamples + 1} (B = {resamples})"
    return f"= {p:.3g}" + (f" (B = {resamples})" if resamples else "")


def ci(r: dict[str, Any]) -> str:
    if not num(r.get("mean")):
        return "–"
    if not num(r.get("low")):
        return f"{pct(r['mean'])} ({r.get('seeds', 1)} seed{'s' if r.get('seeds', 1) != 1 else ''}, no interval)"
    return f"{pct(r['mean'])} [{pct(r['low'])}, {pct(r['high'])}]"


def cell(metric: str, r: dict[str, Any]) -> str:
    """A per-method cell: size in MB, the accuracy gap in points, a rate in percent."""
    if metric == "size_mb" and num(r["mean"]):
        return f"{r['mean']:.2f}"
    if metric == "accuracy_drop" and num(r["mean"]):
        ends = f" [{100 * r['low']:+.1f}, {100 * r['high']:+.1f}]" if num(r.get("low")) and num(r.get("high")) else ""
        return f"{100 * r['mean']:+.1f}{ends}"
    return ci(r)


def yes_no(x: bool | None) -> str:
    return {True: "yes", False: "no", None: "–"}[x]
