"""Where an evaluation's numbers come from: the teacher's and the student's URIs and
registered versions, the run, the data's digest and the package versions.

:func:`at_evaluation` records it while the evaluator logs (``metacompress/provenance.json``:
an alias such as ``@champion`` is resolved to the version it pointed at *then*);
:func:`from_run_record` completes it from the run (tags, dataset inputs) when the report is
rebuilt, also for runs logged before ``provenance.json`` existed.
"""

from __future__ import annotations

import logging
import platform
import re
from datetime import datetime, timezone
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .contract import EvaluationSettings

logger = logging.getLogger(__name__)

PACKAGES = ("mlflow-metacompress", "mlflow", "numpy", "pandas", "scikit-learn", "torch", "transformers", "tree-sitter")
# tags the gate and the pipeline set on an evaluation run: the student's registered URI
STUDENT_TAGS = ("metacompress.gate_model", "metacompress.model")
TEACHER_TAG = "metacompress.teacher"
_MODELS_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:/(?P<version>[^/]+)|@(?P<alias>[^/]+))$")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages behind the numbers (absent ones left out), and Python's."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def registered_version(uri: Any) -> str | None:
    """The registry version a ``models:/name/<version|latest>`` or ``models:/name@alias`` URI
    points at now; None for other URIs or when the registry cannot tell."""
    match = _MODELS_URI.match(uri) if isinstance(uri, str) else None
    if match is None:
        return None
    try:
        from mlflow import MlflowClient

        client = MlflowClient()
        name, version, alias = match["name"], match["version"], match["alias"]
        if alias:
            return str(client.get_model_version_by_alias(name, alias).version)
        if version == "latest":
            versions = client.search_model_versions(f"name='{name}'")
            return str(max(int(v.version) for v in versions)) if versions else None
        return str(int(version))
    except Exception as exc:  # provenance is best effort: the report must not fail the evaluation
        logger.info("cannot resolve the version of %s: %s", uri, exc)
        return None


def _describe(model: Any) -> str | None:
    if model is None:
        return None
    if isinstance(model, str):
        return model
    meta = getattr(model, "metadata", None)
    run_id, path = getattr(meta, "run_id", None), getattr(meta, "artifact_path", None)
    if run_id and path:
        return f"runs:/{run_id}/{path}"
    return f"<{type(model).__name__}>"


