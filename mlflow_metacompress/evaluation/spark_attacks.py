"""Attacks on Spark executors (``evaluator_config={"engine": "spark", "attack_engine": "spark"}``).

Each attack's search queries the model interactively, one sample at a time, so a sample is
never split; the *samples* are split instead. One ``mapInPandas`` job per attacked model
(teacher, student): every partition loads that model once (``mlflow.pyfunc.load_model`` of a
copy the driver downloaded and shipped with ``SparkContext.addFile``), then runs every
configured attack over its share of the samples.

The results equal the driver's (:func:`~mlflow_metacompress.attacks.runner.run_attack`)
sample for sample, budgets and query counts included, because an attack's result depends on
its own sample only: the search's random generator is seeded by the sample's position, the
goal function counts each sample's distinct inputs whatever another sample already cached,
and every partition prepares the attack (its identifier vocabulary, CODA's references) from
the *whole* attacked data, broadcast to the executors. What a partition cannot share is the
query cache, so the rows the model runs (``forward_rows``) add up to at least the driver's.
Two caveats: a model whose probabilities depend on batch composition (padding) may differ in
the last bits from the driver's batches, and ``attack_mlm`` (ALERT's fill-mask model) must be
a path every executor can read.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..attacks.results import AttackReport
    from .config_model import EvaluatorConfig

logger = logging.getLogger(__name__)

POS = "_mc_pos"
SCHEMA = (
    "attack string, position long, status string, skip_reason string, queries long, requests long, "
    "adversarial_code string, renaming string, transformations string, label long, "
    "original_probs array<double>, adversarial_probs array<double>, forward_rows long, forward_seconds double, "
    "details string"
)


def _attack_partition(
    batches: Iterator[pd.DataFrame],
    shipped: Any,
    model_dir: str,
    role: str,
    classes: list[str] | None,
    attacks: list[str],
    options: dict[str, Any],
) -> Iterator[pd.DataFrame]:
    """Runs on an executor: load the model once, then every attack on this partition's samples."""
    from pyspark import SparkFiles

    from mlflow_metacompress.adapters.predictors import resolve_model
    from mlflow_metacompress.attacks.attack import AttackData
    from mlflow_metacompress.attacks.goal import QueryModel
    from mlflow_metacompress.attacks.recipes import ATTACKS
    from mlflow_metacompress.attacks.runner import attack_positions, victim_predict
    from mlflow_metacompress.evaluation.pair import attack_victim

    positions = [int(p) for batch in batches for p in batch[POS]]
    if not positions:
        return
    frame, labels, code_columns, language = shipped.value
    path = os.path.join(SparkFiles.getRootDirectory(), model_dir)
    predictor = resolve_model(
        path, role, cache_dir=None, batch_size=options["batch_size"], progress=False
    )  # loaded once
    victim = victim_predict(attack_victim(predictor, code_columns, classes), code_columns)  # as run_attack wraps it
    rows = [{c: str(r[c]) for c in code_columns} for r in frame[code_columns].to_dict("records")]
    data = AttackData(frame, code_columns, labels, language)
    for name in attacks:
        model = QueryModel(victim, code_columns)
        attack = ATTACKS[name](model, budget=options["budget"], seed=options["seed"], mlm=options["mlm"])
        model.probabilities([tuple(rows[p][c] for c in code_columns) for p in positions])  # one batched pass
        attack.prepare(data)  # from all the samples, as on the driver
        results = attack_positions(attack, data, positions, rows)
        out = pd.DataFrame(
            {
                "attack": name,
                "position": np.asarray(positions, dtype=np.int64),
                "status": [r.status.value for r in results],
                "skip_reason": [r.skip_reason for r in results],
                "queries": [int(r.queries) for r in results],
                "requests": [int(r.requests) for r in results],
                "adversarial_code": [r.adversarial_code for r in results],
                "renaming": [json.dumps(r.renaming) for r in results],
                "transformations": [json.dumps(r.transformations) for r in results],
                "label": [int(r.label) for r in results],
                "original_probs": [[float(p) for p in r.original_probs] for r in results],
                "adversarial_probs": [
                    None if r.adversarial_probs is None else [float(p) for p in r.adversarial_probs] for r in results
                ],
                "forward_rows": 0,
                "forward_seconds": 0.0,
                "details": json.dumps(attack.details),
            }
        )
        out.loc[len(out) - 1, ["forward_rows", "forward_seconds"]] = [model.forward_rows, model.forward_seconds]
        yield out


