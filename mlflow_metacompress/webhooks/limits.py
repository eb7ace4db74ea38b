"""The webhook service's HTTP limits (``metacompress webhooks serve`` options), kept free of
heavy imports so the command line can show their defaults.

See :mod:`.protocol` for how uvicorn enforces them and :mod:`.app` for the body limit.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class HttpLimits:
    """Per-connection limits of the service.

    - ``request_timeout_s``: a whole request (headers and body) must arrive within this
      time from the moment the connection waits for it;
    - ``idle_timeout_s``: a connection sending nothing for this long while a request is
      awaited is closed (also the keep-alive timeout between requests);
    - ``max_connections``: open connections at most (lowered at start to stay under the
      open-file limit); past it, the connection that waited longest for its request is closed.
    """

    request_timeout_s: float = 10.0
    idle_timeout_s: float = 5.0
    max_connections: int = 200

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{f.name}: must be a positive number, got {value!r}")
