"""``MetaCompressEvaluator``: the ``metacompress`` MLflow evaluator plugin.

Implements the testing procedure of MetaCompress (Awal, Rochan, Roy, arXiv 2511.05476):
the teacher is the oracle, and the student is judged by four metamorphic relations
(MR1 prediction agreement, MR2 distribution similarity, MR3 high-confidence
preservation, MR4 calibration alignment) on original, transformed and adversarial code.

    mlflow.models.evaluate(model="models:/vuln-student@candidate", data=df, targets="target",
        model_type="metacompress", evaluators="metacompress",
        evaluator_config={"teacher": "models:/vuln-teacher@champion", "code_columns": ["func"]})
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow.models.evaluation.base import EvaluationArtifact, EvaluationResult, ModelEvaluator

from ..artifact_names import ARTIFACT_DIR

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig
    from .loop import EvaluationOutcome

logger = logging.getLogger(__name__)


class CacheUnwritableWarning(UserWarning):
    """The prediction cache folder cannot be written: this evaluation's predictions are not cached."""


def warn_if_unwritable(folder: Path) -> bool:
    """Warn (a :class:`CacheUnwritableWarning`, which Python prints on stderr whatever the logging
    setup) when the prediction cache folder ``folder`` cannot be created or written, before any
    model runs; True when it can. The evaluation still runs: entries already there are read, new
    predictions are not kept (each failed write is also logged by :func:`~..cache.store`)."""
    import os

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".metacompress-write-check.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        import warnings

        warnings.warn(
            f"the prediction cache folder {folder} cannot be written ({exc.strerror or exc}); this evaluation "
            "runs without caching new predictions. Set evaluator_config cache_dir or $MLFLOW_METACOMPRESS_CACHE "
            "to a writable folder, or use_cache: false to turn the cache off",
            CacheUnwritableWarning,
            stacklevel=2,
        )
        return False
    return True


