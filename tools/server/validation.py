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

from .geo import bounding_cap

MAX_ID_LENGTH = 256
"""Longest geofence or event id accepted, in Unicode code points."""

MAX_RADIUS_M = 20_037_509.0
"""Largest geofence radius accepted, in metres: half the great-circle circumference (pi * R)."""

MAX_GEOMETRY_POSITIONS = 100_000
"""Most positions one polygon geometry may hold (every ring of every part, closing positions
included): a size cap on one row, chosen to pass a detailed country outline (Switzerland's
generalised border has about 600) with room to spare."""

MAX_LONGITUDE_DEG = 540.0
"""Largest longitude magnitude in a polygon, degrees: a polygon that crosses the antimeridian
may be written with longitudes past 180 (the engine's rule, ``PolygonRegion``)."""

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
    """One geofence as stored: a circle (centre in degrees, radius in metres) or a polygon.

    For a polygon, ``geometry_json`` holds the RFC 7946 geometry object as canonical JSON text
    and ``latitude``, ``longitude``, ``radius_m`` hold a circle that contains it (its bounding
    cap, :func:`tools.server.geo.bounding_cap`), which only the ``near=`` filter reads.
    """

    id: str
    latitude: float
    longitude: float
    radius_m: float
    name: str | None = None
    metadata_json: str | None = None
    """The ``metadata`` object as canonical JSON text, or ``None``."""
    geometry_json: str | None = None
    """The ``geometry`` object (Polygon or MultiPolygon) as canonical JSON text, or ``None``
    for a circle."""


def _check_ring(ring: Any, where: str) -> str | None:
    """Reason why ``ring`` is not a closed GeoJSON linear ring, or ``None``."""
    if not isinstance(ring, list):
        return f"{where} must be an array of positions"
    if len(ring) < 4:
        return f"{where} has {len(ring)} positions; a ring needs at least 4 (RFC 7946 3.1.6)"
    for index, position in enumerate(ring):
        if (not isinstance(position, list) or not 2 <= len(position) <= 3
                or not all(_is_number(v) for v in position)):
            return f"{where}, position {index} must be [longitude, latitude] of finite numbers"
        lon, lat = position[0], position[1]
        if not -90.0 <= lat <= 90.0:
            return f"{where}, position {index}: latitude {lat} is outside [-90, 90]"
        if not -MAX_LONGITUDE_DEG <= lon <= MAX_LONGITUDE_DEG:
            return f"{where}, position {index}: longitude {lon} is outside [-540, 540]"
    if ring[0][:2] != ring[-1][:2]:
        return f"{where} is not closed (its last position differs from its first)"
    return None


def validate_geometry(raw: Any) -> str | None:
    """Reason why ``raw`` is not a usable RFC 7946 Polygon or MultiPolygon, or ``None``.

    Structural checks only (the server has no geometry library): ``type`` is ``Polygon`` or
    ``MultiPolygon``; every polygon has at least one ring; every ring is an array of at least
    4 positions whose last equals its first; every position is 2 or 3 finite numbers with
    latitude in [-90, 90] and longitude in [-540, 540]; at most ``MAX_GEOMETRY_POSITIONS``
    positions in all. Topology (self-intersections, holes outside their shell, rings around a
    pole) is judged by the engine with GEOS at sync time, which holds such a geofence back
    with GEOS's reason. Cost: O(positions).
    """
    if not isinstance(raw, dict):
        return "geometry must be a JSON object"
    kind, coordinates = raw.get("type"), raw.get("coordinates")
    if kind == "Polygon":
        polygons, label = [coordinates], "polygon"
    elif kind == "MultiPolygon":
        if not isinstance(coordinates, list) or not coordinates:
            return "MultiPolygon coordinates must be a non-empty array of polygons"
        polygons, label = coordinates, "polygon"
    else:
        return "geometry type must be Polygon or MultiPolygon"
    total = 0
    for p, polygon in enumerate(polygons):
        where = f"geometry {label} {p}" if kind == "MultiPolygon" else "geometry"
        if not isinstance(polygon, list) or not polygon:
            return f"{where} must be a non-empty array of rings"
        for r, ring in enumerate(polygon):
            reason = _check_ring(ring, f"{where}, ring {r}")
            if reason:
                return reason
            total += len(ring)
            if total > MAX_GEOMETRY_POSITIONS:
                return f"geometry has more than {MAX_GEOMETRY_POSITIONS} positions"
    return None


def validate_geofence(raw: Any) -> tuple[GeofenceDefinition | None, str | None]:
    """Check one geofence object: ``id``, a circle (``latitude``, ``longitude``, ``radius``) or
    a ``geometry``, then ``name``? and ``metadata``?.

    A circle's latitude must lie in [-90, 90], longitude in [-180, 180], radius in
    (0, ``MAX_RADIUS_M``]. A non-null ``geometry`` (checked by :func:`validate_geometry`) makes
    the geofence a polygon; it must then come without ``latitude``, ``longitude`` and
    ``radius``. ``name`` is a string or null, ``metadata`` a JSON object or null. Unknown keys
    are ignored. Returns ``(definition, None)`` or ``(None, reason)``.
    """
    if not isinstance(raw, dict):
        return None, "geofence must be a JSON object"
    reason = _check_id(raw.get("id"), "id")
    if reason:
        return None, reason
    if raw.get("geometry") is not None:
        return _validate_polygon(raw)
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


def _name_and_metadata(raw: dict) -> tuple[str | None, str | None, str | None]:
    """``(name, metadata_json, reason)`` of a geofence object."""
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        return None, None, "name must be a string"
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return None, None, "metadata must be a JSON object"
    return name, (canonical_json(metadata) if metadata is not None else None), None


def _validate_polygon(raw: dict) -> tuple[GeofenceDefinition | None, str | None]:
    circle = [k for k in ("latitude", "longitude", "radius") if raw.get(k) is not None]
    if circle:
        return None, f"a geofence with a geometry has no {', '.join(circle)}"
    geometry = raw["geometry"]
    reason = validate_geometry(geometry)
    if reason:
        return None, reason
    name, metadata_json, reason = _name_and_metadata(raw)
    if reason:
        return None, reason
    rings = geometry["coordinates"] if geometry["type"] == "MultiPolygon" else [
        geometry["coordinates"]]
    lat, lon, radius = bounding_cap(
        [position for polygon in rings for ring in polygon for position in ring])
    return (
        GeofenceDefinition(
            id=raw["id"], latitude=lat, longitude=lon, radius_m=radius, name=name,
            metadata_json=metadata_json,
            geometry_json=canonical_json(
                {"type": geometry["type"], "coordinates": geometry["coordinates"]}),
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
