"""The spark engine (``evaluator_config={"engine": "spark"}``): inference and transformations
on a SparkSession, relations and artifacts shared with the local engine.

:class:`SparkEngine` is this engine behind the one engine interface
(:class:`~.engines.Engine`): :func:`~.engines.get_engine` imports this module only when
the configuration chooses ``spark``, and the evaluation loop never asks which engine runs.

What runs where:

- **executors**: the semantics-preserving transformations (``mapInPandas``,
  :mod:`.spark_transforms`) and every model's inference through
  ``mlflow.pyfunc.spark_udf(spark, model_uri, result_type="array<double>")``, one pass per
  model over the originals and every transformed variant together;
- **driver**: the relations of MetaCompress (arXiv 2511.05476) on the collected per-sample
  probabilities, the statistics, the artifacts, and the attacks (their searches query the
  victim interactively, so they stay on the driver's local pyfunc, as in the local engine),
  unless ``attack_engine="spark"`` splits the attacked samples across the executors
  (:mod:`.spark_attacks`: one model load per partition, the same results and query counts);
- **executors, row by row**: the teacher–student deviation search (``evaluator_config["deviation"]``,
  :mod:`.spark_deviation`: rows split across partitions, both models loaded once per partition,
  the local engine's records).

The collect limit: per model the driver collects ``rows × (1 + transforms) × classes``
doubles (BigCloneBench's 415,416 test pairs × 11 × 2 classes ≈ 73 MB), which is fine up to
tens of millions of rows. What binds first is the rewritten code: the per-sample table logs
it, so every changed sample's code comes back from ``mapInPandas`` and goes out again to
``spark_udf`` (≈ 2 KB per Devign function, so 1M functions × 10 transformations ≈ 12 GB).
Spark's default ``spark.driver.maxResultSize`` (1 GB) stops that at roughly 50,000 samples
with all ten transformations; raise it with the driver's memory, or evaluate in chunks.

Predictions pass through the same cache as the local engine (:mod:`mlflow_metacompress.adapters.predictors`), keyed
by model identity and a digest of the rows, so a second student against the same teacher
reads the teacher's predictions instead of running it again. The engine hands the loop a
:class:`~.predictions.PredictionTable` of the original and every transformed variant
(:meth:`SparkEngine.predicted`), which the loop's predict step reads instead of running
the models, and judges exactly as the local engine does.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import cache_keys
from ..adapters.checks import MetaCompressInputError, check_probabilities
from ..adapters.predictors import KIND
from ..cache_keys import rows_digest

if TYPE_CHECKING:
    from ..adapters.predictors import Predictor
    from ..attacks.results import AttackReport
    from .config_model import EvaluatorConfig
    from .predictions import PredictionTable
    from .variant_types import VariantSet, VariantSource

logger = logging.getLogger(__name__)

SUPPORTED = "a models:/ or runs:/ model URI (or the student MLflow loaded from one)"
PART, POS = "_mc_part", "_mc_pos"


def teacher_uri(teacher: Any) -> str:
    """The teacher's URI for ``spark_udf``; a loaded model or a callable has none to ship."""
    if isinstance(teacher, str) and teacher.startswith(("models:/", "runs:/")):
        return teacher
    kind = "a loaded PyFuncModel" if hasattr(teacher, "metadata") else f"a {type(teacher).__name__}"
    raise MetaCompressInputError(
        "the spark engine runs models through mlflow.pyfunc.spark_udf, which needs a model URI; the teacher is "
        f"{kind}. Supported kinds: models:/<name>/<version>, models:/<name>@<alias>, models:/<model_id>, "
        "runs:/<run_id>/<path>"
    )


