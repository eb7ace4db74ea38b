"""The "Worst discrepancies" section of ``report.html`` (issue 14): the samples whose
variants violate a relation, ranked by KL(P_T‖P_S), each with both models' probabilities and
the rewritten code beside its original.
"""

from __future__ import annotations

from html import escape
from typing import Any

import pandas as pd

from ..relations import registered_relations
from . import fmt
from .data import ReportData, worst_discrepancies
from .diff import code_block, side_by_side
from .sections import variant_label

OPEN_EXAMPLES = 5  # worst discrepancies shown open; the rest (up to max_examples) folded


def _violated(row: Any) -> str:
    names = [r.short for r in registered_relations() if bool(row.get(r.flag, False))]
    return ", ".join(names) or "none"


def _probabilities(row: Any, classes: list[str]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in classes)
    t = "".join(f"<td>{fmt.prob(row.get(f'teacher_prob_{c}'))}</td>" for c in classes)
    s = "".join(f"<td>{fmt.prob(row.get(f'student_prob_{c}'))}</td>" for c in classes)
    return (
        f'<div class="scroll"><table class="probs"><thead><tr><th>P(class)</th>{head}</tr></thead>'
        f"<tbody><tr><th>teacher</th>{t}</tr><tr><th>student</th>{s}</tr></tbody></table></div>"
    )


def worst(data: ReportData) -> str:
    per = data.per_sample
    if per.empty or "any_violation" not in per or data.max_examples == 0:
        return ""
    failing = worst_discrepancies(per, data.max_examples)
    if failing.empty:
        return '<section id="worst"><h2>Worst discrepancies</h2><p>No sample violates a relation.</p></section>'
    originals: dict[int, str] = {}
    if "code" in per:
        orig = per[per["variant"] == "original"]
        originals = dict(zip(orig["row"].astype(int), orig["code"], strict=True))
    items = []
    for rank, (_, row) in enumerate(failing.iterrows(), start=1):
        r = row.to_dict()
        variant = str(r["variant"])
        label = f" · label {escape(data.classes[int(r['label'])])}" if pd.notna(r.get("label")) and data.classes else ""
        code = ""
        if isinstance(r.get("code"), str):
            base = originals.get(int(r["row"]))
            if variant != "original" and isinstance(base, str):
                code = side_by_side(base, r["code"], "original", variant_label(variant))
            else:
                code = code_block(r["code"])
        items.append(
            f'<article class="example"><h3>#{rank} · {escape(variant_label(variant))} · row '
            f'{int(r["row"])}{label}</h3><div class="facts"><span>KL <b>{fmt.prob(r.get("kl"))}</b></span>'
            f"<span>violated: <b>{_violated(r)}</b></span>"
            f"<span>teacher → {escape(data.classes[int(r['teacher_pred'])])}, student → "
            f"{escape(data.classes[int(r['student_pred'])])}</span></div>"
            f"{_probabilities(r, data.classes)}{code}</article>"
        )
    if len(items) > OPEN_EXAMPLES:
        items = [
            *items[:OPEN_EXAMPLES],
            f"<details><summary>{len(items) - OPEN_EXAMPLES} more</summary>{''.join(items[OPEN_EXAMPLES:])}</details>",
        ]
    total = int(per["any_violation"].astype(bool).sum())
    return (
        f'<section id="worst"><h2>Worst discrepancies</h2><p class="note">{len(failing)} of the {total:,} violating '
        "rows (all "
        f"variants; <code>max_examples</code> = {data.max_examples}), by KL(P_T‖P_S): each sample's worst variant "
        "first, then further variants of the same samples. Rewritten code is shown beside its original, changed tokens "
        f"highlighted.</p>{''.join(items)}</section>"
    )
