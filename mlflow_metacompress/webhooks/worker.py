"""The background worker: takes jobs from :mod:`.queue` and judges versions with the gate.

An ``evaluate`` job runs :func:`mlflow_metacompress.gates.gate_version` (the MetaCompress
evaluation, arXiv 2511.05476, then ``promote``: tags first, the alias last, never over a
more recent passing holder). In the registry-driven service "more recent" also means a
higher version number: a version whose alias holder is a newer passing version is
judged and tagged but does not take the alias, so a burst of registrations ends with the
newest passing version as the holder whatever order the deliveries arrive in.

Failures:

- the tracking server unreachable (connection refused, timeouts, 502/503/504, or its
  ``/health`` not answering after any error), or the gate's promotion lock busy past its
  timeout (a ``TimeoutError``): the job goes back to the queue with an
  exponential backoff (1 s, 2 s, 4 s, … at most :data:`MAX_BACKOFF_S`) and is never
  dropped;
- any other error (the teacher does not resolve, bad data, a bad evaluator config): the
  version is tagged ``metacompress.error=<message>`` then ``metacompress.verdict=error``,
  no alias moves, and the worker goes on with the next job;
- the queue itself busy past its wait (another process holding the sqlite write lock) or
  failing: the worker logs it and tries again every ``poll_s``; it never dies of it, and
  a job's outcome is written once the queue is back.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..gates.registry import TAG_TEACHER, TAG_VERDICT, has_passed, holder
from .config import WebhookConfig
from .queue import EVALUATE, Job, JobQueue

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

TAG_ERROR = "metacompress.error"
MAX_BACKOFF_S = 60.0
_MAX_TAG = 5000
_TRANSIENT_TEXT = (
    "Max retries exceeded",
    "Connection refused",
    "ConnectionError",
    "NewConnectionError",
    "RemoteDisconnected",
    "Read timed out",
    "ConnectTimeout",
    "error code 502",
    "error code 503",
    "error code 504",
    "Connection aborted",
)

Handler = Callable[[Job], tuple[str, str]]


def tracking_reachable(uri: str, timeout_s: float = 3.0) -> bool:
    """True when ``uri`` is not an HTTP server, or its ``/health`` answers 200."""
    if not uri.startswith(("http://", "https://")):
        return True
    import requests

    try:
        return requests.get(uri.rstrip("/") + "/health", timeout=timeout_s).status_code == 200
    except requests.RequestException:
        return False


def is_transient(exc: BaseException) -> bool:
    """An error caused by the tracking server being unreachable (anywhere in the cause chain)."""
    import requests

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError)):
            return True
        if any(text in str(seen) for text in _TRANSIENT_TEXT):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def backoff_s(attempts: int) -> float:
    """Delay before retry number ``attempts`` (1 s, 2 s, 4 s, … capped at :data:`MAX_BACKOFF_S`)."""
    return min(MAX_BACKOFF_S, 2.0 ** max(0, attempts - 1))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_TAG else text[: _MAX_TAG - 3] + "..."


def evaluate_job(config: WebhookConfig, client: MlflowClient, job: Job) -> tuple[str, str]:
    """Judge one version; returns the job's final state and a one-line message."""
    import mlflow

    from ..gates import PromotionRefusedError, gate_version, load_eval_data

    rule = config.rule_for(job.model)
    if rule is None:
        return "skipped", f"{job.model} is not in {config.path}"
    mv = client.get_model_version(job.model, job.version)
    tags = mv.tags or {}
    if job.attempts == 1 and tags.get(TAG_VERDICT) in ("passed", "failed"):
        return "skipped", f"v{job.version} was already judged ({tags[TAG_VERDICT]})"
    teacher = rule.teacher or tags.get(TAG_TEACHER)
    if not teacher:
        return "waiting", f"no teacher in the config and no {TAG_TEACHER!r} tag; waiting for the tag"
    alias: str | None = config.alias
    current = holder(client, job.model, config.alias)
    note = ""
    if current is not None and has_passed(current) and int(current.version) > int(job.version):
        alias, note = None, f"; alias {config.alias!r} stays on newer passing v{current.version}"
    if config.experiment:
        mlflow.set_experiment(config.experiment)
    cfg = dict(rule.evaluator_config)
    if rule.teacher:
        cfg["teacher"] = rule.teacher
    try:
        decision = gate_version(
            job.model,
            job.version,
            load_eval_data(rule.data),
            rule.policy,
            targets=rule.targets,
            alias=alias,
            evaluator_config=cfg,
            client=client,
        )
    except PromotionRefusedError as exc:  # judged and tagged; a fresher passing holder keeps the alias
        return "done", _short(f"{'passed' if exc.decision.passed else 'failed'}; {exc}")
    verdict = "passed" if decision.passed else "failed"
    moved = f"; alias {config.alias!r} moved" if decision.alias_moved else ""
    return "done", _short(f"{verdict} policy {decision.policy!r}{moved}{note}")