def _ship_model(spark: Any, uri: str, root: str) -> str:
    """Download ``uri`` on the driver into the fresh folder ``root``, added to the job's files;
    returns the model's path relative to ``SparkFiles.getRootDirectory()`` on every executor."""
    import mlflow

    local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=root)
    spark.sparkContext.addFile(root, recursive=True)
    return os.path.join(os.path.basename(root), os.path.relpath(local, root))


def _reports(
    got: pd.DataFrame, frame: pd.DataFrame, code_columns: list[str], attacks: list[str], wall: float
) -> dict[str, AttackReport]:
    """The collected rows as one :class:`AttackReport` per attack, samples in position order."""
    from ..attacks.results import AttackReport, AttackResult, AttackStatus

    reports = {}
    codes = frame[code_columns[0]].astype(str).to_numpy()
    index = frame.index.tolist()
    for name in attacks:
        mine = got[got["attack"] == name].sort_values("position")
        if not np.array_equal(mine["position"].to_numpy(), np.arange(len(frame))):
            raise RuntimeError(f"spark attack {name} returned {len(mine)} results for {len(frame)} samples")
        results = [
            AttackResult(
                index=index[int(r.position)],
                status=AttackStatus(r.status),
                queries=int(r.queries),
                original_code=codes[int(r.position)],
                adversarial_code=_text(r.adversarial_code),
                label=int(r.label),
                original_probs=np.asarray(r.original_probs, dtype=np.float64),
                adversarial_probs=None
                if r.adversarial_probs is None
                else np.asarray(r.adversarial_probs, dtype=np.float64),
                renaming=json.loads(r.renaming),
                transformations=json.loads(r.transformations),
                skip_reason=_text(r.skip_reason),
                requests=int(r.requests),
            )
            for r in mine.itertuples(index=False)
        ]
        reports[name] = AttackReport(
            name,
            results,
            code_columns,
            frame,
            forward_rows=int(mine["forward_rows"].sum()),
            forward_seconds=float(mine["forward_seconds"].sum()),
            wall_seconds=wall,
            details=json.loads(mine["details"].iloc[0]) if len(mine) else {},
        )
    return reports


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def spark_attack_reports(
    frame: pd.DataFrame, labels: np.ndarray, cfg: EvaluatorConfig, uris: dict[str, str], classes: list[str] | None
) -> dict[tuple[str, str], AttackReport]:
    """``{(attack, role): report}`` for every configured attack on both models (``uris``:
    role → model URI), the samples of ``frame`` split across the active session's executors."""
    from .spark_session import active_session

    spark = active_session()
    code_columns = list(cfg.code_columns or ())
    attacks = list(cfg.attacks)
    shipped = spark.sparkContext.broadcast((frame, np.asarray(labels, dtype=np.int64), code_columns, cfg.language))
    options = {"budget": cfg.attack_budget, "seed": cfg.seed, "mlm": cfg.attack_mlm, "batch_size": cfg.batch_size}
    sdf = spark.createDataFrame(pd.DataFrame({POS: np.arange(len(frame), dtype=np.int64)}))
    partitions = sdf.rdd.getNumPartitions()
    out: dict[tuple[str, str], AttackReport] = {}
    try:
        for role, uri in uris.items():
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix="mc-attack-model-") as root:  # unique: addFile refuses a name twice
                fn = functools.partial(
                    _attack_partition,
                    shipped=shipped,
                    model_dir=_ship_model(spark, uri, root),
                    role=role,
                    classes=classes,
                    attacks=attacks,
                    options=options,
                )
                got = sdf.mapInPandas(fn, schema=SCHEMA).toPandas()  # the executors hold their copies now
            for name, report in _reports(got, frame, code_columns, attacks, time.perf_counter() - t0).items():
                out[(name, role)] = report
                logger.info("%s on the %s (spark, %d partitions): %s", name, role, partitions, report.metrics())
    finally:
        shipped.unpersist()
    return out
