"""The reproduction's verdicts: per method, whether each of the paper's phenomena appears
(``summary.methods.<method>.appears.<phenomenon>``), by the rules that
:mod:`.markdown` lists, with the statistics of :mod:`.verdicts`.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) reports MR1–MR3 violations of up to
36/31/62% at an accuracy gap under 3%, and up to 285% more accuracy lost under attack.
Each distilled method is judged on its own; Holm's adjustment runs over the distilled
methods per phenomenon, and the control ``quantize`` is judged by the same rule
(unadjusted, which can only make it appear more easily).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .markdown import MR_METRICS
from .seeds import finite
from .verdicts import boot_p, excess_drop, holm, tost, two_level_rows, two_level_within

CONTROLS = ("quantize", "onnx-int8")  # not distilled: its seeds judge one and the same model
RESAMPLES = 2000
ALPHA = 0.05
# a violation "appears" when its rate is above 5% with total uncertainty (the former rule's floor)
MR_FLOOR = 0.05
PREMISE_MARGIN = 0.03  # the paper's accuracy gap, in fractions (3 points)
PAPER_EXCESS = 2.85  # the paper's largest excess drop, as a fraction (285%)
PHENOMENA = {
    "mr1_violations": MR_METRICS[0],
    "mr2_violations": MR_METRICS[1],
    "mr3_violations": MR_METRICS[2],
}


def teacher_flips(ratios: list[float], rows: int) -> int | None:
    """The smallest teacher flip count ``t`` (1 ≤ t ≤ ``rows``) for which every method's
    stored ratio (student drop / teacher drop, same seed and attack, hence the same teacher
    count) times ``t`` is a whole number of student flips; None when none fits. Used only
    for studies that stored ratios, not counts; the smallest fit is the widest interval."""
    for t in range(1, rows + 1):
        if all(abs(r * t - round(r * t)) < 1e-9 * max(1.0, t) for r in ratios):
            return t
    return None


def attack_counts(
    results: dict[tuple[str, int], dict[str, Any]], methods: Any, seeds: Any, attacks: Any, rows: int
) -> tuple[dict[str, dict[str, np.ndarray]], str]:
    """Per method: the student's and teacher's flipped rows and the attacked rows (seeds ×
    attacks, seeds with every attack measured). Read from ``attack_<a>/student_flips``,
    ``teacher_flips`` and ``rows`` when the study stored them; otherwise reconstructed
    from the stored ``excess_drop_pct`` ratios with :func:`teacher_flips`. The second value
    says which."""
    stored = any(f"attack_{a}/teacher_flips" in m for m in results.values() for a in attacks)
    t_of: dict[tuple[int, str], int | None] = {}
    if not stored:
        for s in seeds:
            for a in attacks:
                ratios = finite([results.get((m, s), {}).get(f"attack_{a}/excess_drop_pct") for m in methods])
                t_of[(s, a)] = teacher_flips([1 + r / 100 for r in ratios], rows) if ratios else None
    out: dict[str, dict[str, np.ndarray]] = {}
    for method in methods:
        sf, tf, nf = [], [], []
        for s in seeds:
            r = results.get((method, s), {})
            if stored:
                row = [[r.get(f"attack_{a}/{k}") for a in attacks] for k in ("student_flips", "teacher_flips", "rows")]
            else:
                pct = [r.get(f"attack_{a}/excess_drop_pct") for a in attacks]
                t = [t_of.get((s, a)) for a in attacks]
                stu = [
                    None if p is None or ti is None else round((1 + p / 100) * ti) for p, ti in zip(pct, t, strict=True)
                ]
                row = [stu, t, [rows] * len(attacks)]
            if attacks and all(len(finite(x)) == len(attacks) for x in row):
                sf.append(row[0])
                tf.append(row[1])
                nf.append(row[2])
        if sf:
            out[method] = {k: np.asarray(v, dtype=float) for k, v in (("student", sf), ("teacher", tf), ("rows", nf))}
    return out, "stored counts" if stored else "reconstructed from the stored ratios"


def _rate_boot(summary: dict[str, Any], method: str, metric: str, seed: int) -> np.ndarray:
    """Two-level bootstrap statistics of ``metric``: from stored per-row counts when the
    summary has them, else from each seed's within-run interval."""
    rows = summary.get("row_counts", {}).get(method, {}).get(metric)
    if rows and rows.get("k"):
        return two_level_rows(np.asarray(rows["k"]), np.asarray(rows["n"]), RESAMPLES, seed)
    r = summary["methods"][method][metric]
    clip = (-1.0, 1.0) if metric == "accuracy_drop" else (0.0, 1.0)
    return two_level_within(r["values"], r["within_run"], RESAMPLES, seed, clip)


