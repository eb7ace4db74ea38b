"""Issue 44's page, ``reproduction/repair/bigclonebench.{json,md}``: ``repair`` against
Compressor over paired seeds (:mod:`.repair_study`), judged on rewrites ``repair`` never
trained on, with the retrained teacher beside them. The statistics are computed from the
JSON alone (:func:`repair_verdicts`), so the page is recomputed when the store is gone.

Targets (issue 44): the deviation rate and the unseen-rewrite violation rate at most 0.5×
Compressor's, accuracy within 1 point by TOST on the total error (rows and seeds), and at
least 5× Compressor's paired queries per deviation. A ratio is the geometric mean over
seeds of repair / Compressor with a Student-t interval on the log ratios; a target is
**met** when the whole interval is on its side, **met by the point estimate only** when
the mean is, and otherwise **missed**, by the factor the page gives.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .replica import tost_total
from .resume import StageResult

if TYPE_CHECKING:
    from .repair_plan import RepairPlan

FIGURES = {  # figure -> (metric, target ratio, "at most" or "at least")
    "deviation_rate": ("deviation_rate", 0.5, "at most"),
    "unseen_violation_rate": ("any_violation_rate/metamorphic", 0.5, "at most"),
    "queries_per_deviation": ("deviation_queries_per_deviation", 5.0, "at least"),
}
SEEN = "any_violation_rate/metamorphic_seen"
ACCURACY_MARGIN = 0.01  # ±1 point


def ratio(repair: list[float], compressor: list[float], target: float, side: str) -> dict[str, Any]:
    """Geometric-mean ratio over paired seeds with a 95% t interval, and the target's verdict."""
    from scipy import stats

    logs = [math.log(r / c) for r, c in zip(repair, compressor, strict=True) if r > 0 and c > 0]
    out: dict[str, Any] = {"seeds": len(logs), "target": target, "side": side}
    if not logs:
        return {**out, "ratio": math.nan, "low": math.nan, "high": math.nan, "verdict": "not established"}
    mean = float(np.mean(logs))
    half = (
        float(stats.t.ppf(0.975, len(logs) - 1) * np.std(logs, ddof=1) / math.sqrt(len(logs)))
        if len(logs) > 1
        else math.nan
    )
    low, high = math.exp(mean - half), math.exp(mean + half)
    point = math.exp(mean)
    inside = (lambda x: x <= target) if side == "at most" else (lambda x: x >= target)
    edge = high if side == "at most" else low
    if math.isfinite(edge) and inside(edge):
        verdict = "met"
    elif inside(point):
        verdict = "met by the point estimate only"
    else:
        verdict = (
            f"missed: {point / target:.2f}× the target" if side == "at most" else f"missed: {target / point:.2f}× short"
        )
    return {**out, "ratio": point, "low": low, "high": high, "verdict": verdict}


