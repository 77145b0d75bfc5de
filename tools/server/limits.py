"""Request size limits, kept apart from the application so the command line loads quickly."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Request size limits for ``POST /v1/events``.

    - max_batch_events: most events in one batch, >= 1 (default 500).
    - max_batch_bytes: largest request body in bytes, >= 1 (default 1 MiB).
    """

    max_batch_events: int = 500
    max_batch_bytes: int = 1024 * 1024
