"""Finished stages carried between machines in the repository (stage bundles).

A study's store (its MLflow database and artifacts) lives outside the repository, and the
next session may run on a machine where it is gone. The expensive stages (a teacher is
about 70 minutes on two cores, a premise student half an hour, an evaluation ten minutes)
would then run again. A **bundle** is one finished stage written into a folder of the
repository, so that a commit carries it:

``<folder>/<stage>-<key>/stage.json``
    the stage's name, key and arguments, its outputs, metrics and params, and for a model
    stage the model version's tags, its registered name and code columns;
``<folder>/<stage>-<key>/hf/``
    a model stage's model, as :meth:`~mlflow_metacompress.models.classifier.CodeClassifier.save`
    writes it (encoder weights, head, tokenizer);
``<folder>/<stage>-<key>/artifacts/``
    the run artifacts a later reader needs (an evaluation's ``per_sample.parquet``, without
    the columns of :data:`DROPPED_COLUMNS`: the variants' code, 90% of the file, which the
    data and the evaluator's seed give again).

:func:`adopt` puts a bundle back into an empty store: a ``FINISHED`` run with the stage's
tags, metrics, params and artifacts, and the model logged and registered again, so that
:func:`~.resume.run_stage` finds the stage finished and every later stage runs against the
very same weights. :func:`export` writes a bundle after the stage finished; :func:`carried`
does both around one stage.

The arguments must match except the data folder's absolute path, which differs between
machines (a warning names both). A stage's key hashes that path, so a later stage's
arguments name an earlier one by a key that differs between machines: bundles record such
keys (``*_key`` arguments) as the key of the bundle the earlier stage was adopted from
(its origin, tagged ``metacompress.reproduce.origin_key``), and :func:`find_bundle`
compares in those terms.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .resume import KEY_TAG, OUT_PREFIX, STAGE_TAG, STUDY_TAG, StageResult, find_finished, stage_key

logger = logging.getLogger(__name__)

STAGE_FILE = "stage.json"
MODEL_DIR = "hf"
ARTIFACT_DIR = "artifacts"
DROPPED_COLUMNS = ("code",)  # left out of a bundled parquet artifact (see the module docstring)
ADOPTED_TAG = "metacompress.reproduce.adopted_from"
ORIGIN_TAG = "metacompress.reproduce.origin_key"
STUDY_PREFIX = "metacompress.reproduce"  # the study's own tags, set anew on adoption
_MACHINE_ARGS = ("data",)  # absolute paths: equal studies on two machines differ here only


def bundle_dir(folder: str | Path, name: str, key: str) -> Path:
    return Path(folder) / f"{name}-{key}"


def origin_key(key: str) -> str:
    """The key of the bundle the stage ``key`` was adopted from, or ``key`` itself (a stage
    run here, or none finished); each part of a joined key (``a@b``, a replica's) alike."""
    if "@" in key:
        return "@".join(origin_key(part) for part in key.split("@"))
    found = find_finished(key)
    return key if found is None else str(found.data.tags.get(ORIGIN_TAG) or key)


def portable(args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as a bundle records them: the keys of earlier stages (``*_key``) as their
    origins (see the module docstring)."""
    out = json.loads(json.dumps(dict(args), default=str))
    return {k: origin_key(v) if k.endswith("_key") and isinstance(v, str) else v for k, v in out.items()}


def _comparable(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k not in _MACHINE_ARGS}


def bundle_of(folder: str | Path, name: str, key: str) -> Path | None:
    """The bundle of the stage ``name`` whose key (here, or its origin) is ``key``, or None."""
    path = bundle_dir(folder, name, origin_key(key))
    return path if (path / STAGE_FILE).is_file() else None


def find_bundle(folder: str | Path, name: str, args: Mapping[str, Any]) -> Path | None:
    """The bundle of stage ``name`` whose arguments equal ``args`` (the data path aside, the
    earlier stages' keys as their origins), or None."""
    root = Path(folder)
    if not root.is_dir():
        return None
    wanted = _comparable(portable(args))
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


def export(
    result: StageResult,
    args: Mapping[str, Any],
    folder: str | Path,
    *,
    model: bool = True,
    artifacts: Sequence[str] = (),
) -> Path:
    """Write the finished stage ``result`` as a bundle in ``folder``: its model (``model``:
    the ``model_uri`` output) and the run artifacts at ``artifacts``. An existing bundle of
    the same arguments (the one this stage was adopted from) is left as it is. Returns the
    bundle's folder."""
    from mlflow import MlflowClient

    existing = find_bundle(folder, result.name, args)
    if existing is not None:
        return existing
    origin = origin_key(result.key)
    target = bundle_dir(folder, result.name, origin)
    run = MlflowClient().get_run(result.run_id)
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    record: dict[str, Any] = {
        "stage": result.name,
        "key": origin,
        "args": portable(args),
        "outputs": dict(result.outputs),
        "metrics": dict(run.data.metrics),
        "params": dict(run.data.params),
        "study": run.data.tags.get(STUDY_TAG, ""),
    }
    try:
        if model:
            record.update(_export_model(result, staging / MODEL_DIR))
        for artifact in artifacts:
            _export_artifact(result.run_id, artifact, staging / ARTIFACT_DIR)
        (staging / STAGE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    staging.rename(target)  # nothing half-written: the bundle appears whole or not at all
    logger.info("stage %s bundled into %s", result.name, target)
    return target


def _export_model(result: StageResult, into: Path) -> dict[str, Any]:
    """Copy the stage's model folder into ``into``; returns what :func:`adopt` needs to register it again."""
    import mlflow
    from mlflow import MlflowClient

    from ..models.pyfunc import HF_ARTIFACT

    uri = result.outputs.get("model_uri")
    if not uri:
        raise ValueError(f"stage {result.name} has no model_uri output to bundle: {sorted(result.outputs)}")
    tags: dict[str, str] = {}
    registered = None
    if uri.startswith("models:/"):
        registered, version = uri[len("models:/") :].rsplit("/", 1)
        tags = dict(MlflowClient().get_model_version(registered, version).tags)
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(mlflow.artifacts.download_artifacts(uri, dst_path=tmp))
        pyfunc = mlflow.models.Model.load(str(local)).flavors.get("python_function", {})
        config = pyfunc.get("config") or {}
        relative = ((pyfunc.get("artifacts") or {}).get(HF_ARTIFACT) or {}).get("path")
        hf = local / relative if relative else local / "artifacts" / "hf"
        if not (hf / "metacompress.json").is_file():
            raise ValueError(f"stage {result.name}: {uri} holds no CodeClassifier folder to bundle (looked in {hf})")
        shutil.copytree(hf, into)
    return {
        "model_tags": tags,
        "registered_name": registered,
        "code_columns": list(config.get("code_columns") or []),
        "run_tags": _training_tags(result),
    }


def _training_tags(result: StageResult) -> dict[str, str]:
    """The project's tags of the run that trained the model (e.g. the rewrites a student
    trained on, which ``trained_transforms="auto"`` reads back), for the adopted run."""
    from mlflow import MlflowClient

    run_id = result.outputs.get("student_run_id") or result.outputs.get("teacher_run_id")
    if not run_id:
        return {}
    tags = MlflowClient().get_run(run_id).data.tags
    return {k: v for k, v in tags.items() if k.startswith("metacompress.") and not k.startswith(STUDY_PREFIX)}


def _export_artifact(run_id: str, artifact: str, into: Path) -> None:
    import mlflow

    target = into / artifact
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=artifact, dst_path=tmp))
        if local.is_dir():
            shutil.copytree(local, target)
        elif local.suffix == ".parquet":
            import pandas as pd

            frame = pd.read_parquet(local)
            frame.drop(columns=[c for c in DROPPED_COLUMNS if c in frame.columns]).to_parquet(target, index=False)
        else:
            shutil.copy2(local, target)


def adopt(name: str, args: Mapping[str, Any], folder: str | Path) -> StageResult | None:
    """Put the bundle of stage ``name`` with ``args`` into the active store, unless the
    store already has the stage finished or ``folder`` holds no such bundle (then None)."""
    import mlflow

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
    tags = {
        STAGE_TAG: name, KEY_TAG: key, STUDY_TAG: record.get("study", ""), ADOPTED_TAG: str(path),
        ORIGIN_TAG: str(record.get("key") or key),
    }  # fmt: skip
    with mlflow.start_run(run_name=name, tags=tags) as run:
        mlflow.log_dict(dict(args), "stage_args.json")
        if record.get("run_tags"):
            mlflow.set_tags(record["run_tags"])
        if record.get("params"):
            mlflow.log_params(record["params"])
        if record.get("metrics"):
            mlflow.log_metrics(record["metrics"])
        if (path / MODEL_DIR).is_dir():
            outputs["model_uri"] = _adopt_model(path, record)
            from .bundle_cache import adopt_entries

            adopt_entries(path, outputs["model_uri"])  # the teacher's soft labels, under the new identity
        for file in sorted((path / ARTIFACT_DIR).rglob("*")):
            if file.is_file():
                folder_in_run = file.parent.relative_to(path / ARTIFACT_DIR).as_posix()
                mlflow.log_artifact(str(file), artifact_path=None if folder_in_run == "." else folder_in_run)
        for out_key in ("teacher_run_id", "run_id", "student_run_id"):
            if out_key in outputs:
                outputs[out_key] = run.info.run_id
        mlflow.set_tags({OUT_PREFIX + k: str(v) for k, v in outputs.items()})
    logger.info("stage %s adopted from %s as run %s", name, path, run.info.run_id)
    return StageResult(name, key, run.info.run_id, outputs, skipped=True)


def _adopt_model(path: Path, record: Mapping[str, Any]) -> str:
    """Log (and register) the bundle's model in the active run; returns its URI."""
    from ..models.pyfunc import log_code_classifier

    info = log_code_classifier(
        path / MODEL_DIR,
        registered_model_name=record.get("registered_name"),
        code_columns=record.get("code_columns") or None,
        tags=record.get("model_tags") or None,
    )
    if record.get("registered_name"):
        return f"models:/{record['registered_name']}/{info.registered_model_version}"
    return str(info.model_uri)


def carried(
    name: str,
    args: Mapping[str, Any],
    folder: str | Path | None,
    run: Callable[[], StageResult],
    *,
    model: bool = True,
    artifacts: Sequence[str] = (),
) -> StageResult:
    """Run the stage ``run`` (``name`` with ``args``) between :func:`adopt` and
    :func:`export`: a bundle in ``folder`` stands for the run, and the finished stage is
    bundled there (nothing is carried when ``folder`` is None)."""
    if folder is not None:
        adopt(name, args, folder)
    result = run()
    if folder is not None:
        export(result, args, folder, model=model, artifacts=artifacts)
    return result
