"""The pipeline every distillation method shares (:func:`distill_student`).

It looks the method up (:func:`.discovery.get_method`) and parses its options before
anything runs, loads the task, computes the teacher's soft labels on the unlabeled half
of the training split once (cached, see :mod:`.soft_labels`), calls the method,
measures the student on the test split and registers it with the metacompress tags
(Compressor's protocol, Shi et al., ASE 2022).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from .context import DistillContext
from .datasets import CodeExamples, load_splits, split_halves
from .discovery import get_method
from .jobs import Data, StudentJob
from .results import TrainingResult, accuracy_on, log_json, register

logger = logging.getLogger(__name__)


def distill_student(data: Data, teacher_uri: str, task: str = "devign", **settings: Any) -> TrainingResult:
    """Distil a student from ``teacher_uri`` and register it: :func:`run_student_job` of
    :meth:`.jobs.StudentJob.build` ``(data, teacher_uri, task, **settings)``. ``settings``
    are the job's fields (``method``, ``size_mb``, ``pair_mode``, ``max_length``, ``limit``,
    ``registered_name``, ``cache_dir``, ``dataset``, ``unlabeled``), FitConfig's budget
    (``epochs``, ``batch_size``, ``max_steps``, ``seed``, ``progress``), ``trainer``
    (:class:`.devices.TrainerSettings`) and the method's options (e.g. ``population``,
    ``generations`` for Compressor)."""
    return run_student_job(StudentJob.build(data, teacher_uri, task, **settings))


def run_student_job(job: StudentJob) -> TrainingResult:
    """Distil a student from ``job.teacher_uri`` with ``job.method`` and register it.

    ``job.options`` are parsed into the method's ``Options``; unknown methods and option
    names fail here, before any data is read. ``pair_mode`` applies to clone pairs only.
    The run logs params (every resolved option as ``opt.<name>``), per-epoch metrics, the
    monitored score as ``best_<monitor>`` (e.g. ``best_val_acc``, ``best_val_agreement``),
    ``student_config.json`` (the searched configuration) and a registered version tagged
    with method, size, params, GFLOPs and the teacher URI.

    ``job.fit``'s Lightning settings (:meth:`.jobs.FitConfig.trainer`) set the accelerator,
    devices, strategy and precision of the student's training, and the torch threads of the
    whole run (soft labels, training, the speed tags); they are checked first. With several
    devices only the fit runs in the spawned ranks: the soft labels are computed (or read
    from the cache) here, once, and logging and registration happen here, once.

    ``job.unlabeled`` replaces the unlabeled half of the train split as the distillation set
    (a separate file of unlabelled pairs, as in the reproduction study); only its code
    columns are read.
    """
    import mlflow

    from ..data.codexglue import get_task
    from ..precision import inference_follows
    from ..threads import using
    from .soft_labels import resolve_model_uri
    from .speed import tag_student

    chosen = get_method(job.method)
    opts = chosen.parse(job.options)
    trainer = job.fit.trainer()
    trainer.check()
    spec = get_task(job.task)
    frames = load_splits(job.data, job.task, job.limit, job.fit.seed)
    unlabeled = _distillation_set(job, frames["train"], spec.code_columns)
    cols = spec.code_columns
    pinned = resolve_model_uri(job.teacher_uri)
    started = time.perf_counter()
    with (
        using(trainer.threads) as threads,
        inference_follows(trainer.precision),  # --precision 32-true: the run's inference in fp32 too
        mlflow.start_run(run_name=f"{job.method}-{job.run_name}", nested=mlflow.active_run() is not None) as run,
    ):
        logger.info("distillation with %s on %d torch thread(s)", job.method, threads)
        ctx = _context(job, spec, frames["valid"], unlabeled, pinned)
        mlflow.log_params(
            {
                "method": job.method,
                "task": job.task,
                "teacher": pinned,
                "size_mb_target": job.size_mb,
                "max_length": job.max_length,
                "epochs": job.fit.epochs,
                "batch_size": job.fit.batch_size,
                "seed": job.fit.seed,
                "limit": job.limit,
                "unlabeled_rows": len(unlabeled),
                **trainer.params(),
                **{f"opt.{k}": v for k, v in asdict(opts).items()},
            }
        )
        mlflow.set_tags(trainer.tags())  # metacompress.precision: the resolved precision
        outcome = chosen.run(ctx, opts)
        metrics, uri, version = _measure_and_register(job, outcome, ctx, frames["test"], spec, started)
        # side-by-side speed (and energy) tags on the version (distill/speed.py)
        metrics.update(tag_student(uri, pinned, frames["test"], cols, job.registered_name, version, threads=threads))
        mlflow.log_metrics(metrics)
    logger.info("student %s: %s", uri, metrics)
    return TrainingResult(uri, run.info.run_id, job.registered_name, version, metrics, outcome.config)


def _distillation_set(job: StudentJob, train: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    """``job.unlabeled`` (checked for the code columns), else the unlabeled half of ``train``."""
    if job.unlabeled is None:
        return split_halves(train, job.fit.seed)[1]
    absent = [c for c in cols if c not in job.unlabeled.columns]
    if absent:
        raise KeyError(
            f"distill_student: the unlabeled frame lacks code column(s) {absent}; it has {list(job.unlabeled.columns)}"
        )
    return job.unlabeled.reset_index(drop=True)


def _context(job: StudentJob, spec: Any, valid: pd.DataFrame, unlabeled: pd.DataFrame, pinned: str) -> DistillContext:
    """The method's :class:`.context.DistillContext`, with the teacher's soft labels on ``unlabeled`` (cached)."""
    from .soft_labels import DEFAULT_CACHE, teacher_logits

    cols = spec.code_columns
    cache_dir = Path(job.cache_dir) if job.cache_dir is not None else DEFAULT_CACHE
    soft = teacher_logits(pinned, unlabeled, cols, cache_dir)
    return DistillContext(
        task=job.task,
        code_columns=cols,
        unlabeled=CodeExamples.from_frame(unlabeled, cols, teacher_logits=soft),
        valid=CodeExamples.from_frame(valid, cols, spec.label_column),
        labels=["0", "1"],
        pair_mode=job.pair_mode if spec.is_pair else None,
        size_mb=job.size_mb,
        max_length=job.max_length,
        seed=job.fit.seed,
        teacher_uri=pinned,
        cache_dir=cache_dir,
        fit_config=job.fit,
    )


def _measure_and_register(
    job: StudentJob, outcome: Any, ctx: DistillContext, test: pd.DataFrame, spec: Any, started: float
) -> tuple[dict[str, float], str, Any]:
    """Log the outcome's params and config, measure the student (test accuracy, the monitored
    score, agreement with the teacher) and register it; returns (metrics, uri, version)."""
    import mlflow

    from .training import monitored_metrics

    if outcome.params:
        mlflow.log_params(outcome.params)
    log_json(outcome.config, "student_config.json")
    model, tokenizer = outcome.model, outcome.tokenizer
    teacher_agree = _agreement(model, tokenizer, ctx.unlabeled)
    metrics = {
        "test_acc": accuracy_on(model, tokenizer, test, spec.code_columns, spec.label_column),
        **monitored_metrics(outcome.fit),
        "train_agreement": teacher_agree,
        "train_seconds": time.perf_counter() - started,
    }
    fallback = {"search_fallback": "true"} if outcome.config.get("search_fallback") else {}
    uri, version, sizes = register(
        model,
        tokenizer,
        method=job.method,
        registered_name=job.registered_name,
        code_columns=spec.code_columns,
        teacher=ctx.teacher_uri,
        extra_tags={"task": job.run_name, **fallback},
    )
    metrics.update(sizes)
    return metrics, uri, version


def _agreement(model: Any, tokenizer: Any, examples: CodeExamples) -> float:
    """Share of unlabeled inputs where student and teacher pick the same class."""
    import numpy as np

    if examples.teacher_logits is None or len(examples) == 0:
        return float("nan")
    probs = model.predict_proba(tokenizer, examples.texts, examples.texts_b, batch_size=64)
    return float(np.mean(probs.argmax(axis=1) == examples.teacher_logits.argmax(axis=1)))
