"""``metacompress webhooks serve``: wire the config, queue, workers and HTTP app, and run uvicorn.

Two worker threads share the queue: one runs ``evaluate`` jobs one at a time (each is a
full MetaCompress evaluation, arXiv 2511.05476), the other ``guard`` jobs, so an alias
moved by hand is undone within seconds even while a long evaluation runs. Both take the
gate's promotion lock before touching an alias. Jobs interrupted by a previous crash or
kill are resumed when the queue is opened. With ``queue_only`` the service accepts and
queues deliveries but runs no job (maintenance; a later normal start drains the queue).

:func:`serve` binds the listening socket before it starts anything or logs "listening",
so a port in use or a bad host is a one-line error. uvicorn then runs on that socket with
the limits of :mod:`.protocol` (request deadline, idle timeout, connection cap below the
open-file limit), ``limit_concurrency`` and a cap on the size of a request's head.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import WebhookConfig
from .guard import guard_alias
from .limits import HttpLimits
from .queue import EVALUATE, GUARD, Job, JobQueue
from .worker import Worker, evaluate_job

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

# MLflow's REST client retries a dead server for minutes by default; the worker has its own
# backoff and must stay responsive, so a service without explicit settings fails fast.
_HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "60",
}
MAX_HEAD_BYTES = 16 * 1024  # request line and headers (h11_max_incomplete_event_size); MLflow sends < 1 KiB
_DEFAULT_LIMITS = HttpLimits()  # frozen: one shared default is safe
# asyncio accepts up to ``backlog`` connections per wake-up of the listening socket, before any
# protocol sees them (and can close one to make room), and a closed connection frees its
# descriptor a few loop iterations later. So asyncio is given a small ``backlog`` (its accept
# batch), the kernel's queue is widened to LISTEN_BACKLOG once serving, and the connection
# cap keeps four batches' worth of descriptors free, plus some for sqlite, logs and MLflow
# clients: accept() never fails with EMFILE, which would stop all accepting for a second.
ACCEPT_BATCH = 32
LISTEN_BACKLOG = 2048
FD_RESERVE = 4 * ACCEPT_BATCH + 32


class ListenError(ValueError):
    """The service cannot listen where asked (a bad port or host, a port in use); one line."""


@dataclass
class Service:
    """A configured service: its queue, its workers and its FastAPI app."""

    config: WebhookConfig
    queue: JobQueue
    client: MlflowClient
    tracking_uri: str
    queue_only: bool = False
    wake: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    workers: list[Worker] = field(default_factory=list)

    def app(self) -> FastAPI:
        from .app import create_app

        return create_app(
            self.config,
            self.queue,
            self.config.secret(),
            self.wake,
            lambda: {w.name: w.is_alive() for w in self.workers},
        )

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

    for name in (
        "anyio._backends._asyncio",
        "sklearn",
        "sklearn.metrics",
        "mlflow.models.evaluation.evaluator_registry",
        "mlflow.models.evaluation.base",
        "mlflow.pyfunc",
        "mlflow_metacompress.evaluation.evaluator",
        "mlflow_metacompress.gates.gate",
    ):
        importlib.import_module(name)


def listen(host: str, port: int, backlog: int = LISTEN_BACKLOG) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port); :class:`ListenError` names the fault."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ListenError(f"--port {port}: not a TCP port (0-65535)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ListenError(
            f"--host {host!r}: not an address of this machine ({getattr(exc, 'strerror', exc)})"
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def connection_cap(requested: int, reserve: int = FD_RESERVE) -> int:
    """``requested``, lowered so that open connections stay ``reserve`` file descriptors under the
    process's open-file limit (where ``accept()`` would fail with EMFILE)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return requested
    if soft == resource.RLIM_INFINITY:
        return requested
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:
        in_use = 32
    cap = max(1, min(requested, soft - in_use - reserve))
    if cap < requested:
        logger.warning("open-file limit %d: at most %d concurrent connections (asked for %d)", soft, cap, requested)
    return cap


async def _run(server: uvicorn.Server, sock: socket.socket) -> None:
    """Serve on ``sock`` until a signal stops ``server``; once serving, widen the kernel's
    accept queue that asyncio set to its accept batch (``listen`` on a listening socket
    only changes the backlog)."""
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started:
        sock.listen(LISTEN_BACKLOG)
    await task


def serve(
    config: WebhookConfig,
    host: str = "127.0.0.1",
    port: int = 8765,
    queue_only: bool = False,
    limits: HttpLimits = _DEFAULT_LIMITS,
) -> None:
    """Run the service until SIGINT/SIGTERM.

    Every problem found before serving (the config, the queue file, the port or host) is
    raised before any worker starts and before "listening" is logged.
    """
    import uvicorn

    from .protocol import limited_protocol

    service = build_service(config, queue_only)
    try:
        sock = listen(host, port)
    except ListenError:
        service.queue.close()
        raise
    try:
        if not queue_only:
            _preload()
        service.start_workers()
        cap = connection_cap(limits.max_connections)
        limits = dataclasses.replace(limits, max_connections=cap)
        bound = sock.getsockname()[1]
        logger.warning(
            "metacompress gates listening on http://%s:%d/webhook (tracking %s, alias %r, queue %s)",
            host,
            bound,
            service.tracking_uri,
            config.alias,
            config.queue_path,
        )
        server = uvicorn.Server(
            uvicorn.Config(
                service.app(),
                host=host,
                port=bound,
                log_level="warning",
                lifespan="off",
                loop="asyncio",
                http=limited_protocol(limits),
                # uvicorn annotates an int but passes it to loop.call_later, which takes float seconds
                timeout_keep_alive=limits.idle_timeout_s,  # type: ignore[arg-type]
                limit_concurrency=cap + 1,
                h11_max_incomplete_event_size=MAX_HEAD_BYTES,
                backlog=ACCEPT_BATCH,
            )
        )
        asyncio.run(_run(server, sock))
    finally:
        sock.close()
        service.shutdown()
