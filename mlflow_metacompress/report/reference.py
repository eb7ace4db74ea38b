"""The report's section on the reference model (issue 42): student, reference and excess
side by side for each relation.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) judges the student against its teacher;
with ``evaluator_config["reference"]`` (a retrained teacher) the evaluation also logs the
reference's rates against the same teacher on the same rows (``reference/<m>``), the
student's paired excess over them (``excess/<m>``) and the metamorphic increments
(``increment/<m>``; :mod:`mlflow_metacompress.families`). Without a reference the section
is left out.
"""

from __future__ import annotations

from html import escape

from ..families import EXCESS, INCREMENT, REFERENCE
from .data import ReportData
from .sections import ci, num, relation_rows

KINDS = (("original", "original"), ("metamorphic", "transformed (pooled)"))


def _triple(data: ReportData, name: str, variant: str, family: str = "") -> str:
    """Student, reference and excess cells of ``family + name`` on ``variant``."""
    student = f"{family}{name}"
    return (
        f"<td>{num(data, student, variant, style='signed' if family else 'rate')}{ci(data, student, variant)}</td>"
        f"<td>{num(data, REFERENCE + student, variant, style='signed' if family else 'rate')}"
        f"{ci(data, REFERENCE + student, variant)}</td>"
        f'<td class="excess">{num(data, EXCESS + student, variant, style="signed")}'
        f"{ci(data, EXCESS + student, variant)}</td>"
    )


def reference(data: ReportData) -> str:
    """Per relation: student, reference and excess on the original inputs, on the pooled
    transformed inputs and as the metamorphic increment; ``""`` without a reference."""
    if not any(k.startswith(REFERENCE) for k in data.metrics):
        return ""
    groups: list[tuple[str, str, str]] = [
        (v, label, "") for v, label in KINDS if data.metric(f"{REFERENCE}any_violation_rate", v) is not None
    ]
    if data.metric(f"{REFERENCE}{INCREMENT}any_violation_rate", "metamorphic") is not None:
        groups.append(("metamorphic", "increment (transformed − original)", INCREMENT))
    top = "".join(f'<th colspan="3" scope="colgroup">{escape(label)}</th>' for _, label, _ in groups)
    sub = "<th>student</th><th>reference</th><th>excess</th>" * len(groups)
    rows = []
    for name, label in relation_rows():
        cells = "".join(_triple(data, name, v, family) for v, _, family in groups)
        cls = ' class="total"' if name == "any_violation_rate" else ""
        rows.append(f'<tr{cls}><th scope="row">{escape(label)}<div class="sub">{escape(name)}</div></th>{cells}</tr>')
    return (
        '<section id="reference"><h2>Against a retrained teacher</h2><p class="note">The reference model is judged '
        "against the teacher on the rows the student is judged on; excess = student − reference, paired over the "
        "same rows, with 95% paired bootstrap intervals. An excess near 0 is disagreement a retrained teacher shows "
        "too.</p>"
        f'<div class="scroll"><table class="mr reference"><thead><tr><th rowspan="2">violation rate</th>{top}</tr>'
        f"<tr>{sub}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"
    )
