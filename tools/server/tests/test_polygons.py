"""Polygon geofences: structural validation, listing, changes, ETags, near=, import, schema
migration of an older database."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from server_support import REPO_ROOT, Server, geofence
from test_openapi import assert_matches
from tools.server.geo import bounding_cap, haversine_m
from tools.server.import_geofences import import_files
from tools.server.store import Store
from tools.server.validation import validate_geofence

SWISS = REPO_ROOT / "data" / "polygons" / "swiss_route_polygons.geojson"

SQUARE = {"type": "Polygon", "coordinates": [[[6.0, 46.0], [6.1, 46.0], [6.1, 46.1], [6.0, 46.1],
                                              [6.0, 46.0]]]}
BOWTIE = {"type": "Polygon", "coordinates": [[[0, 0], [10, 10], [10, 0], [0, 10], [0, 0]]]}


def polygon(gid: str, geometry: dict = SQUARE, **extra) -> dict:
    return {"id": gid, "geometry": geometry, **extra}


@pytest.mark.parametrize("geometry, reason", [
    ({"type": "Point", "coordinates": [1, 2]}, "geometry type must be Polygon or MultiPolygon"),
    ({"type": "Polygon", "coordinates": []}, "geometry must be a non-empty array of rings"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]},
     "geometry, ring 0 has 3 positions; a ring needs at least 4 (RFC 7946 3.1.6)"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]},
     "geometry, ring 0 is not closed (its last position differs from its first)"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 91], [0, 0]]]},
     "geometry, ring 0, position 2: latitude 91 is outside [-90, 90]"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [541, 0], [1, 1], [0, 0]]]},
     "geometry, ring 0, position 1: longitude 541 is outside [-540, 540]"),
    ({"type": "Polygon", "coordinates": [[[0, 0], [1, "x"], [1, 1], [0, 0]]]},
     "geometry, ring 0, position 1 must be [longitude, latitude] of finite numbers"),
    ({"type": "MultiPolygon", "coordinates": [SQUARE["coordinates"], [[[0, 0], [1, 0], [0, 0]]]]},
     "geometry polygon 1, ring 0 has 3 positions; a ring needs at least 4 (RFC 7946 3.1.6)"),
    ({"type": "MultiPolygon", "coordinates": []},
     "MultiPolygon coordinates must be a non-empty array of polygons"),
])
def test_structural_rejections_name_the_place(geometry: dict, reason: str) -> None:
    assert validate_geofence(polygon("p", geometry)) == (None, reason)


def test_a_geometry_excludes_the_circle_members() -> None:
    definition, reason = validate_geofence({**polygon("p"), "radius": 5})
    assert definition is None and reason == "a geofence with a geometry has no radius"


def test_topology_is_left_to_the_client() -> None:
    # A bowtie is structurally sound; GEOS rejects it in the engine (Self-intersection[5 5]).
    definition, reason = validate_geofence(polygon("bow", BOWTIE))
    assert reason is None and definition is not None


def test_bounding_cap_contains_every_vertex_and_crosses_the_antimeridian() -> None:
    lat, lon, radius = bounding_cap(SQUARE["coordinates"][0])
    assert (lat, lon) == pytest.approx((46.05, 6.05))
    for x, y in SQUARE["coordinates"][0]:
        assert haversine_m(lat, lon, y, x) <= radius
    # Written past 180: the centre is on the antimeridian, not at longitude 0.
    lat, lon, radius = bounding_cap([[179, -1], [181, -1], [181, 1], [179, 1], [179, -1]])
    assert (lat, abs(lon)) == pytest.approx((0.0, 180.0))
    assert radius == pytest.approx(haversine_m(0, 180, 1, 181) * (1 + 1e-9) + 1)


def test_listing_changes_and_etag_carry_polygons(server: Server) -> None:
    key = server.new_key([geofence("circle"), polygon("square", name="Square",
                                                      metadata={"kind": "test"})])
    r = server.get("/v1/geofences", key)
    body = r.json()
    assert_matches("GeofencePage", body)
    by_id = {g["id"]: g for g in body["geofences"]}
    square = by_id["square"]
    assert square["geometry"] == SQUARE
    assert "latitude" not in square and "radius" not in square
    assert square["name"] == "Square" and square["metadata"] == {"kind": "test"}
    assert r.headers["etag"] == f'"{body["version"]}"'
    assert server.get("/v1/geofences", key,
                      headers={"If-None-Match": r.headers["etag"]}).status_code == 304

    # The same geometry again changes nothing: the version stays.
    assert server.patch(key, upsert=[polygon("square", name="Square",
                                             metadata={"kind": "test"})])["changed"] is False
    moved = {"type": "Polygon", "coordinates": [[[6.0, 46.0], [6.2, 46.0], [6.2, 46.1],
                                                 [6.0, 46.1], [6.0, 46.0]]]}
    result = server.patch(key, upsert=[polygon("square", moved)], delete=["circle"])
    assert result["changed"] is True and result["version"] != body["version"]
    changes = server.get("/v1/geofences/changes", key, params={"since": body["version"]}).json()
    assert_matches("Changes", changes)
    assert changes["deleted"] == ["circle"]
    assert [(g["id"], g["geometry"]) for g in changes["upserted"]] == [("square", moved)]
    assert server.get("/v1/geofences", key,
                      headers={"If-None-Match": r.headers["etag"]}).status_code == 200


def test_near_filters_a_polygon_by_its_bounding_cap(server: Server) -> None:
    key = server.new_key([polygon("square")])
    lat, lon, radius = bounding_cap(SQUARE["coordinates"][0])
    # A device 1 km beyond the cap with a reach of 900 m: out; 1,100 m: in.
    far_lat = lat + (radius + 1000) / 111_195.0797
    for reach, expected in ((900, []), (1100, ["square"])):
        page = server.get("/v1/geofences", key, params={
            "near": f"{far_lat},{lon}", "radius_m": reach}).json()
        assert [g["id"] for g in page["geofences"]] == expected


def test_invalid_polygon_is_refused_by_the_admin_route(server: Server) -> None:
    r = server.http.put("/admin/accounts/k-bad/geofences", json={"geofences": [
        polygon("open", {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]})]})
    assert r.status_code == 400
    assert r.json()["error"]["details"] == [{
        "index": 0, "id": "open",
        "reason": "geometry, ring 0 is not closed (its last position differs from its first)"}]


def test_import_the_swiss_polygons(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db.sqlite"))
    report = import_files(store, "k", [SWISS])
    features = json.loads(SWISS.read_text(encoding="utf-8"))["features"]
    assert report.rejected == [] and report.imported == len(features) == 38
    _, items, _ = store.list_page("k", None, None, 1000, None)
    by_id = {g["id"]: g for g in items}
    for feature in features:
        g = by_id[feature["id"]]
        assert g["geometry"] == feature["geometry"]
        props = dict(feature["properties"])
        assert g["name"] == props.pop("name") and g["metadata"] == props


def test_an_older_database_gains_the_geometry_column(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    Store(str(db)).replace_geofences("k", [validate_geofence(geofence("c"))[0]])
    with sqlite3.connect(db) as conn:  # the table as it was before polygons
        conn.execute("ALTER TABLE geofence_rows DROP COLUMN geometry")
    store = Store(str(db))
    store.patch_geofences("k", [validate_geofence(polygon("p"))[0]], ())
    _, items, _ = store.list_page("k", None, None, 10, None)
    assert [(g["id"], "geometry" in g) for g in items] == [("c", False), ("p", True)]


def test_a_multipolygon_matches_the_schema(server: Server) -> None:
    features = json.loads(SWISS.read_text(encoding="utf-8"))["features"]
    vaud = next(f for f in features if f["geometry"]["type"] == "MultiPolygon")
    key = server.new_key([polygon("vaud", vaud["geometry"])])
    assert_matches("GeofencePage", server.get("/v1/geofences", key).json())
