"""The sections of ``report.html``, in the order a reviewer reads them (issue 14):
headline, per-transformation table, slices, plots (provenance: :mod:`.facts`); then worst
discrepancies (:mod:`.worst`) and attacks (:mod:`.attack_section`). Holds the number cells
(:func:`num`, :func:`ci`) that every section writes.

Each function takes a :class:`~.data.ReportData` and returns an HTML fragment, or ``""``
when the section does not apply (static mode has no transformations or attacks). Every
number carries ``data-metric`` (the logged key) and ``data-value`` (the logged value) so
the rendered page can be checked against the run.
"""

from __future__ import annotations

from html import escape
from typing import Any

import pandas as pd

from ..relations import registered_relations
from . import fmt
from .data import ReportData


def relation_rows() -> list[tuple[str, str]]:
    """``(rate metric, title)`` of each registered relation (:mod:`mlflow_metacompress.relations`), then
    ``any_violation_rate``: the headline table's rows."""
    return [(r.rate_metric, r.title) for r in registered_relations()] + [("any_violation_rate", "Any relation")]


def relation_columns() -> list[tuple[str, str]]:
    """``(rate metric, MR1)`` of each registered relation, then ``any_violation_rate``: table columns."""
    return [(r.rate_metric, r.short) for r in registered_relations()] + [("any_violation_rate", "any")]


def num(data: ReportData, name: str, variant: str = "original", style: str = "rate", css: str = "num") -> str:
    """A logged metric, formatted, with its key and exact value as attributes (``–`` when absent)."""
    value = data.metric(name, variant)
    key = name if variant == "original" else f"{name}/{variant}"
    text = getattr(fmt, style)(value)
    if value is None:
        return f'<span class="{css} missing" data-metric="{escape(key)}">{text}</span>'
    return f'<span class="{css}" data-metric="{escape(key)}" data-value="{value!r}" title="{value!r}">{text}</span>'


def ci(data: ReportData, name: str, variant: str = "original") -> str:
    """The metric's 95% interval as logged, or nothing."""
    low, high = data.interval(name, variant)
    text = fmt.interval(low, high)
    if not text:
        return ""
    key = name if variant == "original" else f"{name}/{variant}"
    return f'<span class="ci" data-interval="{escape(key)}" title="95% bootstrap interval">{text}</span>'


def _bar(value: float | None) -> str:
    if value is None:
        return ""
    return f'<span class="bar"><span style="width:{max(0.0, min(1.0, value)) * 100:.1f}%"></span></span>'


def _heat(value: float | None) -> str:
    """A cell background whose redness grows with a violation or flip rate (readable without colour too)."""
    if value is None or value <= 0:
        return ""
    return f' style="background:rgba(229,62,62,{0.05 + 0.45 * min(value, 1.0):.2f})"'


def variant_label(variant: str) -> str:
    if variant == "original":
        return "original"
    if variant == "metamorphic":
        return "transformed (pooled)"
    return variant.replace("attack_", "attack: ", 1)


def _pct(value: float | None) -> str:
    return f"{100 * value:.1f}%" if value is not None else fmt.DASH


def _verdict(data: ReportData) -> str:
    """The headline in words, from the logged numbers only (no threshold is invented here)."""
    parts = [
        f"The student predicts another class than the teacher on <b>{_pct(data.metric('mr1_violation_rate'))}</b> of "
        "the original inputs"
    ]
    if data.metric("mr1_violation_rate", "metamorphic") is not None:
        parts.append(
            f" and on <b>{_pct(data.metric('mr1_violation_rate', 'metamorphic'))}</b> of the semantically equivalent "
            "rewrites"
        )
    sentence = "".join(parts) + "."
    drop = data.metric("accuracy_drop")
    if drop is not None:
        p = data.metric("accuracy_drop_pvalue")
        sig = ""
        if p is not None:
            sig = " (significant at 5%)" if p < 0.05 else " (not significant at 5%)"
        sentence += (
            f" It is <b>{abs(drop) * 100:.1f} points {'less' if drop >= 0 else 'more'} accurate</b> than the teacher"
            f"{sig}."
        )
    worst = max(
        ((v, data.metric("any_violation_rate", v)) for v in data.transformations()),
        key=lambda t: t[1] or -1.0,
        default=None,
    )
    if worst is not None and worst[1] is not None:
        sentence += (
            f" The rewrite that breaks it most is <b>{escape(worst[0])}</b> ({_pct(worst[1])} of changed samples "
            "violate a relation)."
        )
    asr = [(a, data.metric(f"attack_{a}/student_asr")) for a in data.attack_names()]
    asr = [(a, v) for a, v in asr if v is not None]
    if asr:
        sentence += (
            " Attack success on the student: " + ", ".join(f"{escape(a)} <b>{_pct(v)}</b>" for a, v in asr) + "."
        )
    return sentence


