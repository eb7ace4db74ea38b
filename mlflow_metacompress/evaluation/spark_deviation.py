"""The deviation search on Spark executors (``engine="spark"`` with ``evaluator_config["deviation"]``).

A row's search (DFLARE's Metropolis–Hastings over equivalent rewrites, Tian et al., TOSEM
2023; DiffChaser, Xie et al., ASE 2019, searches the same teacher–student disagreements)
queries both models interactively, so a row is never split; the *rows* are split instead.
One ``mapInPandas`` job: every partition loads the teacher and the student once (copies the
driver downloaded and shipped with ``SparkContext.addFile``, as :mod:`.spark_attacks` does)
and runs :func:`~mlflow_metacompress.attacks.deviation.api.find_deviations` on its rows.

The records equal the local engine's row for row: a row's search depends on that row only
(its generator is seeded by the row's position, its budget counts its own distinct variants,
and the identifier vocabulary is mined from *all* the rows, broadcast to every executor), and
each partition verifies its own deviations by re-querying both models. What a partition cannot
share is the query cache, so the rows the models run add up to at least the driver's; a model
whose probabilities depend on batch composition (padding) may differ in the last bits.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .config_model import EvaluatorConfig
    from .deviation_search import DeviationFigures
    from .deviation_settings import DeviationSettings

logger = logging.getLogger(__name__)

POS = "_mc_pos"
SCHEMA = "position long, record string"


def _deviation_partition(
    batches: Iterator[pd.DataFrame],
    shipped: Any,
    model_dirs: dict[str, str],
    classes: list[str] | None,
    options: dict[str, Any],
) -> Iterator[pd.DataFrame]:
    """Runs on an executor: load both models once, then search this partition's rows."""
    from pyspark import SparkFiles

    from mlflow_metacompress.adapters.predictors import resolve_model
    from mlflow_metacompress.attacks.deviation.api import find_deviations
    from mlflow_metacompress.evaluation.pair import attack_victim

    positions = [int(p) for batch in batches for p in batch[POS]]
    if not positions:
        return
    frame, code_columns, language = shipped.value
    root = SparkFiles.getRootDirectory()
    predict = {
        role: attack_victim(
            resolve_model(
                os.path.join(root, folder), role, cache_dir=None, batch_size=options["batch_size"], progress=False
            ),
            code_columns,
            classes,
        )
        for role, folder in model_dirs.items()
    }
    records = find_deviations(
        predict["teacher"],
        predict["student"],
        frame,
        code_columns,
        language,
        queries=options["queries"],
        search=options["search"],
        seed=options["seed"],
        batch=options["batch"],
        depth=options["depth"],
        operators=options["operators"],
        positions=positions,
    )
    yield pd.DataFrame(
        {"position": np.asarray(positions, dtype=np.int64), "record": [json.dumps(asdict(r)) for r in records]}
    )


def spark_deviation_figures(
    frame: pd.DataFrame,
    cfg: EvaluatorConfig,
    settings: DeviationSettings,
    classes: list[str] | None,
    uris: dict[str, str],
) -> DeviationFigures:
    """The deviation figures of ``frame``'s rows, searched on the active session's executors
    (``uris``: role → model URI for ``teacher`` and ``student``)."""
    from ..attacks.deviation.api import Deviation
    from .deviation_search import DeviationFigures
    from .spark_attacks import _ship_model
    from .spark_session import active_session

    spark = active_session()
    code_columns = list(cfg.code_columns or ())
    shipped = spark.sparkContext.broadcast((frame.reset_index(drop=True), code_columns, cfg.language))
    options = {
        "queries": settings.queries,
        "search": settings.search,
        "seed": settings.seed_or(cfg.seed),
        "batch": settings.batch,
        "depth": settings.depth,
        "operators": settings.operators,
        "batch_size": cfg.batch_size,
    }
    sdf = spark.createDataFrame(pd.DataFrame({POS: np.arange(len(frame), dtype=np.int64)}))
    try:
        with (
            tempfile.TemporaryDirectory(prefix="mc-dev-t-") as t_root,
            tempfile.TemporaryDirectory(prefix="mc-dev-s-") as s_root,
        ):  # unique names: addFile refuses a name twice
            dirs = {
                "teacher": _ship_model(spark, uris["teacher"], t_root),
                "student": _ship_model(spark, uris["student"], s_root),
            }
            fn = functools.partial(
                _deviation_partition, shipped=shipped, model_dirs=dirs, classes=classes, options=options
            )
            got = sdf.mapInPandas(fn, schema=SCHEMA).toPandas().sort_values("position")
    finally:
        shipped.unpersist()
    if not np.array_equal(got["position"].to_numpy(), np.arange(len(frame))):
        raise RuntimeError(f"the spark deviation search returned {len(got)} records for {len(frame)} rows")
    records = tuple(Deviation(**json.loads(r)) for r in got["record"])
    logger.info("deviation search on spark (%d partitions)", sdf.rdd.getNumPartitions())
    names = list(classes) if classes else None
    k = len(records[0].teacher_probs or []) if records and records[0].teacher_probs else 0
    return DeviationFigures(records, names or [str(j) for j in range(k)], settings)
