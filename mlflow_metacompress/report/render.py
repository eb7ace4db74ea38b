"""``report.html`` of one evaluation: :func:`render_report` puts the sections together;
:func:`write_evaluation_report` is the evaluator's hook (it writes ``report.html`` and
``provenance.json`` beside the other artifacts); :func:`write_run_report` rebuilds the page
from a finished run (``metacompress report RUN_ID``)."""

from __future__ import annotations

import json
import logging
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..artifact_names import PROVENANCE, REPORT
from . import attack_section, deviations, facts, sections, worst
from .data import ReportData, from_outcome, from_run
from .page import page
from .reference import reference as reference_section

if TYPE_CHECKING:
    from .contract import EvaluationResults, EvaluationSettings

logger = logging.getLogger(__name__)

NAV = (
    ("headline", "Headline"),
    ("reference", "Reference"),
    ("transformations", "Transformations"),
    ("slices", "Slices"),
    ("plots", "Plots"),
    ("worst", "Worst discrepancies"),
    ("attacks", "Attacks"),
    ("deviations", "Deviations"),
    ("provenance", "Provenance"),
)


def render_report(data: ReportData) -> str:
    """The whole page; sections that do not apply (static mode: no transformations, no attacks) are left out."""
    parts = {
        "headline": sections.headline(data),
        "reference": reference_section(data),
        "transformations": sections.transformations(data),
        "slices": sections.slices(data),
        "plots": sections.plots(data),
        "worst": worst.worst(data),
        "attacks": attack_section.attacks(data),
        "deviations": deviations.section(data),
        "provenance": facts.provenance(data),
    }
    p = data.provenance
    rows = len(data.per_sample[data.per_sample["variant"] == "original"]) if "variant" in data.per_sample else 0
    subtitle = f"{who(data)} · {rows:,} samples · run <code>{escape(str(p.get('run_id') or '–'))}</code>"
    nav = [(anchor, label) for anchor, label in NAV if parts[anchor]]
    return page("MetaCompress evaluation report", subtitle, nav, "".join(parts[a] for a, _ in NAV))


def who(data: ReportData) -> str:
    """ "student X against teacher Y", or the probability columns in static mode (HTML)."""
    cfg, p = data.config, data.provenance
    if cfg.get("teacher_prob_columns"):

        def cols(key: str) -> str:
            return escape(", ".join(map(str, cfg.get(key) or ())))

        return (
            f"static mode: student probabilities <code>{cols('student_prob_columns')}</code> against teacher "
            f"probabilities <code>{cols('teacher_prob_columns')}</code>"
        )
    student = escape(str(p.get("student_uri") or "student"))
    teacher = escape(str(p.get("teacher_uri") or cfg.get("teacher") or "teacher"))
    return f"student <code>{student}</code> against teacher <code>{teacher}</code>"


def write_evaluation_report(
    outcome: EvaluationResults, cfg: EvaluationSettings, out: Path, provenance: dict[str, Any]
) -> list[str]:
    """The evaluator's hook: write ``report.html`` and ``provenance.json`` into ``out``
    (the ``metacompress/`` artifact folder); return their names. ``outcome`` and ``cfg``
    are read through the report's contract (:mod:`.contract`)."""
    (out / PROVENANCE).write_text(json.dumps(provenance, indent=2, sort_keys=True, default=str))
    (out / REPORT).write_text(render_report(from_outcome(outcome, cfg, provenance)), encoding="utf-8")
    return [PROVENANCE, REPORT]


def write_run_report(run_id: str, out_path: str | Path) -> Path:
    """Rebuild ``report.html`` of evaluation run ``run_id`` from its logged artifacts into ``out_path``."""
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(from_run(run_id)), encoding="utf-8")
    return path
