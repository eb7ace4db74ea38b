"""``compare.html``: several students evaluated against one teacher, side by side, with
their intervals (the distillation-method comparison of MetaCompress, arXiv 2511.05476).

Runs evaluated against different teachers or on different data are refused with the runs
named: their numbers are not comparable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from html import escape
from pathlib import Path

from ..artifact_names import COMPARISON_DIR, REPORT, run_path
from . import fmt
from .data import ReportData, from_run
from .page import page
from .provenance import short_label, teacher_identity

logger = logging.getLogger(__name__)


def comparison_rows() -> list[tuple[str, str, str]]:
    """The table's rows, ``(metric, variant, label)``: accuracy, ``any_violation_rate`` and each
    registered relation's rate (MetaCompress's MR1–MR4 and any added) on the original inputs,
    then on transformed code the headline rate, the first relation's (MR1, label loyalty) and
    the student's flips."""
    from ..relations import registered_relations

    relations = registered_relations()
    rows = [
        ("teacher_accuracy", "original", "teacher accuracy"),
        ("student_accuracy", "original", "student accuracy"),
        ("accuracy_drop", "original", "accuracy drop"),
        ("any_violation_rate", "original", "any violation"),
    ]
    rows += [(r.rate_metric, "original", f"{r.short} violation") for r in relations]
    rows.append(("any_violation_rate", "metamorphic", "any violation · transformed"))
    rows += [(r.rate_metric, "metamorphic", f"{r.short} violation · transformed") for r in relations[:1]]
    rows.append(("student_flip_rate", "metamorphic", "student flips · transformed"))
    return rows


LABEL_CHARS = 56  # a forest-plot label longer than this is cut at its start
FOREST = (("student_accuracy", "original"), ("any_violation_rate", "original"), ("any_violation_rate", "metamorphic"))


def check_comparable(runs: Sequence[ReportData]) -> None:
    """``ValueError`` naming the runs when they have different teachers or data digests."""
    for what, key in (("teachers", teacher_identity), ("data", lambda p: p.get("data_digest"))):
        seen: dict[str, str] = {}
        for data in runs:
            value, run_id = key(data.provenance), data.provenance.get("run_id")
            if value in (None, "None") or (what == "teachers" and data.provenance.get("mode") == "static"):
                if what == "data" or data.provenance.get("mode") != "static":  # static mode: the teacher is in the data
                    logger.warning(
                        "run %s records no %s: cannot check it",
                        run_id,
                        "teacher" if what == "teachers" else "data digest",
                    )
                continue
            first = next(iter(seen.items()), None)
            if first is not None and str(value) != first[0]:
                label = "teachers" if what == "teachers" else "data (digests)"
                raise ValueError(
                    f"cannot compare runs evaluated on different {label}: run {first[1]} has {first[0]!r}, "
                    f"run {run_id} has {str(value)!r}; compare students of one teacher on one data set"
                )
            seen.setdefault(str(value), str(run_id))


def _label(data: ReportData) -> str:
    """The student's short label (:func:`~.provenance.short_label`); its run name when it has no URI."""
    p = data.provenance
    return short_label(p.get("student_uri"), p.get("student_version"), str(p.get("run_name") or "student"))


def _uri(data: ReportData) -> str:
    """The student's full URI (or its run name), shown on hover and in the provenance."""
    p = data.provenance
    uri = p.get("student_uri")
    return uri if isinstance(uri, str) and uri else str(p.get("run_name") or "student")


def _cell(data: ReportData, name: str, variant: str, best: bool, overlaps: bool) -> str:
    value = data.metric(name, variant)
    key = name if variant == "original" else f"{name}/{variant}"
    style = "signed" if name == "accuracy_drop" else "rate"
    text = getattr(fmt, style)(value)
    if value is None:
        return f'<td class="missing" data-metric="{escape(key)}">{text}</td>'
    low, high = data.interval(name, variant)
    extra = f'<span class="ci">{fmt.interval(low, high)}</span>' if fmt.interval(low, high) else ""
    if name == "accuracy_drop" and data.metric("accuracy_drop_pvalue") is not None:
        extra += f'<span class="p">{fmt.pvalue(data.metric("accuracy_drop_pvalue"))}</span>'
    mark = (
        ' <span class="hint" title="the intervals overlap another student\'s: not a clear difference">≈</span>'
        if best and overlaps
        else ""
    )
    cls = ' class="best"' if best else ""
    return (
        f'<td{cls}><span class="num" data-metric="{escape(key)}" data-value="{value!r}">{text}</span>{mark}{extra}</td>'
    )


