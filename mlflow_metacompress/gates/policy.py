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

The direction must agree with the metric catalogue (:mod:`mlflow_metacompress.metrics`):
a gate bounds the bad side of a metric, which is what ``MetricThreshold`` expresses.
Checks are judged by ``mlflow.validate_evaluation_results`` one threshold at a time, so
MLflow's own comparison decides: ``value <= threshold`` (lower is better) or
``value >= threshold`` (greater is better), both inclusive; NaN always fails.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ..metrics import base_name, greater_is_better

logger = logging.getLogger(__name__)

PRESETS = ("safety_critical", "standard", "lenient", "quick")
_DIRECTIONS = {"<=": False, ">=": True}
_STRING_RULE = re.compile(r"^\s*([<>=!]*)\s*(.*?)\s*$")


class PolicyError(ValueError):
    """A gate policy file or mapping is malformed."""


def _unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` that rejects a key repeated in one mapping (plain PyYAML keeps
    the last one silently, so a typo'd duplicate would quietly loosen a gate)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


@dataclass(frozen=True)
class Threshold:
    """``metric <direction> value``; ``metric`` may contain ``*`` globs."""

    metric: str
    direction: str
    value: float

    @property
    def greater_is_better(self) -> bool:
        return _DIRECTIONS[self.direction]

    def __str__(self) -> str:
        return f"{self.metric} {self.direction} {self.value:g}"


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one concrete metric key against one threshold."""

    metric: str
    direction: str
    threshold: float
    actual: float | None
    passed: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "direction": self.direction, "threshold": self.threshold,
                "actual": self.actual, "passed": self.passed, "message": self.message}


@dataclass(frozen=True)
class GatePolicy:
    """A named set of :class:`Threshold` s (see the module docstring for YAML)."""

    name: str
    thresholds: tuple[Threshold, ...]
    description: str = ""
    source: str = field(default="<mapping>", compare=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<mapping>") -> "GatePolicy":
        if not isinstance(data, Mapping):
            raise PolicyError(f"{source}: a policy must be a mapping with 'name' and 'thresholds'")
        unknown = set(data) - {"name", "description", "thresholds"}
        if unknown:
            raise PolicyError(f"{source}: unknown top-level key(s) {sorted(unknown)}; "
                              "expected 'name', 'description', 'thresholds'")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise PolicyError(f"{source}: 'name' must be a non-empty string, got {name!r}")
        raw = data.get("thresholds")
        if not isinstance(raw, Mapping) or not raw:
            raise PolicyError(f"{source}: 'thresholds' must be a non-empty mapping of metric key → rule")
        parsed = tuple(_parse_rule(str(k), v, source) for k, v in raw.items())
        return cls(name=name.strip(), thresholds=parsed,
                   description=str(data.get("description") or ""), source=source)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "GatePolicy":
        """Parse a policy file; :class:`PolicyError` names the file for every problem
        (missing, a directory, unreadable, not UTF-8, invalid YAML, a duplicated key)."""
        import yaml

        path = Path(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise PolicyError(f"policy file {path} does not exist") from None
        except IsADirectoryError:
            raise PolicyError(f"policy path {path} is a directory, not a YAML file") from None
        except UnicodeDecodeError as exc:
            raise PolicyError(f"policy file {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} "
                              f"at offset {exc.start})") from None
        except OSError as exc:
            raise PolicyError(f"policy file {path} cannot be read: {exc.strerror or exc}") from None
        try:
            data = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as exc:
            raise PolicyError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
        return cls.from_mapping(data, source=str(path))

    def check(self, metrics: Mapping[str, float]) -> list[CheckResult]:
        """Judge ``metrics`` with ``mlflow.validate_evaluation_results``; one result per key.

        A glob threshold expands to every matching key; a threshold that matches no key
        yields one failing "missing" result, never a silent pass.
        """
        results: list[CheckResult] = []
        for rule in self.thresholds:
            keys = _matching_keys(rule.metric, metrics)
            if not keys:
                have = sorted(k for k in metrics if base_name(k) == base_name(rule.metric))
                hint = f"; keys with the same base metric: {have}" if have else ""
                results.append(CheckResult(
                    rule.metric, rule.direction, rule.value, None, False,
                    f"{rule.metric} is required by policy {self.name!r} ({rule}) but the evaluation "
                    f"did not produce it{hint}"))
                continue
            results.extend(_judge(key, rule, metrics[key]) for key in keys)
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
    if isinstance(rule, str):
        m = _STRING_RULE.match(rule)
        direction, value = (m.group(1) or None), m.group(2)
    elif isinstance(rule, Mapping):
        extra = set(rule) - {"direction", "threshold"}
        if extra or "threshold" not in rule:
            raise PolicyError(f"{where}: a mapping rule needs 'threshold' (and optionally 'direction'), "
                              f"got keys {sorted(rule)}")
        direction, value = rule.get("direction"), rule["threshold"]
    else:
        direction, value = None, rule
    if direction is None:
        direction = ">=" if catalogue_gib else "<="
    if direction not in _DIRECTIONS:
        raise PolicyError(f"{where}: unknown direction {direction!r}; use '<=' or '>='")
    if _DIRECTIONS[direction] != catalogue_gib:
        better = "greater" if catalogue_gib else "lower"
        raise PolicyError(f"{where}: direction {direction!r} contradicts the metric catalogue "
                          f"({base_name(metric)} is {better}-is-better, so a gate must use "
                          f"{'>=' if catalogue_gib else '<='})")
    if isinstance(value, bool):
        raise PolicyError(f"{where}: threshold must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PolicyError(f"{where}: threshold must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise PolicyError(f"{where}: threshold must be finite, got {value!r}")
    return Threshold(metric, direction, number)


def _matching_keys(pattern: str, metrics: Mapping[str, float]) -> list[str]:
    if any(ch in pattern for ch in "*?["):
        return sorted(k for k in metrics if fnmatch.fnmatchcase(k, pattern))
    return [pattern] if pattern in metrics else []


def _judge(key: str, rule: Threshold, value: Any) -> CheckResult:
    import mlflow
    from mlflow.models import MetricThreshold
    from mlflow.models.evaluation import EvaluationResult
    from mlflow.models.evaluation.validation import ModelValidationFailedException

    try:
        actual = float(value)
    except (TypeError, ValueError):
        return CheckResult(key, rule.direction, rule.value, None, False,
                           f"{key} = {value!r} is not a number")
    threshold = {key: MetricThreshold(threshold=float(rule.value), greater_is_better=rule.greater_is_better)}
    mlflow_logger = logging.getLogger("mlflow.models.evaluation.validation")
    level = mlflow_logger.level
    mlflow_logger.setLevel(logging.WARNING)  # one INFO pair per check is noise
    try:
        mlflow.validate_evaluation_results(threshold, EvaluationResult({key: actual}, {}, run_id=""))
    except ModelValidationFailedException:
        why = "is NaN" if math.isnan(actual) else f"violates {rule.direction} {rule.value:g}"
        return CheckResult(key, rule.direction, rule.value, actual, False, f"{key} = {actual:g} {why}")
    finally:
        mlflow_logger.setLevel(level)
    return CheckResult(key, rule.direction, rule.value, actual, True,
                       f"{key} = {actual:g} satisfies {rule.direction} {rule.value:g}")


def load_policy(spec: "str | Path | GatePolicy | Mapping[str, Any]") -> GatePolicy:
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