def headline(data: ReportData) -> str:
    cards = []
    if data.metric("teacher_accuracy") is not None or data.metric("student_accuracy") is not None:
        cards.append(
            '<div class="card"><div class="label">Teacher '
            f"accuracy</div>{num(data, 'teacher_accuracy', css='big num')}</div>"
        )
        cards.append(
            f'<div class="card"><div class="label">Student accuracy</div>{num(data, "student_accuracy", css="big num")}'
            f"{ci(data, 'student_accuracy')}</div>"
        )
        p = data.metric("accuracy_drop_pvalue")
        ptext = (
            f'<span class="p" data-metric="accuracy_drop_pvalue" data-value="{p!r}">{fmt.pvalue(p)} (McNemar, '
            "exact)</span>"
            if p is not None
            else ""
        )
        cards.append(
            '<div class="card"><div class="label">Accuracy '
            f"drop</div>{num(data, 'accuracy_drop', style='signed', css='big num')}"
            f"{ci(data, 'accuracy_drop')}{ptext}</div>"
        )
    cards.append(
        '<div class="card key"><div class="label">Any violation '
        f"rate</div>{num(data, 'any_violation_rate', css='big num')}{ci(data, 'any_violation_rate')}<div "
        'class="hint">share of samples breaking at least one relation</div></div>'
    )
    variants = [v for v in data.variants() if v in ("original", "metamorphic") or v.startswith("attack_")]
    verdict = f'<p class="verdict">{_verdict(data)}</p>'
    head = "".join(f"<th>{escape(variant_label(v))}</th>" for v in variants)
    rows = []
    for name, label in relation_rows():
        cells = "".join(
            f"<td>{num(data, name, v)}{_bar(data.metric(name, v))}{ci(data, name, v)}</td>" for v in variants
        )
        cls = ' class="total"' if name == "any_violation_rate" else ""
        rows.append(f'<tr{cls}><th scope="row">{escape(label)}<div class="sub">{escape(name)}</div></th>{cells}</tr>')
    table = (
        f'<div class="scroll"><table class="mr"><thead><tr><th>violation rate (lower is better)</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return (
        f'<section id="headline"><h2>Headline</h2>{verdict}<div class="cards">{"".join(cards)}</div>{table}<p '
        'class="note">Intervals are 95% percentile-bootstrap intervals over samples, shown when the evaluation logged '
        "them.</p></section>"
    )


def transformations(data: ReportData) -> str:
    names = data.transformations()
    if not names:
        return ""
    counts = data.per_sample["variant"].value_counts() if "variant" in data.per_sample else pd.Series(dtype=int)
    cols = [
        ("transform_applicable_rate", "applicable"),
        ("teacher_flip_rate", "teacher flips"),
        ("student_flip_rate", "student flips"),
        *relation_columns(),
    ]
    order = sorted(names, key=lambda v: -(data.metric("any_violation_rate", v) or -1.0))
    rows = []
    for v in [*order, "metamorphic"]:
        if v == "metamorphic" and data.metric("any_violation_rate", "metamorphic") is None:
            continue
        n = int(counts.get(v, 0)) if v != "metamorphic" else int(sum(counts.get(t, 0) for t in names))
        cells = "".join(
            f"<td{_heat(data.metric(key, v)) if key != 'transform_applicable_rate' else ''}>{num(data, key, v)}"
            f"{ci(data, key, v) if v == 'metamorphic' else ''}</td>"
            for key, _ in cols
        )
        cls = ' class="total"' if v == "metamorphic" else ""
        rows.append(
            f'<tr{cls}><th scope="row">{escape(variant_label(v))}</th><td class="n" '
            f'data-sort="{n}">{fmt.count(n)}</td>{cells}</tr>'
        )
    head = "".join(f"<th>{escape(label)}</th>" for _, label in cols)
    return (
        '<section id="transformations"><h2>Per transformation</h2><p class="note">Rates over the samples each '
        "transformation changed (n); flips: the model's own prediction changed "
        "from the original. Worst first; click a header to sort.</p>"
        f'<div class="scroll"><table class="sortable"><thead><tr><th>transformation</th><th>n</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def slices(data: ReportData) -> str:
    """Relation rates per value of each ``slice_columns`` column (original inputs only; evaluation/slices.py)."""
    columns = data.slices()
    if not columns:
        return ""
    cols = relation_columns()
    head = "".join(f"<th>{escape(label)}</th>" for _, label in cols)
    tables = []
    for column, values in columns.items():
        order = sorted(values, key=lambda v: -(data.metric("any_violation_rate", v["suffix"]) or -1.0))
        rows = []
        for v in order:
            n = v["samples"]
            cells = "".join(
                f"<td{_heat(data.metric(key, v['suffix']))}>{num(data, key, v['suffix'])}</td>" for key, _ in cols
            )
            rows.append(
                f'<tr><th scope="row">{escape(v["value"])}</th>'
                f'<td class="n" data-sort="{n if n is not None else -1}">{fmt.count(n)}</td>{cells}</tr>'
            )
        tables.append(
            f'<h3>{escape(column)}</h3><div class="scroll"><table class="sortable slice"><thead><tr><th>value</th>'
            "<th>n</th>"
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )
    return (
        f'<section id="slices"><h2>Slices</h2><p class="note">Rates on the original inputs of each value of a '
        f"<code>slice_columns</code> column (n samples; MR3 over the value's high-confidence samples). Worst first; "
        f"click a header to sort.</p>{''.join(tables)}</section>"
    )


def plots(data: ReportData) -> str:
    from . import svg

    per = data.per_sample
    if per.empty or not data.classes or f"teacher_prob_{data.classes[0]}" not in per:
        return ""
    cfg = data.config
    figures = [
        svg.reliability(per, data.classes, int(cfg.get("calibration_bins") or 10)),
        svg.kl_histogram(per, float(cfg.get("kl_threshold") or 0.1)),
        svg.confidence_scatter(
            per, data.classes, float(cfg.get("confidence_threshold") or 0.8), int(cfg.get("seed") or 0)
        ),
    ]
    return f'<section id="plots"><h2>Plots</h2><div class="plots">{"".join(figures)}</div></section>'


def plist(values: Any) -> str:
    """A list of probabilities, ``[0.12, 0.88]`` (a dash when it is not one)."""
    try:
        return "[" + ", ".join(fmt.prob(float(v)) for v in values) + "]"
    except (TypeError, ValueError):
        return fmt.DASH
