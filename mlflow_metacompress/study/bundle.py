"""Finished model stages carried between machines in the repository (stage bundles).

A study's store (its MLflow database and artifacts) lives outside the repository, and the
next session may run on a machine where it is gone. The expensive stages (a teacher is
about 70 minutes on two cores) would then run again. A **bundle** is one finished model
stage written into a folder of the repository, so that a commit carries it:

``<folder>/<stage>-<key>/stage.json``
    the stage's name, key and arguments, its outputs, metrics and params, the model
    version's tags, its registered name and code columns;
``<folder>/<stage>-<key>/hf/``
    the model itself, as :meth:`~mlflow_metacompress.models.classifier.CodeClassifier.save`
    writes it (encoder weights, head, tokenizer).

:func:`adopt` puts a bundle back into an empty store: a ``FINISHED`` run with the stage's
tags, metrics and params, and the model logged and registered again, so that
:func:`~.resume.run_stage` finds the stage finished and every later stage (whose keys
hold this stage's key, not its model URI) runs against the very same weights.
:func:`export` writes a bundle after the stage finished. The arguments must match except
the data folder's absolute path, which differs between machines (a warning names both).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .resume import KEY_TAG, OUT_PREFIX, STAGE_TAG, STUDY_TAG, StageResult, find_finished, stage_key

logger = logging.getLogger(__name__)

STAGE_FILE = "stage.json"
MODEL_DIR = "hf"
ADOPTED_TAG = "metacompress.reproduce.adopted_from"
_MACHINE_ARGS = ("data",)  # absolute paths: equal studies on two machines differ here only


def bundle_dir(folder: str | Path, name: str, key: str) -> Path:
    return Path(folder) / f"{name}-{key}"


def _comparable(args: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps({k: v for k, v in args.items() if k not in _MACHINE_ARGS}, default=str))


def find_bundle(folder: str | Path, name: str, args: Mapping[str, Any]) -> Path | None:
    """The bundle of stage ``name`` whose arguments equal ``args`` (the data path aside), or None."""
    root = Path(folder)
    if not root.is_dir():
        return None
    wanted = _comparable(args)
    for path in sorted(root.glob(f"{name}-*/{STAGE_FILE}")):
        if path.parent.name.endswith(".partial"):  # an export that did not finish
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"stage bundle {path} is not readable JSON: {exc}") from exc
        if record.get("stage") == name and _comparable(record.get("args", {})) == wanted:
            return path.parent
    return None


def export(result: StageResult, args: Mapping[str, Any], folder: str | Path) -> Path:
    """Write the finished model stage ``result`` (its ``model_uri`` output) as a bundle in
    ``folder``; an existing bundle of the same arguments (the data path aside: the one this
    stage was adopted from) is left as it is. Returns the bundle's folder."""
    import mlflow
    from mlflow import MlflowClient

    from ..models.pyfunc import HF_ARTIFACT

    existing = find_bundle(folder, result.name, args)
    if existing is not None:
        return existing
    target = bundle_dir(folder, result.name, result.key)
    uri = result.outputs.get("model_uri")
    if not uri:
        raise ValueError(f"stage {result.name} has no model_uri output to bundle: {sorted(result.outputs)}")
    client = MlflowClient()
    run = client.get_run(result.run_id)
    tags: dict[str, str] = {}
    registered = None
    if uri.startswith("models:/"):
        registered, version = uri[len("models:/") :].rsplit("/", 1)
        tags = dict(client.get_model_version(registered, version).tags)
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(mlflow.artifacts.download_artifacts(uri, dst_path=tmp))
        pyfunc = mlflow.models.Model.load(str(local)).flavors.get("python_function", {})
        config = pyfunc.get("config") or {}
        relative = ((pyfunc.get("artifacts") or {}).get(HF_ARTIFACT) or {}).get("path")
        hf = local / relative if relative else local / "artifacts" / "hf"
        if not (hf / "metacompress.json").is_file():
            raise ValueError(f"stage {result.name}: {uri} holds no CodeClassifier folder to bundle (looked in {hf})")
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(hf, staging / MODEL_DIR)
        record = {
            "stage": result.name,
            "key": result.key,
            "args": json.loads(json.dumps(dict(args), default=str)),
            "outputs": dict(result.outputs),
            "metrics": dict(run.data.metrics),
            "params": dict(run.data.params),
            "model_tags": tags,
            "registered_name": registered,
            "code_columns": list(config.get("code_columns") or []),
            "study": run.data.tags.get(STUDY_TAG, ""),
        }
        (staging / STAGE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        staging.rename(target)  # nothing half-written: the bundle appears whole or not at all
    logger.info("stage %s bundled into %s", result.name, target)
    return target


def adopt(name: str, args: Mapping[str, Any], folder: str | Path) -> StageResult | None:
    """Put the bundle of stage ``name`` with ``args`` into the active store, unless the
    store already has the stage finished or ``folder`` holds no such bundle (then None)."""
    import mlflow

    from ..models.pyfunc import log_code_classifier

    key = stage_key(name, args)
    if find_finished(key) is not None:
        return None
    path = find_bundle(folder, name, args)
    if path is None:
        return None
    record = json.loads((path / STAGE_FILE).read_text())
    here, there = args.get("data"), record.get("args", {}).get("data")
    if here != there:
        logger.warning("stage bundle %s was made with the data at %s; this study reads %s", path, there, here)
    outputs = dict(record.get("outputs", {}))
    tags = {STAGE_TAG: name, KEY_TAG: key, STUDY_TAG: record.get("study", ""), ADOPTED_TAG: str(path)}
    with mlflow.start_run(run_name=name, tags=tags) as run:
        mlflow.log_dict(dict(args), "stage_args.json")
        if record.get("params"):
            mlflow.log_params(record["params"])
        if record.get("metrics"):
            mlflow.log_metrics(record["metrics"])
        info = log_code_classifier(
            path / MODEL_DIR,
            registered_model_name=record.get("registered_name"),
            code_columns=record.get("code_columns") or None,
            tags=record.get("model_tags") or None,
        )
        if record.get("registered_name"):
            outputs["model_uri"] = f"models:/{record['registered_name']}/{info.registered_model_version}"
        else:
            outputs["model_uri"] = info.model_uri
        for out_key in ("teacher_run_id", "run_id"):
            if out_key in outputs:
                outputs[out_key] = run.info.run_id
        mlflow.set_tags({OUT_PREFIX + k: str(v) for k, v in outputs.items()})
    logger.info("stage %s adopted from %s as run %s (%s)", name, path, run.info.run_id, outputs["model_uri"])
    return StageResult(name, key, run.info.run_id, outputs, skipped=True)