def _best(runs: Sequence[ReportData], name: str, variant: str) -> tuple[int | None, bool]:
    """The index of the best student on a metric (None when fewer than two have it) and
    whether its interval overlaps another student's."""
    from ..metrics import greater_is_better

    values = [(i, v) for i, d in enumerate(runs) if (v := d.metric(name, variant)) is not None]
    if len(values) < 2 or name == "teacher_accuracy":
        return None, False
    try:
        higher = greater_is_better(name)
    except KeyError:
        return None, False
    best = max(values, key=lambda iv: iv[1] if higher else -iv[1])[0]
    lo, hi = runs[best].interval(name, variant)
    overlaps = False
    if lo is not None and hi is not None:
        for i, _ in values:
            olo, ohi = runs[i].interval(name, variant)
            if i != best and olo is not None and ohi is not None and olo <= hi and lo <= ohi:
                overlaps = True
    return best, overlaps


def _rows(runs: Sequence[ReportData]) -> list[tuple[str, str, str]]:
    rows = [r for r in comparison_rows() if any(d.metric(r[0], r[1]) is not None for d in runs)]
    attacks = sorted({a for d in runs for a in d.attack_names()})
    for a in attacks:
        rows.append((f"attack_{a}/student_asr", "original", f"attack success · {a}"))
        rows.append((f"attack_{a}/excess_drop", "original", f"excess drop · {a}"))
    return rows


def forest(runs: Sequence[ReportData], name: str, variant: str) -> str:
    """Each student's point estimate and 95% interval on one metric, on one axis (SVG)."""
    from .svg import PALETTE

    points = [(d, v, *d.interval(name, variant)) for d in runs if (v := d.metric(name, variant)) is not None]
    if not points:
        return ""
    lo = min(min(v for v in (p[1], p[2]) if v is not None) for p in points)
    hi = max(max(v for v in (p[1], p[3]) if v is not None) for p in points)
    lo, hi = max(0.0, lo - 0.05), min(1.0, hi + 0.05) if hi <= 1 else hi + 0.05
    labels = [_label(d) for d, *_ in points]
    longest = min(max(len(lab) for lab in labels), LABEL_CHARS)
    left, right, row = max(120, int(16 + 6.2 * longest)), 20, 26  # room for the longest label at 11px
    w = left + 310
    h = 30 + row * len(points) + 24

    def x(v: float) -> float:
        return left + (v - lo) / max(hi - lo, 1e-9) * (w - left - right)

    parts = []
    for k in range(5):
        tick = lo + (hi - lo) * k / 4
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="22" y2="{h - 22}" stroke="#e2e8f0"/>'
            f'<text x="{x(tick):.1f}" y="{h - 8}" text-anchor="middle">{tick:.2f}</text>'
        )
    for i, (d, v, a, b) in enumerate(points):
        y = 34 + row * i
        color = PALETTE[i % len(PALETTE)]
        label = labels[i]
        parts.append(
            f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">'
            f"{escape(label if len(label) <= LABEL_CHARS else '…' + label[-(LABEL_CHARS - 1) :])}</text>"
        )
        if a is not None and b is not None:
            parts.append(f'<line x1="{x(a):.1f}" x2="{x(b):.1f}" y1="{y}" y2="{y}" stroke="{color}" stroke-width="3"/>')
        parts.append(
            f'<circle cx="{x(v):.1f}" cy="{y}" r="5" fill="{color}"><title>{escape(_uri(d))}: {fmt.rate(v)} '
            f"{fmt.interval(a, b)}</title></circle>"
        )
    title = name if variant == "original" else f"{name}/{variant}"
    parts.append(f'<text x="8" y="14" class="svg-title">{escape(title)}</text>')
    return (
        f'<figure class="fig"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" class="plot interval-plot" '
        f'role="img" aria-label="{escape(title)} by student">{"".join(parts)}</svg></figure>'
    )


