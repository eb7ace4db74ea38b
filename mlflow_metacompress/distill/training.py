"""Fit a :class:`~.modules.ClassifierModule` with Lightning and keep the best checkpoint.

Metrics go to the active MLflow run through Lightning's ``MLFlowLogger`` (attached by
run id, and never closing that run). The best validation-accuracy checkpoint is
reloaded at the end, as Compressor (Shi et al., ASE 2022) selects its students;
``FitConfig.monitor`` selects on agreement with the teacher instead, or keeps the
last epoch. ``FitConfig.patience`` stops a fit whose monitored metric has stopped
improving (early stopping, Prechelt, "Early Stopping — But When?", 1998).

Lightning's progress bar is shown only when ``FitConfig.progress`` is set and output is a
terminal (:func:`~mlflow_metacompress.heartbeat.on_terminal`); otherwise Lightning's
start-up notices are quieted and every epoch of a multi-epoch fit logs one line
(``fit epoch 3/15 · 0:00:41 · ETA 0:02:44 · val_acc 0.610``), which also feeds the
pipeline's heartbeat (:func:`~mlflow_metacompress.heartbeat.note`). Ctrl-C during a fit
raises ``KeyboardInterrupt`` to the caller (Lightning would exit the process), so the
caller's runs and temporary folders are closed.

``FitConfig.devices``/``strategy``/``precision`` are Lightning's, checked and resolved by
:mod:`.devices`: with more than one device the ranks are spawned processes (DDP, gloo
on a CPU); rank zero writes the history and best score next to the checkpoint, and the
best checkpoint's weights are loaded here, in the launching process, as with one device.

``FitConfig.threads`` sets torch's intra-op threads of the fit
(:mod:`mlflow_metacompress.threads`; default ``$METACOMPRESS_THREADS``, else the cores
no other process keeps busy, less one above two cores, shared by the ranks). Spawned
ranks set it when they start (Lightning would otherwise give each rank all cores ÷ ranks).
The data loaders run in the training process (``num_workers=0``): on the small batches of these models a worker process
costs more than it saves, and it would add threads of its own. Rows are tokenised once
per fit, not per epoch, and training batches group rows of similar length in a seeded
order (``FitConfig.length_window``, :mod:`.batches`). Lightning's callbacks and quieting:
:mod:`.fit_callbacks`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._optional import require

require("torch", "distillation", "distill")
require("lightning", "distillation", "distill")

# imported after the require() checks, so that a missing extra fails with its install command
import lightning as L  # noqa: E402 - after require()
import torch  # noqa: E402 - after require()
from lightning.pytorch.loggers import MLFlowLogger  # noqa: E402 - after require()

from ..heartbeat import format_seconds, note, on_terminal  # noqa: E402 - after require()
from .batches import loaders  # noqa: E402 - after require()
from .datasets import CodeExamples  # noqa: E402 - after require()
from .devices import Placement, file_system_sharing, resolve, ship_by_value  # noqa: E402 - after require()
from .fit_callbacks import HistoryCallback, RankThreads, keeping_sigint, quiet_lightning  # noqa: E402 - after require()
from .jobs import FitConfig  # noqa: E402 - after require()
from .modules import ClassifierModule  # noqa: E402 - after require()

if TYPE_CHECKING:
    from torch.utils.data import Dataset

logger = logging.getLogger(__name__)


class AttachedMLFlowLogger(MLFlowLogger):
    """``MLFlowLogger`` writing into an existing run and leaving its status alone."""

    def finalize(self, status: str = "success") -> None:  # the owner of the run ends it
        return None


def active_run_logger(prefix: str = "") -> MLFlowLogger | None:
    """A logger for the active MLflow run, or None when no run is active."""
    import mlflow

    run = mlflow.active_run()
    if run is None:
        return None
    return AttachedMLFlowLogger(tracking_uri=mlflow.get_tracking_uri(), run_id=run.info.run_id, prefix=prefix)


@dataclass
class FitResult:
    """Outcome of :func:`fit`; ``module.model`` holds the best weights afterwards.

    ``best_score`` is the best value of the metric named ``monitor`` (``val_acc``,
    ``val_agreement`` or ``val_relations_kept``); both are None when the last epoch was
    kept."""

    best_score: float | None
    best_checkpoint: str | None
    epochs_run: int
    history: list[dict[str, float]] = field(default_factory=list)
    monitor: str | None = None


def monitored_metrics(result: FitResult | None) -> dict[str, float]:
    """``{"best_<monitor>": score}`` (``best_val_acc``, ``best_val_agreement``,
    ``best_val_relations_kept``): the monitored score under its own name; empty when
    the last epoch was kept."""
    if result is None or result.monitor is None or result.best_score is None:
        return {}
    return {f"best_{result.monitor}": result.best_score}


class _EpochLines(L.Callback):
    """One log line per finished epoch (epoch i/N, time in this fit, its ETA, the
    validation metrics), and the same text as the heartbeat's note."""

    def __init__(self, epochs: int, level: int) -> None:
        self.epochs, self.level = epochs, level
        self.started = time.perf_counter()
        self.interrupt: KeyboardInterrupt | None = None

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if isinstance(exception, KeyboardInterrupt):  # Lightning turns it into sys.exit(1)
            self.interrupt = exception

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.started = time.perf_counter()
        note(f"fit epoch 1/{self.epochs}")

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        done = trainer.current_epoch + 1
        spent = time.perf_counter() - self.started
        eta = spent / done * max(self.epochs - done, 0)
        scores = ", ".join(
            f"{k} {float(v):.3f}"
            for k, v in sorted(trainer.callback_metrics.items())
            if k.startswith("val_") and v.numel() == 1
        )
        text = f"fit epoch {done}/{self.epochs} · {format_seconds(spent)} · ETA {format_seconds(eta)}"
        logger.log(self.level, "%s%s", text, f" · {scores}" if scores else "")
        note(text if done >= self.epochs else f"fit epoch {done + 1}/{self.epochs}, ETA {format_seconds(eta)}")


