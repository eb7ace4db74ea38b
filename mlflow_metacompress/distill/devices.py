"""Lightning's ``devices``, ``strategy`` and ``precision`` for a fit: checked and resolved.

Distillation (Compressor's protocol, Shi et al., ASE 2022) trains the student on cached
teacher soft labels, so only the student's optimisation is data-parallel: the launching
process computes (or reads from the cache) the soft labels, starts the Lightning
``Trainer`` and, after it, logs and registers the student. Multi-process data
parallelism is PyTorch DDP (Li et al., VLDB 2020) through Lightning's own strategies.

``strategy="ddp"`` (and ``"auto"`` with more than one device) runs as
``DDPStrategy(start_method="spawn")``, the strategy Lightning names ``ddp_spawn``:
Lightning's default ``ddp`` launcher re-runs the process's command line once per extra
rank, which for ``metacompress distill`` or a pipeline would repeat the whole command
(data, soft labels, MLflow runs) and from a notebook or a test runner cannot work. Spawned
ranks receive the module and data loaders by pickling; the best checkpoint's path and
the final weights come back to the launching process. On a CPU the process group uses
the gloo backend, on GPUs NCCL (Lightning's defaults).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..precision import PRECISION_ENV

logger = logging.getLogger(__name__)

STRATEGIES = ("auto", "ddp", "ddp_spawn", "ddp_fork")
Precision = Literal["32-true", "32", "64-true", "bf16-mixed", "bf16-true", "16-mixed", "16-true"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
ACCELERATORS = ("auto", "cpu", "gpu", "cuda")
PRECISION_TAG = "metacompress.precision"  # the resolved precision, on training and evaluation runs


@dataclass(frozen=True)
class Placement:
    """What :func:`resolve` hands to ``L.Trainer``: ``accelerator``, ``devices``, ``strategy``
    (a name or a ``DDPStrategy``), ``precision``, and how many processes train."""

    accelerator: str
    devices: int
    strategy: Any
    precision: Precision
    world_size: int


@dataclass(frozen=True)
class TrainerSettings:
    """The Lightning settings a command passes to every fit it runs (``--accelerator``,
    ``--devices``, ``--strategy``, ``--precision``; the pipeline's ``PipelineConfig``), and
    the torch ``threads`` of the command's training and inference (``--threads``; None or
    ``"auto"``: ``$METACOMPRESS_THREADS``, else the default of :mod:`mlflow_metacompress.threads`).
    Architecture-search probes always train on one device in the launching process."""

    accelerator: str = "auto"
    devices: int | str = 1
    strategy: str = "auto"
    precision: str | None = None  # None = $METACOMPRESS_PRECISION, else "auto" (bf16 where native)
    threads: int | str | None = None

    @classmethod
    def parse(
        cls,
        *,
        accelerator: str = "auto",
        devices: Any = 1,
        strategy: str = "auto",
        precision: str | None = None,
        threads: Any = None,
        source: str = "",
        names: tuple[str, str] = ("threads", "precision"),
    ) -> TrainerSettings:
        """The one parse of a command's run settings (MLproject parameters, CLI flags):
        ``devices`` as a count (``"auto"`` kept), ``precision`` in its canonical spelling
        (empty/None: unset), ``threads`` as an int (None for ``auto``), then :meth:`check`.
        The result is passed down unchanged to the fits (:class:`.jobs.FitConfig` holds it)
        and to the gates' evaluations (``evaluator_config["threads"]``/``["precision"]``).
        Errors name the setting (``names``: how the command spells threads and precision,
        e.g. ``--threads``; ``source``, e.g. the MLproject parameter) and the value."""
        from ..precision import requested
        from ..threads import parse_threads

        def where(name: str) -> str:  # e.g. "--threads (MLproject parameter threads)"
            return f"{names[0] if name == 'threads' else names[1]}" + (f" ({source} {name})" if source else "")

        count: int | str = "auto" if str(devices).strip().lower() == "auto" else parse_devices(devices)
        text = None if precision is None or str(precision).strip() == "" else str(precision).strip()
        if text is not None:
            try:
                requested(text)
            except ValueError as exc:
                raise ValueError(f"{where('precision')}: {exc}") from None
        settings = cls(
            accelerator=accelerator,
            devices=count,
            strategy=strategy,
            precision=text,
            threads=parse_threads(threads, where("threads")),
        )
        settings.check()
        return settings

    def evaluator_config(self) -> dict[str, Any]:
        """The keys the gates' evaluations take from these settings: ``threads`` when given,
        and ``precision`` when training was asked for an explicit one (its inference spelling)."""
        from ..precision import inference_spelling

        out: dict[str, Any] = {}
        if isinstance(self.threads, int):
            out["threads"] = self.threads
        spelling = inference_spelling(self.precision)
        if spelling is not None:
            out["precision"] = spelling
        return out

    def check(self) -> Placement:
        """:func:`resolve` these settings (and the thread count), so a bad value fails
        before data or runs."""
        placement = resolve(self.accelerator, self.devices, self.strategy, self.precision)
        self.thread_count()
        return placement

    def thread_count(self) -> int:
        """The torch threads of the launching process (:func:`mlflow_metacompress.threads.resolve`)."""
        from ..threads import resolve as resolve_threads

        return resolve_threads(self.threads)

    def resolved_precision(self) -> str:
        """Lightning's precision these settings train in (None/``auto``: by the hardware, :func:`resolve`)."""
        return str(resolve(self.accelerator, self.devices, self.strategy, self.precision).precision)

    def params(self) -> dict[str, Any]:
        """MLflow params of a run that uses them (``threads``: the resolved count; ``precision``:
        the resolved Lightning precision, ``precision_requested``: what was asked, e.g. ``auto``)."""
        return {
            "accelerator": self.accelerator,
            "devices": self.devices,
            "strategy": self.strategy,
            "precision": self.resolved_precision(),
            "precision_requested": self.precision or os.environ.get(PRECISION_ENV) or "auto",
            "threads": self.thread_count(),
        }

    def tags(self) -> dict[str, str]:
        """MLflow tags of a run that trains with them: ``metacompress.precision`` (resolved)."""
        return {PRECISION_TAG: self.resolved_precision()}


