"""Registry helpers shared by the gate tests: a sqlite store, registered versions, evaluation
runs shaped like the evaluator's (metrics + ``metacompress/summary.json``), alias and tag reads."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import mlflow
from mlflow import MlflowClient

_names = itertools.count()


def sqlite_store(root: Path, experiment: str) -> dict:
    """A fresh sqlite tracking + registry store under ``root`` with one experiment; the model
    source is an empty folder (the registry only records it; promotion never loads it)."""
    uri = f"sqlite:///{root}/mlflow.db"
    client = MlflowClient(uri, uri)
    exp = client.create_experiment(experiment, artifact_location=str(root / "artifacts"))
    (root / "model").mkdir()
    return {"uri": uri, "client": client, "exp": exp, "source": (root / "model").as_uri()}


def register_versions(
    client: MlflowClient, source: str, prefix: str, versions: int = 2, run_id: str | None = None
) -> str:
    """A new registered model ``<prefix>-<n>`` with ``versions`` versions of ``source``; its name."""
    name = f"{prefix}-{next(_names)}"
    client.create_registered_model(name)
    for _ in range(versions):
        client.create_model_version(name, source, run_id=run_id)
    return name


def evaluation_run(
    client: MlflowClient, experiment_id: str, metrics: dict, end_time: int, summary: bool = True, finish: bool = True
) -> str:
    """An evaluation run with ``metrics`` (and, like the evaluator, ``metacompress/summary.json``)
    that ended at ``end_time`` (ms); ``summary``/``finish`` False leave it half-written."""
    run = client.create_run(experiment_id, start_time=end_time - 10)
    for key, value in metrics.items():
        client.log_metric(run.info.run_id, key, value)
    if summary:
        client.log_text(run.info.run_id, json.dumps({"metrics": metrics}), "metacompress/summary.json")
    if finish:
        client.set_terminated(run.info.run_id, end_time=end_time)
    return run.info.run_id


def alias_version(client: MlflowClient, name: str, alias: str = "champion") -> str | None:
    """The version ``alias`` points to, or None."""
    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except mlflow.exceptions.MlflowException:
        return None


def version_tags(client: MlflowClient, name: str, version: int | str) -> dict:
    return client.get_model_version(name, str(version)).tags
