"""The report's *Deviations* section: the teacher–student deviation search's figures and its
worst findings (``evaluator_config["deviation"]``).

A deviation (DFLARE, Tian et al., TOSEM 2023; DiffChaser, Xie et al., ASE 2019) is a
semantics-preserving variant on which the student's label differs from the teacher's,
verified by re-querying both models. The section shows ``deviation_rate`` with its 95%
interval, the median paired queries to the first deviation, and the deviations with the
largest teacher–student probability gap (total variation) first, each with its unified diff
and a side-by-side token diff; every code text is HTML-escaped.
"""

from __future__ import annotations

from html import escape

import pandas as pd

from .data import ReportData
from .diff import code_block, side_by_side
from .sections import ci, num, plist

SHOWN = 5  # worst deviations shown (at most max_examples)


def worst_deviations(table: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The ``limit`` deviations with the largest teacher–student gap (ties: by row)."""
    if table.empty or "gap" not in table:
        return table.head(0)
    return table.sort_values(["gap", "row"], ascending=[False, True], kind="stable").head(limit)


def section(data: ReportData) -> str:
    """The section's HTML, or ``""`` when the evaluation ran no deviation search."""
    if data.metric("deviation_rows_searched") is None and data.deviations is None:
        return ""
    figures = (
        f"<p>Deviation rate {num(data, 'deviation_rate')} {ci(data, 'deviation_rate')}: of "
        f"{num(data, 'deviation_rows_agreeing', style='count')} rows where teacher and student agree "
        f"({num(data, 'deviation_rows_searched', style='count')} searched), "
        f"{num(data, 'deviation_rows_found', style='count')} have an equivalent variant on which they disagree; "
        f"median {num(data, 'deviation_queries_median', style='count')} paired queries to the first.</p>"
    )
    table = data.deviations if data.deviations is not None else pd.DataFrame()
    worst = worst_deviations(table, min(SHOWN, data.max_examples))
    parts = []
    for r in worst.to_dict("records"):
        ops = escape(str(r.get("operators", "")))
        parts.append(
            f'<article class="example deviation" data-row="{int(r["row"])}"><h3>row {int(r["row"])} · gap '
            f"{float(r['gap']):.3f} · teacher {escape(str(r['teacher_prediction']))}, student "
            f"{escape(str(r['student_prediction']))} · {int(r['queries_to_first'])} queries</h3>"
            f'<div class="facts"><span>P teacher {plist(r.get("teacher_probs"))}, P student '
            f"{plist(r.get('student_probs'))}</span><span>operators {ops}</span></div>"
            f"{side_by_side(r.get('original_code', ''), r.get('variant_code', ''), 'original', 'variant')}"
            f"<details><summary>unified diff</summary>{code_block(r.get('diff', ''))}</details></article>"
        )
    examples = f"<h4>Largest teacher–student gaps ({len(parts)} shown)</h4>{''.join(parts)}" if parts else ""
    return f'<section id="deviations"><h2>Deviations</h2>{figures}{examples}</section>'