def tag_error(client: MlflowClient, job: Job, exc: BaseException) -> str:
    """Record a failed evaluation on the version: the message, then ``verdict=error`` (no alias moves)."""
    message = _short(f"{type(exc).__name__}: {exc}")
    client.set_model_version_tag(job.model, job.version, TAG_ERROR, message)
    client.set_model_version_tag(job.model, job.version, TAG_VERDICT, "error")
    return message


class Worker(threading.Thread):
    """A daemon thread running the jobs of ``kinds`` one at a time until ``stop`` is set."""

    def __init__(
        self,
        queue: JobQueue,
        kinds: tuple[str, ...],
        handler: Handler,
        client: MlflowClient,
        tracking_uri: str,
        wake: threading.Event,
        stop: threading.Event,
        poll_s: float = 1.0,
    ) -> None:
        super().__init__(name=f"metacompress-{'-'.join(kinds)}", daemon=True)
        self.queue, self.kinds, self.handler, self.client = queue, kinds, handler, client
        self.tracking_uri, self.wake, self.stop, self.poll_s = tracking_uri, wake, stop, poll_s

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                job = self.queue.claim(self.kinds)
                if job is None:
                    due = self.queue.next_due_in(self.kinds)
                    self.wake.wait(self.poll_s if due is None else min(self.poll_s, max(due, 0.05)))
                    self.wake.clear()
                    continue
            except sqlite3.Error as exc:
                self._queue_unavailable(exc)
                continue
            self.run_one(job)

    def _queue_unavailable(self, exc: BaseException) -> None:
        logger.warning(
            "%s: queue %s unavailable (%s); trying again in %g s", self.name, self.queue.path, exc, self.poll_s
        )
        self.stop.wait(self.poll_s)

    def _write(self, action: Callable[[], None]) -> None:
        """Write a job's outcome, waiting out a busy queue (until ``stop``: the job then stays
        ``running`` and is resumed on the next start)."""
        while True:
            try:
                action()
                return
            except sqlite3.Error as exc:
                if self.stop.is_set():
                    logger.warning("%s: stopping with a job's outcome unwritten (%s)", self.name, exc)
                    return
                self._queue_unavailable(exc)

    def run_one(self, job: Job) -> None:
        """Run ``job`` and record its outcome; never raises."""
        started = time.monotonic()
        try:
            state, message = self.handler(job)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the job
            self._failed(job, exc)
            return
        self._write(lambda: self.queue.finish(job.id, state, message))
        logger.info(
            "job %d %s %s v%s: %s (%.1f s) %s",
            job.id,
            job.kind,
            job.model,
            job.version,
            state,
            time.monotonic() - started,
            message,
        )

    def _failed(self, job: Job, exc: Exception) -> None:
        if is_transient(exc) or not tracking_reachable(self.tracking_uri):
            delay = backoff_s(job.attempts)
            logger.warning(
                "job %d %s %s v%s: tracking server unavailable (%s); retrying in %.0f s",
                job.id,
                job.kind,
                job.model,
                job.version,
                " ".join(str(exc).split())[:200],
                delay,
            )
            self._write(lambda: self.queue.retry_later(job.id, delay, f"tracking server unavailable: {exc}"))
            return
        logger.warning("job %d %s %s v%s failed: %s", job.id, job.kind, job.model, job.version, exc, exc_info=True)
        message = _short(f"{type(exc).__name__}: {exc}")
        if job.kind == EVALUATE:
            try:
                message = tag_error(self.client, job, exc)
            except Exception as tag_exc:  # noqa: BLE001 - the server went away while tagging: retry
                if is_transient(tag_exc) or not tracking_reachable(self.tracking_uri):
                    reason = f"tracking server unavailable: {tag_exc}"
                    self._write(lambda: self.queue.retry_later(job.id, backoff_s(job.attempts), reason))
                    return
                logger.exception("could not tag %s v%s with the error", job.model, job.version)
        self._write(lambda: self.queue.finish(job.id, "error", message))
