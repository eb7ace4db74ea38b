"""The HTTP face of the gate service (FastAPI): ``POST /webhook`` and ``GET /health``.

``POST /webhook`` answers at once and never evaluates: it reads at most
:data:`MAX_BODY_BYTES` (413 from ``Content-Length`` before reading anything, or as soon as
a streamed body passes the limit; the connection is then closed, so the rest is never
buffered), verifies the delivery (:mod:`.signature`; 401 when unsigned, badly signed or
older than 5 minutes), parses the body (:mod:`.events`; 400 when it is not JSON, too
deeply nested, or not an MLflow payload), then records the delivery id and the jobs it
asks for in one sqlite transaction (:mod:`.queue`) and wakes the workers. A delivery id
seen before answers 200 ``duplicate`` and queues nothing.

Nothing that blocks runs on the event loop: the queue is written in a worker thread that
waits at most :data:`QUEUE_WAIT_S` for it; a queue held longer (by a worker, or by another
process holding the sqlite write lock) answers 503 with ``Retry-After``, which MLflow's
delivery retries with the same id. So ``/health``, 401 answers and unknown paths answer
at once whatever the queue is doing.

``GET /health`` answers 200 with the job counts per state, the deliveries seen and
whether each worker thread is alive; when the queue cannot be read within
:data:`HEALTH_WAIT_S`, ``status`` is ``degraded`` with the last counts read and the reason.
"""

import functools
import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from .config import WebhookConfig
from .events import MalformedEventError, jobs_for, parse_event
from .queue import JobQueue
from .signature import SignatureError, verify

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20
QUEUE_WAIT_S = 2.0  # a delivery's wait for the queue before 503
HEALTH_WAIT_S = 0.5  # /health's wait for the queue's counts before answering "degraded"
RETRY_AFTER_S = 5
QUEUE_THREADS = 8  # deliveries writing the queue at once; the others wait for a thread


class _BadBody(ValueError):
    """The request body is not acceptable; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, never more than ``limit`` bytes of it in memory; :class:`_BadBody` 413 past it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise _BadBody(413, f"body of {int(declared)} bytes is larger than {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _BadBody(413, f"body larger than {limit} bytes")
    return bytes(body)


def decode_json(body: bytes) -> Any:
    """``body`` as JSON; :class:`_BadBody` 400 when it is not UTF-8 JSON or nests too deeply for the parser."""
    try:
        return json.loads(body.decode("utf-8"))
    except RecursionError:
        raise _BadBody(400, "body is not acceptable JSON: nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, and a too-long integer literal
        raise _BadBody(400, f"body is not JSON: {exc}") from None


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def create_app(
    config: WebhookConfig,
    queue: JobQueue,
    secret: str,
    wake: threading.Event,
    workers: Callable[[], dict[str, bool]] = dict,
) -> FastAPI:
    """The FastAPI application; ``workers`` reports each worker's liveness for ``/health``.

    (No ``from __future__ import annotations`` here: FastAPI reads the handlers' annotations.)
    """
    app = FastAPI(title="metacompress gates", docs_url=None, redoc_url=None, openapi_url=None)
    state: dict[str, Any] = {"counts": None, "limiter": None}

    async def record(delivery_id: str, event: str, specs: list) -> list[int] | None:
        if state["limiter"] is None:  # created inside the event loop
            state["limiter"] = anyio.CapacityLimiter(QUEUE_THREADS)
        call = functools.partial(queue.record_delivery, delivery_id, event, specs, timeout_s=QUEUE_WAIT_S)
        return await anyio.to_thread.run_sync(call, limiter=state["limiter"])

    @app.post("/webhook")
    async def webhook(request: Request) -> Response:
        try:
            body = await read_body(request)
        except _BadBody as exc:  # the rest of the body stays unread: close the connection
            return _error(exc.status, str(exc), Connection="close")
        except ClientDisconnect:
            return Response(status_code=400)  # never sent: the client is gone
        try:
            delivery = verify(secret, request.headers, body)
        except SignatureError as exc:
            logger.warning(
                "rejected a webhook delivery from %s: %s", request.client.host if request.client else "?", exc
            )
            return _error(401, f"unauthorized: {exc}")
        try:
            event = parse_event(decode_json(body))
        except _BadBody as exc:
            return _error(exc.status, str(exc))
        except MalformedEventError as exc:
            return _error(400, str(exc))
        specs = jobs_for(config, event)
        try:
            ids = await record(delivery.delivery_id, event.name, specs)
        except sqlite3.Error as exc:  # busy past QUEUE_WAIT_S, or broken: MLflow retries a 5xx with the same id
            logger.error("could not record delivery %s: %s", delivery.delivery_id, exc)
            return _error(503, "queue unavailable; retry later", **{"Retry-After": str(RETRY_AFTER_S)})
        if ids is None:
            logger.info("delivery %s replayed; ignored", delivery.delivery_id)
            return JSONResponse({"status": "duplicate", "jobs": []})
        if ids:
            wake.set()
        status = "queued" if ids else "ignored"
        logger.info("delivery %s %s: %s %s", delivery.delivery_id, event.name, status, ids)
        return JSONResponse({"status": status, "jobs": ids})

    @app.get("/health")
    def health() -> JSONResponse:  # a plain def: Starlette runs it in its thread pool
        try:
            state["counts"] = queue.counts(timeout_s=HEALTH_WAIT_S)
        except sqlite3.Error as exc:
            return JSONResponse(
                {"status": "degraded", "queue": state["counts"], "queue_error": str(exc), "workers": workers()}
            )
        return JSONResponse({"status": "ok", "queue": state["counts"], "workers": workers()})

    return app
