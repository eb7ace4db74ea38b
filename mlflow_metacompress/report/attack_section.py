"""The "Attacks" section of ``report.html`` (issue 14): per attack, the teacher's and the
student's success rate, queries and accuracy drop, the excess drop, and the student's
successful adversarial examples with their renaming.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from . import fmt
from .data import ReportData
from .diff import side_by_side
from .sections import num, plist

EXAMPLES_PER_ATTACK = 5


def _renaming(text: Any) -> str:
    try:
        mapping = json.loads(text) if isinstance(text, str) else dict(text or {})
    except (TypeError, ValueError):
        return ""
    if not mapping:
        return ""
    pairs = "".join(
        f"<li><code>{escape(str(a))}</code> → <code>{escape(str(b))}</code></li>" for a, b in mapping.items()
    )
    return f'<ul class="renaming">{pairs}</ul>'


def _cls(data: ReportData, index: Any) -> str:
    try:
        return escape(data.classes[int(float(index))])
    except (TypeError, ValueError, IndexError):
        return escape(str(index))


def attacks(data: ReportData) -> str:
    names = data.attack_names()
    if not names:
        return ""
    blocks = []
    for a in names:
        k = f"attack_{a}"
        rows = "".join(
            f'<tr><th scope="row">{role}</th><td>{num(data, f"{k}/{role}_asr")}</td>'
            f"<td>{num(data, f'{k}/{role}_mean_queries', style='count')}</td>"
            f"<td>{num(data, f'{k}/{role}_accuracy_under_attack')}</td>"
            f"<td>{num(data, f'{k}/{role}_accuracy_drop')}</td></tr>"
            for role in ("teacher", "student")
        )
        summary = (
            f"<p>Excess drop (student − teacher): {num(data, f'{k}/excess_drop', style='signed')} "
            f"({num(data, f'{k}/excess_drop_pct', style='percent')} of the teacher's drop).</p>"
        )
        table = data.attacks.get(a)
        examples = ""
        if table is not None and "status" in table:
            won = table[table["status"] == "succeeded"].head(min(EXAMPLES_PER_ATTACK, data.max_examples))
            parts = []
            for _, row in won.iterrows():
                r = row.to_dict()
                probs = (
                    (
                        f"<span>P(classes) before {plist(r.get('original_probs'))}, "
                        f"after {plist(r.get('adversarial_probs'))}</span>"
                    )
                    if "original_probs" in r
                    else ""
                )
                pair = side_by_side(
                    r.get("original_code", ""), r.get("adversarial_code", ""), "original", "adversarial"
                )
                parts.append(
                    f'<article class="example"><h3>row {int(r["index"])} · {fmt.count(r.get("queries"))} queries · '
                    f"prediction {_cls(data, r.get('original_prediction'))} → "
                    f"{_cls(data, r.get('adversarial_prediction'))}</h3>"
                    f'<div class="facts">{probs}</div>{_renaming(r.get("renaming"))}{pair}</article>'
                )
            if parts:
                examples = (
                    f"<h4>Successful adversarial examples against the student ({len(parts)} shown)</h4>{''.join(parts)}"
                )
        blocks.append(
            f'<div class="attack"><h3>{escape(a)}</h3><div class="scroll"><table><thead><tr><th></th><th>success '
            "rate</th>"
            "<th>mean queries</th><th>accuracy under attack</th><th>accuracy drop</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>{summary}{examples}</div>"
        )
    return f'<section id="attacks"><h2>Attacks</h2>{"".join(blocks)}</section>'
