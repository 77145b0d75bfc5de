"""Validation of geofence definitions and location events, and RFC 3339 timestamps.

Each validator returns either a clean value or a human-readable reason; nothing here raises on
bad input, so a caller can reject one record and keep the rest of a batch.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_ID_LENGTH = 256
"""Longest geofence or event id accepted, in Unicode code points."""

MAX_RADIUS_M = 20_037_509.0
"""Largest geofence radius accepted, in metres: half the great-circle circumference (pi * R)."""

EVENT_TYPES = ("enter", "exit", "dwell")

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_rfc3339(text: Any) -> _dt.datetime | None:
    """Parse an RFC 3339 ``date-time`` (offset required) into an aware UTC datetime.

    Returns ``None`` for anything else: a missing offset, a date alone, an impossible date, a
    non-string. Fractions of a second beyond microseconds are truncated.
    """
    if not isinstance(text, str):
        return None
    m = _RFC3339.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = m.group(7) or ""
    micros = int((fraction[1:] + "000000")[:6]) if fraction else 0
    offset = m.group(8)
    if offset in ("Z", "z"):
        tz = _dt.timezone.utc
    else:
        sign = 1 if offset[0] == "+" else -1
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        if hours > 23 or minutes > 59:
            return None
        tz = _dt.timezone(sign * _dt.timedelta(hours=hours, minutes=minutes))
    # RFC 3339 allows a leap second (:60); clamp it to :59 so it still orders correctly.
    second = min(second, 59)
    try:
        value = _dt.datetime(year, month, day, hour, minute, second, micros, tzinfo=tz)
    except ValueError:
        return None
    return value.astimezone(_dt.timezone.utc)


def format_rfc3339(value: _dt.datetime) -> str:
    """Format an aware datetime as RFC 3339 UTC with millisecond precision, e.g. ``2026-01-02T03:04:05.678Z``."""
    utc = value.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys, so equal objects have equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_id(value: Any, what: str) -> str | None:
    """Reason why ``value`` is not a usable id, or ``None`` when it is."""
    if not isinstance(value, str) or value == "":
        return f"{what} must be a non-empty string"
    if len(value) > MAX_ID_LENGTH:
        return f"{what} is longer than {MAX_ID_LENGTH} characters"
    return None


@dataclass(frozen=True)
class GeofenceDefinition:
    """One circular geofence as stored: centre in degrees, radius in metres."""

    id: str
    latitude: float
    longitude: float
    radius_m: float
    name: str | None = None
    metadata_json: str | None = None
    """The ``metadata`` object as canonical JSON text, or ``None``."""


def validate_geofence(raw: Any) -> tuple[GeofenceDefinition | None, str | None]:
    """Check one geofence object (``id``, ``latitude``, ``longitude``, ``radius``, ``name``?, ``metadata``?).

    Latitude must lie in [-90, 90], longitude in [-180, 180], radius in (0, ``MAX_RADIUS_M``];
    ``name`` is a string or null, ``metadata`` a JSON object or null. Unknown keys are ignored.
    Returns ``(definition, None)`` or ``(None, reason)``.
    """
    if not isinstance(raw, dict):
        return None, "geofence must be a JSON object"
    reason = _check_id(raw.get("id"), "id")
    if reason:
        return None, reason
    lat, lon, radius = raw.get("latitude"), raw.get("longitude"), raw.get("radius")
    if not _is_number(lat) or not -90.0 <= lat <= 90.0:
        return None, "latitude must be a number in [-90, 90]"
    if not _is_number(lon) or not -180.0 <= lon <= 180.0:
        return None, "longitude must be a number in [-180, 180]"
    if not _is_number(radius) or not 0.0 < radius <= MAX_RADIUS_M:
        return None, f"radius must be a number of metres in (0, {MAX_RADIUS_M:.0f}]"
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        return None, "name must be a string"
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return None, "metadata must be a JSON object"
    return (
        GeofenceDefinition(
            id=raw["id"],
            latitude=float(lat),
            longitude=float(lon),
            radius_m=float(radius),
            name=name,
            metadata_json=canonical_json(metadata) if metadata is not None else None,
        ),
        None,
    )


def validate_event(raw: Any) -> str | None:
    """Reason why one uploaded event is invalid, or ``None`` when it is acceptable.

    Required: ``id``, ``type`` (enter, exit, dwell), ``geofence_id``, ``device_id``, ``time``
    (RFC 3339), ``latitude``, ``longitude``. Optional, checked when present and not null:
    ``user_id`` (string), ``accuracy`` (metres, >= 0), ``distance_m`` (number), ``dwell_s``
    (seconds, >= 0), ``after_gap`` (boolean), ``gap_start`` (RFC 3339), ``inferred`` (boolean:
    an ENTER or EXIT inferred between two fixes). Other keys are kept as-is.
    """
    if not isinstance(raw, dict):
        return "event must be a JSON object"
    if "id" not in raw:
        return "missing field id"
    reason = _check_id(raw["id"], "id")
    if reason:
        return reason
    if "type" not in raw:
        return "missing field type"
    if raw["type"] not in EVENT_TYPES:
        return f"unknown type {raw['type']!r}; expected one of enter, exit, dwell"
    for key in ("geofence_id", "device_id"):
        if key not in raw:
            return f"missing field {key}"
        reason = _check_id(raw[key], key)
        if reason:
            return reason
    if "time" not in raw:
        return "missing field time"
    # null: an event of a track without times (the engine then derives its id from the fix's
    # position in the track).
    if raw["time"] is not None and parse_rfc3339(raw["time"]) is None:
        return "time is not an RFC 3339 date-time with offset"
    for key, low, high in (("latitude", -90.0, 90.0), ("longitude", -180.0, 180.0)):
        if key not in raw:
            return f"missing field {key}"
        if not _is_number(raw[key]) or not low <= raw[key] <= high:
            return f"{key} must be a number in [{low:g}, {high:g}]"
    for key in ("user_id", "anonymous_id", "geofence_name", "url"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            return f"{key} must be a string"
    if raw.get("metadata") is not None and not isinstance(raw["metadata"], dict):
        return "metadata must be an object"
    for key in ("accuracy", "dwell_s", "visit_s"):
        value = raw.get(key)
        if value is not None and (not _is_number(value) or value < 0):
            return f"{key} must be a non-negative number"
    if raw.get("distance_m") is not None and not _is_number(raw["distance_m"]):
        return "distance_m must be a number"
    for key in ("after_gap", "removal", "inferred"):
        if raw.get(key) is not None and not isinstance(raw[key], bool):
            return f"{key} must be a boolean"
    for key in ("gap_start", "processed_at"):
        if raw.get(key) is not None and parse_rfc3339(raw[key]) is None:
            return f"{key} is not an RFC 3339 date-time with offset"
    return None
