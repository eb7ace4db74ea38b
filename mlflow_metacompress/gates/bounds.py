"""How a gate compares and shows numbers: the boundary tolerance, interval bounds, display.

**Tolerance.** Rates are ratios of small integers computed in floating point, so a student
exactly on a threshold can miss it by one rounding step: teacher 0.64 and student 0.59 on
100 rows give ``accuracy_drop = 0.05000000000000004``. A value within
``REL_TOLERANCE · max(|value|, |threshold|) + ABS_TOLERANCE`` (1e-9 relative plus 1e-12
absolute) of the threshold counts as *on* the threshold, and thresholds are inclusive.
The logged metric keeps its full precision; only the comparison is tolerant.

**Interval bounds.** ``"<= 0.20 @upper"`` judges the upper end of the metric's 95%
bootstrap interval (``<metric>_ci_high``, variant suffix last) instead of the point
estimate; ``"@lower"`` judges ``<metric>_ci_low`` of a higher-is-better metric. The gate
then bounds the pessimistic end: a student passes only if the data are consistent with
it passing (:mod:`mlflow_metacompress.statistics`).

**Display.** Values in verdict text and tables are shown with 4 significant digits
(``0.05``, ``0.3457``, ``285``); when a value and its threshold would print alike but
differ beyond the tolerance, more digits are shown so the text never reads
"0.05 violates <= 0.05".
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..statistics import interval_key, interval_metrics

REL_TOLERANCE = 1e-9
ABS_TOLERANCE = 1e-12
DIGITS = 4
BOUNDS = {"upper": ("high", False), "lower": ("low", True)}
"""bound → (interval end checked, the metric direction it applies to: greater_is_better)."""


def on_threshold(value: float, threshold: float) -> bool:
    """``value`` equals ``threshold`` up to the documented tolerance."""
    return abs(value - threshold) <= REL_TOLERANCE * max(abs(value), abs(threshold)) + ABS_TOLERANCE


def compared_value(value: float, threshold: float) -> float:
    """The value handed to MLflow's inclusive comparison: snapped onto the threshold when
    within the tolerance, else unchanged (NaN stays NaN, so it still fails)."""
    if math.isfinite(value) and on_threshold(value, threshold):
        return float(threshold)
    return value


def fmt(value: float | None, digits: int = DIGITS) -> str:
    """``value`` with ``digits`` significant digits (``-`` for None)."""
    if value is None:
        return "-"
    return f"{value:.{digits}g}"


def fmt_pair(value: float, threshold: float) -> tuple[str, str]:
    """``value`` and ``threshold`` formatted alike, with more digits only where 4 would make
    two values that differ beyond the tolerance look equal."""
    digits = DIGITS
    while (
        digits < 17
        and fmt(value, digits) == fmt(threshold, digits)
        and not on_threshold(value, threshold)
        and math.isfinite(value)
    ):
        digits += 1
    return fmt(value, digits), fmt(threshold, digits)


def bound_key(metric: str, bound: str | None) -> str:
    """The key a threshold with ``bound`` judges: ``x/metamorphic`` @upper → ``x_ci_high/metamorphic``."""
    if bound is None:
        return metric
    return interval_key(metric, BOUNDS[bound][0])


def check_bound(bound: str, base: str, greater_is_better: bool) -> str | None:
    """Why ``@bound`` cannot apply to a metric (None when it can)."""
    if bound not in BOUNDS:
        return f"unknown interval bound {'@' + bound!r}; use '@upper' or '@lower'"
    from ..families import DEVIATION_INTERVAL_METRICS, family_interval_metrics

    with_interval = interval_metrics()
    if base not in with_interval and base not in family_interval_metrics() and base not in DEVIATION_INTERVAL_METRICS:
        return (
            f"{base} has no bootstrap interval, so '@{bound}' cannot apply; intervals are logged for "
            f"{', '.join(with_interval)} and their excess/ and increment/ families, and for "
            f"{', '.join(DEVIATION_INTERVAL_METRICS)}"
        )
    if BOUNDS[bound][1] != greater_is_better:
        want = "@upper" if not greater_is_better else "@lower"
        return (
            f"'@{bound}' is the optimistic end of {base} "
            f"({'greater' if greater_is_better else 'lower'}-is-better); a gate bounds the pessimistic end, {want}"
        )
    return None


def interval_text(key: str, metrics: Mapping[str, float]) -> str:
    """``" [95% CI 0.15, 0.22]"`` when both ends of ``key``'s interval are in ``metrics``, else ``""``."""
    low, high = metrics.get(interval_key(key, "low")), metrics.get(interval_key(key, "high"))
    if low is None or high is None:
        return ""
    return f" [95% CI {fmt(float(low))}, {fmt(float(high))}]"
