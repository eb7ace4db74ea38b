"""uvicorn's h11 protocol with the time and connection limits uvicorn lacks.

uvicorn's ``timeout_keep_alive`` is reset by every byte received and is not armed on a
fresh connection, so a client that trickles a request one byte at a time, or connects
and sends nothing, holds its connection (and a file descriptor) for ever; ASGI
middleware cannot help, because it runs only once the request is parsed. This protocol
(passed to uvicorn as ``http=``) adds, per connection:

- a **request deadline**: from the moment the connection waits for a request (opened, or
  its previous response sent) to the last byte of that request's body, at most
  ``request_timeout_s``; then it answers 408 if no response has started, and closes;
- an **idle timeout**: no byte for ``idle_timeout_s`` while waiting for a request closes
  it the same way;
- both are disarmed once the whole request (headers and body) has arrived, so the
  service's own work is never cut short, and re-armed when the response is sent;
- a **connection cap**: when a new connection makes more than ``max_connections``, the
  connection that has waited longest for its request is closed (never one whose request
  is being answered); with the cap set below the open-file limit and asyncio's small
  accept batch (both in :mod:`.service`), idle or half-sent connections cannot exhaust
  the process's file descriptors (``accept()`` failing with EMFILE), and a fresh
  ``/health`` always gets in.

These are the defences against Slowloris-style attacks (R. Hansen, 2009); nginx bounds
the same things with ``client_header_timeout``, ``client_body_timeout`` and
``worker_connections``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .limits import HttpLimits

logger = logging.getLogger(__name__)

_DEFAULTS = HttpLimits()
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 16\r\n\r\nrequest timeout\n"
)
_WARN_EVERY_S = 10.0


class DeadlineH11Protocol(H11Protocol):
    """:class:`H11Protocol` with a request deadline, an idle timeout and a connection cap.

    The limits are class attributes (:class:`.limits.HttpLimits`' defaults); :func:`limited_protocol`
    makes a subclass with others.
    """

    request_timeout_s: float = _DEFAULTS.request_timeout_s
    idle_timeout_s: float = _DEFAULTS.idle_timeout_s
    max_connections: int = _DEFAULTS.max_connections
    _last_warning: float = 0.0  # shared by all connections: at most one cap/timeout warning per 10 s

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting_since: float | None = None  # None: disarmed (a request is being answered)
        self._last_byte = 0.0
        self._timer: asyncio.TimerHandle | None = None

    # -- arming ---------------------------------------------------------------------------
    def _arm(self) -> None:
        now = self.loop.time()
        self._waiting_since = self._last_byte = now
        self._schedule()

    def _disarm(self) -> None:
        self._waiting_since = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        assert self._waiting_since is not None
        due = min(self._waiting_since + self.request_timeout_s, self._last_byte + self.idle_timeout_s)
        self._timer = self.loop.call_at(due, self._check)

    def _check(self) -> None:
        self._timer = None
        if self._waiting_since is None or self.transport.is_closing():
            return
        now = self.loop.time()
        if now >= self._waiting_since + self.request_timeout_s:
            self._expire(f"request not received within {self.request_timeout_s:g} s")
        elif now >= self._last_byte + self.idle_timeout_s:
            self._expire(f"no data for {self.idle_timeout_s:g} s")
        else:  # a byte arrived since the timer was set: wait for the nearer of the two limits
            self._schedule()

    def _expire(self, why: str) -> None:
        self._disarm()
        self._warn(f"closing a connection from {self._peer()}: {why}")
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]:d}" if self.client else "?"

    @classmethod
    def _warn(cls, message: str) -> None:
        now = time.monotonic()
        if now - DeadlineH11Protocol._last_warning >= _WARN_EVERY_S:
            DeadlineH11Protocol._last_warning = now
            logger.warning("%s (further such messages within %g s are not logged)", message, _WARN_EVERY_S)
        else:
            logger.debug("%s", message)

    def _request_received(self) -> bool:
        """The current request's headers and body have all arrived (or the peer is done sending)."""
        return self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)

    # -- uvicorn's protocol interface -----------------------------------------------------------
    # uvicorn's signature, which narrows asyncio.Protocol's BaseTransport (uvicorn ignores it too)
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def _make_room(self) -> None:
        """Close the connection that has waited longest for its request (maybe this one)."""
        waiting = [
            c
            for c in self.connections
            if isinstance(c, DeadlineH11Protocol)
            and c is not self
            and c._waiting_since is not None
            and not c.transport.is_closing()
        ]
        victim = min(waiting, key=lambda c: c._waiting_since or 0.0, default=self)
        victim._expire(f"more than {self.max_connections} connections; it waited longest for its request")

    def data_received(self, data: bytes) -> None:
        if self._waiting_since is not None:
            self._last_byte = self.loop.time()
        super().data_received(data)
        if self._waiting_since is not None and self._request_received():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this keep-alive connection gets its own deadline
            if self._request_received():  # a pipelined request already complete
                self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def limited_protocol(limits: HttpLimits) -> type[DeadlineH11Protocol]:
    """A :class:`DeadlineH11Protocol` subclass with ``limits`` (uvicorn's ``http=`` takes a class)."""
    return type(
        "LimitedH11Protocol",
        (DeadlineH11Protocol,),
        {
            "request_timeout_s": float(limits.request_timeout_s),
            "idle_timeout_s": float(limits.idle_timeout_s),
            "max_connections": int(limits.max_connections),
        },
    )
