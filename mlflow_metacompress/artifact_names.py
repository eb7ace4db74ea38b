"""Every artifact name and run path the package writes and reads, in one place.

An evaluation logs its artifacts under :data:`ARTIFACT_DIR` (``metacompress/``) in the
run (:mod:`mlflow_metacompress.evaluation.artifacts` writes them); the report
(:mod:`mlflow_metacompress.report`), the promotion gates
(:mod:`mlflow_metacompress.gates.promotion`) and the reproduction study
(:mod:`mlflow_metacompress.pipeline`) find them by these names, never by literal paths.
The names are part of the public interface (MetaCompress's per-sample judgements,
arXiv 2511.05476, are what the report and the gates read back): change none of them.
This module sits at the top of the package, below every package that reads it, and
imports nothing.
"""

from __future__ import annotations

ARTIFACT_DIR = "metacompress"
"""The run folder of one evaluation's artifacts."""

SUMMARY = "summary.json"
PER_SAMPLE = "per_sample.parquet"
WORST_DISCREPANCIES = "worst_discrepancies.csv"
RELIABILITY_PLOT = "reliability.png"
KL_PLOT = "kl_histogram.png"
CONFUSION_PLOT = "confusion_teacher_vs_student.png"
PLOTS = (RELIABILITY_PLOT, KL_PLOT, CONFUSION_PLOT)
REPORT = "report.html"
PROVENANCE = "provenance.json"
ATTACK_TABLES = "attacks"
"""Subfolder of the attacks' per-sample tables, ``attacks/<attack>.parquet``."""

DEVIATIONS_TABLE = "deviations"
"""The extra-table key of every verified teacher–student deviation (``deviations.parquet``:
original, variant, unified diff, both models' probabilities; ``evaluator_config["deviation"]``)."""
DEVIATIONS = f"{DEVIATIONS_TABLE}.parquet"

COMPARISON_DIR = "comparison"
"""The run folder of the pipeline's comparison of several students."""
COMPARISON_CSV = "comparison.csv"
COMPARISON_MD = "comparison.md"
REPRODUCTION_DIR = "reproduction"
"""The run folder (and default output folder) of the reproduction study's tables."""

TRAINED_TRANSFORMS_TAG = "metacompress.trained_transforms"
"""Run tag of a distillation that trained on rewritten code (``fidelity``, ``repair``): the
rewrites it saw, comma-separated; ``evaluator_config["trained_transforms"] = "auto"`` reads it."""
HELD_OUT_TRANSFORMS_TAG = "metacompress.held_out_transforms"
"""Run tag: the rewrites such a distillation kept out of its training, comma-separated."""


def run_path(name: str, folder: str = ARTIFACT_DIR) -> str:
    """``<folder>/<name>``: where artifact ``name`` lies in the run (default ``metacompress/``)."""
    return f"{folder}/{name}"


def attack_table(attack: str) -> str:
    """The extra-table key of ``attack``'s per-sample table, ``attacks/<attack>``."""
    return f"{ATTACK_TABLES}/{attack}"


def is_attack_table(key: str) -> bool:
    """Whether an extra-table key is an attack's table (written as Parquet, not CSV)."""
    return key.startswith(f"{ATTACK_TABLES}/")


def is_parquet_table(key: str) -> bool:
    """Whether an extra table is written as Parquet (attack tables and the deviations), not CSV."""
    return is_attack_table(key) or key == DEVIATIONS_TABLE


SUMMARY_PATH = run_path(SUMMARY)
PER_SAMPLE_PATH = run_path(PER_SAMPLE)
