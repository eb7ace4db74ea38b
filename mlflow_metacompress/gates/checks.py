"""One threshold of a gate policy (:mod:`.policy`) and its judgment against logged metrics.

Checks are judged one threshold at a time by MLflow's ``MetricThreshold`` comparison:
``value <= threshold`` (lower is better) or ``value >= threshold`` (greater is better),
both inclusive; NaN always fails; a value within the boundary tolerance of its threshold
counts as on it (:mod:`.bounds`). With an ``@upper``/``@lower`` bound, the end of the 95%
interval is judged and the point estimate and interval are reported beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from .bounds import bound_key, compared_value, fmt, fmt_pair, interval_text

DIRECTIONS = {"<=": False, ">=": True}


@dataclass(frozen=True)
class Threshold:
    """``metric <direction> value [@upper|@lower]``; ``metric`` may contain ``*`` globs.
    With ``bound``, the check judges the interval end :attr:`checked` instead of ``metric``."""

    metric: str
    direction: str
    value: float
    bound: str | None = None

    @property
    def greater_is_better(self) -> bool:
        return DIRECTIONS[self.direction]

    @property
    def checked(self) -> str:
        """The key (pattern) judged: ``metric``, or its interval end with a bound."""
        return bound_key(self.metric, self.bound)

    def __str__(self) -> str:
        return f"{self.metric} {self.direction} {self.value:g}" + (f" @{self.bound}" if self.bound else "")


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one concrete metric key against one threshold."""

    metric: str
    direction: str
    threshold: float
    actual: float | None
    passed: bool
    message: str
    bound: str | None = None
    estimate: float | None = None  # the point estimate (equals actual without a bound)
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "direction": self.direction,
            "threshold": self.threshold,
            "actual": self.actual,
            "passed": self.passed,
            "message": self.message,
            "bound": self.bound,
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def _passes(value: float, threshold: float, greater_is_better: bool) -> bool:
    """MLflow's ``MetricThreshold`` comparison (``mlflow.models.evaluation.validation``):
    ``value >= threshold`` (greater is better) or ``value <= threshold``, inclusive; NaN fails.
    Judged here rather than through ``mlflow.validate_evaluation_results``, which needs an
    ``EvaluationResult`` and logs two INFO lines per check: no global logger is touched, so
    a gate is safe beside the webhook worker's thread."""
    return value >= threshold if greater_is_better else value <= threshold


def judge(key: str, rule: Threshold, metrics: Mapping[str, Any]) -> CheckResult:
    """One key against one rule, by MLflow's comparison after the boundary tolerance."""
    from ..statistics import point_key

    value = metrics[key]
    point = point_key(key) if rule.bound else key
    extra = _interval_fields(point, metrics)
    try:
        actual = float(value)
    except (TypeError, ValueError):
        return CheckResult(
            key, rule.direction, rule.value, None, False, f"{key} = {value!r} is not a number", rule.bound, **extra
        )
    shown, limit = fmt_pair(actual, float(rule.value))
    if rule.bound:
        head = f"{point} = {fmt(extra['estimate'])}{interval_text(point, metrics)}: {rule.bound} end {shown}"
    else:
        head = f"{key} = {shown}{interval_text(key, metrics)}"
    if not _passes(compared_value(actual, float(rule.value)), float(rule.value), rule.greater_is_better):
        why = "is NaN" if math.isnan(actual) else f"violates {rule.direction} {limit}"
        return CheckResult(key, rule.direction, rule.value, actual, False, f"{head} {why}", rule.bound, **extra)
    return CheckResult(
        key, rule.direction, rule.value, actual, True, f"{head} satisfies {rule.direction} {limit}", rule.bound, **extra
    )


class _Interval(TypedDict):
    estimate: float | None
    ci_low: float | None
    ci_high: float | None


def _interval_fields(point: str, metrics: Mapping[str, Any]) -> _Interval:
    from ..statistics import interval_key

    def get(key: str) -> float | None:
        try:
            return float(metrics[key])
        except (KeyError, TypeError, ValueError):
            return None

    return {
        "estimate": get(point),
        "ci_low": get(interval_key(point, "low")),
        "ci_high": get(interval_key(point, "high")),
    }
