"""Statistics over seeds for ``compare_methods.py --seeds N`` / ``--aggregate``: the mean
and Student-t interval per method and metric, each seed's within-run bootstrap interval, and
paired t-tests of the ``fidelity`` method against the others (same seed, same data)."""

from __future__ import annotations

import math
from typing import Any

from mlflow_metacompress.study.seeds import t_interval  # noqa: F401 - the one definition, re-exported

SEED_METRICS = [
    "student_accuracy",
    "accuracy_drop",
    "mr1_violation_rate",
    "mr1_violation_rate/metamorphic",
    "any_violation_rate",
    "any_violation_rate/metamorphic",
    "mr4_eca",
    "size_mb",
]
PAIRED = ["student_accuracy", "any_violation_rate/metamorphic", "mr1_violation_rate/metamorphic"]


def seed_summary(runs: dict[int, tuple[dict[str, dict[str, float]], dict[str, float], str]]) -> dict[str, Any]:
    """Per method and metric: the values per seed, their mean and t-interval, and each
    seed's within-run bootstrap interval; paired t-tests of fidelity against the others."""
    from scipy import stats

    from mlflow_metacompress.statistics import interval_key

    methods = list(next(iter(runs.values()))[0])
    out: dict[str, Any] = {"methods": {}, "paired": {}}
    for method in methods:
        per = {}
        for metric in SEED_METRICS:
            values = [runs[s][0].get(method, {}).get(metric, math.nan) for s in runs]
            mean, low, high = t_interval(values)
            within = [
                [runs[s][0].get(method, {}).get(interval_key(metric, end), math.nan) for end in ("low", "high")]
                for s in runs
            ]
            per[metric] = {"values": values, "mean": mean, "t_low": low, "t_high": high, "within_run": within}
        out["methods"][method] = per
    if "fidelity" in methods:
        for other in (m for m in methods if m != "fidelity"):
            for metric in PAIRED:
                a = [runs[s][0]["fidelity"].get(metric, math.nan) for s in runs]
                b = [runs[s][0][other].get(metric, math.nan) for s in runs]
                ok = [(x, y) for x, y in zip(a, b, strict=True) if not (math.isnan(x) or math.isnan(y))]
                diff = [x - y for x, y in ok]
                p = float(stats.ttest_rel([x for x, _ in ok], [y for _, y in ok]).pvalue) if len(ok) >= 2 else math.nan
                mean, low, high = t_interval(diff)
                out["paired"][f"fidelity-{other}/{metric}"] = {
                    "mean_difference": mean,
                    "t_low": low,
                    "t_high": high,
                    "pvalue": p,
                    "significant": bool(p < 0.05) if not math.isnan(p) else False,
                }
    return out


def seed_table(summary: dict[str, Any]) -> str:
    """Markdown: ``mean [t-interval]`` per method and metric, then the within-run intervals."""
    head = "| method | " + " | ".join(SEED_METRICS) + " |"
    lines = [head, "|---" * (len(SEED_METRICS) + 1) + "|"]
    for method, per in summary["methods"].items():
        cells = [f"{per[m]['mean']:.4f} [{per[m]['t_low']:.4f}, {per[m]['t_high']:.4f}]" for m in SEED_METRICS]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += ["", "within-run 95% bootstrap intervals per seed:", head, lines[1]]
    for method, per in summary["methods"].items():
        cells = [
            "; ".join("–" if math.isnan(lo) else f"[{lo:.3f}, {hi:.3f}]" for lo, hi in per[m]["within_run"])
            for m in SEED_METRICS
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    if summary["paired"]:
        lines += [
            "",
            "| paired difference (same seed) | mean [95% t-interval] | p | significant |",
            "|---|---|---|---|",
        ]
        for key, d in summary["paired"].items():
            lines.append(
                f"| {key} | {d['mean_difference']:+.4f} [{d['t_low']:+.4f}, {d['t_high']:+.4f}] | "
                f"{d['pvalue']:.3g} | {'yes' if d['significant'] else 'no'} |"
            )
    return "\n".join(lines)