def _monitor(name: str, val: CodeExamples | None) -> str | None:
    """The Lightning metric to monitor, or None to keep the last epoch."""
    teacher_based = ("val_agreement", "val_relations_kept")
    if name not in ("val_acc", *teacher_based, "last"):
        raise ValueError(
            f"FitConfig.monitor must be 'val_acc', 'val_agreement', 'val_relations_kept' or 'last', got {name!r}"
        )
    if name == "last" or val is None:
        return None
    if name in teacher_based and val.teacher_logits is None:
        raise ValueError(f"FitConfig.monitor={name!r} needs validation examples with teacher_logits")
    return name if name in teacher_based or val.labels is not None else None


def _early_stopping(config: FitConfig, monitor: str | None) -> list[Any]:
    """Lightning's ``EarlyStopping`` on ``monitor`` when ``config.patience`` is set (none without a monitor)."""
    if config.patience is None or monitor is None:
        return []
    if config.patience < 1:
        raise ValueError(f"FitConfig.patience must be at least 1 epoch or None, got {config.patience}")
    from lightning.pytorch.callbacks import EarlyStopping

    return [EarlyStopping(monitor=monitor, mode="max", patience=config.patience, verbose=False)]


def _reload_best(
    module: ClassifierModule, trainer: Any, ckpt: Any, history: Any, monitor: str | None
) -> tuple[str | None, float | None, int]:
    """Load the kept checkpoint's weights into ``module``; returns (its path, its score, the
    epochs run), read from the ranks' summary file when they ran in other processes."""
    best = ckpt.best_model_path or None
    best_score = float(ckpt.best_model_score) if ckpt.best_model_score is not None else None
    epochs_run = trainer.current_epoch
    if history.path is not None and history.path.exists():  # the ranks ran in other processes
        summary = json.loads(history.path.read_text())
        history.rows, epochs_run, best_score = summary["rows"], summary["epochs_run"], summary["best_score"]
    if best:
        state = torch.load(best, map_location="cpu", weights_only=True)["state_dict"]
        module.load_state_dict(state)
        logger.info("reloaded the checkpoint kept by %s (%s) from %s", monitor or "last epoch", best_score, best)
    return best, best_score, epochs_run