def student_uri(model: Any, model_id: str | None = None) -> str:
    """The student's URI: MLflow hands the evaluator a loaded model, so it is rebuilt from the
    model id (``models:/<model_id>``) or the run and artifact path its MLmodel records."""
    if isinstance(model, str) and model.startswith(("models:/", "runs:/")):
        return model
    meta = getattr(model, "metadata", None)
    model_id = model_id or getattr(meta, "model_id", None)
    if model_id:
        return f"models:/{model_id}"
    run_id, path = getattr(meta, "run_id", None), getattr(meta, "artifact_path", None)
    if run_id and path:
        return f"runs:/{run_id}/{path}"
    kind = "a callable" if meta is None else "a PyFuncModel without a run or model id"
    raise MetaCompressInputError(
        "the spark engine runs models through mlflow.pyfunc.spark_udf, which needs a model URI; the student is "
        f"{kind}. Supported kinds: models:/<name>/<version>, models:/<name>@<alias>, models:/<model_id>, "
        "runs:/<run_id>/<path>"
    )


def _missing(predictor: Predictor, frame: pd.DataFrame, columns: list[str]) -> tuple[str, str] | None:
    """``(key, rows)`` when ``frame``'s predictions are neither in memory nor in the cache."""
    if predictor.identity is None:
        return "", rows_digest(frame, columns)
    rows = rows_digest(frame, columns)
    key = cache_keys.entry_key(KIND, predictor.identity, rows)
    if key in predictor._memory:
        return None
    cached = predictor._load(key, rows, len(frame))
    if cached is not None:
        logger.info("%s: %d predictions read from the cache", predictor.name, len(frame))
        predictor._memory[key] = cached
        return None
    return key, rows


def predict_frames(spark: Any, predictor: Predictor, uri: str, frames: list[pd.DataFrame], columns: list[str]) -> None:
    """Predict every frame not yet cached in one ``spark_udf`` pass and remember the results
    (memory and disk cache) under the keys :meth:`Predictor.predict` looks up."""
    import mlflow
    from pyspark.sql import functions as F

    todo = [(i, frame, found) for i, frame in enumerate(frames) if (found := _missing(predictor, frame, columns))]
    if not todo:
        return
    if predictor.identity is None:  # no cache key: Predictor.predict would run it again locally
        raise MetaCompressInputError(f"the spark engine cannot identify the {predictor.name} model {uri!r} for caching")
    classes = _probe_classes(predictor, todo[0][1], columns)
    parts = [f[columns].astype(str).assign(**{PART: i, POS: np.arange(len(f), dtype=np.int64)}) for i, f, _ in todo]
    sdf = spark.createDataFrame(pd.concat(parts, ignore_index=True))
    udf = mlflow.pyfunc.spark_udf(spark, uri, result_type="array<double>", env_manager="local")
    got = sdf.select(PART, POS, udf(F.struct(*[F.col(c) for c in columns])).alias("p")).toPandas()
    for i, frame, (key, rows) in todo:
        mine = got[got[PART] == i].sort_values(POS)
        if len(mine) != len(frame):
            raise RuntimeError(f"spark_udf returned {len(mine)} rows for {len(frame)} inputs of {predictor.name}")
        probs = check_probabilities(np.array(mine["p"].tolist(), dtype=np.float64), predictor.name, len(frame))
        result = (probs, classes)
        predictor._memory[key] = result
        predictor._store(key, rows, result)
        predictor.rows_run += len(frame)


def _probe_classes(predictor: Predictor, frame: pd.DataFrame, columns: list[str]) -> list[str] | None:
    """The class names the local engine would record: those the model's output names on one
    row (a DataFrame's columns, in the order spark_udf flattens them), else the declared ones."""
    _, names = predictor.uncached()._run(frame.head(1), columns)
    return names


