"""Gate policies: named sets of thresholds on metacompress metrics, loaded from YAML.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) shows that a distilled student can
match its teacher's accuracy while diverging from it behaviourally (up to 62% of
samples) and under attack (up to 285% greater accuracy drop), and advises that the
tolerable discrepancy depends on the task's risk. A :class:`GatePolicy` encodes that
tolerance as thresholds on evaluator metric keys; presets ship per risk tier
(``safety_critical``, ``standard``, ``lenient``) in ``mlflow_metacompress/gates/presets``,
plus ``quick``, the default of the pipeline's minutes-sized ``quick`` profile.

YAML format::

    name: standard
    description: free text
    thresholds:
      accuracy_drop: "<= 0.02"                    # direction and threshold in one string
      mr1_violation_rate/metamorphic: {direction: "<=", threshold: 0.15}
      mr3_hcar: 0.9                               # direction derived from the catalogue
      attack_*/excess_drop_pct: "<= 100"          # glob: every attack logged, at least one
      any_violation_rate/metamorphic: "<= 0.20 @upper"   # the upper end of the 95% interval
      student_accuracy: {threshold: 0.6, bound: lower}   # the lower end (higher-is-better)

The direction must agree with the metric catalogue (:mod:`mlflow_metacompress.metrics`):
a gate bounds the bad side of a metric, which is what ``MetricThreshold`` expresses.
Checks are judged one threshold at a time by MLflow's ``MetricThreshold`` comparison (that of
``mlflow.validate_evaluation_results``, without building an ``EvaluationResult`` or touching
MLflow's loggers): ``value <= threshold`` (lower is better) or ``value >= threshold``
(greater is better), both inclusive; NaN always fails. A value
within 1e-9 relative (plus 1e-12 absolute) of its threshold counts as on it, so a rate that
misses the threshold by one rounding step passes (:mod:`.bounds`).

``@upper`` / ``@lower`` judge the pessimistic end of the metric's 95% bootstrap interval
(``<metric>_ci_high`` / ``<metric>_ci_low``, variant suffix last; the evaluator logs them
when ``bootstrap_samples > 0``); a missing interval fails like a missing metric. Every
check's message shows the point estimate and, when logged, its interval.

A threshold and its judgment: :mod:`.checks`; the strict YAML reader: :mod:`.yaml_files`.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..metrics import base_name, greater_is_better
from .bounds import check_bound, fmt
from .checks import DIRECTIONS, CheckResult, Threshold, judge
from .producers import missing_hint
from .yaml_files import read_yaml_file

logger = logging.getLogger(__name__)

PRESETS = ("safety_critical", "standard", "lenient", "quick")
_STRING_RULE = re.compile(r"^\s*([<>=!]*)\s*(.*?)\s*(?:@\s*(\w*))?\s*$")


class PolicyError(ValueError):
    """A gate policy file or mapping is malformed."""


@dataclass(frozen=True)
class GatePolicy:
    """A named set of :class:`~.checks.Threshold` s (see the module docstring for YAML)."""

    name: str
    thresholds: tuple[Threshold, ...]
    description: str = ""
    source: str = field(default="<mapping>", compare=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<mapping>") -> GatePolicy:
        if not isinstance(data, Mapping):
            raise PolicyError(f"{source}: a policy must be a mapping with 'name' and 'thresholds'")
        unknown = set(data) - {"name", "description", "thresholds"}
        if unknown:
            raise PolicyError(
                f"{source}: unknown top-level key(s) {sorted(unknown)}; expected 'name', 'description', 'thresholds'"
            )
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise PolicyError(f"{source}: 'name' must be a non-empty string, got {name!r}")
        raw = data.get("thresholds")
        if not isinstance(raw, Mapping) or not raw:
            raise PolicyError(f"{source}: 'thresholds' must be a non-empty mapping of metric key → rule")
        parsed = tuple(_parse_rule(str(k), v, source) for k, v in raw.items())
        return cls(name=name.strip(), thresholds=parsed, description=str(data.get("description") or ""), source=source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> GatePolicy:
        """Parse a policy file; :class:`PolicyError` names the file for every problem
        (missing, a directory, unreadable, not UTF-8, invalid YAML, a duplicated key)."""
        path = Path(path)
        data = read_yaml_file(path, "policy", PolicyError)
        return cls.from_mapping(data, source=str(path))

    def check(self, metrics: Mapping[str, float]) -> list[CheckResult]:
        """Judge ``metrics`` by MLflow's ``MetricThreshold`` comparison; one result per key.

        A glob threshold expands to every matching key; a threshold that matches no key
        yields one failing "missing" result, never a silent pass.
        """
        results: list[CheckResult] = []
        for rule in self.thresholds:
            keys = _matching_keys(rule.checked, metrics)
            if not keys:
                have = sorted(k for k in metrics if base_name(k) == base_name(rule.checked))
                hint = f"; keys with the same base metric: {have}" if have else ""
                what = ""
                if rule.bound:
                    est = metrics.get(rule.metric) if rule.metric in metrics else None
                    what = (
                        f" (the {rule.bound} end of {rule.metric}'s 95% interval"
                        + (f"; point estimate {fmt(float(est))}" if est is not None else "")
                        + "; the evaluator logs intervals when bootstrap_samples > 0)"
                    )
                glob = any(ch in rule.checked for ch in "*?[")
                subject = f"no metric matches the glob {rule.checked!r}: it" if glob else rule.checked
                why = missing_hint(rule.checked, metrics)
                results.append(
                    CheckResult(
                        rule.checked,
                        rule.direction,
                        rule.value,
                        None,
                        False,
                        f"{subject}{what} is required by policy {self.name!r} ({rule}) but the evaluation "
                        f"did not produce it{hint}" + (f"; {why}" if why else ""),
                        bound=rule.bound,
                    )
                )
                continue
            results.extend(judge(key, rule, metrics) for key in keys)
        return results

    def describe(self) -> str:
        lines = [f"policy {self.name}" + (f": {self.description}" if self.description else "")]
        lines += [f"  {t}" for t in self.thresholds]
        return "\n".join(lines)


def _parse_rule(metric: str, rule: Any, source: str) -> Threshold:
    where = f"{source}: threshold for {metric!r}"
    try:
        catalogue_gib = greater_is_better(metric)
    except KeyError as exc:
        raise PolicyError(f"{where}: {exc.args[0]}") from None
    bound = None
    if isinstance(rule, str):
        m = _STRING_RULE.match(rule)
        if m is None:  # e.g. a line break inside the rule
            raise PolicyError(f"{where}: cannot read {rule!r}; expected e.g. '<= 0.1' or '<= 0.1 @upper'")
        direction, value, bound = (m.group(1) or None), m.group(2), m.group(3)
    elif isinstance(rule, Mapping):
        extra = set(rule) - {"direction", "threshold", "bound"}
        if extra or "threshold" not in rule:
            raise PolicyError(
                f"{where}: a mapping rule needs 'threshold' (and optionally 'direction', "
                f"'bound'), got keys {sorted(rule)}"
            )
        direction, value, bound = rule.get("direction"), rule["threshold"], rule.get("bound")
    else:
        direction, value = None, rule
    if direction is None:
        direction = ">=" if catalogue_gib else "<="
    if direction not in DIRECTIONS:
        raise PolicyError(f"{where}: unknown direction {direction!r}; use '<=' or '>='")
    if DIRECTIONS[direction] != catalogue_gib:
        better = "greater" if catalogue_gib else "lower"
        raise PolicyError(
            f"{where}: direction {direction!r} contradicts the metric catalogue "
            f"({base_name(metric)} is {better}-is-better, so a gate must use "
            f"{'>=' if catalogue_gib else '<='})"
        )
    if isinstance(value, bool):
        raise PolicyError(f"{where}: threshold must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PolicyError(f"{where}: threshold must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise PolicyError(f"{where}: threshold must be finite, got {value!r}")
    if bound is not None:
        problem = check_bound(str(bound).strip().lstrip("@"), base_name(metric), catalogue_gib)
        if problem:
            raise PolicyError(f"{where}: {problem}")
        bound = str(bound).strip().lstrip("@")
    return Threshold(metric, direction, number, bound)


def _matching_keys(pattern: str, metrics: Mapping[str, float]) -> list[str]:
    if any(ch in pattern for ch in "*?["):
        return sorted(k for k in metrics if fnmatch.fnmatchcase(k, pattern))
    return [pattern] if pattern in metrics else []


def load_policy(spec: str | Path | GatePolicy | Mapping[str, Any]) -> GatePolicy:
    """A preset name (``standard``), a YAML path, a mapping or a policy → :class:`GatePolicy`."""
    if isinstance(spec, GatePolicy):
        return spec
    if isinstance(spec, Mapping):
        return GatePolicy.from_mapping(spec)
    text = str(spec)
    if text in PRESETS:
        ref = resources.files("mlflow_metacompress.gates") / "presets" / f"{text}.yaml"
        with resources.as_file(ref) as path:
            return GatePolicy.from_yaml(path)
    path = Path(text)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        return GatePolicy.from_yaml(path)
    raise PolicyError(f"unknown policy {text!r}: use a preset {list(PRESETS)} or a path to a YAML file")