class MetaCompressEvaluator(ModelEvaluator):
    """Compare a student (``model``) with ``evaluator_config["teacher"]``."""

    name = "metacompress"

    @classmethod
    def can_evaluate(cls, *, model_type: str, evaluator_config: dict[str, Any] | None, **kwargs: Any) -> bool:
        if model_type == "metacompress":
            return True
        return model_type == "classifier" and bool((evaluator_config or {}).get("teacher"))

    def evaluate(self, *, evaluator_config: dict[str, Any] | None, **kwargs: Any) -> EvaluationResult:
        """The evaluation, with ``evaluator_config["precision"]`` scoped around every model load
        and query (:func:`mlflow_metacompress.precision.scoped`), checked first: a bad value fails
        naming the key, before anything loads or logs."""
        from ..precision import scoped
        from .config_checks import check_precision

        value = (evaluator_config or {}).get("precision")
        check_precision(value)
        with scoped(value, source="evaluator_config['precision']"):
            return self._evaluate(evaluator_config=evaluator_config, **kwargs)

    def _evaluate(
        self,
        *,
        model_type: str,
        dataset: Any,
        run_id: str,
        evaluator_config: dict[str, Any] | None,
        model: Any = None,
        extra_metrics: Any = None,
        custom_artifacts: Any = None,
        predictions: Any = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        from ..adapters.checks import encode_labels
        from ..adapters.predictors import resolve_model
        from .config import parse_config
        from .engines import get_engine
        from .loop import run_evaluation
        from .trained import resolve as resolve_trained
        from .validation import check_nonempty

        df = dataset.features_data
        y = dataset.labels_data
        check_nonempty(df)
        cfg = parse_config(evaluator_config, df, model_given=model is not None, labels_given=y is not None)
        cfg = resolve_trained(cfg, model)  # "auto": the rewrites the student's run says it trained on
        engine = get_engine(cfg)  # chosen once: local, or spark (only the chosen engine's module is imported)
        engine.bind(cfg, model, kwargs.get("model_id"))  # before any model loads
        teacher = student = reference = None
        if not cfg.static:
            cache_dir = cfg.cache_path
            if cache_dir is not None:
                warn_if_unwritable(cache_dir)
            kw = dict(cache_dir=cache_dir, batch_size=cfg.batch_size, progress=cfg.progress)
            teacher = resolve_model(cfg.teacher, "teacher", cfg.inference, **kw)
            student = resolve_model(model, "student", cfg.inference, **kw)
            if cfg.reference is not None:  # issue 42: a retrained teacher, judged on the student's rows
                reference = resolve_model(cfg.reference, "reference", cfg.inference, **kw)
            if y is not None and teacher.classes is not None:  # labels checked before any model runs
                encode_labels(y, teacher.classes, len(teacher.classes), index_labels=teacher.index_labels)
        outcome = run_evaluation(df, y, cfg, teacher, student, engine, reference)
        prefix = cfg.metric_prefix or ""
        metrics = {f"{prefix}{k}": float(v) for k, v in outcome.metrics.items() if not math.isnan(float(v))}
        frame = None
        if extra_metrics or custom_artifacts:  # the student's predictions, as MLflow's default evaluator (extras.py)
            from .extras import eval_frame, extra_metric_values

            frame = eval_frame(outcome.per_sample, outcome.classes)
            metrics.update(extra_metric_values(extra_metrics, frame, df, metrics, prefix))
        from ..report.provenance import at_evaluation

        provenance = at_evaluation(cfg, model, dataset, kwargs.get("model_id"), run_id)
        artifacts = self._log(run_id, metrics, outcome, cfg, provenance)
        if frame is not None and custom_artifacts:
            from .extras import log_custom_artifacts

            artifacts.update(log_custom_artifacts(custom_artifacts, run_id, frame, metrics))
        tag_precision(run_id, teacher, student)
        return EvaluationResult(metrics=metrics, artifacts=artifacts, run_id=run_id)

    @staticmethod
    def _log(
        run_id: str,
        metrics: dict[str, float],
        outcome: EvaluationOutcome,
        cfg: EvaluatorConfig,
        provenance: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write artifacts, then log every metric in batches and the artifact folder. The
        report reads ``outcome`` and ``cfg`` through its own contract
        (:mod:`mlflow_metacompress.report.contract`), which they satisfy structurally."""
        import time

        from mlflow.entities import Metric
        from mlflow.models.evaluation import artifacts as mlflow_artifacts  # imports matplotlib: keep lazy
        from mlflow.tracking import MlflowClient

        from ..report.render import write_evaluation_report
        from .artifacts import write_artifacts

        client = MlflowClient()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / ARTIFACT_DIR
            written = write_artifacts(outcome, cfg, out)
            written += write_evaluation_report(outcome, cfg, out, provenance or {})  # report.html (issue 14)
            now = int(time.time() * 1000)
            items = [Metric(k, v, now, 0) for k, v in sorted(metrics.items())]
            for start in range(0, len(items), 1000):
                client.log_batch(run_id, metrics=items[start : start + 1000], synchronous=True)
            client.log_artifacts(run_id, str(out), ARTIFACT_DIR)
        if "speed_threads" in outcome.notes:  # the thread count student_speedup was measured on
            client.set_tag(run_id, "metacompress.speed_threads", str(outcome.notes["speed_threads"]))
        root = client.get_run(run_id).info.artifact_uri.rstrip("/")
        artifacts = {}
        for rel in written:
            key = rel.rsplit(".", 1)[0].replace("/", "_")
            kinds: dict[str, Callable[..., EvaluationArtifact]] = {
                ".json": mlflow_artifacts.JsonEvaluationArtifact,
                ".png": mlflow_artifacts.ImageEvaluationArtifact,
                ".parquet": mlflow_artifacts.ParquetEvaluationArtifact,
                ".csv": mlflow_artifacts.CsvEvaluationArtifact,
                ".html": mlflow_artifacts.TextEvaluationArtifact,
            }
            artifacts[key] = kinds[Path(rel).suffix](uri=f"{root}/{ARTIFACT_DIR}/{rel}")
        return artifacts


def tag_precision(run_id: str, *predictors: Any) -> dict[str, str]:
    """Tag the run with ``metacompress.precision.<teacher|student>``: the inference precision
    (``fp32``/``bf16``, :mod:`mlflow_metacompress.precision`) each metacompress
    ``CodeClassifier`` ran in; other models (sklearn, transformers, callables) get no tag."""
    from mlflow.tracking import MlflowClient

    tags = {f"metacompress.precision.{p.name}": p.precision for p in predictors if p is not None and p.precision}
    client = MlflowClient()
    for key, value in tags.items():
        client.set_tag(run_id, key, value)
    return tags