def _trainer(
    config: FitConfig,
    placement: Placement,
    checkpoint_dir: str | Path,
    mlflow_logger: MLFlowLogger | bool,
    callbacks: list[Any],
    bar: bool,
) -> L.Trainer:
    """The Lightning trainer of :func:`fit`: ``config``'s epochs and steps on ``placement``,
    no sanity validation or model summary, a progress bar only when ``bar``."""
    return L.Trainer(
        accelerator=placement.accelerator,
        devices=placement.devices,
        strategy=placement.strategy,
        precision=placement.precision,
        max_epochs=config.epochs,
        default_root_dir=str(checkpoint_dir),
        max_steps=config.max_steps,
        gradient_clip_val=config.grad_clip,
        gradient_clip_algorithm="norm" if config.grad_clip else None,
        logger=mlflow_logger,
        callbacks=callbacks,
        enable_progress_bar=bar,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        log_every_n_steps=1,
        deterministic=False,
    )


def fit(
    module: ClassifierModule,
    tokenizer: Any,
    train: Dataset[dict[str, Any]],
    val: CodeExamples | None,
    config: FitConfig | None = None,
    mlflow_logger: MLFlowLogger | None | bool = None,
    checkpoint_dir: str | Path | None = None,
) -> FitResult:
    """Train ``module`` on ``train``; validate on ``val`` each epoch; reload the
    checkpoint that is best on ``config.monitor`` (or the last one). ``mlflow_logger=None``
    attaches to the active MLflow run (if any); ``False`` disables logging."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    from ..threads import resolve as resolve_threads
    from ..threads import using

    config = config or FitConfig()
    t = config.settings
    placement = resolve(t.accelerator, t.devices, t.strategy, t.precision)
    threads = resolve_threads(t.threads, processes=placement.world_size)
    if placement.world_size > 1:
        ship_by_value(type(module))
    L.seed_everything(config.seed, workers=True, verbose=False)
    train_dl, val_dl = loaders(
        module.model,
        tokenizer,
        train,
        val,
        batch_size=config.batch_size,
        eval_batch_size=config.eval_batch_size,
        window=config.length_window,
        seed=config.seed,
        distributed=placement.world_size > 1,
    )
    if mlflow_logger is None:
        mlflow_logger = active_run_logger()
    tmp = None
    if checkpoint_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="metacompress-ckpt-")
        checkpoint_dir = tmp.name
    try:
        monitor = _monitor(config.monitor, val)
        ckpt = ModelCheckpoint(
            dirpath=str(checkpoint_dir),
            monitor=monitor,
            mode="max",
            save_top_k=1,
            save_weights_only=True,
            filename="best",
        )
        history = HistoryCallback(Path(checkpoint_dir) / "fit_summary.json" if placement.world_size > 1 else None)
        bar = config.progress and on_terminal()
        lines = _EpochLines(config.epochs, logging.INFO if config.epochs > 1 else logging.DEBUG)
        callbacks: list[Any] = [ckpt, history, lines, *_early_stopping(config, monitor)]
        if placement.world_size > 1:
            callbacks.append(RankThreads(threads))
        sharing = file_system_sharing() if placement.world_size > 1 else contextlib.nullcontext()
        with quiet_lightning(not bar), keeping_sigint(), sharing, using(threads):
            trainer = _trainer(config, placement, checkpoint_dir, mlflow_logger or False, callbacks, bar)
            try:
                trainer.fit(module, train_dl, val_dl)
            except SystemExit:
                if lines.interrupt is not None:  # give the caller the interrupt back, not an exit
                    raise lines.interrupt from None
                raise
        best, best_score, epochs_run = _reload_best(module, trainer, ckpt, history, monitor)
        if tmp is not None:
            best = None  # deleted with the temporary directory
        return FitResult(best_score, best, epochs_run, history.rows, monitor if best_score is not None else None)
    finally:
        if tmp is not None:
            tmp.cleanup()