def parse_devices(value: Any) -> int:
    """``devices`` as a positive process count: an int, a digit string, or ``"auto"``/-1
    (every visible GPU, else 1 CPU process). Raises ``ValueError`` naming the value."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return -1
    if isinstance(value, bool):
        raise ValueError(f"devices must be a positive integer or 'auto', got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"devices must be a positive integer or 'auto', got {value!r}") from None
    if number == -1 or number >= 1:
        return number
    raise ValueError(f"devices must be a positive integer or 'auto', got {value!r}")


def resolve(
    accelerator: str = "auto", devices: Any = 1, strategy: str = "auto", precision: str | None = None
) -> Placement:
    """Check the four settings against this machine and resolve them for ``L.Trainer``.

    ``precision`` None or ``"auto"`` (the default) resolves by the hardware
    (:mod:`mlflow_metacompress.precision`): bf16 autocast (``bf16-mixed``) on CPUs with
    AVX512-BF16/AMX and on GPUs with bf16, ``32-true`` elsewhere; ``$METACOMPRESS_PRECISION``
    sets what None means. Errors name the setting and value: an unknown strategy/precision/accelerator, a GPU
    asked for where none is visible, more GPUs than are visible, more CPU processes than
    cores, fp16 on a CPU, bf16 on a GPU without bf16 support.
    """
    import torch

    if accelerator not in ACCELERATORS:
        raise ValueError(f"accelerator must be one of {list(ACCELERATORS)}, got {accelerator!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {list(STRATEGIES)}, got {strategy!r}")
    count = parse_devices(devices)
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if accelerator in ("gpu", "cuda") and gpus == 0:
        raise ValueError(f"accelerator={accelerator!r} but no CUDA GPU is visible; use accelerator='cpu' or 'auto'")
    kind = "cpu" if accelerator == "cpu" or gpus == 0 else "gpu"
    available = (
        gpus
        if kind == "gpu"
        else (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    )
    if count == -1:
        count = gpus if kind == "gpu" else 1
    if count > available:
        what = "GPU(s) are visible" if kind == "gpu" else "CPU core(s) are available"
        raise ValueError(f"devices={count} but only {available} {what}")
    text = _precision(precision, kind)
    if kind == "cpu" and text in ("16-mixed", "16-true"):
        raise ValueError(f"precision={text!r} (float16) is not supported on a CPU; use 'bf16-mixed' or 32-true")
    if kind == "gpu" and text and text.startswith("bf16") and not torch.cuda.is_bf16_supported():
        raise ValueError(
            f"precision={text!r} but GPU {torch.cuda.get_device_name(0)!r} has no bfloat16 support; use '16-mixed'"
        )
    if kind == "cpu" and text.startswith("bf16"):
        _note_cpu_bf16(text)
    chosen: Any = strategy
    if count > 1 and strategy in ("auto", "ddp", "ddp_spawn"):
        from lightning.pytorch.strategies import DDPStrategy

        chosen = DDPStrategy(start_method="spawn")  # never re-run the command line per rank (module docstring)
    return Placement(kind, count, chosen, text, count)


@functools.cache
def _note_cpu_bf16(text: str) -> None:
    """Say once per process (settings are resolved several times a run) that CPU training uses bf16."""
    logger.info("precision=%s on a CPU: bfloat16 autocast (fast only on CPUs with AVX512-BF16/AMX)", text)


def _precision(value: str | None, kind: str) -> Precision:
    """Lightning's precision for ``value`` on ``kind`` (:func:`mlflow_metacompress.precision.for_training`:
    None/``auto`` → ``bf16-mixed`` where bf16 is native, else ``32-true``)."""
    from ..precision import for_training

    try:
        text = for_training(value, kind)
    except ValueError:
        given = f"{value!r}" if value else f"{os.environ.get(PRECISION_ENV)!r} (from ${PRECISION_ENV})"
        raise ValueError(
            f"precision must be one of {list(PRECISIONS)}, 'auto' (the default), 'fp32' or 'bf16', got {given}"
        ) from None
    if text not in PRECISIONS:  # pragma: no cover - for_training returns Lightning values only
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {value!r}")
    return text


def _by_value(obj: Any) -> tuple[Any, tuple[bytes]]:
    import cloudpickle

    return cloudpickle.loads, (cloudpickle.dumps(obj),)


def ship_by_value(cls: type) -> None:
    """Let spawned ranks receive instances of ``cls`` whose losses are closures.

    A spawned rank gets the Lightning module by pickling, and the methods' losses and
    extra-loss hooks are local functions, which plain pickle refuses. Registered with
    multiprocessing's ``ForkingPickler`` (only process launches use it), instances travel
    through ``cloudpickle`` (an MLflow dependency), which pickles such functions by value.
    """
    from multiprocessing.reduction import ForkingPickler

    ForkingPickler.register(cls, _by_value)


@contextlib.contextmanager
def file_system_sharing() -> Iterator[None]:
    """Tensors a spawn launch pickles (RNG states, the data loaders' model reference) shared
    through named files in shared memory rather than passed file descriptors, which some
    container sandboxes refuse ("unable to resize file"); the previous strategy is restored."""
    import torch.multiprocessing as mp

    before = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        yield
    finally:
        mp.set_sharing_strategy(before)
