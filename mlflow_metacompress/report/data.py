"""What a report needs, gathered once: from an evaluation's results
(:class:`~.contract.EvaluationResults`, the evaluator's ``EvaluationOutcome``) while it is logged, or
from a finished run's logged artifacts (``metacompress/summary.json``, ``per_sample.parquet``,
``attacks/<a>.parquet``, ``provenance.json``) without any model.

Both paths give the same :class:`ReportData`, so ``metacompress report RUN_ID`` rebuilds
the page the evaluation logged.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..artifact_names import (
    ARTIFACT_DIR,
    ATTACK_TABLES,
    DEVIATIONS,
    DEVIATIONS_TABLE,
    PER_SAMPLE,
    PROVENANCE,
    SUMMARY,
    SUMMARY_PATH,
    is_attack_table,
)
from ..families import split_family

if TYPE_CHECKING:
    from .contract import EvaluationResults, EvaluationSettings

logger = logging.getLogger(__name__)

SPECIAL_VARIANTS = ("original", "metamorphic")
SLICE_PREFIX = "slice:"  # ``<metric>/slice:<column>:<value>`` (evaluation/slices.py): a data segment, not a variant


@dataclass(frozen=True, eq=False)
class ReportData:
    """One evaluation as the report sees it.

    ``metrics`` are unprefixed (as in ``summary.json``); ``summary`` is the rest of
    ``summary.json`` (config, config_sources, detected, classes, notes); ``attacks`` maps
    an attack name to its per-sample table; ``provenance`` is :mod:`.provenance`'s record;
    ``deviations`` is the teacher–student deviations table (``deviations.parquet``), or None.
    """

    metrics: dict[str, float]
    per_sample: pd.DataFrame
    classes: list[str]
    summary: dict[str, Any] = field(default_factory=dict)
    attacks: dict[str, pd.DataFrame] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    deviations: pd.DataFrame | None = None

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.summary.get("config") or {})

    @property
    def max_examples(self) -> int:
        value = self.config.get("max_examples")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else 25

    def metric(self, name: str, variant: str = "original") -> float | None:
        """``name`` on ``variant`` (``original`` has no suffix); None when absent or NaN."""
        key = name if variant == "original" else f"{name}/{variant}"
        value = self.metrics.get(key)
        if value is None or not isinstance(value, (int, float)) or math.isnan(float(value)):
            return None
        return float(value)

    def interval(self, name: str, variant: str = "original") -> tuple[float | None, float | None]:
        """The 95% interval of ``name`` (``<name>_ci_low``/``_ci_high``, suffix last), when logged."""
        return self.metric(f"{name}_ci_low", variant), self.metric(f"{name}_ci_high", variant)

    def variants(self) -> list[str]:
        """Every variant suffix among the metrics: original, metamorphic, transformations, attacks
        (slices are segments of the original inputs, not variants: :meth:`slices`)."""
        keys = [key for key in self.metrics if not split_family(key)[0]]  # reference/…, excess/…: not variants
        seen = {key.split("/", 1)[1] for key in keys if "/" in key and not key.startswith("attack_")}
        seen = {v for v in seen if not v.startswith(SLICE_PREFIX)}
        transforms = sorted(v for v in seen if v not in SPECIAL_VARIANTS and not v.startswith("attack_"))
        attacks = sorted(v for v in seen if v.startswith("attack_"))
        return ["original", *(["metamorphic"] if "metamorphic" in seen else []), *transforms, *attacks]

    def transformations(self) -> list[str]:
        """The transformations that ran (those with an applicable rate, or with judged rows)."""
        names = {k.split("/", 1)[1] for k in self.metrics if k.startswith("transform_applicable_rate/")}
        names |= {v for v in self.variants() if v not in SPECIAL_VARIANTS and not v.startswith("attack_")}
        return sorted(names)

    def slices(self) -> dict[str, list[dict[str, Any]]]:
        """Per slice column: its sliced values in ``summary.json``'s order (most samples
        first), each ``{"value", "token", "samples", "suffix"}`` with ``suffix`` the metric
        suffix (``slice:<column token>:<value token>``). Values with metrics but no note (an
        older summary) follow, named by their token."""
        notes = self.summary.get("slices") or {}
        out: dict[str, list[dict[str, Any]]] = {}
        for column, note in notes.items():
            token = str(note.get("token", column))
            out[str(column)] = [
                {
                    "value": str(v.get("value")),
                    "token": str(v.get("token")),
                    "samples": v.get("samples"),
                    "suffix": f"{SLICE_PREFIX}{token}:{v.get('token')}",
                }
                for v in note.get("sliced") or ()
            ]
        known = {v["suffix"] for values in out.values() for v in values}
        by_token = {str(n.get("token", c)): str(c) for c, n in notes.items()}
        for key in sorted(self.metrics):
            suffix = key.split("/", 1)[1] if "/" in key else ""
            if suffix.startswith(SLICE_PREFIX) and suffix not in known:
                column, _, value = suffix[len(SLICE_PREFIX) :].partition(":")
                out.setdefault(by_token.get(column, column), []).append(
                    {"value": value, "token": value, "samples": None, "suffix": suffix}
                )
                known.add(suffix)
        return out

    def attack_names(self) -> list[str]:
        """Attacks with metrics (``attack_<a>/student_asr``) or a table."""
        names = {
            k.split("/", 1)[0][len("attack_") :]
            for k in self.metrics
            if k.startswith("attack_")
            and "/" in k
            and k.split("/", 1)[1].startswith(("student_", "teacher_", "excess"))
        }
        return sorted(names | set(self.attacks))


def from_outcome(
    outcome: EvaluationResults, cfg: EvaluationSettings, provenance: dict[str, Any] | None = None
) -> ReportData:
    """The report's data from an evaluation that is being logged."""
    summary = {
        "config": cfg.as_loggable(),
        "config_sources": cfg.config_sources(),
        "detected": cfg.detected_values(),
        "classes": list(outcome.classes),
        **outcome.notes,
    }
    attacks = {name.split("/", 1)[1]: table for name, table in outcome.extra_tables.items() if is_attack_table(name)}
    metrics = {k: float(v) for k, v in outcome.metrics.items()}
    return ReportData(
        metrics,
        outcome.per_sample,
        list(outcome.classes),
        summary,
        attacks,
        dict(provenance or {}),
        outcome.extra_tables.get(DEVIATIONS_TABLE),
    )


