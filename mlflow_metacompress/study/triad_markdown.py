"""The three-teacher study's Markdown page, rendered from its JSON record alone (rules:
:mod:`.replica`; verdicts: :mod:`.triad_verdicts`). Every table says what it holds; parts
that have not run read "not run yet"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .triad_rows import GROUPS, RowData

_TITLES = {"mr1": "MR1 (label flips)", "mr2": "MR2 (KL > 0.1)", "mr3": "MR3 (confident rows)"}


def _pct(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{100 * float(x):+.{digits}f}" if digits < 0 else f"{100 * float(x):.{digits}f}%"


def _pts(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{100 * float(x):+.1f}"


def _p(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{float(x):.3f}" if float(x) >= 0.001 else "<0.001"


def _interval(r: Mapping[str, Any]) -> str:
    return f"[{_pts(r.get('low'))}, {_pts(r.get('high'))}]"


def _teachers(record: Mapping[str, Any]) -> list[str]:
    lines = ["## Teachers", ""]
    if not record.get("teachers"):
        return lines + ["Not run yet.", ""]
    lines += ["| teacher seed | test accuracy | F1 | confident share | train minutes |", "|---|---|---|---|---|"]
    for seed, m in sorted(record["teachers"].items()):
        lines.append(
            f"| {seed} | {_pct(m.get('teacher_test_acc'))} | {m.get('teacher_test_f1', math.nan):.3f} | "
            f"{_pct(m.get('teacher_conf80_share'))} | {m.get('teacher_train_seconds', math.nan) / 60:.0f} |"
        )
    return lines + [""]


def _units(record: Mapping[str, Any]) -> list[str]:
    """Every judged model on the selection pairs, from its per-row strings: accuracy, its
    teacher's, the gap, and MR1 on the originals and on the rewrites (for ``fidelity``, the
    ones it never trained on). Descriptive: the verdicts above read the same rows."""
    lines = ["## Units", ""]
    if not record.get("rows"):
        return lines + ["Not run yet.", ""]
    lines += [
        "Each model judged against its teacher on the selection pairs (descriptive).",
        "",
        "| teacher | model | accuracy | teacher's | gap (pts) | MR1 original | MR1 transformed |",
        "|---|---|---|---|---|---|---|",
    ]
    for teacher, units in sorted(record["rows"].items()):
        for key, unit in sorted(units.items(), key=lambda kv: (kv[0].startswith("replica:"), kv[0])):
            kind, _, seed = key.partition(":")
            name = f"teacher {seed} (replica)" if kind == "replica" else f"{kind} seed {seed}"
            data = RowData.from_json(unit)
            acc, teacher_acc = (float(np.mean(data.original[k])) for k in ("correct", "teacher_correct"))
            groups = ("unseen",) if kind == "fidelity" else GROUPS  # rule 6, as the verdicts read it
            lines.append(
                f"| {teacher} | {name} | {_pct(acc)} | {_pct(teacher_acc)} | {_pts(teacher_acc - acc)} | "
                f"{_pct(data.rate('mr1', 'original'))} | {_pct(data.rate('mr1', 'transformed', groups))} |"
            )
    return lines + [""]


def _relations(v: Mapping[str, Any], heading: str, note: str) -> list[str]:
    lines = [heading, "", note, ""]
    if not v or not v.get("excess"):
        return lines + ["Not run yet.", ""]
    lines += [
        "| relation | inputs | method | student | reference | excess (pts) | 95% t interval | two-level bootstrap | "
        "p (one-sided) | p Holm | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, per in v["excess"].items():
        relation, kind = key.split("/")
        for m, r in per.items():
            lines.append(
                f"| {_TITLES[relation]} | {kind} | {m} | {_pct(r.get('student_rate'))} | "
                f"{_pct(r.get('reference_rate'))} | "
                f"{_pts(r.get('mean'))} | {_interval(r)} | {_interval(r.get('bootstrap', {}))} | {_p(r.get('p'))} | "
                f"{_p(r.get('p_holm'))} | {r.get('verdict')} |"
            )
    lines += ["", "Metamorphic increment (rule 2: per row, transformed minus original; student minus reference):", ""]
    lines += [
        "| relation | method | excess increment (pts) | 95% t interval | p Holm | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for relation, per in v["increment"].items():
        for m, r in per.items():
            lines.append(
                f"| {_TITLES[relation]} | {m} | {_pts(r.get('mean'))} | {_interval(r)} | {_p(r.get('p_holm'))} | "
                f"{r.get('verdict')} |"
            )
    return lines + [""]


def _premise(v: Mapping[str, Any]) -> list[str]:
    lines = ["## The premise (rule 3)", "", "Teacher minus student accuracy, TOST at ±3 points on the total error "
             "(seed and row parts), teacher × seed units.", ""]  # fmt: skip
    if not v["premise"]:
        return lines + ["Not run yet.", ""]
    lines += ["| method | units | gap (pts) | 90% interval | TOST p | verdict |", "|---|---|---|---|---|---|"]
    for m, r in v["premise"].items():
        lines.append(
            f"| {m} | {r['units']} | {_pts(r.get('mean'))} | {_interval(r)} | {_p(r.get('p'))} | {r['verdict']} |"
        )
    lines += ["", "## Confirmation (rule 5)", "", "Fresh seeds on test rows that chose nothing.", ""]
    if not v["confirmation"]:
        return lines + ["Not run yet.", ""]
    lines += [
        "| rows | units | rows judged | gap (pts) | 90% interval | TOST p | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, r in v["confirmation"].items():
        lines.append(
            f"| {split} | {r['units']} | {r['rows']} | {_pts(r.get('mean'))} | {_interval(r)} | {_p(r.get('p'))} | "
            f"{r['verdict']} |"
        )
    return lines + [""]


def _attacks(record: Mapping[str, Any], v: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Attacks on premise students (rule 4)",
        "",
        "Success among the rows each model classifies correctly; budget: the smallest of 30, 100, 300 queries at "
        "which every teacher's success is at least 15%.",
        "",
    ]
    if not v["attacks"]:
        return lines + ["Not run yet.", ""]
    for attack, a in v["attacks"].items():
        tried = record["attacks"][attack].get("teacher_success", {})
        seen = "; ".join(f"{b}: " + ", ".join(f"T{t} {_pct(x)}" for t, x in s.items()) for b, s in tried.items())
        lines.append(f"**{attack}**: teacher success by budget — {seen or 'not run yet'}; chosen budget {a['budget']}.")
        lines.append("")
        if a["verdicts"]:
            lines += [
                "| method | excess (student / teacher − 1) | 95% interval | p Holm | paper | verdict |",
                "|---|---|---|---|---|---|",
            ]
            for m, r in a["verdicts"].items():
                paper = "not transcribed" if r.get("paper") is None else _pct(r["paper"])
                lines.append(
                    f"| {m} | {_pct(r.get('excess'))} | [{_pct(r.get('excess_low'))}, {_pct(r.get('excess_high'))}] | "
                    f"{_p(r.get('p_holm'))} | {paper} | {r['verdict']} |"
                )
            lines.append("")
    return lines


def progress(record: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """What of the plan has run: (finished, planned) for teachers, replicas, premise
    students, confirmation students and attacked students (per attack, at its budget)."""
    plan = record.get("plan", {})
    n_teachers = len(plan.get("teacher_seeds", []))
    per_teacher = sum(len(s) for s in plan.get("seeds", {}).values())
    rows = record.get("rows", {})
    judged = [k for r in rows.values() for k in r]
    confirmed = {(t, s) for split in record.get("confirmation", {}).values() for t, d in split.items() for s in d}
    students = [m for a in record.get("attacks", {}).values() for m in a.get("students", {}).values()]
    attacked = sum(len(asr) for m in students for asr in m.values())
    return {
        "teachers": (len(record.get("teachers", {})), n_teachers),
        "replicas": (sum(k.startswith("replica:") for k in judged), n_teachers * (n_teachers - 1)),
        "premise students": (sum(not k.startswith("replica:") for k in judged), n_teachers * per_teacher),
        "confirmation students": (len(confirmed), n_teachers * len(plan.get("confirm", {}).get("seeds", []))),
        "attacked students": (attacked, len(plan.get("attacks", [])) * n_teachers * per_teacher),
    }


def _progress(record: Mapping[str, Any]) -> list[str]:
    done = progress(record)
    if all(a == b for a, b in done.values()):
        return ["Every planned unit has run.", ""]
    parts = ", ".join(f"{k} {a} of {b}" for k, a, b in ((k, *v) for k, v in done.items()))
    return [
        f"**Partial page: not every planned unit has run** ({parts}). A verdict here reads only the units "
        "listed; the page is rewritten as the runs finish.",
        "",
    ]


def render_triad(record: Mapping[str, Any]) -> str:
    """The page's Markdown from its JSON ``record`` (with ``record["verdicts"]``)."""
    v = record["verdicts"]
    lines = [
        "# The three-teacher study (issue 42): BigCloneBench",
        "",
        f'Rules fixed before the runs: `{record.get("rules")}` and `docs/benchmarks.md` ("The three-teacher study: '
        'rules"). The unit of inference is the teacher (Student-t over teachers, Holm over methods); the two-level '
        "bootstrap is shown beside and never overrides it. Every number is recomputed from `bigclonebench.json`.",
        "",
    ]
    lines += _progress(record)
    lines += _teachers(record)
    lines += _relations(
        v["relations"], "## Relations against the retrained teachers (rules 1, 2)",
        "Student rate against its teacher minus the other teachers' rate against it, on the same rows; `fidelity` on "
        "the rewrites it never trained on (rule 6).",
    )  # fmt: skip
    lines += _relations(
        v.get("fidelity_seen", {}), "### `fidelity` on the rewrites it trained on (apart)",
        "`rename_variables` and `insert_dead_code` only; not a headline.",
    )  # fmt: skip
    lines += _premise(v)
    lines += _attacks(record, v)
    lines += _units(record)
    s = v.get("spread", {})
    lines += [
        "## Seeds beside teachers",
        "",
        f"Compressor MR1 on transformed inputs: SD between student seeds {_pct(s.get('between_seeds_sd'))}, "
        f"between teachers {_pct(s.get('between_teachers_sd'))} (descriptive).",
        "",
    ]
    return "\n".join(lines)


__all__ = ["render_triad"]
