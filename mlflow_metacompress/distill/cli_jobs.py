"""From the arguments of ``metacompress distill {teacher,student}`` to a job: the data
(generated, a CodeXGLUE folder or the hub), the trainer's settings and the
:class:`~.jobs.TeacherJob` or :class:`~.jobs.StudentJob` that :mod:`.cli` runs."""

from __future__ import annotations

import argparse
import logging
from typing import Any

logger = logging.getLogger(__name__)


def _fit(args: argparse.Namespace, trainer: Any, **more: Any) -> Any:
    """The command's one :class:`.jobs.FitConfig`: ``--epochs/--batch-size/--max-steps/--seed``,
    the progress bar, and the Lightning settings of ``trainer``."""
    from .jobs import FitConfig

    return FitConfig.on(
        trainer,
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_steps=args.max_steps,
        seed=args.seed,
        progress=not args.no_progress,
        **more,
    )


def teacher_job(args: argparse.Namespace, data: Any, trainer: Any) -> Any:
    """``metacompress distill teacher``'s :class:`.jobs.TeacherJob`; the public flags
    ``--layers/--hidden/--heads/--intermediate`` become :class:`.arch.ArchSpec`'s names here."""
    from .arch import ArchSpec
    from .jobs import TeacherJob

    arch = ArchSpec(
        vocab_size=args.vocab_size,
        num_hidden_layers=args.layers,
        hidden_size=args.hidden,
        num_attention_heads=args.heads,
        intermediate_size=args.intermediate,
        max_length=args.max_length,
    )
    return TeacherJob(
        data,
        args.task,
        init=args.init,
        arch=arch,
        pair_mode=args.pair_mode,
        lr=args.lr,
        fit=_fit(args, trainer, monitor=args.monitor),
        limit=args.limit,
        registered_name=args.registered_name or "metacompress-teacher",
        dataset=dataset_name(args),
    )


def student_job(args: argparse.Namespace, data: Any, trainer: Any, options: dict[str, Any]) -> Any:
    """``metacompress distill student``'s :class:`.jobs.StudentJob` (``options``: the method's)."""
    from .jobs import StudentJob

    return StudentJob(
        data,
        args.teacher,
        args.task,
        method=args.method,
        size_mb=args.size_mb,
        max_length=args.max_length,
        fit=_fit(args, trainer),
        limit=args.limit,
        registered_name=args.registered_name or f"metacompress-{args.method}",
        cache_dir=args.cache_dir,
        dataset=dataset_name(args),
        options=options,
    )


def trainer_settings(args: argparse.Namespace) -> Any:
    """``--accelerator/--devices/--strategy/--precision/--threads`` as a :class:`.devices.TrainerSettings`."""
    from ..threads import parse_threads
    from .devices import TrainerSettings, parse_devices

    devices = args.devices if str(args.devices).strip().lower() == "auto" else parse_devices(args.devices)
    return TrainerSettings(
        accelerator=args.accelerator,
        devices=devices,
        strategy=args.strategy,
        precision=args.precision or None,
        threads=parse_threads(getattr(args, "threads", None), "--threads"),
    )


def dataset_name(args: argparse.Namespace) -> str:
    """The name runs and the ``metacompress.task`` tag carry, as in the pipeline's registered
    names: ``generated-vulnerability``/``generated-clone`` for the embedded data, else the
    CodeXGLUE task (``devign``, ``bigclonebench``)."""
    if args.hub or args.data_dir:
        return args.task
    return "generated-vulnerability" if args.task == "devign" else "generated-clone"


def load_data(args: argparse.Namespace) -> Any:
    """What ``train_teacher``/``distill_student`` read: the embedded generated splits (a
    dict of frames, the pipeline's generator), a CodeXGLUE folder, or ``None`` for the hub
    (checked here, so a missing ``datasets`` package is named before anything runs)."""
    if args.hub:
        from .._optional import require

        require("datasets", "CodeXGLUE data from the Hugging Face hub (--hub)")
        return None
    if args.data_dir:
        return args.data_dir
    from ..data.generators import make_splits

    rows = args.generated_rows
    if rows is None:
        from ..profiles import get_profile

        rows = get_profile("quick", args.task).generated_rows
    if rows < 30:
        raise ValueError(f"--generated-rows must be at least 30 (every split needs both labels); got {rows}")
    logger.info("generated %s-shaped data (%d samples, seed %d): embedded, not real", args.task, rows, args.seed)
    return make_splits(args.task, rows, args.seed)
