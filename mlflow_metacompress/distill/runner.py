"""The pipeline every distillation method shares (:func:`distill_student`).

It looks the method up (:func:`.registry.get_method`) and parses its options before
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
from .devices import TrainerSettings
from .registry import get_method
from .results import TrainingResult, accuracy_on, log_json, register

logger = logging.getLogger(__name__)


def distill_student(
    data: str | Path | dict[str, pd.DataFrame] | None,
    teacher_uri: str,
    task: str = "devign",
    *,
    method: str = "compressor",
    size_mb: float = 3.0,
    pair_mode: str = "concat_cls",
    max_length: int = 256,
    epochs: int = 3,
    batch_size: int = 16,
    max_steps: int = -1,
    seed: int = 0,
    limit: int | None = None,
    registered_name: str | None = "metacompress-student",
    cache_dir: str | Path | None = None,
    progress: bool = True,
    dataset: str | None = None,
    trainer: TrainerSettings | None = None,
    unlabeled: pd.DataFrame | None = None,
    **options: Any,
) -> TrainingResult:
    """Distil a student from ``teacher_uri`` with ``method`` and register it.

    ``options`` are parsed into the method's ``Options`` (e.g. ``population``,
    ``generations`` for Compressor); unknown methods and option names fail here, before
    any data is read. ``pair_mode`` applies to clone pairs only. The run logs params
    (every resolved option as ``opt.<name>``), per-epoch metrics, the monitored score as
    ``best_<monitor>`` (e.g. ``best_val_acc``, ``best_val_agreement``),
    ``student_config.json`` (the searched configuration) and a registered version tagged
    with method, size, params, GFLOPs and the teacher URI.

    ``trainer`` (:class:`.devices.TrainerSettings`) sets Lightning's accelerator, devices,
    strategy and precision of the student's training, and the torch threads of the whole
    run (soft labels, training, the speed tags); it is checked first. With several
    devices only the fit runs in the spawned ranks: the soft labels are computed (or read
    from the cache) here, once, and logging and registration happen here, once.

    ``unlabeled`` replaces the unlabeled half of the train split as the distillation set
    (a separate file of unlabelled pairs, as in the reproduction study); only its code
    columns are read.
    """
    import mlflow

    from ..data.codexglue import get_task
    from .soft_labels import DEFAULT_CACHE, resolve_model_uri, teacher_logits
    from .speed import tag_student
    from .training import FitConfig, monitored_metrics

    chosen = get_method(method)
    opts = chosen.parse(options)
    trainer = trainer or TrainerSettings()
    trainer.check()
    spec = get_task(task)
    frames = load_splits(data, task, limit, seed)
    if unlabeled is None:
        _, unlabeled = split_halves(frames["train"], seed)
    else:
        absent = [c for c in spec.code_columns if c not in unlabeled.columns]
        if absent:
            raise KeyError(
                f"distill_student: the unlabeled frame lacks code column(s) {absent}; it has {list(unlabeled.columns)}"
            )
        unlabeled = unlabeled.reset_index(drop=True)
    cols, label_col = spec.code_columns, spec.label_column
    pinned = resolve_model_uri(teacher_uri)
    started = time.perf_counter()
    dataset = dataset or task
    from ..precision import inference_follows
    from ..threads import using

    with (
        using(trainer.threads) as threads,
        inference_follows(trainer.precision),  # --precision 32-true: the run's inference in fp32 too
        mlflow.start_run(run_name=f"{method}-{dataset}", nested=mlflow.active_run() is not None) as run,
    ):
        logger.info("distillation with %s on %d torch thread(s)", method, threads)
        soft = teacher_logits(pinned, unlabeled, cols, cache_dir if cache_dir is not None else DEFAULT_CACHE)
        ctx = DistillContext(
            task=task,
            code_columns=cols,
            unlabeled=CodeExamples.from_frame(unlabeled, cols, teacher_logits=soft),
            valid=CodeExamples.from_frame(frames["valid"], cols, label_col),
            labels=["0", "1"],
            pair_mode=pair_mode if spec.is_pair else None,
            size_mb=size_mb,
            max_length=max_length,
            seed=seed,
            teacher_uri=pinned,
            cache_dir=Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE,
            fit_config=FitConfig(
                epochs=epochs,
                batch_size=batch_size,
                max_steps=max_steps,
                seed=seed,
                progress=progress,
                accelerator=trainer.accelerator,
                devices=trainer.devices,
                strategy=trainer.strategy,
                precision=trainer.precision,
                threads=trainer.threads,
            ),
        )
        mlflow.log_params(
            {
                "method": method,
                "task": task,
                "teacher": pinned,
                "size_mb_target": size_mb,
                "max_length": max_length,
                "epochs": epochs,
                "batch_size": batch_size,
                "seed": seed,
                "limit": limit,
                "unlabeled_rows": len(unlabeled),
                **trainer.params(),
                **{f"opt.{k}": v for k, v in asdict(opts).items()},
            }
        )
        mlflow.set_tags(trainer.tags())  # metacompress.precision: the resolved precision
        outcome = chosen.run(ctx, opts)
        if outcome.params:
            mlflow.log_params(outcome.params)
        log_json(outcome.config, "student_config.json")
        model, tokenizer = outcome.model, outcome.tokenizer
        teacher_agree = _agreement(model, tokenizer, ctx.unlabeled)
        metrics = {
            "test_acc": accuracy_on(model, tokenizer, frames["test"], cols, label_col),
            **monitored_metrics(outcome.fit),
            "train_agreement": teacher_agree,
            "train_seconds": time.perf_counter() - started,
        }
        fallback = {"search_fallback": "true"} if outcome.config.get("search_fallback") else {}
        uri, version, sizes = register(
            model,
            tokenizer,
            method=method,
            registered_name=registered_name,
            code_columns=cols,
            teacher=pinned,
            extra_tags={"task": dataset, **fallback},
        )
        metrics.update(sizes)
        # side-by-side speed (and energy) tags on the version (distill/speed.py)
        metrics.update(tag_student(uri, pinned, frames["test"], cols, registered_name, version, threads=threads))
        mlflow.log_metrics(metrics)
    logger.info("student %s: %s", uri, metrics)
    return TrainingResult(uri, run.info.run_id, registered_name, version, metrics, outcome.config)


def _agreement(model: Any, tokenizer: Any, examples: CodeExamples) -> float:
    """Share of unlabeled inputs where student and teacher pick the same class."""
    import numpy as np

    if examples.teacher_logits is None or len(examples) == 0:
        return float("nan")
    probs = model.predict_proba(tokenizer, examples.texts, examples.texts_b, batch_size=64)
    return float(np.mean(probs.argmax(axis=1) == examples.teacher_logits.argmax(axis=1)))
