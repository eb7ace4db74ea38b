"""The catalogue of every metric the evaluator logs: its definition and direction.

Directions let gates derive ``MetricThreshold(greater_is_better=...)`` instead of
retyping them (torchmetrics' ``higher_is_better``). Keys may carry a variant suffix
(``mr1_violation_rate/rename_variables``, ``…/metamorphic``, ``…/attack_mhm_zhang_2020``),
a slice suffix (``mr1_violation_rate/slice:<column>:<value>`` for the MR rates and
``any_violation_rate``, see :mod:`.evaluation.slices`), an attack prefix
(``attack_<a>/<model>_asr``) and the evaluator's ``metric_prefix``. Every suffix keeps the
base metric's definition and direction, so each family needs no entry of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetricSpec:
    name: str
    greater_is_better: bool
    definition: str


_OTHER_SPECS = [
    MetricSpec("mr4_ece_gap", False, "MR4 (labels): |student_ece − teacher_ece|"),
    MetricSpec(
        "any_violation_rate",
        False,
        "Headline discrepancy: fraction of samples violating MR1, MR2, MR3 (in H) or MR4 (own gap > threshold in a "
        "violating bin)",
    ),
    MetricSpec("teacher_accuracy", True, "Teacher accuracy (labels)"),
    MetricSpec("student_accuracy", True, "Student accuracy (labels)"),
    MetricSpec("accuracy_drop", False, "teacher_accuracy − student_accuracy"),
    MetricSpec("teacher_f1", True, "Teacher F1, class 1 positive (K = 2)"),
    MetricSpec("student_f1", True, "Student F1, class 1 positive (K = 2)"),
    MetricSpec("teacher_ece", False, "Teacher top-label expected calibration error (Guo et al. 2017)"),
    MetricSpec("student_ece", False, "Student top-label expected calibration error"),
    MetricSpec(
        "teacher_flip_rate",
        False,
        "Per transformation: fraction of samples whose teacher prediction changes from original to transformed "
        "(MORPH's prediction flips)",
    ),
    MetricSpec("student_flip_rate", False, "Per transformation: fraction of samples whose student prediction changes"),
    MetricSpec("transform_applicable_rate", True, "Per transformation: fraction of samples the transformation changed"),
    MetricSpec(
        "transform_parse_failures",
        False,
        "Samples whose code tree-sitter could not parse (skipped for transformations)",
    ),
    MetricSpec(
        "transform_over_limit",
        False,
        "Samples over the transformation size (200 KB) or nesting (500) limits (skipped for transformations)",
    ),
    MetricSpec("asr", False, "Attack success rate: successes / attacked samples (attack_<a>/<model>_asr)"),
    MetricSpec("mean_queries", True, "Mean model queries per attacked sample"),
    MetricSpec(
        "accuracy_under_attack",
        True,
        "Accuracy after replacing each successfully attacked sample by its adversarial version",
    ),
    MetricSpec("excess_drop", False, "Student accuracy drop − teacher accuracy drop under attack (always defined)"),
    MetricSpec(
        "excess_drop_pct",
        False,
        "100·(student drop − teacher drop)/teacher drop under attack (the paper's 285% figure)",
    ),
    MetricSpec(
        "accuracy_drop_pvalue",
        True,
        "McNemar's exact test of teacher vs student correctness on the same rows: two-sided binomial p-value of the "
        "discordant pairs (teacher right/student wrong vs the reverse) at p = 1/2; small = the accuracies differ",
    ),
    MetricSpec(
        "gate_passed",
        True,
        "Gate verdict on the gate run: 1 when every check of the policy passed, 0 when one failed (the run still ends "
        "FINISHED)",
    ),
    MetricSpec(
        "student_speedup",
        True,
        "measure_speed: teacher time / student time on the same 32 rows, alternating, best of 5 (local pyfuncs)",
    ),
    MetricSpec("student_latency_ms", False, "measure_speed: student milliseconds per sample (batch of 32)"),
    MetricSpec("teacher_latency_ms", False, "measure_speed: teacher milliseconds per sample (batch of 32)"),
    MetricSpec(
        "deviation_rate",
        False,
        "deviation: among rows where teacher and student agree, the fraction with a verified equivalent variant on "
        "which they disagree (DFLARE's search, `queries` paired queries per row)",
    ),
    MetricSpec(
        "deviation_queries_median", True, "deviation: median paired queries to the first deviation (found rows)"
    ),
    MetricSpec(
        "deviation_queries_per_deviation",
        True,
        "deviation: paired queries spent on all agreeing rows / deviations found (DFLARE's cost; found rows)",
    ),
    MetricSpec("deviation_rows_searched", True, "deviation: rows searched"),
    MetricSpec("deviation_rows_agreeing", True, "deviation: searched rows where teacher and student agree at start"),
    MetricSpec("deviation_rows_found", False, "deviation: rows with a verified deviation"),
    *(
        MetricSpec(
            f"deviation_rate_ci_{end}",
            False,
            f"{end} end of the 95% percentile-bootstrap interval of deviation_rate (resampling agreeing rows)",
        )
        for end in ("low", "high")
    ),
    *(
        MetricSpec(
            f"reference/{name}", better, f"deviation with a reference: {name} of the reference against the teacher"
        )
        for name, better in (
            ("deviation_rate", False),
            ("deviation_rate_ci_low", False),
            ("deviation_rate_ci_high", False),
            ("deviation_queries_median", True),
            ("deviation_queries_per_deviation", True),
            ("deviation_rows_searched", True),
            ("deviation_rows_agreeing", True),
            ("deviation_rows_found", False),
        )
    ),
    MetricSpec(
        "excess/deviation_rate",
        False,
        "deviation with a reference: deviation_rate(student) − deviation_rate(reference), same teacher, rows, search "
        "and budget (evaluation/deviation_reference.py)",
    ),
    *(
        MetricSpec(
            f"excess/deviation_rate_ci_{end}",
            False,
            f"{end} end of the 95% paired percentile-bootstrap interval of excess/deviation_rate (resampling searched "
            "rows)",
        )
        for end in ("low", "high")
    ),
]


def _interval_specs(specs: list[MetricSpec]) -> list[MetricSpec]:
    """``<m>_ci_low`` / ``<m>_ci_high`` for every metric with a bootstrap interval
    (:mod:`mlflow_metacompress.statistics`), with the direction of ``<m>``."""
    from .statistics import interval_metrics

    by_name = {s.name: s for s in specs}
    out = []
    for name in interval_metrics():
        for end in ("low", "high"):
            out.append(
                MetricSpec(
                    f"{name}_ci_{end}",
                    by_name[name].greater_is_better,
                    f"{end} end of the 95% percentile-bootstrap interval of {name} (resampling "
                    "original samples, bootstrap_samples replicates)",
                )
            )
    return out


def _family_specs(specs: list[MetricSpec]) -> list[MetricSpec]:
    """The reference model's families (:mod:`.families`: ``reference/<m>``, ``excess/<m>``,
    ``increment/<m>``, …) of every relation metric, with ``<m>``'s direction, and the interval
    ends of those with an interval."""
    from .families import FAMILIES, paired_metric_names

    by_name = {s.name: s for s in specs}
    out = []
    for prefix, (definition, interval) in FAMILIES.items():
        for name in paired_metric_names():
            better = by_name[name].greater_is_better
            out.append(MetricSpec(f"{prefix}{name}", better, definition.format(m=name)))
            if interval:
                out += [
                    MetricSpec(
                        f"{prefix}{name}_ci_{end}",
                        better,
                        f"{end} end of the 95% paired percentile-bootstrap interval of {prefix}{name} (the same "
                        "resamples of original samples as the other intervals)",
                    )
                    for end in ("low", "high")
                ]
    return out


def catalogue() -> dict[str, MetricSpec]:
    """Every metric by name: the registered relations' (:mod:`.relations`, MR1–MR4 and any
    added), the others, and the interval ends. Built per call, so a relation registered
    later is in it."""
    from .relations import registered_relations

    specs = [MetricSpec(m.name, m.greater_is_better, m.definition) for r in registered_relations() for m in r.metrics]
    specs += _OTHER_SPECS
    specs += _interval_specs(specs) + _family_specs(specs)
    return {s.name: s for s in specs}


def __getattr__(name: str) -> Any:
    if name == "CATALOGUE":  # computed per access (see catalogue())
        return catalogue()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def base_name(key: str, prefix: str = "") -> str:
    """Strip the metric prefix, a ``/variant`` suffix and an ``attack_<a>/<model>_`` head; a
    family prefix stays (``excess/mr1_violation_rate/metamorphic`` → ``excess/mr1_violation_rate``)."""
    if prefix and key.startswith(prefix):
        key = key[len(prefix) :]
    from .families import split_family

    family, rest = split_family(key)
    if family:
        return family + rest.split("/", 1)[0]
    if key.startswith("attack_") and "/" in key:
        key = key.split("/", 1)[1]
        for model in ("teacher_", "student_"):
            if key.startswith(model) and key[len(model) :] in catalogue():
                return key[len(model) :]
        return key
    return key.split("/", 1)[0]


def greater_is_better(key: str, prefix: str = "") -> bool:
    """Direction of a logged metric key; ``KeyError`` for a metric this tool never logs."""
    name = base_name(key, prefix)
    specs = catalogue()
    if name not in specs:
        raise KeyError(f"unknown metric {key!r}: not in the metacompress catalogue ({sorted(specs)})")
    return specs[name].greater_is_better
