"""Clean ends for an interrupted or crashed pipeline: no MLflow run left RUNNING.

``mlflow run`` answers Ctrl-C by sending SIGTERM to its entry point, whose default
action kills Python on the spot: the nested runs it started stay RUNNING for good and
``with``-managed temporary folders are never removed. :func:`signals_as_interrupts`
turns SIGTERM into :class:`Terminated` (a ``KeyboardInterrupt``), so ``finally`` blocks
and context managers run, and ignores further SIGINT/SIGTERM while the cleanup runs.
:func:`end_nested_runs` then marks every run the pipeline started and left behind:
KILLED after an interrupt, FAILED after a crash (MLflow's ``start_run`` context ends a
run as FAILED on any exception, Ctrl-C included).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

KILLED, FAILED = "KILLED", "FAILED"


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (``mlflow run`` cancelling its entry point)."""


class _Guard:
    """State of :func:`signals_as_interrupts`: the first signal raises, the next one is
    ignored (``mlflow run`` follows Ctrl-C's SIGINT with a SIGTERM), a third one forces."""

    def __init__(self) -> None:
        self.signals = 0
        self.cleaning_up = False

    def handler(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.signals += 1
        if self.signals == 1 and not self.cleaning_up:
            self.cleaning_up = True
            logger.warning("%s received: stopping and ending the runs started (send it twice more to force)", name)
            raise Terminated(name) if signum == signal.SIGTERM else KeyboardInterrupt(name)
        if self.signals >= 3:
            logger.warning("%s received again: cleanup abandoned", name)
            raise KeyboardInterrupt(name)
        logger.warning("%s received while cleaning up; ignored, please wait", name)

    def cleaning(self) -> None:
        """From now on a signal is ignored (twice) so the cleanup can finish."""
        self.cleaning_up = True


@contextmanager
def signals_as_interrupts() -> Iterator[_Guard]:
    """SIGINT and SIGTERM raise ``KeyboardInterrupt``/:class:`Terminated` once; the next
    one is ignored until the block exits (see :class:`_Guard`). Outside the main thread
    nothing is installed."""
    guard = _Guard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, guard.handler)
    try:
        yield guard
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


LOCKED_RETRIES = 8  # a sqlite store locked by another writer: retry the cleanup this many times


def status_for(exc: BaseException) -> str:
    """KILLED for an interrupt (Ctrl-C, SIGTERM), FAILED for anything else."""
    return KILLED if isinstance(exc, KeyboardInterrupt) else FAILED


def _descendants(client: MlflowClient, root: Any, since_ms: int) -> list[Any]:
    """Runs below ``root`` (child runs, their children, …) started at or after ``since_ms``."""
    found: list[Any] = []
    parents = [root.info.run_id]
    while parents:
        parent = parents.pop()
        children = [
            r
            for r in client.search_runs(
                [root.info.experiment_id], f"tags.mlflow.parentRunId = '{parent}'", max_results=50000
            )
            if (r.info.start_time or 0) >= since_ms
        ]
        found += children
        parents += [r.info.run_id for r in children]
    return found


def failed_runs(root_run_id: str, since_ms: int, client: MlflowClient | None = None) -> set[str]:
    """Ids of the FAILED runs below ``root_run_id`` started at or after ``since_ms``
    (crashes the pipeline caught and reported, kept FAILED by :func:`end_nested_runs`)."""
    from mlflow import MlflowClient

    client = client or MlflowClient()
    return {
        r.info.run_id for r in _descendants(client, client.get_run(root_run_id), since_ms) if r.info.status == FAILED
    }


def end_nested_runs(
    root_run_id: str,
    since_ms: int,
    status: str,
    client: MlflowClient | None = None,
    keep: set[str] | frozenset[str] = frozenset(),
) -> list[str]:
    """End the runs below ``root_run_id`` started at or after ``since_ms`` that were left
    behind: those still on this thread's active-run stack are ended with ``status``, then
    every one that is RUNNING (or FAILED, when ``status`` is KILLED: ``start_run`` marks
    interrupted runs FAILED) gets ``status``; runs in ``keep`` (crashes already reported)
    are left alone. Returns the ids of the runs it changed."""
    import mlflow
    from mlflow import MlflowClient

    client = client or MlflowClient()
    below = {r.info.run_id: r for r in _descendants(client, client.get_run(root_run_id), since_ms)}
    changed: list[str] = []
    while (active := mlflow.active_run()) is not None and active.info.run_id in below:
        mlflow.end_run(status)
        changed.append(active.info.run_id)
    fix = {"RUNNING", "SCHEDULED"} | ({FAILED} if status == KILLED else set())
    for run_id, run in below.items():
        if run_id in changed or run_id in keep:
            continue
        if run.info.status in fix and run.info.status != status:
            client.set_terminated(run_id, status)
            changed.append(run_id)
    if changed:
        logger.info("ended %d nested run(s) as %s: %s", len(changed), status, ", ".join(changed))
    return changed


class CleanExit:
    """Context manager for a job that starts MLflow runs: signals become interrupts
    (:func:`signals_as_interrupts`), and if the block raises, every run started below
    :attr:`root` since entry is ended KILLED (interrupt) or FAILED (crash) by
    :func:`end_nested_runs`, and so is the root itself if it is still open. Set
    :attr:`root` once the job's run exists; add reported crashes' runs to :attr:`keep`."""

    def __init__(self, root: str | None = None) -> None:
        import time

        self.root = root
        self.since_ms = int(time.time() * 1000)
        self.keep: set[str] = set()
        self._signals: Any = None
        self.guard: _Guard | None = None

    def __enter__(self) -> CleanExit:
        self._signals = signals_as_interrupts()
        self.guard = self._signals.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is not None and self.root:
                assert self.guard is not None
                self.guard.cleaning()
                self.end(status_for(exc))
        finally:
            self._signals.__exit__(None, None, None)

    def end(self, status: str) -> None:
        """End what the job left behind with ``status``, the root included when it is
        still RUNNING (or FAILED by ``start_run`` after an interrupt)."""
        import time

        import mlflow
        from mlflow import MlflowClient

        client = MlflowClient()
        root_id = str(self.root)
        for attempt in range(1, LOCKED_RETRIES + 1):
            try:
                end_nested_runs(root_id, self.since_ms, status, client, self.keep)
                current = client.get_run(root_id).info.status
                if current == "RUNNING" or (status == KILLED and current == FAILED):
                    active = mlflow.active_run()
                    if active is not None and active.info.run_id == root_id:
                        mlflow.end_run(status)
                    else:
                        client.set_terminated(root_id, status)
                return
            except Exception as exc:  # the original error matters more than a failed cleanup
                # after Ctrl-C, `mlflow run` writes to the same sqlite store at the same moment
                if "database is locked" in str(exc) and attempt < LOCKED_RETRIES:
                    time.sleep(0.2 * attempt)
                    continue
                logger.exception("could not end the runs below %s as %s", root_id, status)
                return
