"""The study's teacher stage (:mod:`.stages`; MetaCompress, Awal, Rochan, Roy, arXiv
2511.05476, fine-tunes CodeBERT; the study trains a scratch encoder of at least 20 MB on
every labelled training pair instead): its stage key, the training, and its measurement on
the whole test file (accuracy, F1, the share of confident rows); and the study's data,
which the teacher stage loads first.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .config import StudyConfig
from .resume import StageResult, run_stage

logger = logging.getLogger(__name__)


def study_data(cfg: StudyConfig) -> Any:
    from .data import load_study_data

    return load_study_data(
        cfg.task, cfg.data_dir, oracle_rows=cfg.oracle_rows, distill_rows=cfg.distill_rows, seed=cfg.data_seed
    )


def teacher_args(cfg: StudyConfig) -> dict[str, Any]:
    """What the teacher's result depends on (not student seeds, methods or evaluation budgets);
    its own seed only when not 0, so the seed-0 teacher's key is the one stored studies used."""
    args: dict[str, Any] = {
        "task": cfg.task,
        "data": cfg.folder(),
        "budget": asdict(cfg.teacher),
        "data_seed": cfg.data_seed,
        "oracle_rows": cfg.oracle_rows,
    }
    if cfg.teacher_seed:
        args["teacher_seed"] = cfg.teacher_seed
    return args


def teacher_stage(cfg: StudyConfig, data: Any | None = None, bundles: str | Path | None = None) -> StageResult:
    """Train (or find) the study's teacher on every labelled training row and measure it
    on the whole test file: accuracy, F1 and the share of rows at confidence ≥ 0.8.

    ``bundles``: a folder of the repository holding finished stages (:mod:`.bundle`): a
    bundled teacher is adopted into an empty store instead of trained, and a teacher
    trained here is bundled there, so that a commit carries it to the next machine."""

    def body() -> dict[str, Any]:
        import mlflow

        from ..distill.jobs import FitConfig, TeacherJob
        from ..distill.teacher import run_teacher_job

        d = data if data is not None else study_data(cfg)
        b = cfg.teacher
        job = TeacherJob(
            d.frames(d.teacher_train),
            d.codexglue_task,
            init="scratch",
            arch=b.arch(),
            lr=b.lr,
            fit=FitConfig(
                epochs=b.epochs,
                batch_size=b.batch_size,
                max_steps=b.max_steps,
                seed=cfg.teacher_seed,
                progress=False,
                monitor="last",
            ),
            registered_name=f"metacompress-reproduce-{d.codexglue_task}-teacher",
            dataset=d.codexglue_task,
            train_on="all",
            unique_texts=True,
        )
        started = time.perf_counter()
        result = run_teacher_job(job)
        seconds = time.perf_counter() - started
        metrics = measure_teacher(result.model_uri, d.test, d.code_columns, d.label_column)
        metrics.update(
            {
                "teacher_train_seconds": seconds,
                "teacher_size_mb": float(result.metrics.get("size_mb", 0.0)),
                "teacher_train_rows": float(len(d.teacher_train)),
            }
        )
        mlflow.log_metrics(metrics)
        logger.info("teacher %s: %s", result.model_uri, metrics)
        return {"model_uri": result.model_uri, "teacher_run_id": result.run_id}

    from functools import partial

    from .bundle import carried

    args = teacher_args(cfg)
    return carried("teacher", args, bundles, partial(run_stage, "teacher", args, body, study=cfg.task))


def measure_teacher(uri: str, test: Any, columns: tuple[str, ...], label: str) -> dict[str, float]:
    """Accuracy, F1 (class 1), and the share of rows with max probability ≥ 0.8, on ``test``."""
    import mlflow
    import numpy as np
    from sklearn.metrics import f1_score

    probs = np.asarray(mlflow.pyfunc.load_model(uri).predict(test[list(columns)]), dtype=float)
    pred = probs.argmax(axis=1)
    y = test[label].to_numpy()
    return {
        "teacher_test_acc": float(np.mean(pred == y)),
        "teacher_test_f1": float(f1_score(y, pred)),
        "teacher_conf80_share": float(np.mean(probs.max(axis=1) >= 0.8)),
        "teacher_test_rows": float(len(y)),
    }
