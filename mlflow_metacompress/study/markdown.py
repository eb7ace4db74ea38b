"""The reproduction's page: ``<task>.md``, rendered from the report that
:func:`.table.write_reproduction` builds (teacher, the paper's headline figures of
MetaCompress, Awal, Rochan, Roy, arXiv 2511.05476, beside ours, per-method verdicts and
table, per-seed bootstrap intervals, the item-5 test of ``fidelity``, hand-written
conclusions).

Verdict rules (fixed before the data are read again; statistics in :mod:`.verdicts`,
applied in :mod:`.judge`; α = 0.05, B = 2,000 bootstrap resamples):

1. **Intervals of rates** never leave [0, 1]: a 95% Student-t interval over seeds on the
   logit scale; when a seed's rate is 0 or 1, the exact Clopper–Pearson interval on the
   counts pooled over seeds, widened with two or more seeds to cover the t-interval of the
   empirical logits (k + ½)/(n + 1); no interval when neither is possible.
2. **Total uncertainty:** beside the seed interval, a two-level bootstrap (seeds, then test
   rows, the same rows for every seed) from the stored per-row counts; where a study
   stored only each seed's value and within-run 95% interval, the row level is a normal
   draw with the standard error that interval implies (clipped to the metric's range).
3. **MR1–MR3 appear for a method** when the two-level bootstrap's one-sided p-value of
   "rate ≤ 5%" is below α after Holm's adjustment over the distilled methods.
4. **Excess drop under attack:** one statistic per method, the log of the ratio of the
   student's to the teacher's flipped rows pooled over the attacks (with ½ added to
   each), averaged over seeds; shown as ``exp − 1`` (so never below −100%), with its
   seed t-interval and a two-level bootstrap (seeds, then each flip count redrawn as a
   binomial of the attacked rows). It appears when the bootstrap's two-sided p-value,
   Holm-adjusted over the distilled methods, is below α and the excess is above zero:
   **established**; **refuted** when the interval's upper end is below the paper's 285%;
   else **not settled**. No maximum over attacks or methods.
5. **The control** ``quantize`` is judged by the same rules, unadjusted, and its verdict is shown.
6. **Equivalence** ("within 3 points", "within 1 point") only from TOST at ±3 points (the
   paper's premise: TOST over seeds and the two-level 90% interval inside ±3) or ±1 point
   (``fidelity``'s accuracy against the baseline); "lower than the baseline" only from a
   significant paired test. Otherwise: "not established".
7. **Reporting:** bootstrap p-values are floored at 1/(B + 1) with B named; accuracy gaps
   in points (teacher − student); the teacher's own disagreement with CodeBERT ("not
   recorded" where a study did not store it); rates as fractions, ``*_pct`` in percent.
"""

from __future__ import annotations

import math
from typing import Any

from .md_format import cell, num, pct, pv, signed, yes_no

__all__ = ["MR_METRICS", "render_markdown"]

# the metamorphic relations' columns, MR1–MR3 on the transformed inputs (shared with the table)
MR_METRICS = ("mr1_violation_rate/metamorphic", "mr2_violation_rate/metamorphic", "mr3_violation_rate/metamorphic")


def _training(c: dict[str, Any], unit: str) -> str:
    """ ", 3000 steps of 32 pairs on every CodeBERT-labelled pair" (empty for an older JSON)."""
    if "student_steps" not in c:
        return ""
    rows = c.get("distill_rows")
    on = f"{int(rows):,} distillation {unit}" if rows else f"every CodeBERT-labelled {unit[:-1]}"
    text = f", {c['student_steps']} steps of {c.get('student_batch_size', '?')} {unit} on {on}"
    if c.get("student_lr") is not None:
        text += f" at lr {c['student_lr']:g} for every method"
    if c.get("student_grad_clip") is not None:
        text += f", gradient norm clipped at {c['student_grad_clip']:g}"
    return text


def _attacks(c: dict[str, Any], unit: str) -> str:
    if not c.get("attacks"):
        return "no attacks"
    return (
        f"attacks {', '.join(c['attacks'])} on {c.get('attack_rows', c['eval_rows'])} test {unit} "
        f"(budget {c['attack_budget']} queries)"
    )