def repair_verdicts(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every figure's ratio and verdict, the accuracy TOST and the seen rewrites apart."""
    seeds = [s for s, pair in sorted(record.get("seeds", {}).items()) if {"compressor", "repair"} <= set(pair)]
    pairs = [record["seeds"][s] for s in seeds]
    out: dict[str, Any] = {"seeds": seeds}
    for name, (metric, target, side) in FIGURES.items():
        rep = [p["repair"]["metrics"].get(metric, math.nan) for p in pairs]
        com = [p["compressor"]["metrics"].get(metric, math.nan) for p in pairs]
        out[name] = {
            **ratio(rep, com, target, side),
            "repair_mean": float(np.nanmean(rep)) if rep else math.nan,
            "compressor_mean": float(np.nanmean(com)) if com else math.nan,
            "reference": record.get("reference", {}).get(metric),
        }
    if pairs:
        from .triad_rows import decode

        gaps = np.array([decode(p["compressor"]["correct"]) - decode(p["repair"]["correct"]) for p in pairs])
        tost: dict[str, Any] = dict(tost_total(gaps, ACCURACY_MARGIN))
        tost["verdict"] = "within 1 point" if tost["p"] < 0.05 else "not established"
        out["accuracy"] = tost
        out["seen"] = {
            m: float(np.nanmean([p[m]["metrics"].get(SEEN, math.nan) for p in pairs])) for m in ("compressor", "repair")
        }
    return out


def collect_repair(plan: RepairPlan, teacher: StageResult, reference: StageResult | None) -> dict[str, Any]:
    """The page's record from the finished stages."""
    from mlflow import MlflowClient

    from .repair_plan import METHODS, fair_args, trained_of
    from .resume import lookup
    from .rows import read_per_sample
    from .stages import student_args
    from .triad_plan import as_student
    from .triad_rows import encode, row_data

    client = MlflowClient()
    record: dict[str, Any] = {"seeds": {}, "trained_transforms": None}
    for seed in plan.seeds:
        students = {m: lookup(f"student-{m}-seed{seed}", student_args(plan.cfg(m), teacher, m, seed)) for m in METHODS}
        if students["repair"] is None:
            continue
        trained = trained_of(students["repair"])
        record["trained_transforms"] = trained
        pair = {}
        for method, student in students.items():
            judged = (
                None if student is None else lookup(f"repair-judge-{method}-{seed}", fair_args(plan, student, trained))
            )
            if judged is not None:
                original = row_data(read_per_sample(judged.run_id)).original
                pair[method] = {
                    "metrics": dict(client.get_run(judged.run_id).data.metrics),
                    "correct": encode(original["correct"]),
                }
        record["seeds"][str(seed)] = pair
    if reference is not None and record["trained_transforms"] is not None:
        judged = lookup("repair-judge-reference", fair_args(plan, as_student(reference), record["trained_transforms"]))
        if judged is not None:
            record["reference"] = dict(client.get_run(judged.run_id).data.metrics)
    return record


def write_repair_page(
    plan: RepairPlan, teacher: StageResult, reference: StageResult | None, output: str | Path
) -> dict[str, Any]:
    """Collect, judge and write ``<output>/bigclonebench.{json,md}``; returns the record."""
    from .triad_page import _clean

    record = collect_repair(plan, teacher, reference)
    record["plan"] = {"seeds": list(plan.seeds), "options": dict(plan.options), "queries": plan.queries,
                      "deviation_rows": plan.deviation_rows, "reference_seed": plan.reference_seed}  # fmt: skip
    record["verdicts"] = repair_verdicts(record)
    folder = Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bigclonebench.json").write_text(json.dumps(_clean(record), indent=1, sort_keys=True) + "\n")
    (folder / "bigclonebench.md").write_text(render_repair(record))
    return record


def _num(x: Any, fmt: str = "{:.3f}") -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def render_repair(record: Mapping[str, Any]) -> str:
    """The page's Markdown from its record."""
    v = record["verdicts"]
    lines = [
        "# Repair against Compressor (issue 44): BigCloneBench",
        "",
        f"Paired seeds: {', '.join(v['seeds']) or 'none finished yet'}. Rewrites `repair` trained on (held apart): "
        f"{', '.join(record.get('trained_transforms') or []) or '–'}. Every figure is on the rewrites it never saw.",
        "",
    ]
    if not v["seeds"]:
        return "\n".join([*lines, "Not run yet.", ""])
    lines += [
        "| figure | Compressor | repair | retrained teacher | ratio (repair / Compressor) | 95% interval | target "
        "| verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in ((n, v[n]) for n in FIGURES):
        lines.append(
            f"| {name.replace('_', ' ')} | {_num(r['compressor_mean'])} | {_num(r['repair_mean'])} | "
            f"{_num(r['reference'])} | "
            f"{_num(r['ratio'], '{:.2f}×')} | [{_num(r['low'], '{:.2f}')}, {_num(r['high'], '{:.2f}')}] | "
            f"{r['side']} {r['target']:g}× | {r['verdict']} |"
        )
    a = v["accuracy"]
    lines += [
        "",
        f"**Accuracy** (Compressor − repair, TOST at ±1 point on the total error over {len(v['seeds'])} seeds): "
        f"{_num(100 * a['mean'], '{:+.2f}')} points, 90% interval [{_num(100 * a['low'], '{:+.2f}')}, "
        f"{_num(100 * a['high'], '{:+.2f}')}], p = {_num(a['p'])}: {a['verdict']}.",
        "",
        "**Seen rewrites, apart** (`any_violation_rate/metamorphic_seen`): "
        f"Compressor {_num(v['seen']['compressor'])}, repair {_num(v['seen']['repair'])}.",
        "",
    ]
    return "\n".join(lines)
