"""The reproduction's page: ``<task>.md``, rendered from the report that
:func:`.repro_table.write_reproduction` builds (teacher, the paper's headline figures of
MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476, beside ours, per-method table, per-seed
bootstrap intervals, the item-5 test of ``fidelity``, hand-written conclusions)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MR_METRICS", "render_markdown"]

# the metamorphic relations' columns, MR1–MR3 on the transformed inputs (shared with the table)
MR_METRICS = ("mr1_violation_rate/metamorphic", "mr2_violation_rate/metamorphic", "mr3_violation_rate/metamorphic")


def _pct(x: float | None) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _p(p: float) -> str:
    """A bootstrap p-value: 0 means below one resample in 2,000."""
    return "< 0.0005" if p == 0 else f"{p:.3g}"


def _ci(r: dict[str, Any]) -> str:
    if math.isnan(r["mean"]):
        return "–"
    if math.isnan(r["t_low"]):
        return f"{_pct(r['mean'])} (1 seed)"
    return f"{_pct(r['mean'])} [{_pct(r['t_low'])}, {_pct(r['t_high'])}]"


def render_markdown(report: dict[str, Any]) -> str:
    """The ``<task>.md`` page: teacher, headline table, per-method table, item-5 test."""
    t, s = report["teacher"], report["summary"]
    unit = "pairs" if report["dataset"] == "bigclonebench" else "functions"
    lines = [
        f"# MetaCompress reproduction on {report['dataset']} (CPU scale)",
        "",
        f"Teacher: scratch {t.get('arch', '')}, {t.get('teacher_size_mb', math.nan):.1f} MB, trained on "
        f"{int(t.get('teacher_train_rows', 0))} labelled {unit} in {t.get('teacher_train_seconds', math.nan) / 60:.1f} "
        f"min ({report['config']['threads']} thread(s)): test accuracy {t.get('teacher_test_acc', math.nan):.3f}, F1 "
        f"{t.get('teacher_test_f1', math.nan):.3f}, {_pct(t.get('teacher_conf80_share'))} of "
        f"{int(t.get('teacher_test_rows', 0))} test rows at confidence ≥ 0.8.",
        "",
        f"Students: {', '.join(report['config']['methods'])} at {report['config']['size_mb']} MB; seeds "
        f"{', '.join(map(str, s['seeds']))}; {report['config']['eval_rows']} test {unit}, every transformation, "
        f"attacks {', '.join(report['config']['attacks'])} (budget {report['config']['attack_budget']} queries). "
        "Intervals: 95% Student-t over seeds; within-run 95% bootstrap intervals per seed in the JSON.",
        "",
        "| phenomenon | paper (CodeBERT → 3 MB) | ours: worst method, mean [95% t-interval] | seeds | appears? |",
        "|---|---|---|---|---|",
    ]
    for row in report["headline"]:
        kind = "under" if row["metric"] == "accuracy_drop" else "up to"
        if row["ours"] is None:
            lines.append(f"| {row['phenomenon']} | {kind} {_pct(row['paper'])} | not measured | 0 | – |")
            continue
        verdict = {True: "yes", False: "no", None: "–"}[row["appears"]]
        if row.get("evidence") and row["evidence"] != row["method"]:
            e = report["summary"]["methods"][row["evidence"]][row["metric"]]
            verdict += f" ({row['evidence']}: {_ci(e)})"
        lines.append(
            f"| {row['phenomenon']} | {kind} {_pct(row['paper'])} | {row['method']}: "
            f"{_ci({'mean': row['ours'], 't_low': row['t_low'], 't_high': row['t_high']})} | "
            f"{row['seeds']} | {verdict} |"
        )
    cols = [
        "student_accuracy",
        "accuracy_drop",
        *MR_METRICS,
        "any_violation_rate/metamorphic",
        "attack_excess_drop_pct",
        "codebert/mr1_violation_rate",
        "size_mb",
    ]
    lines += [
        "",
        "Per method (mean [95% t-interval over seeds]; excess drop as a fraction of the teacher's drop, "
        "the larger of the attacks; `codebert/…`: against the real CodeBERT's hard labels on held-out pairs):",
        "",
        "| method | " + " | ".join(cols) + " |",
        "|---" * (len(cols) + 1) + "|",
    ]
    for method, rows in s["methods"].items():
        cells = [
            f"{rows[c]['mean']:.2f}" if c == "size_mb" and not math.isnan(rows[c]["mean"]) else _ci(rows[c])
            for c in cols
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "`quantize` is a control: not distilled, and its seeds judge one and the same int8 model, so it "
        "is left out of the phenomena. “appears?”: yes when some method's violation (or excess drop) is at "
        "least 5% and the lower "
        "end of its t-interval is above zero (with one seed: its mean), named in brackets when it is not "
        "the worst method; for the accuracy gap, yes when every method's mean gap is under the paper's 3%.",
        "",
        "Within-run 95% bootstrap intervals per seed (`any_violation_rate/metamorphic`, "
        "`mr1_violation_rate/metamorphic`):",
        "",
        "| method | seed | any (metamorphic) | MR1 (metamorphic) |",
        "|---|---|---|---|",
    ]
    for method, rows in s["methods"].items():
        for i, seed in enumerate(s["seeds"]):
            cells = []
            for metric in ("any_violation_rate/metamorphic", "mr1_violation_rate/metamorphic"):
                v, (lo, hi) = rows[metric]["values"][i], rows[metric]["within_run"][i]
                cells.append("–" if v is None or math.isnan(v) else f"{_pct(v)} [{_pct(lo)}, {_pct(hi)}]")
            if any(c != "–" for c in cells):
                lines.append(f"| {method} | {seed} | {cells[0]} | {cells[1]} |")
    f = s["fidelity"]
    if f.get("available"):
        v, a = f["violations"], f["accuracy"]
        lines += [
            "",
            f"`fidelity` ({f['size_mb']['fidelity']:.2f} MB) against the best baseline "
            f"{'at equal size' if f.get('equal_size') else '(none at equal size)'} ({f['best_baseline']}, "
            f"{f['size_mb'][f['best_baseline']]:.2f} MB"
            + "".join(f"; {m} at {mb:.2f} MB left out" for m, mb in f.get("other_size", {}).items())
            + "), "
            f"`{f['metric']}` over the {f['paired_seeds']} seed(s) both finished: {f['fidelity_mean']:.3f} vs "
            f"{f['baseline_mean']:.3f} (ratio {f['ratio']:.2f}; "
            f"paired difference {v['mean_difference']:+.3f}, 95% t [{v['t_low']:+.3f}, {v['t_high']:+.3f}], "
            f"p = {v['pvalue']:.3g}, {v['n']} seeds). Accuracy difference {a['mean_difference']:+.3f} "
            f"(p = {a['pvalue']:.3g}). Goal (halve it, accuracy within 1 point): "
            f"{'met' if f['halved'] and f['accuracy_within_1pt'] else 'not met'}.",
        ]
        for seed, bs in f.get("per_seed_bootstrap", {}).items():
            if bs.get("n_rows"):
                lines.append(
                    f"- seed {seed}, paired bootstrap over {bs['n_rows']} test rows ({bs['n_pairs']} "
                    f"transformed inputs both judged): fidelity {bs['a']:.3f} vs {bs['b']:.3f}, difference "
                    f"{bs['mean_difference']:+.3f} [{bs['low']:+.3f}, {bs['high']:+.3f}], p = {_p(bs['pvalue'])} "
                    "(pooled over the transformed inputs both evaluations kept, so it differs slightly from "
                    "the logged rates)"
                )
    if report.get("conclusions"):
        lines += ["", "## Conclusions", "", *report["conclusions"]]
    return "\n".join(lines) + "\n"
