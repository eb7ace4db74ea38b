"""Resumable stages found through MLflow (the reproduction study's bookkeeping).

Each stage of a long study (the teacher, one student of one seed, one evaluation) runs
as its own top-level MLflow run tagged with the stage's name and a hash of every
argument that determines its result (:func:`stage_key`). Before running a stage,
:func:`run_stage` searches the tracking store for a ``FINISHED`` run with the same key
and, when one exists, returns that run's outputs instead of training or evaluating
again. A stage that was interrupted leaves its run ``RUNNING`` (killed) or ``FAILED``
(exception), so it is simply run again: an interrupted study loses at most the stage
that was running, and a study can be run in parts (one seed or one method at a time)
because every part finds the stages the others finished.

The outputs a stage returns (model URIs, run ids) are stored as tags
``metacompress.reproduce.out.<name>`` and read back from them.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

STAGE_TAG = "metacompress.reproduce.stage"
KEY_TAG = "metacompress.reproduce.key"
STUDY_TAG = "metacompress.reproduce.study"
OUT_PREFIX = "metacompress.reproduce.out."


def stage_key(stage: str, args: Mapping[str, Any]) -> str:
    """A short, stable hash of ``stage`` and its arguments (JSON, keys sorted)."""
    text = json.dumps({"stage": stage, "args": args}, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


@dataclass
class StageResult:
    """A stage's run id, its outputs and whether it was found finished (skipped)."""

    name: str
    key: str
    run_id: str
    outputs: dict[str, str] = field(default_factory=dict)
    skipped: bool = False


def find_finished(key: str, experiment_ids: list[str] | None = None) -> Any | None:
    """The latest ``FINISHED`` run tagged with stage ``key`` (an ``mlflow.entities.Run``), or None."""
    import mlflow

    if experiment_ids is None:
        experiment_ids = [_experiment_id()]
    runs = mlflow.search_runs(
        experiment_ids=experiment_ids,
        filter_string=f"tags.`{KEY_TAG}` = '{key}' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
        output_format="list",
    )
    return runs[0] if runs else None


def _experiment_id() -> str:
    import mlflow
    from mlflow.tracking.fluent import _get_experiment_id

    active = _get_experiment_id()
    if active:
        return str(active)
    default = mlflow.get_experiment_by_name("Default")
    if default is None:  # was an AttributeError
        raise ValueError("no active MLflow experiment and no 'Default' one: choose one with mlflow.set_experiment")
    return str(default.experiment_id)


def outputs_of(run: Any) -> dict[str, str]:
    """The ``metacompress.reproduce.out.*`` tags of ``run`` without their prefix."""
    return {k[len(OUT_PREFIX) :]: v for k, v in run.data.tags.items() if k.startswith(OUT_PREFIX)}


def lookup(name: str, args: Mapping[str, Any]) -> StageResult | None:
    """The finished stage ``name`` with ``args``, or None (nothing runs)."""
    key = stage_key(name, args)
    found = find_finished(key)
    return None if found is None else StageResult(name, key, found.info.run_id, outputs_of(found), skipped=True)


def planned(name: str, args: Mapping[str, Any]) -> StageResult:
    """A not-yet-run stage's identity (its key), for the keys of stages that depend on it."""
    return StageResult(name, stage_key(name, args), "")


def run_stage(
    name: str,
    args: Mapping[str, Any],
    body: Callable[[], Mapping[str, Any]],
    *,
    study: str = "",
    tags: Mapping[str, str] | None = None,
) -> StageResult:
    """Run ``body`` inside a new top-level run tagged with ``name`` and :func:`stage_key`,
    unless a ``FINISHED`` run with that key exists; then return its outputs, untouched.

    ``body`` runs with the stage's run active (nested runs it starts are its children)
    and returns the outputs to record (string-valued). The arguments are logged as
    ``stage_args.json``. An exception in ``body`` ends the run ``FAILED`` and propagates.
    """
    import mlflow

    key = stage_key(name, args)
    found = find_finished(key)
    if found is not None:
        logger.info("stage %s: already finished in run %s (key %s), skipped", name, found.info.run_id, key)
        return StageResult(name, key, found.info.run_id, outputs_of(found), skipped=True)
    logger.info("stage %s: running (key %s)", name, key)
    all_tags = {STAGE_TAG: name, KEY_TAG: key, STUDY_TAG: study, **(tags or {})}
    with mlflow.start_run(run_name=name, tags=all_tags) as run:
        mlflow.log_dict(dict(args), "stage_args.json")
        outputs = {k: str(v) for k, v in dict(body()).items()}
        mlflow.set_tags({OUT_PREFIX + k: v for k, v in outputs.items()})
    return StageResult(name, key, run.info.run_id, outputs)