def prepare(
    df: pd.DataFrame,
    cfg: EvaluatorConfig,
    teacher: Predictor,
    student: Predictor,
    uris: tuple[str, str],
    make_transformed: Callable[[], VariantSet],
) -> tuple[VariantSet, PredictionTable]:
    """The transformed variants (on the executors), then both models on the originals and
    every variant, one ``spark_udf`` pass per model; returns the transformed set and the
    table of both models' probabilities on the original and each transformed variant (the
    student's columns in the teacher's class order, as the local engine orders them)."""
    from .pair import ModelPair
    from .predictions import ORIGINAL, PredictionTable
    from .spark_session import active_session
    from .variants import original_variant

    spark = active_session()
    columns = list(cfg.code_columns or ())
    produced = make_transformed()
    original = original_variant(df, cfg.code_columns)
    variants = (original, *produced.variants)
    for predictor, uri in ((teacher, uris[0]), (student, uris[1])):
        predict_frames(spark, predictor, uri, [v.frame for v in variants], columns)
    pair = ModelPair(teacher, student, tuple(columns))  # every frame is in the predictors' memory now
    base, named = pair.predict(original.frame)
    k = base.teacher.shape[1]
    table = PredictionTable(len(df), named or [str(j) for j in range(k)], named=named is not None)
    table.add(ORIGINAL, original.positions, base)
    for variant in produced.variants:
        table.add(variant.name, variant.positions, pair.predict(variant.frame)[0])
    return produced, table


def _attacks_on_executors(
    frame: pd.DataFrame, labels: np.ndarray, cfg: EvaluatorConfig, classes: list[str] | None, uris: dict[str, str]
) -> Mapping[tuple[str, str], AttackReport]:
    """``attack_engine="spark"``: every attack's samples split across the executors."""
    from .spark_attacks import spark_attack_reports

    return spark_attack_reports(frame, labels, cfg, uris, classes)


class SparkEngine:
    """Transformations on the executors (``mapInPandas``), both models' inference through
    ``spark_udf`` over the originals and every variant at once, and with
    ``attack_engine="spark"`` the attacks on the executors too; the loop then reads those
    predictions from the engine's table and judges as the local engine does."""

    name = "spark"

    def __init__(self) -> None:
        self.uris: dict[str, str] | None = None  # role -> model URI, set by bind
        self.table: PredictionTable | None = None  # what sources() predicted, by variant name

    def bind(self, cfg: EvaluatorConfig, student: Any, model_id: str | None = None) -> None:
        """``spark_udf`` ships models by URI: both models must have one (a callable or a
        loaded model without a run or model id is refused, naming the supported kinds)."""
        self.uris = {"teacher": teacher_uri(cfg.teacher), "student": student_uri(student, model_id)}

    def session(self) -> AbstractContextManager[Any]:
        from .spark_session import session

        return session()

    def sources(
        self, df: pd.DataFrame, cfg: EvaluatorConfig, teacher: Predictor | None, student: Predictor | None
    ) -> tuple[VariantSource, ...]:
        """The transformed set computed here and now (executors), both models run over every
        variant; the attacks produced as the loop reaches them (on the executors with
        ``attack_engine="spark"``, else on the driver)."""
        if teacher is None or student is None or self.uris is None:
            raise MetaCompressInputError(
                "the spark engine runs models: it needs a teacher and a student, "
                "bound (SparkEngine.bind) before the loop"
            )
        from .spark_transforms import spark_column_transforms
        from .variant_types import SourceInputs
        from .variants import adversarial, transformed

        produced, self.table = prepare(
            df,
            cfg,
            teacher,
            student,
            (self.uris["teacher"], self.uris["student"]),
            lambda: transformed(SourceInputs(df, cfg, None, None), compute=spark_column_transforms),
        )
        reports = functools.partial(_attacks_on_executors, uris=self.uris) if cfg.attack_engine == "spark" else None
        from .deviation import deviations
        from .spark_deviation import spark_deviation_figures

        return (
            lambda inputs, models: produced,
            functools.partial(adversarial, attack_reports=reports),
            functools.partial(deviations, search=functools.partial(spark_deviation_figures, uris=self.uris)),
        )

    def predicted(self) -> PredictionTable | None:
        """Both models on the original and every transformed variant (set by :meth:`sources`);
        the attacks' variants, produced later, are predicted by the loop on the driver."""
        return self.table
