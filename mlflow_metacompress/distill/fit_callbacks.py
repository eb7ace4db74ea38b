"""Lightning plumbing of a fit (:mod:`.training`): the per-epoch history callback that
carries metrics back from spawned ranks, the callback that sets torch's threads in each
rank, Lightning's start-up notices quieted, and the SIGINT handler Lightning replaces put
back (so Ctrl-C reaches the caller).
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._optional import require

require("torch", "distillation", "distill")
require("lightning", "distillation", "distill")

# imported after the require() checks, so that a missing extra fails with its install command
import lightning as L  # noqa: E402 - after require()
import torch  # noqa: E402 - after require()


class HistoryCallback(L.Callback):
    """Per-epoch metrics; rank zero also writes them, the epochs run and the best score to
    ``path`` at the end, which is how they reach the launching process from spawned ranks."""

    def __init__(self, path: Path | None = None) -> None:
        self.rows: list[dict[str, float]] = []
        self.path = path

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        row = {k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1}
        row["epoch"] = float(trainer.current_epoch)
        self.rows.append(row)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.path is None or not trainer.is_global_zero:
            return
        ckpt = trainer.checkpoint_callback
        score = getattr(ckpt, "best_model_score", None)
        summary = {
            "rows": self.rows,
            "epochs_run": trainer.current_epoch,
            "best_score": float(score) if score is not None else None,
        }
        self.path.write_text(json.dumps(summary))


class RankThreads(L.Callback):
    """Set torch's threads in each spawned rank when it starts (after Lightning's own
    setting, cores ÷ ranks) and restore them at the end."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.previous: int | None = None

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self.previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if self.previous is not None:
            torch.set_num_threads(self.previous)


@contextlib.contextmanager
def quiet_lightning(quiet: bool) -> Iterator[None]:
    """Lightning's INFO notices (accelerators, "💡 Tip" lines, "Loading train_dataloader",
    "fit stopped") raised to WARNING while ``quiet``: in a log file the epoch lines say it.
    torch's deprecation of ``LeafSpec``, used inside Lightning, is hidden either way."""
    with warnings.catch_warnings():
        # torch deprecates LeafSpec, which Lightning itself still uses: nothing a user can act on
        warnings.filterwarnings(
            "ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning
        )
        if not quiet:
            yield
            return
        # a fit without validation rows (the search's probes) is meant to have none
        warnings.filterwarnings("ignore", message=r"You defined a `validation_step` but have no `val_dataloader`")
        # the standalone pytorch_lightning/lightning_fabric packages log under their own names
        # when installed beside lightning (the probes' notices came from them)
        names = ("lightning.pytorch", "lightning.fabric", "pytorch_lightning", "lightning_fabric")
        levels = {name: logging.getLogger(name).level for name in names}
        for name in names:
            logging.getLogger(name).setLevel(logging.WARNING)
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def keeping_sigint() -> Iterator[None]:
    """Put back the SIGINT handler that Lightning sets to "ignore" on an interrupt."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