def judge(summary: dict[str, Any], counts: dict[str, dict[str, np.ndarray]], source: str) -> dict[str, Any]:
    """Apply the verdict rules to ``summary`` (from :func:`.table.summarise`) and the
    attack ``counts``; writes ``summary["methods"][m]["appears"]`` and returns the evidence
    per method (``summary["verdicts"]``)."""
    methods = list(summary["methods"])
    distilled = [m for m in methods if m not in CONTROLS]
    out: dict[str, dict[str, Any]] = {m: {} for m in methods}
    for name, metric in PHENOMENA.items():
        raw = {}
        for i, m in enumerate(methods):
            if not finite(summary["methods"][m][metric]["values"]):
                continue
            boot = _rate_boot(summary, m, metric, i)
            raw[m] = boot_p(boot, MR_FLOOR, "greater")
            out[m][name] = {
                "mean": summary["methods"][m][metric]["mean"],
                "boot_low": float(np.nanquantile(boot, 0.025)),
                "boot_high": float(np.nanquantile(boot, 0.975)),
                "pvalue": raw[m],
                "null": f"rate <= {MR_FLOOR}",
            }
        adjusted = holm({m: p for m, p in raw.items() if m in distilled})
        for m in raw:
            out[m][name]["pvalue_holm"] = adjusted.get(m, raw[m])
            out[m][name]["appears"] = bool(out[m][name]["pvalue_holm"] < ALPHA)
    for i, m in enumerate(methods):
        gap = summary["methods"][m].get("accuracy_drop")
        if gap and finite(gap["values"]):
            boot = _rate_boot(summary, m, "accuracy_drop", i)
            lo90, hi90 = (float(np.nanquantile(boot, q)) for q in (0.05, 0.95))
            p = tost(gap["values"], PREMISE_MARGIN)
            out[m]["accuracy_within_3pt"] = {
                "gap_points": 100 * gap["mean"],
                "abs_gap_points": 100 * abs(gap["mean"]),
                "boot90_points": [100 * lo90, 100 * hi90],
                "tost_p": p,
                "appears": bool(p < ALPHA and -PREMISE_MARGIN < lo90 and hi90 < PREMISE_MARGIN),
            }
    raw = {}
    for i, (m, c) in enumerate(counts.items()):
        e = excess_drop(c["student"], c["teacher"], c["rows"], RESAMPLES, seed=i)
        e["source"] = source
        raw[m] = e["pvalue"]
        out.setdefault(m, {})["excess_attack_drop"] = e
    adjusted = holm({m: p for m, p in raw.items() if m in distilled})
    for m in raw:
        e = out[m]["excess_attack_drop"]
        e["pvalue_holm"] = adjusted.get(m, raw[m])
        e["appears"] = bool(e["pvalue_holm"] < ALPHA and e["excess"] > 0)
        e["verdict"] = excess_verdict(e)
    for m in methods:
        summary["methods"][m]["appears"] = {k: v["appears"] for k, v in out[m].items()}
    summary["verdicts"] = out
    summary["rules"] = {"resamples": RESAMPLES, "alpha": ALPHA, "mr_floor": MR_FLOOR, "premise_margin": PREMISE_MARGIN}
    return out


def excess_verdict(e: dict[str, Any]) -> str:
    """``established`` (Holm-adjusted p < 0.05, excess above zero), ``refuted`` (the upper end
    of the total-uncertainty interval below the paper's 285%), both, or ``not settled``."""
    established = e["appears"]
    below_paper = e["boot_high"] < PAPER_EXCESS
    if established and below_paper:
        return "established, below the paper's 285%"
    if established:
        return "established"
    if below_paper:
        return "refuted (the paper's 285% is above the interval)"
    return "not settled"


def denominators(values: list[float], limit: int = 20000) -> int | None:
    """The smallest common denominator ≤ ``limit`` of the stored rates ``values`` (fractions
    k/n written as floats), for studies that stored rates without their counts."""
    x = [v for v in finite(values) if 0 < v < 1]
    if not x:
        return None
    d = 1
    for v in x:
        f = Fraction(v).limit_denominator(limit)
        if abs(float(f) - v) > 1e-12:
            return None
        d = d * f.denominator // math.gcd(d, f.denominator)
        if d > limit:
            return None
    return d
