"""Liveness lines for long work whose output may go to a file (CI, ``nohup``), where
progress bars are hidden: a background thread logs a status line at a fixed interval,
and the work in progress says what it is doing with :func:`note` (Lightning's epochs,
see :mod:`.distill.training`). :func:`on_terminal` decides whether bars are shown.

The interval is read when a heartbeat starts: ``METACOMPRESS_HEARTBEAT_S`` seconds
(default 30, so a line appears at least every minute), or the ``interval`` argument.
Standard library only, so importing it stays light.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType

logger = logging.getLogger(__name__)

HEARTBEAT_ENV = "METACOMPRESS_HEARTBEAT_S"
DEFAULT_INTERVAL_S = 30.0

_lock = threading.Lock()
_note: str | None = None


def heartbeat_interval(interval: float | None = None) -> float:
    """``interval`` if given, else ``$METACOMPRESS_HEARTBEAT_S``, else 30 s; a value
    that is not a positive number raises ``ValueError`` naming the variable."""
    if interval is None:
        text = os.environ.get(HEARTBEAT_ENV, "").strip()
        if not text:
            return DEFAULT_INTERVAL_S
        try:
            interval = float(text)
        except ValueError:
            raise ValueError(f"{HEARTBEAT_ENV}={text!r} is not a number of seconds") from None
        source = f"{HEARTBEAT_ENV}={text!r}"
    else:
        source = f"heartbeat interval {interval!r}"
    if not math.isfinite(interval) or interval <= 0:
        raise ValueError(f"{source} must be a positive number of seconds")
    return float(interval)


def on_terminal() -> bool:
    """True when stdout and stderr are both terminals: progress bars (Lightning's on
    stdout, tqdm's on stderr) are shown only then; in a file they are noise."""
    try:
        return sys.stdout.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


def note(detail: str | None) -> None:
    """Say what the current work is doing (e.g. ``"fit epoch 3/15, ETA 0:01:10"``);
    ``None`` clears it. Thread-safe; read by the running heartbeat."""
    global _note
    with _lock:
        _note = detail


def current_note() -> str | None:
    with _lock:
        return _note


def format_seconds(seconds: float | None) -> str:
    """``h:mm:ss`` (``?`` for an unknown or infinite duration)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    total = max(0, int(round(seconds)))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


class Heartbeat:
    """Context manager: while active, a daemon thread logs ``line()`` at INFO every
    ``interval`` seconds (see :func:`heartbeat_interval`); the thread stops on exit."""

    def __init__(
        self, line: Callable[[], str], interval: float | None = None, log: logging.Logger | None = None
    ) -> None:
        self.line = line
        self.interval = heartbeat_interval(interval)
        self.log = log or logger
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.log.info("%s", self.line())
            except Exception:  # a broken status line must not kill the work it reports on
                self.log.debug("heartbeat line failed", exc_info=True)

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._beat, name="metacompress-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