def worst_discrepancies(per_sample: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The ``limit`` violating rows to show first: each sample's (``row``'s) largest-KL
    variant, by KL(P_T‖P_S), then the other variants by KL, so one sample's rewrites
    cannot fill the top of the list (the report and ``worst_discrepancies.csv`` show the
    same order)."""
    failing = per_sample[per_sample["any_violation"].astype(bool)].sort_values("kl", ascending=False, kind="stable")
    if "row" in failing:
        first = ~failing["row"].duplicated()
        failing = pd.concat([failing[first], failing[~first]])
    return failing.head(limit)


@contextmanager
def _quiet_downloads() -> Iterator[None]:
    """No artifact progress bars while the report downloads (restored afterwards)."""
    name = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(name)
    os.environ[name] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def from_run(run_id: str) -> ReportData:
    """The report's data from a run's logged ``metacompress/`` artifacts (no model is loaded).

    ``ValueError`` naming the run when it has no metacompress evaluation.
    """
    import mlflow
    from mlflow import MlflowClient

    from ..stores import existing_store, get_run
    from .provenance import from_run_record

    client = MlflowClient(existing_store())  # a missing sqlite store is named, never created
    run = get_run(client, run_id)
    names = {a.path for a in client.list_artifacts(run_id, ARTIFACT_DIR)}
    if SUMMARY_PATH not in names:
        raise ValueError(f"run {run_id} has no {SUMMARY_PATH}: it is not a metacompress evaluation run")
    with tempfile.TemporaryDirectory(prefix="metacompress-report-") as tmp, _quiet_downloads():
        local = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=ARTIFACT_DIR, dst_path=tmp))
        summary = json.loads((local / SUMMARY).read_text())
        per = local / PER_SAMPLE
        per_sample = pd.read_parquet(per) if per.exists() else pd.DataFrame()
        attacks = {p.stem: pd.read_parquet(p) for p in sorted((local / ATTACK_TABLES).glob("*.parquet"))}
        deviations = pd.read_parquet(local / DEVIATIONS) if (local / DEVIATIONS).exists() else None
        prov_path = local / PROVENANCE
        logged = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    metrics = {k: float(v) for k, v in summary.pop("metrics", {}).items() if v is not None}
    provenance = from_run_record(run, summary, logged)
    classes = [str(c) for c in summary.get("classes", [])]
    return ReportData(metrics, per_sample, classes, summary, attacks, provenance, deviations)
