"""Webhook receiver: verifies the engine's signed per-event POSTs and deduplicates by event id.

A delivery is ``POST /v1/webhook`` with the event's JSON object as body and the headers
``X-Geofence-Timestamp`` (whole seconds since the Unix epoch) and ``X-Geofence-Signature``
(``sha256=`` + lowercase hex HMAC-SHA256 under the shared secret of ``"{timestamp}." + body``,
the scheme of Stripe's ``Stripe-Signature``). The receiver recomputes the HMAC, compares in
constant time (``hmac.compare_digest``), and refuses a timestamp more than
``TOLERANCE_SECONDS`` away from its clock, so a captured request cannot be replayed later.

Answers: ``200 {"id", "duplicate"}`` (a second delivery of an id is a duplicate, stored once);
``401`` bad or missing signature, or a stale timestamp; ``400`` a body that is not a JSON object
with a string ``id``; ``413`` a body over ``MAX_BODY_BYTES``; ``503`` when the server was
started without ``--webhook-secret``. Received events are kept in memory (the receiver is a
test double, like the rest of ``/admin``) and listed by ``GET /admin/webhook``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from typing import Any, Callable

TOLERANCE_SECONDS = 300
"""Largest clock skew accepted, seconds (Stripe's default tolerance)."""

MAX_BODY_BYTES = 65_536
"""Largest body accepted, bytes: the engine's default webhook cap."""


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The header value the engine sends for ``body`` at ``timestamp``."""
    return "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


class WebhookLog:
    """Events received by id, with how many deliveries each took. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        self._deliveries = 0
        self._refused = 0

    def record(self, event: dict[str, Any], attempt: str | None) -> bool:
        """Stores ``event`` once per id; returns whether it was a duplicate."""
        with self._lock:
            self._deliveries += 1
            entry = self._events.get(event["id"])
            if entry is not None:
                entry["count"] += 1
                entry["attempts"].append(attempt)
                return True
            self._events[event["id"]] = {"event": event, "count": 1, "attempts": [attempt]}
            self._order.append(event["id"])
            return False

    def refuse(self) -> None:
        with self._lock:
            self._refused += 1

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {
                "event_count": len(self._order),
                "delivery_count": self._deliveries,
                "refused_count": self._refused,
                "events": [{"id": i, **self._events[i]} for i in self._order],
            }

    def clear(self) -> None:
        with self._lock:
            self._events.clear()
            self._order.clear()
            self._deliveries = 0
            self._refused = 0


def verify(secret: bytes | None, headers: Any, body: bytes,
           now: Callable[[], float] = time.time) -> tuple[int, str, str] | None:
    """``None`` when the request is authentic and fresh, else ``(status, code, message)``."""
    if secret is None:
        return 503, "webhook_disabled", "the server was started without --webhook-secret"
    timestamp = headers.get("x-geofence-timestamp")
    given = headers.get("x-geofence-signature")
    if timestamp is None or given is None:
        return 401, "unsigned", "X-Geofence-Timestamp and X-Geofence-Signature are required"
    if not timestamp.isdigit() or abs(now() - int(timestamp)) > TOLERANCE_SECONDS:
        return 401, "stale_timestamp", f"timestamp more than {TOLERANCE_SECONDS} s from now"
    if not hmac.compare_digest(given.encode(), signature(secret, timestamp, body).encode()):
        return 401, "bad_signature", "signature does not match the body"
    return None


def parse_event(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON object with a non-empty string ``id``, else ``None``."""
    try:
        event = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not event["id"]:
        return None
    return event