def data_digest(features: Any, labels: Any, columns: Any = None) -> str | None:
    """A digest of the evaluation data: the feature ``columns`` (None: every column), in the
    frame's order, and the labels. Two students evaluated on the same rows share it.

    :func:`digest_columns` chooses the columns: in static mode the code columns and the
    teacher's probabilities, never a student's, so students whose probabilities sit side by
    side in one frame are comparable."""
    import hashlib

    import numpy as np
    import pandas as pd

    if not isinstance(features, pd.DataFrame):
        return None
    frame = features
    if columns is not None:
        wanted = {str(c) for c in columns}
        frame = features[[c for c in features.columns if str(c) in wanted]]
    frame = frame.reset_index(drop=True)
    h = hashlib.sha256(",".join(map(str, frame.columns)).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    if labels is not None:
        h.update(pd.util.hash_array(np.asarray(labels).astype(str)).tobytes())
    return h.hexdigest()[:16]


def digest_columns(cfg: EvaluationSettings) -> list[str] | None:
    """The feature columns :func:`data_digest` covers: every column in model mode (the teacher
    is identified by its URI); in static mode the code columns and the teacher's probability
    columns, so the student's own probabilities and any other student's in the same frame
    are left out. For a frame holding only code, teacher and student columns this is the
    digest earlier versions logged (every column but the student's)."""
    if not cfg.static:
        return None
    return [*(cfg.code_columns or ()), *(cfg.teacher_prob_columns or ())]


def at_evaluation(
    cfg: EvaluationSettings, model: Any, dataset: Any, model_id: str | None, run_id: str
) -> dict[str, Any]:
    """The provenance of an evaluation as it is logged (nothing here fails the evaluation)."""
    from mlflow import MlflowClient

    tags: dict[str, str] = {}
    try:
        tags = dict(MlflowClient().get_run(run_id).data.tags)
    except Exception as exc:
        logger.info("cannot read the tags of run %s: %s", run_id, exc)
    student = next((tags[t] for t in STUDENT_TAGS if tags.get(t)), None)
    if student is None and model_id:
        student = f"models:/{model_id}"
    student = student or _describe(model)
    teacher = (
        cfg.teacher
        if isinstance(cfg.teacher, str)
        else (f"<{type(cfg.teacher).__name__}>" if cfg.teacher is not None else None)
    )
    features = getattr(dataset, "features_data", None)
    return {
        "run_id": run_id,
        "teacher_uri": teacher,
        "teacher_version": registered_version(teacher),
        "student_uri": student,
        "student_version": registered_version(student),
        "student_model_id": model_id,
        "data_name": getattr(dataset, "name", None),
        "mlflow_dataset_digest": getattr(dataset, "digest", None),
        "data_digest": data_digest(features, getattr(dataset, "labels_data", None), digest_columns(cfg)),
        "data_rows": None if features is None else int(len(features)),
        "mode": "static" if cfg.static else "model",
        "evaluated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "packages": package_versions(),
    }


def from_run_record(run: Any, summary: dict[str, Any], logged: dict[str, Any]) -> dict[str, Any]:
    """``logged`` (``provenance.json``) completed from the run: its id, name, experiment,
    tags and dataset inputs, and the teacher named in ``summary.json``'s config."""
    tags = dict(run.data.tags)
    out = dict(logged)
    out["run_id"] = run.info.run_id
    out["run_name"] = run.info.run_name
    out["experiment_id"] = run.info.experiment_id
    if not out.get("teacher_uri"):
        out["teacher_uri"] = (summary.get("config") or {}).get("teacher") or tags.get(TEACHER_TAG)
    if not out.get("student_uri"):
        out["student_uri"] = next((tags[t] for t in STUDENT_TAGS if tags.get(t)), None)
        models = getattr(run.inputs, "model_inputs", None) or []
        if out["student_uri"] is None and models:
            out["student_uri"] = f"models:/{models[0].model_id}"
    if not out.get("data_digest"):
        inputs = getattr(run.inputs, "dataset_inputs", None) or []
        if inputs:
            out["data_digest"], out["data_name"] = inputs[-1].dataset.digest, inputs[-1].dataset.name
    out.setdefault("mode", "static" if (summary.get("config") or {}).get("teacher_prob_columns") else "model")
    return out


_RUNS_URI = re.compile(r"^runs:/(?P<run>[0-9a-f]{8,})/(?P<path>.+)$")
_MODEL_ID_URI = re.compile(r"^models:/(?P<id>m-[0-9a-f]{8,})$")
LABEL_LIMIT = 48


def short_label(uri: Any, version: Any = None, fallback: str = "student") -> str:
    """A model's short name for a column header (the full URI goes on hover and in the
    provenance): ``models:/name/3`` → ``name v3``; ``models:/name@alias`` → ``name@alias``
    (``name v3`` when the version it pointed at is known); ``models:/m-<id>`` → ``model m-1234abcd``;
    ``runs:/<run id>/path`` → ``run 1234abcd · path``; other URIs end-trimmed to 48 characters."""
    if not isinstance(uri, str) or not uri or uri.startswith("<"):
        return fallback
    match = _MODELS_URI.match(uri)
    if match is not None:
        if match["version"] and match["version"] != "latest":
            return f"{match['name']} v{match['version']}"
        if version:
            return f"{match['name']} v{version}"
        return f"{match['name']}@{match['alias']}" if match["alias"] else f"{match['name']} latest"
    found = _MODEL_ID_URI.match(uri)
    if found is not None:
        return f"model {found['id'][:10]}"
    found = _RUNS_URI.match(uri)
    if found is not None:
        return f"run {found['run'][:8]} · {found['path']}"
    return uri if len(uri) <= LABEL_LIMIT else "…" + uri[-(LABEL_LIMIT - 1) :]


def teacher_identity(provenance: dict[str, Any]) -> str:
    """The teacher as compared across runs: its URI, pinned to the version it resolved to
    (static mode: the teacher's probabilities are part of the data, checked by its digest)."""
    uri, version = provenance.get("teacher_uri"), provenance.get("teacher_version")
    if uri is None and provenance.get("mode") == "static":
        return "teacher probabilities in the data (static mode)"
    match = _MODELS_URI.match(uri) if isinstance(uri, str) else None
    if match is not None and version:
        return f"models:/{match['name']}/{version}"
    return str(uri)
