"""The provenance section of ``report.html``: where the numbers come from (run, teacher and
student URIs, data digest, mode, packages), the evaluation's notes from ``summary.json``
as readable tables, and the configuration with the source of every value.

Numbers are formatted as everywhere else in the report (:mod:`.fmt`): the bootstrap
``statistics`` become a table of each metric's estimate and 95% interval (Efron &
Tibshirani 1993; :mod:`mlflow_metacompress.statistics`) and McNemar's p-value, never a raw
dictionary of 17-digit floats. Other notes (``slices``, ``input_limits``, rows run) are
nested key/value tables.
"""

from __future__ import annotations

from html import escape
from typing import Any

from . import fmt
from .data import ReportData

SKIPPED_NOTES = ("config", "config_sources", "detected", "classes", "metrics", "statistics")


def _scalar(value: Any) -> str:
    """One value as text: floats as rates (or counts when whole), ints as counts."""
    if value is None:
        return fmt.DASH
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return fmt.count(value)
    if isinstance(value, float):
        return fmt.count(value) if value.is_integer() or abs(value) >= 1000 else fmt.rate(value)
    return str(value)


def nested(value: Any) -> str:
    """Any JSON value as HTML: a dict as a key/value table, a list of dicts as a table with
    one column per key, other lists joined, scalars by :func:`_scalar` (all escaped)."""
    if isinstance(value, dict):
        if not value:
            return fmt.DASH
        rows = "".join(f'<tr><th scope="row">{escape(str(k))}</th><td>{nested(v)}</td></tr>' for k, v in value.items())
        return f'<table class="kv">{rows}</table>'
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, dict) for v in value):
            cols = list(dict.fromkeys(k for v in value for k in v))
            head = "".join(f"<th>{escape(str(c))}</th>" for c in cols)
            rows = "".join("<tr>" + "".join(f"<td>{nested(v.get(c))}</td>" for c in cols) + "</tr>" for v in value)
            return (
                f'<div class="scroll"><table class="kv rows"><thead><tr>{head}</tr></thead>'
                f"<tbody>{rows}</tbody></table></div>"
            )
        return escape(", ".join(_scalar(v) for v in value)) or "[]"
    return escape(_scalar(value))


def statistics(section: Any) -> str:
    """``summary.json``'s ``statistics``: how the intervals were drawn, each metric's
    estimate and interval (rounded like the rest of the report) and McNemar's test."""
    if not isinstance(section, dict) or not section:
        return ""
    level = section.get("level")
    pct = f"{100 * float(level):.0f}%" if fmt.is_number(level) else "95%"
    facts = [
        ("method", escape(str(section.get("method") or fmt.DASH))),
        ("bootstrap samples", nested(section.get("bootstrap_samples"))),
        ("seed", nested(section.get("seed"))),
        ("level", pct),
    ]
    test = section.get("accuracy_drop_pvalue")
    if isinstance(test, dict):
        facts.append(
            (
                "accuracy drop",
                f"{escape(fmt.pvalue(test.get('pvalue')))} · {escape(str(test.get('test') or ''))} · "
                f"teacher right, student wrong: {nested(test.get('teacher_right_student_wrong'))}; "
                f"teacher wrong, student right: {nested(test.get('teacher_wrong_student_right'))}",
            )
        )
    head = "".join(f'<tr><th scope="row">{k}</th><td>{v}</td></tr>' for k, v in facts)
    cells: dict[str, dict[str, str]] = {}  # metric → variant → "estimate [low, high]"
    for key, iv in (section.get("intervals") or {}).items():
        if not isinstance(iv, dict):
            continue
        name, _, variant = str(key).partition("/")
        style = fmt.signed if name == "accuracy_drop" else fmt.rate
        ci = fmt.interval(iv.get("low"), iv.get("high"))
        cells.setdefault(name, {})[variant or "original"] = f'<span class="num">{style(iv.get("estimate"))}</span>' + (
            f' <span class="ci">{ci}</span>' if ci else ""
        )
    variants = list(dict.fromkeys(v for by in cells.values() for v in by))
    labels = {"original": "original", "metamorphic": "transformed (pooled)"}
    rows = "".join(
        f'<tr><th scope="row"><code>{escape(name)}</code></th>'
        + "".join(f"<td>{by.get(v, fmt.DASH)}</td>" for v in variants)
        + "</tr>"
        for name, by in cells.items()
    )
    table = (
        (
            f'<div class="scroll"><table class="stats"><thead><tr><th>metric: estimate and {pct} interval</th>'
            + "".join(f"<th>{escape(labels.get(v, v))}</th>" for v in variants)
            + f"</tr></thead><tbody>{rows}</tbody></table></div>"
        )
        if cells
        else ""
    )
    return f'<h3 class="stats-title">Statistics</h3><table class="facts-table">{head}</table>{table}'


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "[]"
    return fmt.DASH if value is None else str(value)


def provenance(data: ReportData) -> str:
    p = data.provenance

    def version(v: Any) -> str:
        return f' <span class="sub">version {escape(str(v))}</span>' if v else ""

    rows = [
        (
            "Run",
            f"<code>{escape(str(p.get('run_id') or fmt.DASH))}</code>"
            + (f" ({escape(str(p['run_name']))})" if p.get("run_name") else ""),
        ),
        ("Teacher", f"<code>{escape(_value(p.get('teacher_uri')))}</code>{version(p.get('teacher_version'))}"),
        ("Student", f"<code>{escape(_value(p.get('student_uri')))}</code>{version(p.get('student_version'))}"),
        (
            "Data",
            f"{escape(_value(p.get('data_name')))} · digest <code>{escape(_value(p.get('data_digest')))}</code>"
            + (f" · {fmt.count(p['data_rows'])} rows" if p.get("data_rows") is not None else ""),
        ),
        ("Mode", escape(_value(p.get("mode")))),
        ("Evaluated", escape(_value(p.get("evaluated_at")))),
    ]
    packages = p.get("packages") or {}
    if packages:
        rows.append(("Packages", " · ".join(f"{escape(k)} {escape(str(v))}" for k, v in packages.items())))
    facts = "".join(f"<tr><th scope='row'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    cfg, sources, detected = data.config, data.summary.get("config_sources") or {}, data.summary.get("detected") or {}
    cfg_rows = []
    for key in sorted(set(cfg) | set(detected)):
        source = sources.get(key, "")
        shown = detected.get(key, cfg.get(key)) if source in ("inferred", "detected") else cfg.get(key)
        cfg_rows.append(
            f'<tr class="src-{escape(source)}"><th scope="row">{escape(key)}</th><td>'
            f"<code>{escape(_value(shown))}</code></td>"
            f"<td>{escape(source)}</td></tr>"
        )
    notes = {k: v for k, v in data.summary.items() if k not in SKIPPED_NOTES}
    note_rows = "".join(
        f"<tr><th scope='row'>{escape(k)}</th><td>{nested(v)}</td></tr>" for k, v in sorted(notes.items())
    )
    return (
        f'<section id="provenance"><h2>Provenance</h2><table class="facts-table">{facts}{note_rows}</table>'
        f"{statistics(data.summary.get('statistics'))}"
        f"<details><summary>Configuration ({sum(1 for k in sources.values() if k == 'given')} keys given)</summary>"
        f'<div class="scroll"><table class="config"><thead><tr><th>key</th><th>value</th><th>source</th></tr></thead>'
        f"<tbody>{''.join(cfg_rows)}</tbody></table></div></details></section>"
    )
