"""Statistics over seeds: the mean with a Student-t interval, and a paired t-test.

A seed's within-run bootstrap interval (the evaluator's ``*_ci_low``/``*_ci_high``) says
how much the metric would move over other test rows; the t-interval over seeds says how
much it moves over other training runs. The reproduction reports both. Paired tests
compare two methods trained with the same seed on the same data (``scipy.stats.ttest_rel``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def finite(values: Sequence[float | None]) -> list[float]:
    """The values that are numbers (not None, not NaN)."""
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def t_interval(values: Sequence[float | None], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t ``level`` interval over seeds, ignoring NaN/None; the ends are
    NaN with fewer than two values, everything is NaN with none."""
    import numpy as np
    from scipy import stats

    x = np.asarray(finite(values), dtype=float)
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf((1 + level) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def paired_test(a: Sequence[float | None], b: Sequence[float | None]) -> dict[str, Any]:
    """Paired t-test of ``a`` against ``b`` (same seeds, in order; pairs with a missing
    value are dropped): the mean difference a − b with its t-interval and the p-value."""
    from scipy import stats

    pairs = [
        (float(x), float(y))
        for x, y in zip(a, b, strict=True)
        if x is not None and y is not None and not (math.isnan(float(x)) or math.isnan(float(y)))
    ]
    diff = [x - y for x, y in pairs]
    mean, low, high = t_interval(diff)
    p = math.nan
    if len(pairs) >= 2 and any(d != diff[0] for d in diff):
        p = float(stats.ttest_rel([x for x, _ in pairs], [y for _, y in pairs]).pvalue)
    return {"n": len(pairs), "mean_difference": mean, "t_low": low, "t_high": high, "pvalue": p}
