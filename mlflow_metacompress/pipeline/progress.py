"""Stage lines of the end-to-end pipeline, logged (INFO, logger
``mlflow_metacompress.pipeline.progress``) so they also reach a file when output is not a
terminal::

    stage 2/11 distill compressor: started · elapsed 0:03:12 · remaining ~0:19:05
    stage 2/11 distill compressor: running 0:00:30 (fit epoch 2/6, ETA 0:01:02) · elapsed 0:03:42 · remaining ~0:18:35
    stage 2/11 distill compressor: done in 0:01:41 · elapsed 0:04:53 · remaining ~0:15:10

While a stage runs, a :class:`~mlflow_metacompress.heartbeat.Heartbeat` repeats its line
every ``METACOMPRESS_HEARTBEAT_S`` seconds (default 30) with what the stage last said
(:func:`~mlflow_metacompress.heartbeat.note`, e.g. Lightning's epoch).

The remaining time is the sum of the stages left. A stage with a budget (its ``work``,
in teacher training steps, from :mod:`.budget`) is estimated as its work × the seconds
per unit of work measured on the finished stages: the median over the stages of its kind
(teacher, distill, gate) and the teacher, or the teacher's alone when no stage of its
kind has finished. A gate that only predicts is then not guessed to take as long as the
teacher's training. A stage without a budget
takes the mean duration of the finished stages of its kind, or of all finished stages.
The estimate is unknown until the first stage ends.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..heartbeat import Heartbeat, current_note, format_seconds, note

logger = logging.getLogger(__name__)


@dataclass
class _Stage:
    kind: str  # teacher | distill | gate
    label: str
    work: float | None = None  # budgeted work (pipeline/budget.py); None: estimated by mean duration
    seconds: float | None = None  # set when done
    skipped: bool = False


def pipeline_stages(methods: Sequence[str]) -> list[tuple[str, str]]:
    """``(kind, label)`` of every stage: the teacher, then per method its distillation
    and its gate."""
    stages = [("teacher", "teacher")]
    for method in methods:
        stages += [("distill", f"distill {method}"), ("gate", f"gate {method}")]
    return stages


class StageClock:
    """Times the pipeline's stages and logs a line when each starts and ends, and a
    heartbeat while it runs (``interval`` seconds, default ``$METACOMPRESS_HEARTBEAT_S``)."""

    def __init__(
        self,
        stages: Sequence[tuple[str, str] | tuple[str, str, float]],
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``stages``: ``(kind, label)`` or ``(kind, label, work)`` (e.g. the
        :class:`~.budget.StageWork` of :func:`~.budget.pipeline_work`, as tuples)."""
        if not stages:
            raise ValueError("a pipeline has at least one stage")
        self.stages = [_Stage(*stage) for stage in stages]
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.current: int | None = None
        self._stage_started = self.started

    def _index(self, label: str) -> int:
        for i, stage in enumerate(self.stages):
            if stage.label == label and stage.seconds is None and not stage.skipped:
                return i  # the first pending stage of that name
        raise KeyError(f"no pending stage {label!r}; stages: {[s.label for s in self.stages]}")

    def _rate(self, kind: str) -> float | None:
        """Seconds per unit of work: the median over the finished stages of ``kind`` (from
        three on, one outlier does not set the pace of every stage left); the teacher's
        while no stage of ``kind`` has finished; else every finished stage's. The teacher's
        rate is not mixed into a kind's own: a student step costs a fraction of a teacher
        step, and the mix put the estimate 131% over after the teacher (issue 22)."""
        done = [(s.kind, s.seconds / s.work) for s in self.stages if s.seconds is not None and s.work]
        same = [r for k, r in done if k == kind]
        teacher = [r for k, r in done if k == "teacher"]
        pool = same or teacher or [r for _, r in done]
        return statistics.median(pool) if pool else None

    def _estimate(self, stage: _Stage) -> float | None:
        if stage.work is not None:
            rate = self._rate(stage.kind)
            if rate is not None:
                return stage.work * rate
        done = [(s.kind, s.seconds) for s in self.stages if s.seconds is not None]
        same = [seconds for kind, seconds in done if kind == stage.kind]
        pool = same or [seconds for _, seconds in done]
        return sum(pool) / len(pool) if pool else None

    def remaining(self) -> float | None:
        """Estimated seconds until the last stage ends; None before any stage has ended."""
        total = 0.0
        for i, stage in enumerate(self.stages):
            if stage.seconds is not None or stage.skipped:
                continue
            guess = self._estimate(stage)
            if guess is None:
                return None
            if i == self.current:
                guess = max(guess - (self.clock() - self._stage_started), 0.0)
            total += guess
        return total

    def line(self, event: str) -> str:
        """``stage i/n <label>: <event> · elapsed … · remaining …``."""
        index = self.current if self.current is not None else 0
        left = self.remaining()
        eta = f"~{format_seconds(left)}" if left is not None else "estimated after the first stage"
        return (
            f"stage {index + 1}/{len(self.stages)} {self.stages[index].label}: {event} · "
            f"elapsed {format_seconds(self.clock() - self.started)} · remaining {eta}"
        )

    def _running(self) -> str:
        detail = current_note()
        running = f"running {format_seconds(self.clock() - self._stage_started)}"
        return self.line(f"{running} ({detail})" if detail else running)

    def pending(self, label: str) -> bool:
        """True while the stage called ``label`` has neither run nor been skipped."""
        return any(s.label == label and s.seconds is None and not s.skipped for s in self.stages)

    def skip(self, label: str, reason: str) -> None:
        """Leave a pending stage out (e.g. the gate of a student whose distillation failed)."""
        i = self._index(label)
        self.stages[i].skipped = True
        logger.info("stage %d/%d %s: skipped (%s)", i + 1, len(self.stages), label, reason)

    @contextmanager
    def stage(self, label: str) -> Iterator[None]:
        """Time the pending stage called ``label``: a start line, heartbeats, and a
        ``done``, ``failed`` or ``interrupted`` line."""
        self.current = self._index(label)
        self._stage_started = self.clock()
        note(None)
        logger.info("%s", self.line("started"))
        try:
            with Heartbeat(self._running, self.interval, logger):
                yield
        except Exception as exc:
            self.stages[self.current].skipped = True
            logger.info(
                "%s",
                self.line(f"failed after {format_seconds(self.clock() - self._stage_started)} ({type(exc).__name__})"),
            )
            raise
        except BaseException:
            logger.info("%s", self.line(f"interrupted after {format_seconds(self.clock() - self._stage_started)}"))
            raise
        finally:
            note(None)
        seconds = self.clock() - self._stage_started
        self.stages[self.current].seconds = seconds
        logger.info("%s", self.line(f"done in {format_seconds(seconds)}"))

    def finish(self) -> None:
        """The closing line: total time."""
        logger.info(
            "pipeline done: %d stage(s) in %s",
            sum(s.seconds is not None for s in self.stages),
            format_seconds(self.clock() - self.started),
        )
