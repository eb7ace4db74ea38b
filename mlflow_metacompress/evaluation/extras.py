"""``extra_metrics`` and ``custom_artifacts`` of ``mlflow.models.evaluate``, honoured on the
student's predictions as MLflow's default evaluator does.

MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476) judges the student against its teacher;
a user's own metric of the student alone (``mlflow.models.make_metric``) runs beside it.
Both see the *original* rows in data order (not transformed or adversarial variants):

- ``predictions``: the student's predicted class, a name of the evaluation's classes
  (the ``teacher_prob_<class>`` names), as a ``pandas.Series``;
- ``targets``: the label as the same class name (absent without labels: a metric that
  requires it is refused by name);
- ``metrics``: every metacompress metric, as ``{name: MetricValue(aggregate_results={name: value})}``;
- any other parameter name: the data column of that name.

An ``eval_fn`` with two parameters not named ``predictions, targets`` gets MLflow's older
``(eval_df, builtin_metrics)``. A float result is logged as ``<name>``, a ``MetricValue`` as
``<name>/<aggregation>`` for each of its aggregate results (``metric_prefix`` first). A
custom artifact function is called as ``fn(eval_df, metrics, artifacts_dir)`` and returns
``{name: object}``: a path to a file, a ``pandas.DataFrame`` (logged as JSON), a
JSON-serialisable value, a NumPy array (``.npy``) or a matplotlib figure (``.png``); each is
logged at the run's root, as MLflow's default evaluator logs them.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..adapters.checks import MetaCompressInputError

logger = logging.getLogger(__name__)


def eval_frame(per_sample: pd.DataFrame, classes: Sequence[str]) -> pd.DataFrame:
    """``prediction`` (and ``target``) of the original rows, in data order, as class names."""
    orig = per_sample[per_sample["variant"] == "original"].sort_values("row", kind="stable")
    names = np.asarray(list(classes), dtype=object)
    out = pd.DataFrame({"prediction": names[orig["student_pred"].to_numpy(dtype=np.int64)]})
    if "label" in orig:
        out["target"] = names[orig["label"].to_numpy(dtype=np.int64)]
    return out


def _arguments(fn: Any, name: str, frame: pd.DataFrame, data: pd.DataFrame, metrics: Mapping[str, float]) -> list[Any]:
    from mlflow.metrics.base import MetricValue

    params = inspect.signature(fn).parameters
    keys = list(params)
    if len(keys) == 2 and keys[0] != "predictions" and keys[1] != "targets":
        return [frame.copy(), dict(metrics)]
    args: list[Any] = []
    for key, param in params.items():
        if key == "predictions":
            args.append(frame["prediction"].copy())
        elif key == "targets" and "target" in frame:
            args.append(frame["target"].copy())
        elif key == "metrics":
            args.append({k: MetricValue(aggregate_results={k: v}) for k, v in metrics.items()})
        elif key in data.columns:
            args.append(data[key].reset_index(drop=True).copy())
        elif param.default is not inspect.Parameter.empty:
            args.append(param.default)
        else:
            raise MetaCompressInputError(
                f"extra_metrics: metric {name!r} needs {key!r}, which the metacompress evaluator cannot provide "
                "(it passes predictions, targets when labels are given, metrics and the data's columns)"
            )
    return args


def extra_metric_values(
    extra_metrics: Any, frame: pd.DataFrame, data: pd.DataFrame, metrics: Mapping[str, float], prefix: str = ""
) -> dict[str, float]:
    """Each ``EvaluationMetric``'s value(s) on the student's predictions (module docstring)."""
    from mlflow.metrics.base import MetricValue
    from mlflow.models.evaluation import EvaluationMetric

    out: dict[str, float] = {}
    for index, metric in enumerate(extra_metrics or ()):
        if not isinstance(metric, EvaluationMetric):
            raise MetaCompressInputError(
                f"extra_metrics[{index}] must be an mlflow.models.EvaluationMetric (mlflow.models.make_metric), "
                f"got {type(metric).__name__}"
            )
        value = metric.eval_fn(*_arguments(metric.eval_fn, metric.name, frame, data, metrics))
        values: dict[str, Any]
        if isinstance(value, MetricValue):
            values = {f"{metric.name}/{k}": v for k, v in (value.aggregate_results or {}).items()}
        elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            values = {metric.name: value}
        else:
            logger.warning("extra metric %r returned %r, not a number or MetricValue: not logged", metric.name, value)
            continue
        for key, v in values.items():
            if f"{prefix}{key}" in metrics or f"{prefix}{key}" in out:
                raise MetaCompressInputError(f"extra_metrics: {key!r} is already a metric of this evaluation")
            if v is not None and not math.isnan(float(v)):
                out[f"{prefix}{key}"] = float(v)
    return out


def _write(name: str, value: Any, folder: Path) -> Path:
    """The file that holds custom artifact ``value`` (a copy of a path's file is not made)."""
    if isinstance(value, (str, Path)) and Path(value).is_file():
        return Path(value)
    if isinstance(value, pd.DataFrame):
        path = folder / f"{name}.json"
        value.to_json(path, orient="split", index=False)
        return path
    if isinstance(value, np.ndarray):
        path = folder / f"{name}.npy"
        np.save(path, value, allow_pickle=False)
        return path
    if hasattr(value, "savefig"):
        path = folder / f"{name}.png"
        value.savefig(path)
        return path
    path = folder / f"{name}.json"
    try:
        path.write_text(json.dumps(value), encoding="utf-8")
    except TypeError:
        raise MetaCompressInputError(
            f"custom_artifacts: artifact {name!r} is a {type(value).__name__}; return a file path, a DataFrame, "
            "a NumPy array, a matplotlib figure or a JSON-serialisable value"
        ) from None
    return path


def log_custom_artifacts(
    custom_artifacts: Any, run_id: str, frame: pd.DataFrame, metrics: Mapping[str, float]
) -> dict[str, Any]:
    """Call each custom artifact function, log what it returns at the run's root and return
    ``{name: EvaluationArtifact}`` (module docstring)."""
    from mlflow.models.evaluation import artifacts as mlflow_artifacts
    from mlflow.models.evaluation.base import EvaluationArtifact
    from mlflow.tracking import MlflowClient

    kinds: dict[str, Callable[..., EvaluationArtifact]] = {
        ".json": mlflow_artifacts.JsonEvaluationArtifact,
        ".png": mlflow_artifacts.ImageEvaluationArtifact,
        ".npy": mlflow_artifacts.NumpyEvaluationArtifact,
        ".csv": mlflow_artifacts.CsvEvaluationArtifact,
        ".parquet": mlflow_artifacts.ParquetEvaluationArtifact,
    }
    client = MlflowClient()
    root = client.get_run(run_id).info.artifact_uri.rstrip("/")
    out: dict[str, Any] = {}
    for index, fn in enumerate(custom_artifacts or ()):
        if not callable(fn):
            raise MetaCompressInputError(f"custom_artifacts[{index}] must be a function, got {type(fn).__name__}")
        with tempfile.TemporaryDirectory() as tmp:
            produced = fn(frame.copy(), copy.deepcopy(dict(metrics)), tmp)
            if produced is None:
                logger.warning("custom artifact function %r returned None", getattr(fn, "__name__", index))
                continue
            if not isinstance(produced, Mapping) or not all(isinstance(k, str) for k in produced):
                raise MetaCompressInputError(
                    f"custom_artifacts[{index}] must return a dict of artifact names to objects, got "
                    f"{type(produced).__name__}"
                )
            for name, value in produced.items():
                path = _write(name, value, Path(tmp))
                client.log_artifact(run_id, str(path))
                kind = kinds.get(path.suffix, mlflow_artifacts.TextEvaluationArtifact)
                out[name] = kind(uri=f"{root}/{path.name}")
    return out