def render_markdown(report: dict[str, Any]) -> str:
    """The ``<task>.md`` page: teacher, headline table, verdicts, per-method table, item-5 test."""
    t, s, c = report["teacher"], report["summary"], report["config"]
    unit = "pairs" if report["dataset"] == "bigclonebench" else "functions"
    rules = s.get("rules", {})
    b = rules.get("resamples")
    cb = t.get("codebert_disagreement")
    lines = [
        f"# MetaCompress reproduction on {report['dataset']} (CPU scale)",
        "",
        f"Teacher: scratch {t.get('arch', '')}, {t.get('teacher_size_mb') or math.nan:.1f} MB, trained on "
        f"{int(t.get('teacher_train_rows') or 0)} labelled {unit} in "
        f"{(t.get('teacher_train_seconds') or math.nan) / 60:.1f} min ({t.get('train_threads', c['threads'])} thread(s)"
        f"{', ' + str(t['train_precision']) if t.get('train_precision') else ''}): test accuracy "
        f"{t.get('teacher_test_acc') or math.nan:.3f}, F1 {t.get('teacher_test_f1') or math.nan:.3f}, "
        f"{pct(t.get('teacher_conf80_share'))} of {int(t.get('teacher_test_rows') or 0)} test rows at "
        f"confidence ≥ 0.8. Its own disagreement with CodeBERT's labels: "
        f"{pct(cb) if num(cb) else 'not recorded (this run did not store it)'}.",
        "",
        f"Students: {', '.join(c['methods'])} at {c['size_mb']} MB{_training(c, unit)}; "
        f"seeds {', '.join(map(str, s['seeds']))}; "
        f"{c['eval_rows']} test {unit} judged for MR1–MR3 with every transformation; {_attacks(c, unit)}. "
        "Rules: the docstring of `mlflow_metacompress/study/markdown.py` "
        f"and docs/benchmarks.md (α = {rules.get('alpha', 0.05)}, B = {b} bootstrap resamples).",
        "",
        "| phenomenon | paper (CodeBERT → 3 MB) | ours: largest (method), estimate [95% two-level bootstrap] "
        "| appears for (Holm-adjusted) | control `quantize` |",
        "|---|---|---|---|---|",
    ]
    lines += _headline_rows(report["headline"])
    lines += _verdict_table(s, b)
    cols = [
        "student_accuracy",
        "accuracy_drop",
        *MR_METRICS,
        "any_violation_rate/metamorphic",
        "codebert/mr1_violation_rate",
        "size_mb",
    ]
    lines += [
        "",
        "Per method: mean [95% interval over seeds: logit-scale t for rates, Clopper–Pearson on pooled counts "
        "with one seed or when a seed's rate is 0 or 1 (with more seeds, widened to the empirical-logit t), "
        "Student-t for the accuracy gap, in points]; `codebert/…`: "
        "against the real CodeBERT's hard labels on held-out pairs:",
        "",
        "| method | " + " | ".join(cols) + " |",
        "|---" * (len(cols) + 1) + "|",
    ]
    for method, rows in s["methods"].items():
        cells = [cell(k, rows[k]) for k in cols]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Per seed: value [within-run 95% bootstrap interval over the judged rows] (the two-level "
        "intervals above combine these with the spread over seeds):",
        "",
        "| method | seed | any (metamorphic) | MR1 | MR2 | MR3 | accuracy gap (teacher − student) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += _per_seed_rows(s)
    lines += _fidelity(s.get("fidelity", {}))
    if report.get("conclusions"):
        lines += ["", "## Conclusions", "", *report["conclusions"]]
    return "\n".join(lines) + "\n"


def _headline_rows(headline: list[dict[str, Any]]) -> list[str]:
    """The headline table's rows: each phenomenon, the paper's value, ours with its interval,
    the methods it appears for and the ``quantize`` control."""
    lines: list[str] = []
    for row in headline:
        gap = row["key"] == "accuracy_within_3pt"
        kind = "under" if gap else "up to"
        said = ("within 3 points", "not established") if gap else ("appears", "does not appear")
        ctl = ", ".join(f"{m}: {said[0] if v else said[1]}" for m, v in row.get("control", {}).items())
        if row["ours"] is None:
            lines.append(f"| {row['phenomenon']} | {kind} {pct(row['paper'])} | not measured | – | {ctl or '–'} |")
            continue
        if gap:
            est = (
                f"smallest gap ({row['method']}): {100 * row['ours']:+.1f} points "
                f"[{100 * row['low']:+.1f}, {100 * row['high']:+.1f}] (90%)"
            )
            shown = ", ".join(row["methods"]) if row["methods"] else "none (not established)"
        else:
            est = f"{row['method']}: {pct(row['ours'])} [{pct(row['low'])}, {pct(row['high'])}]"
            shown = ", ".join(row["methods"]) if row["methods"] else "none"
        lines.append(f"| {row['phenomenon']} | {kind} {pct(row['paper'])} | {est} | {shown} | {ctl or '–'} |")
    return lines


def _per_seed_rows(s: dict[str, Any]) -> list[str]:
    """The per-seed table's rows: each rate with its within-run bootstrap interval, the accuracy gap in points."""
    lines: list[str] = []
    per_seed = ("any_violation_rate/metamorphic", *MR_METRICS, "accuracy_drop")
    for method, rows in s["methods"].items():
        for i, seed in enumerate(s["seeds"]):
            cells = []
            for metric in per_seed:
                v, (lo, hi) = rows[metric]["values"][i], rows[metric]["within_run"][i]
                if not num(v):
                    cells.append("–")
                elif metric == "accuracy_drop":  # a difference, in points
                    ends = f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if num(lo) and num(hi) else ""
                    cells.append(f"{100 * v:+.1f} points{ends}")
                else:
                    cells.append(f"{pct(v)} [{pct(lo)}, {pct(hi)}]")
            if any(x != "–" for x in cells):
                lines.append(f"| {method} | {seed} | " + " | ".join(cells) + " |")
    return lines


def _verdict_table(s: dict[str, Any], b: int | None) -> list[str]:
    """Per method: each phenomenon's verdict with the numbers that decide it."""
    v = s.get("verdicts", {})
    lines = [
        "",
        "Verdicts per method (MR: rate [95% two-level bootstrap], Holm-adjusted p of “rate ≤ 5%”; gap: teacher − "
        "student in points [90% two-level bootstrap], TOST p at ±3 points; excess drop: pooled over the attacks, "
        "exp(mean log ratio) − 1, per seed, [95% t over seeds], [95% two-level bootstrap], Holm-adjusted p):",
        "",
        "| method | MR1 | MR2 | MR3 | accuracy within 3 points | excess drop under attack |",
        "|---|---|---|---|---|---|",
    ]
    for method, m in v.items():
        cells = []
        for k in ("mr1_violations", "mr2_violations", "mr3_violations"):
            r = m.get(k)
            cells.append(
                "–"
                if not r
                else f"{yes_no(r['appears'])}: {pct(r['mean'])} [{pct(r['boot_low'])}, {pct(r['boot_high'])}], "
                f"p {pv(r['pvalue_holm'], b)}"
            )
        g = m.get("accuracy_within_3pt")
        cells.append(
            "–"
            if not g
            else f"{'yes' if g['appears'] else 'not established'}: {g['gap_points']:+.1f} "
            f"[{g['boot90_points'][0]:+.1f}, {g['boot90_points'][1]:+.1f}], TOST p {pv(g['tost_p'])}"
        )
        e = m.get("excess_attack_drop")
        if e:
            seeds = ", ".join(f"{100 * x:+.0f}%" for x in e["per_seed"])
            t = f"[{pct(e['t_low'])}, {pct(e['t_high'])}]" if num(e.get("t_low")) else "[1 seed]"
            cells.append(
                f"{e['verdict']}: {100 * e['excess']:+.0f}% (seeds {seeds}) t {t}, two-level "
                f"[{pct(e['boot_low'])}, {pct(e['boot_high'])}], p {pv(e['pvalue_holm'], b)}; teacher's "
                f"flips {'/'.join(f'{x:.0f}' for x in e['teacher_flips'])} of {e['rows'][0]:.0f} attacked "
                f"(rows × attacks) per seed ({e['source']})"
            )
        else:
            cells.append("–")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def _fidelity(f: dict[str, Any]) -> list[str]:
    """Item 5: ``fidelity`` against the baseline at its size."""
    if not f.get("available"):
        return []
    v, a = f["violations"], f["accuracy"]
    lower = "lower (paired test)" if f.get("violations_lower") else "lower not established"
    within = "within 1 point (TOST)" if f.get("accuracy_within_1pt") else "within 1 point not established"
    lines = [
        "",
        f"`fidelity` ({f['size_mb']['fidelity']:.2f} MB) against the best baseline "
        f"{'at equal size' if f.get('equal_size') else '(none at equal size)'} ({f['best_baseline']}, "
        f"{f['size_mb'][f['best_baseline']]:.2f} MB"
        + "".join(f"; {m} at {mb:.2f} MB left out" for m, mb in f.get("other_size", {}).items())
        + "), "
        f"`{f['metric']}` over the {f['paired_seeds']} seed(s) both finished: {f['fidelity_mean']:.3f} vs "
        f"{f['baseline_mean']:.3f} (ratio {f['ratio']:.2f}; paired difference {signed(v['mean_difference'])}, 95% t "
        f"[{signed(v['t_low'])}, {signed(v['t_high'])}], p {pv(v['pvalue'])}, {v['n']} seeds: {lower}). Accuracy "
        f"difference {signed(a['mean_difference'], 100, 1)} points, 95% t [{signed(a['t_low'], 100, 1)}, "
        f"{signed(a['t_high'], 100, 1)}], TOST p at ±1 point {pv(a.get('tost_p'))}: {within}. Goal (halve it, "
        f"accuracy within 1 point): {'met' if f['halved'] and f['accuracy_within_1pt'] else 'not met'}"
        + ("." if f.get("enough_seeds") else f" ({f['paired_seeds']} seeds; the comparison asks for at least 5)."),
    ]
    for seed, bs in f.get("per_seed_bootstrap", {}).items():
        if bs.get("n_rows"):
            lines.append(
                f"- seed {seed}, paired bootstrap over {bs['n_rows']} test rows ({bs['n_pairs']} "
                f"transformed inputs both judged): fidelity {bs['a']:.3f} vs {bs['b']:.3f}, difference "
                f"{bs['mean_difference']:+.3f} [{bs['low']:+.3f}, {bs['high']:+.3f}], p "
                f"{pv(bs['pvalue'], bs.get('resamples'))} (pooled over the transformed inputs both evaluations kept, "
                "so it differs slightly from the logged rates)"
            )
    return lines
