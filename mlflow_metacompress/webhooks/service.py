"""``metacompress webhooks serve``: wire the config, queue, workers and HTTP app, and run uvicorn.

Two worker threads share the queue: one runs ``evaluate`` jobs one at a time (each is a
full MetaCompress evaluation, arXiv 2511.05476), the other ``guard`` jobs, so an alias
moved by hand is undone within seconds even while a long evaluation runs. Both take the
gate's promotion lock before touching an alias. Jobs interrupted by a previous crash or
kill are resumed when the queue is opened. With ``queue_only`` the service accepts and
queues deliveries but runs no job (maintenance; a later normal start drains the queue).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import WebhookConfig
from .guard import guard_alias
from .queue import EVALUATE, GUARD, Job, JobQueue
from .worker import Worker, evaluate_job

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

# MLflow's REST client retries a dead server for minutes by default; the worker has its own
# backoff and must stay responsive, so a service without explicit settings fails fast.
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                  "MLFLOW_HTTP_REQUEST_TIMEOUT": "60"}


@dataclass
class Service:
    """A configured service: its queue, its workers and its FastAPI app."""

    config: WebhookConfig
    queue: JobQueue
    client: "MlflowClient"
    tracking_uri: str
    queue_only: bool = False
    wake: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    workers: list[Worker] = field(default_factory=list)

    def app(self) -> "FastAPI":
        from .app import create_app

        return create_app(self.config, self.queue, self.config.secret(), self.wake,
                          lambda: {w.name: w.is_alive() for w in self.workers})

    def start_workers(self) -> None:
        if self.queue_only:
            logger.warning("queue-only mode: deliveries are queued, no job runs")
            return

        def evaluate(job: Job) -> tuple[str, str]:
            return evaluate_job(self.config, self.client, job)

        def guard(job: Job) -> tuple[str, str]:
            outcome = guard_alias(self.client, job.model, str(job.alias), job.version)
            return ("done" if outcome.reverted else "skipped"), outcome.message

        for kinds, handler in (((EVALUATE,), evaluate), ((GUARD,), guard)):
            worker = Worker(self.queue, kinds, handler, self.client, self.tracking_uri, self.wake, self.stop)
            worker.start()
            self.workers.append(worker)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop the workers; a job still running stays ``running`` and is resumed on the next start."""
        self.stop.set()
        self.wake.set()
        for worker in self.workers:
            worker.join(timeout_s)
        self.queue.close()


def build_service(config: WebhookConfig, queue_only: bool = False) -> Service:
    """Point MLflow at the config's tracking server, open the queue, check the secret is set."""
    import mlflow
    from mlflow import MlflowClient

    for key, value in _HTTP_DEFAULTS.items():
        os.environ.setdefault(key, value)
    uri = config.tracking_uri or mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    config.secret()  # fail before listening when the secret is missing
    queue = JobQueue(config.queue_path)
    logger.info("queue %s: %s", config.queue_path, queue.counts())
    return Service(config, queue, MlflowClient(tracking_uri=uri, registry_uri=uri), uri, queue_only)


def _preload() -> None:
    """Import what the request threads and the workers import lazily, before any thread
    starts. MLflow's post-import hooks take their own lock around imports: a worker's first
    ``mlflow.models.evaluate`` (which registers evaluator hooks and then imports sklearn)
    and a request thread's first import of anyio's asyncio backend deadlocked on that lock
    and Python's module lock, seen in the full test suite."""
    import importlib

    for name in ("anyio._backends._asyncio", "sklearn", "sklearn.metrics", "mlflow.models.evaluation.evaluator_registry",
                 "mlflow.models.evaluation.base", "mlflow.pyfunc", "mlflow_metacompress.evaluation.evaluator",
                 "mlflow_metacompress.gates.gate"):
        importlib.import_module(name)


def serve(config: WebhookConfig, host: str = "127.0.0.1", port: int = 8765, queue_only: bool = False) -> None:
    """Run the service until SIGINT/SIGTERM."""
    import uvicorn

    service = build_service(config, queue_only)
    _preload()
    service.start_workers()
    logger.warning("metacompress gates listening on http://%s:%d/webhook (tracking %s, alias %r, queue %s)",
                   host, port, service.tracking_uri, config.alias, config.queue_path)
    try:
        uvicorn.run(service.app(), host=host, port=port, log_level="warning")
    finally:
        service.shutdown()
