"""What one training run is asked to do: :class:`FitConfig` (the budget and Lightning
settings of a fit), :class:`TeacherJob` (fine-tune a teacher) and :class:`StudentJob`
(distil a student from it, Compressor's protocol, Shi et al., ASE 2022).

A job is built once, by the command line (:mod:`.cli`), the pipeline's stages
(:mod:`mlflow_metacompress.pipeline.stages`, :mod:`mlflow_metacompress.study.stages`)
or :meth:`TeacherJob.build`/:meth:`StudentJob.build` (the keyword entries
:func:`.teacher.train_teacher` and :func:`.runner.distill_student`), and carries one
:class:`FitConfig`; the Lightning settings of the run (:class:`.devices.TrainerSettings`)
are read back from it. The teacher's shape is an :class:`.arch.ArchSpec`
(``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``). Light: no torch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .arch import ArchSpec
from .devices import TrainerSettings

Data = str | Path | dict[str, pd.DataFrame] | None

DEFAULT_TEACHER = ArchSpec(
    vocab_size=8000, num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024, max_length=256
)
TRAIN_ON = ("half", "all")


@dataclass
class FitConfig:
    """Budget and optimiser settings of one training run."""

    epochs: int = 3
    batch_size: int = 16
    eval_batch_size: int = 64
    max_steps: int = -1
    seed: int = 0
    progress: bool = True
    # Lightning's accelerator, devices, strategy and precision and torch's threads (:mod:`.devices`):
    # the command's one carrier, passed down unchanged (devices=2, strategy="ddp" trains in two
    # spawned processes; precision None = $METACOMPRESS_PRECISION, else auto: bf16 where native)
    settings: TrainerSettings = field(default_factory=TrainerSettings)
    # the validation metric whose best epoch is kept: "val_acc" (labels), "val_agreement"
    # (the teacher's argmax) or "val_relations_kept" (rows keeping MR1-MR4 with the teacher,
    # :func:`.losses.relation_agreement`), both when the validation set carries teacher
    # logits, or "last"
    monitor: str = "val_acc"
    # stop once the monitored metric has not improved for this many epochs (Lightning's
    # EarlyStopping; the best checkpoint is still the one reloaded); None trains every epoch
    patience: int | None = None
    # training batches draw rows from windows of this many batches sorted by token count
    # (:mod:`.batches`: less padding, seeded order); 0 or 1 = plain seeded shuffling
    length_window: int = 16
    # clip the gradients' global L2 norm to this before each step (Lightning's
    # gradient_clip_val, the HF Trainer's max_grad_norm); None leaves them unclipped
    grad_clip: float | None = None

    @classmethod
    def on(cls, trainer: TrainerSettings | None, **budget: Any) -> FitConfig:
        """A config with ``budget`` (epochs, batch_size, ...) carrying ``trainer`` unchanged
        (the defaults when None)."""
        return cls(**budget, settings=trainer or TrainerSettings())

    def trainer(self) -> TrainerSettings:
        """The Lightning settings and threads of this config (the command's carrier)."""
        return self.settings


# the keywords of train_teacher/distill_student that are FitConfig's (the rest are the job's)
TEACHER_BUDGET = ("epochs", "batch_size", "max_steps", "seed", "progress", "monitor", "patience")
STUDENT_BUDGET = ("epochs", "batch_size", "max_steps", "seed", "progress")


def _split(values: Mapping[str, Any], budget: tuple[str, ...], own: set[str]) -> tuple[dict, dict, dict]:
    """``values`` as (FitConfig budget, job fields, the rest); ``trainer`` is taken out by the caller."""
    fit = {k: v for k, v in values.items() if k in budget}
    job = {k: v for k, v in values.items() if k in own and k not in budget}
    rest = {k: v for k, v in values.items() if k not in fit and k not in job}
    return fit, job, rest


@dataclass(frozen=True, eq=False)
class TeacherJob:
    """Fine-tune a teacher (:func:`.teacher.run_teacher_job`): ``init`` (``scratch``,
    ``minilm`` or a model directory/hub id), its shape ``arch``, ``pair_mode`` (clone pairs
    only), the learning rate, one :class:`FitConfig`, and where the run and model go.
    ``train_on="all"`` trains on every row of the train split instead of its labelled half;
    ``unique_texts``: a scratch tokenizer learns from each distinct text once."""

    data: Data
    task: str = "devign"
    init: str = "scratch"
    arch: ArchSpec = DEFAULT_TEACHER
    pair_mode: str = "concat_cls"
    lr: float = 5e-4
    fit: FitConfig = field(default_factory=FitConfig)
    limit: int | None = None
    registered_name: str | None = "metacompress-teacher"
    dataset: str | None = None
    train_on: str = "half"
    unique_texts: bool = False

    def __post_init__(self) -> None:
        if self.train_on not in TRAIN_ON:
            raise ValueError(f"train_teacher: train_on must be 'half' or 'all', got {self.train_on!r}")

    @property
    def run_name(self) -> str:
        """The dataset of the run name and ``metacompress.task`` tag (e.g. ``generated-vulnerability``)."""
        return self.dataset or self.task

    @classmethod
    def build(cls, data: Data, task: str = "devign", **values: Any) -> TeacherJob:
        """The job of ``train_teacher``'s keywords: FitConfig's budget (``epochs``,
        ``batch_size``, ``max_steps``, ``seed``, ``progress``, ``monitor``, ``patience``) and
        ``trainer`` go into its :class:`FitConfig`, the rest are the job's fields; an unknown
        keyword fails naming it."""
        trainer = values.pop("trainer", None)
        own = {f.name for f in fields(cls)} - {"data", "task", "fit"}
        budget, job, rest = _split(values, TEACHER_BUDGET, own)
        if rest:
            raise TypeError(
                f"train_teacher: unknown keyword(s) {sorted(rest)}; known: {sorted(own | set(TEACHER_BUDGET))}"
            )
        return cls(data, task, fit=FitConfig.on(trainer, **budget), **job)


@dataclass(frozen=True, eq=False)
class StudentJob:
    """Distil a student of ``teacher_uri`` with ``method`` (:func:`.runner.run_student_job`):
    the size target, ``pair_mode`` (clone pairs only), the student's ``max_length``, one
    :class:`FitConfig`, the method's ``options`` (parsed into its ``Options``), where the run,
    model and soft-label cache go, and ``unlabeled``: a separate distillation set instead of
    the unlabeled half of the train split."""

    data: Data
    teacher_uri: str
    task: str = "devign"
    method: str = "compressor"
    size_mb: float = 3.0
    pair_mode: str = "concat_cls"
    max_length: int = 256
    fit: FitConfig = field(default_factory=FitConfig)
    limit: int | None = None
    registered_name: str | None = "metacompress-student"
    cache_dir: str | Path | None = None
    dataset: str | None = None
    unlabeled: pd.DataFrame | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def run_name(self) -> str:
        """The dataset of the run name and ``metacompress.task`` tag."""
        return self.dataset or self.task

    def with_fit(self, **changes: Any) -> StudentJob:
        """This job with ``changes`` to its :class:`FitConfig`."""
        return replace(self, fit=replace(self.fit, **changes))

    @classmethod
    def build(cls, data: Data, teacher_uri: str, task: str = "devign", **values: Any) -> StudentJob:
        """The job of ``distill_student``'s keywords: FitConfig's budget (``epochs``,
        ``batch_size``, ``max_steps``, ``seed``, ``progress``) and ``trainer``, the job's
        fields, and every other keyword as a method option (checked by the method)."""
        trainer = values.pop("trainer", None)
        own = {f.name for f in fields(cls)} - {"data", "teacher_uri", "task", "fit", "options"}
        budget, job, options = _split(values, STUDENT_BUDGET, own)
        return cls(data, teacher_uri, task, fit=FitConfig.on(trainer, **budget), options=options, **job)
