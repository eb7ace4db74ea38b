"""Verify an MLflow webhook delivery exactly as ``mlflow/webhooks/delivery.py`` signs it.

MLflow 3 (Standard Webhooks conventions) sends three headers with every delivery:

- ``X-MLflow-Delivery-Id``: a UUID, the same across the HTTP retries of one delivery;
- ``X-MLflow-Timestamp``: Unix seconds when the delivery was signed;
- ``X-MLflow-Signature``: ``v1,<base64 HMAC-SHA256(secret, "<delivery_id>.<timestamp>.<body>")>``
  where ``<body>`` is the exact JSON text sent.

A delivery passes when the HMAC matches (compared in constant time) and the signed
timestamp is within :data:`TOLERANCE_S` of now, so a captured request cannot be replayed
later; replays inside the window are caught by the delivery-id ledger of :mod:`.queue`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass

SIGNATURE_HEADER = "X-MLflow-Signature"
TIMESTAMP_HEADER = "X-MLflow-Timestamp"
DELIVERY_ID_HEADER = "X-MLflow-Delivery-Id"
VERSION = "v1"
TOLERANCE_S = 300


class SignatureError(ValueError):
    """The delivery is unsigned, badly signed, or its timestamp is outside the tolerance."""


@dataclass(frozen=True)
class Delivery:
    """The authenticated headers of one delivery."""

    delivery_id: str
    timestamp: int


def sign(secret: str, delivery_id: str, timestamp: str | int, body: bytes) -> str:
    """The ``X-MLflow-Signature`` value MLflow sends for ``body`` (``v1,<base64>``)."""
    content = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode("utf-8"), content, hashlib.sha256).digest()
    return f"{VERSION},{base64.b64encode(digest).decode('ascii')}"


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():  # HTTP header names are case-insensitive
        if key.lower() == name.lower():
            return value.strip()
    raise SignatureError(f"missing header {name}")


def verify(
    secret: str, headers: Mapping[str, str], body: bytes, now: float | None = None, tolerance_s: int = TOLERANCE_S
) -> Delivery:
    """Check the signature and timestamp of a delivery; :class:`SignatureError` says which check failed.

    The signature header may hold several space-separated signatures (a secret rotation);
    any ``v1`` one that matches is accepted.
    """
    if not secret:
        raise SignatureError("no webhook secret is configured")
    delivery_id = _header(headers, DELIVERY_ID_HEADER)
    stamp = _header(headers, TIMESTAMP_HEADER)
    given = _header(headers, SIGNATURE_HEADER)
    if not delivery_id:
        raise SignatureError(f"empty {DELIVERY_ID_HEADER}")
    if not stamp.isdigit():
        raise SignatureError(f"{TIMESTAMP_HEADER} must be Unix seconds, got {stamp[:40]!r}")
    expected = sign(secret, delivery_id, stamp, body).encode("ascii")
    if not any(hmac.compare_digest(part.strip().encode("utf-8", "replace"), expected) for part in given.split()):
        raise SignatureError("signature mismatch")
    age = (time.time() if now is None else now) - int(stamp)
    if abs(age) > tolerance_s:
        raise SignatureError(
            f"timestamp {stamp} is {abs(age):.0f} s {'old' if age > 0 else 'in the future'}, "
            f"outside the {tolerance_s} s tolerance"
        )
    return Delivery(delivery_id, int(stamp))
