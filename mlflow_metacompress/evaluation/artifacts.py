"""Artifacts of one evaluation, written under ``metacompress/`` in the run (every name in
:mod:`mlflow_metacompress.artifact_names`):

- ``summary.json``: every metric, the config as the user set it (``config``), how each key
  was set (``config_sources``: given, default, inferred or detected) and the values that
  were inferred or detected (``detected``), the classes and notes (``language``, rows run);
- ``per_sample.parquet``: one row per (variant, sample) with both models' probabilities,
  predictions, KL and every relation flag (and the code of rewritten variants);
- ``worst_discrepancies.csv``: the failing examples (CheckList's lesson), by KL, distinct
  samples first (:func:`mlflow_metacompress.report.data.worst_discrepancies`, the order
  the report shows);
- ``reliability.png``: teacher and student reliability curves on one plot;
- ``kl_histogram.png``: the per-sample KL(P_T‖P_S) as one ECDF per variant group and one box
  per variant, with the MR2 threshold drawn;
- ``confusion_teacher_vs_student.png``: teacher (rows) against student (columns) predictions on
  the original inputs; the counts are also in ``summary.json`` (``confusion_teacher_vs_student``);
- extra tables (``transform_parse_failures.csv``, ``attacks/<a>.parquet``, ``deviations.parquet``).

The plots are drawn by :mod:`.plots`; with ``slice_columns`` set, ``summary.json`` also has
``slices`` (:mod:`.slices`: the values sliced, their sample counts and the values skipped).
When a model is a Hugging Face pipeline, ``input_limits`` names, per role, the most tokens
its inputs were cut to and where that number comes from (:func:`mlflow_metacompress.adapters.input_limits.input_limit`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .. import artifact_names as names
from ..report.data import worst_discrepancies
from .plots import confusion_counts, write_plots

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig
    from .loop import EvaluationOutcome

__all__ = ["worst_discrepancies", "write_artifacts"]


def write_artifacts(outcome: EvaluationOutcome, cfg: EvaluatorConfig, out: Path) -> list[str]:
    """Write every artifact into ``out``; return their paths relative to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "metrics": outcome.metrics,
        "config": cfg.as_loggable(),
        "config_sources": cfg.config_sources(),
        "detected": cfg.detected_values(),
        "classes": outcome.classes,
        **outcome.notes,
    }
    counts = confusion_counts(outcome.per_sample, outcome.classes)
    summary["confusion_teacher_vs_student"] = {
        "labels": list(outcome.classes),
        "rows": "teacher prediction",
        "columns": "student prediction",
        "counts": counts.tolist(),
    }
    (out / names.SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    outcome.per_sample.to_parquet(out / names.PER_SAMPLE, index=False)
    worst_discrepancies(outcome.per_sample, cfg.max_examples).to_csv(out / names.WORST_DISCREPANCIES, index=False)
    written = [names.SUMMARY, names.PER_SAMPLE, names.WORST_DISCREPANCIES]
    written += write_plots(outcome.per_sample, outcome.classes, cfg.calibration_bins, cfg.kl_threshold, out)
    for name, table in outcome.extra_tables.items():
        path = out / (f"{name}.parquet" if names.is_parquet_table(name) else f"{name}.csv")
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".parquet":
            table.to_parquet(path, index=False)
        else:
            table.to_csv(path, index=False)
        written.append(str(path.relative_to(out)))
    return written
