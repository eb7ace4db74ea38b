"""Registry helpers shared by the gate tests: a sqlite store, registered versions and
evaluation runs, aliases and version tags."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import mlflow
from mlflow import MlflowClient

# Registry helpers shared by the gate tests: a sqlite store, registered versions, evaluation
_names = itertools.count()


class Store(dict):
    """A sqlite tracking + registry store: ``root`` (its folder), ``uri``, ``client``, ``exp``
    (an experiment whose artifacts stay under ``root``) and ``source`` (an empty model folder's
    URI: the registry only records it), as keys and as attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


def open_store(root: Path, template: Path | None = None, experiment: str = "store") -> Store:
    """A fresh store in ``root``: a copy of the migrated ``template`` database when given (a
    migration takes seconds), with one experiment and an empty model folder."""
    root.mkdir(parents=True, exist_ok=True)
    if template is not None:
        shutil.copy(template, root / "mlflow.db")
    uri = f"sqlite:///{root}/mlflow.db"
    client = MlflowClient(uri, uri)
    exp = client.create_experiment(experiment, artifact_location=str(root / "artifacts"))
    (root / "model").mkdir()
    return Store(root=root, uri=uri, client=client, exp=exp, source=(root / "model").as_uri())


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
