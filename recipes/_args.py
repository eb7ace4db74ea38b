"""Arguments shared by the recipe scripts (the MLproject's entry points)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any


def add_data_args(parser: argparse.ArgumentParser) -> None:
    """``--task``, ``--data-dir``, ``--profile``, ``--seed``, ``--progress``."""
    parser.add_argument("--task", default="vulnerability", help="vulnerability or clone")
    parser.add_argument(
        "--data-dir",
        default="",
        help="empty: the embedded generated data; else a CodeXGLUE Devign/BigCloneBench folder",
    )
    parser.add_argument("--profile", default="quick", help="quick (2 CPU cores, minutes) or paper (GPU, hours)")
    parser.add_argument("--seed", type=lambda s: int(float(s)), default=0, help="random seed (an integer)")
    parser.add_argument(
        "--progress",
        default="true",
        choices=["true", "false"],
        help="show progress bars (only when output is a terminal; stage lines are logged anyway)",
    )


def add_threads_arg(parser: argparse.ArgumentParser) -> None:
    """``--threads``: torch's threads for training, inference and speed timings
    (``mlflow_metacompress/threads.py``)."""
    parser.add_argument(
        "--threads",
        default="auto",
        help="torch threads per process; auto = $METACOMPRESS_THREADS, else the free cores",
    )


def checked_threads(args: argparse.Namespace) -> int | None:
    """``--threads`` checked (a bad value fails here, naming it); None for auto."""
    from mlflow_metacompress.threads import parse_threads

    return parse_threads(args.threads, "--threads (MLproject parameter threads)")


def add_device_args(parser: argparse.ArgumentParser) -> None:
    """``--devices``, ``--strategy``, ``--precision``: Lightning's Trainer settings for the fits
    (``mlflow_metacompress/distill/devices.py``), and ``--threads``."""
    parser.add_argument("--devices", default="1", help="processes/GPUs per fit (1; auto = every visible GPU)")
    parser.add_argument("--strategy", default="auto", help="auto, ddp (ranks are spawned), ddp_spawn or ddp_fork")
    parser.add_argument(
        "--precision", default="", help="empty/auto: bf16-mixed where the CPU or GPU runs bf16 natively, else 32-true"
    )
    add_threads_arg(parser)


def trainer(args: argparse.Namespace) -> Any:
    """The device arguments parsed once as a checked ``TrainerSettings`` (a bad value fails
    here, naming the MLproject parameter); it is passed down unchanged."""
    from mlflow_metacompress.distill.devices import TrainerSettings

    return TrainerSettings.parse(
        devices=args.devices,
        strategy=args.strategy,
        precision=args.precision,
        threads=args.threads,
        source="MLproject parameter",
        names=("--threads", "--precision"),
    )


def bars(args: argparse.Namespace) -> bool:
    """Progress bars: asked for and output is a terminal (in a file they are noise)."""
    from mlflow_metacompress.heartbeat import on_terminal

    return args.progress == "true" and on_terminal()


def setup() -> str:
    """Log at INFO and point tracking/registry at the project's store; return its URI."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from mlflow_metacompress.pipeline import setup_tracking

    return setup_tracking()


@contextlib.contextmanager
def job_run(run_name: str) -> Iterator[Any]:
    """The entry point's run (under ``mlflow run``, the project's run). On Ctrl-C, the
    SIGTERM ``mlflow run`` sends on cancel, or a crash, every run started below it ends
    KILLED/FAILED, never RUNNING (:class:`mlflow_metacompress.pipeline.interrupts.CleanExit`)."""
    import mlflow

    from mlflow_metacompress.pipeline.interrupts import CleanExit

    with CleanExit() as cleanup, mlflow.start_run(run_name=run_name) as run:
        cleanup.root = run.info.run_id
        yield run


def run_main(main: Callable[[], int]) -> int:
    """``main()``'s exit code; 130 after Ctrl-C (SIGINT), 143 after SIGTERM. A crash
    propagates (a traceback and exit code 1)."""
    from mlflow_metacompress.heartbeat import on_terminal
    from mlflow_metacompress.pipeline.interrupts import Terminated
    from mlflow_metacompress.quiet import quiet_libraries

    try:
        with quiet_libraries(bars=on_terminal()):  # no library bars in a log file
            return main()
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'SIGINT'}): the runs it started are marked KILLED", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
