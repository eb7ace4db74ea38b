"""The pipeline's final comparison table: one row per distillation method (plus the
teacher as reference), with the gate's verdict, size, accuracy and the MetaCompress
discrepancy and attack metrics (Awal, Rochan, Roy, arXiv 2511.05476), as CSV and
Markdown artifacts of the pipeline run, plus ``comparison/report.html``
(:func:`mlflow_metacompress.report.compare.log_comparison_html`). Numbers are shown with
4 significant digits."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..artifact_names import COMPARISON_CSV, COMPARISON_DIR, COMPARISON_MD, run_path
from .stages import GateOutcome

logger = logging.getLogger(__name__)

METRIC_COLUMNS = ("accuracy", "accuracy_drop", "any_violation_rate", "any_violation_rate/metamorphic")


def _float(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def _attack_names(outcomes: Sequence[GateOutcome]) -> list[str]:
    names = {
        k.split("/", 1)[0][len("attack_") :]
        for o in outcomes
        for k in o.metrics
        if k.startswith("attack_") and k.endswith("/student_asr")
    }
    return sorted(names)


def comparison_table(
    outcomes: Sequence[GateOutcome], teacher: dict[str, Any] | None = None, attacks: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per outcome (and a first ``teacher`` row when ``teacher`` is given:
    ``{"model", "size_mb"}``). Columns: method, model, verdict, champion, size_mb,
    accuracy (the student's), accuracy_drop, any_violation_rate,
    any_violation_rate/metamorphic, then per attack ``asr/<a>`` (the student's attack
    success rate) and ``excess_drop_pct/<a>``, and failed_checks. Absent metrics are NaN."""
    attacks = list(attacks) if attacks is not None else _attack_names(outcomes)
    rows: list[dict[str, Any]] = []
    if teacher is not None:
        accuracy = next((o.metrics["teacher_accuracy"] for o in outcomes if "teacher_accuracy" in o.metrics), math.nan)
        row = {
            "method": "teacher",
            "model": teacher.get("model", ""),
            "verdict": "reference",
            "champion": "",
            "size_mb": _float(teacher.get("size_mb")),
            "accuracy": accuracy,
            "failed_checks": "",
        }
        for attack in attacks:
            row[f"asr/{attack}"] = next(
                (
                    o.metrics[f"attack_{attack}/teacher_asr"]
                    for o in outcomes
                    if f"attack_{attack}/teacher_asr" in o.metrics
                ),
                math.nan,
            )
        rows.append(row)
    for o in outcomes:
        m = o.metrics
        row = {
            "method": o.method,
            "model": f"{o.model_name}/{o.version}" if o.version else o.model_name,
            "verdict": o.verdict,
            "champion": "yes" if o.alias_moved else "no",
            "size_mb": _float(o.tags.get("metacompress.size_mb")),
            "accuracy": m.get("student_accuracy", math.nan),
        }
        for col in METRIC_COLUMNS[1:]:
            row[col] = m.get(col, math.nan)
        for attack in attacks:
            row[f"asr/{attack}"] = m.get(f"attack_{attack}/student_asr", math.nan)
            row[f"excess_drop_pct/{attack}"] = m.get(f"attack_{attack}/excess_drop_pct", math.nan)
        row["failed_checks"] = o.error or ("; ".join(o.failed_checks) if o.failed_checks else "none")
        rows.append(row)
    columns = [
        "method",
        "model",
        "verdict",
        "champion",
        "size_mb",
        *METRIC_COLUMNS,
        *(c for a in attacks for c in (f"asr/{a}", f"excess_drop_pct/{a}")),
        "failed_checks",
    ]
    return pd.DataFrame(rows, columns=columns)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (NaN shown as ``–``)."""
    head = "| " + " | ".join(table.columns) + " |"
    rule = "|" + "|".join("---" for _ in table.columns) + "|"
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def log_comparison(table: pd.DataFrame, title: str = "") -> str:
    """Log ``comparison/comparison.csv`` and ``comparison/comparison.md`` to the active run;
    return the Markdown text."""
    import mlflow

    markdown = (f"## {title}\n\n" if title else "") + to_markdown(table)
    mlflow.log_text(
        table.to_csv(index=False, float_format="%.4g"), run_path(COMPARISON_CSV, COMPARISON_DIR)
    )  # 4 significant digits; the metric store keeps full precision
    mlflow.log_text(markdown, run_path(COMPARISON_MD, COMPARISON_DIR))
    passed = int((table["verdict"] == "passed").sum())
    mlflow.log_metrics({"students": float((table["method"] != "teacher").sum()), "students_passed": float(passed)})
    return markdown
