"""Great-circle distance on a spherical Earth.

Every distance in the protocol (the ``near=``/``radius_m=`` filter) is measured here and only
here, so the server and its tests agree on one Earth model.
"""

from __future__ import annotations

import math

EARTH_RADIUS_M = 6_371_008.8
"""Mean Earth radius R1 = (2a + b) / 3 of the GRS 80 / WGS 84 ellipsoid, in metres.

Source: H. Moritz, "Geodetic Reference System 1980", Journal of Geodesy 74 (2000) 128-133.
"""

METRES_PER_DEGREE_OF_ARC_M = math.pi * EARTH_RADIUS_M / 180.0
"""Length of one degree of great-circle arc on the sphere above (about 111,195.08 m)."""


def haversine_m(lat1_deg: float, lon1_deg: float, lat2_deg: float, lon2_deg: float) -> float:
    """Great-circle distance in metres between two points given in degrees.

    Uses the haversine formula on a sphere of radius :data:`EARTH_RADIUS_M`. Longitudes may lie
    on either side of the antimeridian; the shorter arc is measured. The result is in
    ``[0, pi * EARTH_RADIUS_M]``. Cost: a handful of trigonometric calls, no allocation.
    """
    phi1 = math.radians(lat1_deg)
    phi2 = math.radians(lat2_deg)
    dphi = phi2 - phi1
    dlmb = math.radians(lon2_deg - lon1_deg)
    h = math.sin(dphi / 2.0) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlmb / 2.0) ** 2
    # Rounding can push h a hair outside [0, 1] for antipodal points.
    h = min(1.0, max(0.0, h))
    return 2.0 * EARTH_RADIUS_M * math.asin(math.sqrt(h))


def within_reach(
    device_lat_deg: float,
    device_lon_deg: float,
    reach_m: float,
    centre_lat_deg: float,
    centre_lon_deg: float,
    geofence_radius_m: float,
) -> bool:
    """Whether a geofence counts as "near" a device.

    True when the distance from the device to the geofence centre is at most
    ``reach_m + geofence_radius_m``, i.e. the disc of radius ``reach_m`` around the device touches
    or overlaps the geofence disc. The boundary counts as near.
    """
    distance = haversine_m(device_lat_deg, device_lon_deg, centre_lat_deg, centre_lon_deg)
    return distance <= reach_m + geofence_radius_m


def bounding_cap(positions: list[list[float]]) -> tuple[float, float, float]:
    """A circle ``(latitude, longitude, radius_m)`` that contains a polygon's positions' box.

    The longitudes are first moved into one frame as the engine does (every one shifted by the
    same multiple of 360 so that the smallest lies in [-180, 180); a polygon cut at ±180 or
    written past 180 keeps its extent). The centre is the middle of the latitude/longitude box
    and the radius the largest haversine distance to its four corners, widened by a relative
    1e-9 and 1 m, the engine's ``PolygonRegion.boundingCap`` rule: along a parallel or a
    meridian the distance from the centre has a single minimum, so a corner is the farthest
    point of the box, and the box holds every edge (edges are straight in longitude and
    latitude, RFC 7946). Only the ``near=`` filter reads it, as a superset test.
    Cost: O(positions).
    """
    lons = [p[0] for p in positions]
    lats = [p[1] for p in positions]
    shift = 0.0
    while min(lons) + shift >= 180.0:
        shift -= 360.0
    while min(lons) + shift < -180.0:
        shift += 360.0
    west, east = min(lons) + shift, max(lons) + shift
    south, north = min(lats), max(lats)
    mid_lat = (south + north) / 2.0
    mid_lon = (west + east) / 2.0
    if mid_lon >= 180.0:
        mid_lon -= 360.0
    radius = max(haversine_m(mid_lat, mid_lon, lat, lon)
                 for lat in (south, north) for lon in (west, east))
    return mid_lat, mid_lon, radius * (1.0 + 1e-9) + 1.0