def render_comparison(runs: Sequence[ReportData], title: str | None = None) -> str:
    """The comparison page of already loaded runs (checked comparable first); ``title``
    is added to the heading (the pipeline passes its task, data and profile)."""
    check_comparable(runs)
    heads = "".join(
        f'<th title="{escape(_uri(d))}">{escape(_label(d))}'
        f'<div class="sub">run {escape(str(d.provenance.get("run_id"))[:8])}</div></th>'
        for d in runs
    )
    body = []
    for name, variant, label in _rows(runs):
        best, overlaps = _best(runs, name, variant)
        cells = "".join(_cell(d, name, variant, i == best, overlaps) for i, d in enumerate(runs))
        body.append(f'<tr><th scope="row">{escape(label)}</th>{cells}</tr>')
    table = (
        '<section id="table"><h2>Side by side</h2><p class="note">Best student per row in bold; ≈ marks a best whose '
        "95% "
        "interval overlaps another student's (not a clear difference). Intervals appear when the evaluations logged "
        "them.</p>"
        f'<div class="scroll"><table class="compare"><thead><tr><th>metric</th>{heads}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody>"
        "</table></div></section>"
    )
    plots = "".join(forest(runs, n, v) for n, v in FOREST)
    plots = (
        f'<section id="intervals"><h2>Intervals</h2><div class="plots wide">{plots}</div></section>' if plots else ""
    )
    first = runs[0].provenance
    prov_rows = "".join(
        f'<tr><th scope="row">{escape(_label(d))}</th><td><code>{escape(_uri(d))}</code></td>'
        f"<td><code>{escape(str(d.provenance.get('run_id')))}</code></td>"
        f"<td>{escape(str(d.provenance.get('student_version') or '–'))}</td>"
        f"<td>{escape(str(d.provenance.get('evaluated_at') or '–'))}</td></tr>"
        for d in runs
    )
    prov = (
        f'<section id="provenance"><h2>Provenance</h2><p>Teacher <code>{escape(teacher_identity(first))}</code> · data '
        f"{escape(str(first.get('data_name') or '–'))}, digest "
        f"<code>{escape(str(first.get('data_digest') or '–'))}</code></p>"
        '<div class="scroll"><table class="runs"><thead><tr><th>student</th><th>model URI</th><th>run</th>'
        "<th>version</th><th>evaluated</th>"
        f"</tr></thead><tbody>{prov_rows}</tbody></table></div></section>"
    )
    subtitle = f"{len(runs)} students against teacher <code>{escape(teacher_identity(first))}</code>"
    if title:
        subtitle = f"{escape(title)} · {subtitle}"
    nav = [("table", "Side by side"), *([("intervals", "Intervals")] if plots else []), ("provenance", "Provenance")]
    return page("MetaCompress comparison", subtitle, nav, table + plots + prov)


def write_comparison_html(run_ids: Sequence[str], out_path: str | Path, title: str | None = None) -> Path:
    """Compare the evaluation runs ``run_ids`` (students of one teacher, on one data set)
    and write the page to ``out_path``; ``ValueError`` when they are not comparable."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        raise ValueError("compare needs at least one evaluation run id")
    html = render_comparison([from_run(r) for r in ids], title)
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path


def log_comparison_html(
    run_ids: Sequence[str | None], title: str | None = None, artifact_path: str = COMPARISON_DIR
) -> str | None:
    """Log ``<artifact_path>/report.html`` comparing the evaluation runs ``run_ids`` (None
    entries, e.g. methods that failed before evaluation, are skipped) to the active run;
    return its artifact path. Runs that are not comparable are reported by a warning and
    nothing is logged (the pipeline's other comparison artifacts stand)."""
    import tempfile

    import mlflow

    ids = [r for r in run_ids if r]
    if not ids:
        return None
    with tempfile.TemporaryDirectory(prefix="metacompress-compare-") as tmp:
        try:
            path = write_comparison_html(ids, Path(tmp) / REPORT, title)
        except ValueError as exc:
            logger.warning("no %s: %s", run_path(REPORT, artifact_path), exc)
            return None
        mlflow.log_artifact(str(path), artifact_path)
    return run_path(REPORT, artifact_path)
