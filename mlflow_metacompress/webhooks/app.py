"""The HTTP face of the gate service (FastAPI): ``POST /webhook`` and ``GET /health``.

``POST /webhook`` answers at once and never evaluates: it verifies the delivery
(:mod:`.signature`; 401 when unsigned, badly signed or older than 5 minutes), parses the
body (:mod:`.events`; 400 when it is not an MLflow payload), then records the delivery
id and the jobs it asks for in one sqlite transaction (:mod:`.queue`) and wakes the
workers. A delivery id seen before answers 200 ``duplicate`` and queues nothing. A queue
that cannot be written answers 503, which MLflow's delivery retries with the same id.

``GET /health`` answers 200 with the job counts per state, the deliveries seen and
whether each worker thread is alive.
"""

import json
import logging
import sqlite3
import threading
from typing import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .config import WebhookConfig
from .events import MalformedEventError, jobs_for, parse_event
from .queue import JobQueue
from .signature import SignatureError, verify

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20


def create_app(config: WebhookConfig, queue: JobQueue, secret: str, wake: threading.Event,
               workers: Callable[[], dict[str, bool]] = dict) -> FastAPI:
    """The FastAPI application; ``workers`` reports each worker's liveness for ``/health``.

    (No ``from __future__ import annotations`` here: FastAPI reads the handlers' annotations.)
    """
    app = FastAPI(title="metacompress gates", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/webhook")
    async def webhook(request: Request) -> JSONResponse:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"error": f"body larger than {MAX_BODY_BYTES} bytes"}, status_code=413)
        try:
            delivery = verify(secret, request.headers, body)
        except SignatureError as exc:
            logger.warning("rejected a webhook delivery from %s: %s",
                           request.client.host if request.client else "?", exc)
            return JSONResponse({"error": f"unauthorized: {exc}"}, status_code=401)
        try:
            event = parse_event(json.loads(body.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return JSONResponse({"error": f"body is not JSON: {exc}"}, status_code=400)
        except MalformedEventError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        specs = jobs_for(config, event)
        try:
            ids = queue.record_delivery(delivery.delivery_id, event.name, specs)
        except sqlite3.Error as exc:  # MLflow retries 5xx answers with the same delivery id
            logger.error("could not record delivery %s: %s", delivery.delivery_id, exc)
            return JSONResponse({"error": "queue unavailable"}, status_code=503)
        if ids is None:
            logger.info("delivery %s replayed; ignored", delivery.delivery_id)
            return JSONResponse({"status": "duplicate", "jobs": []})
        if ids:
            wake.set()
        status = "queued" if ids else "ignored"
        logger.info("delivery %s %s: %s %s", delivery.delivery_id, event.name, status, ids)
        return JSONResponse({"status": status, "jobs": ids})

    @app.get("/health")
    def health() -> JSONResponse:
        return JSONResponse({"status": "ok", "queue": queue.counts(), "workers": workers()})

    return app
