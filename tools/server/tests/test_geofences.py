"""Listing, paging, ETag/304, changes, history pruning, near= filter, auth and isolation."""

from __future__ import annotations

import pytest

from server_support import HISTORY_DEPTH, Server, geofence

# One degree of great-circle arc on the protocol's sphere: pi * 6,371,008.8 m / 180.
DEGREE_M = 111_195.0797


def numbered(n: int, prefix: str = "g") -> list[dict]:
    return [geofence(f"{prefix}{i:05d}", lat=(i % 170) - 85.0, lon=(i % 350) - 175.0,
                     radius=50.0 + i) for i in range(n)]


def test_missing_or_unknown_key_is_401(server: Server) -> None:
    server.new_key([geofence("a")])
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
        r = server.http.get("/v1/geofences", headers=headers)
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"].startswith("Bearer")
    r = server.get("/v1/geofences/changes", "nope", params={"since": "v0"})
    assert r.status_code == 401


def test_each_key_sees_only_its_own_set(server: Server) -> None:
    alice = server.new_key([geofence("shared-id", lat=1.0), geofence("alice-only")])
    bob = server.new_key([geofence("shared-id", lat=2.0)])
    a = server.get("/v1/geofences", alice).json()
    b = server.get("/v1/geofences", bob).json()
    assert [g["id"] for g in a["geofences"]] == ["alice-only", "shared-id"]
    assert [(g["id"], g["latitude"]) for g in b["geofences"]] == [("shared-id", 2.0)]
    server.patch(bob, delete=["shared-id"])
    assert len(server.get("/v1/geofences", alice).json()["geofences"]) == 2
    changes = server.get("/v1/geofences/changes", alice, params={"since": a["version"]}).json()
    assert changes["upserted"] == [] and changes["deleted"] == []


def test_geofence_shape(server: Server) -> None:
    key = server.new_key([
        geofence("full", lat=-33.5, lon=151.25, radius=250.5, name="Sydney",
                 metadata={"kind": "city", "n": 3}),
        geofence("bare"),
    ])
    body = server.get("/v1/geofences", key).json()
    assert set(body) == {"version", "geofences", "next_cursor"}
    bare, full = body["geofences"]
    assert set(bare) == {"id", "latitude", "longitude", "radius", "updated_at"}
    assert full["name"] == "Sydney" and full["metadata"] == {"kind": "city", "n": 3}
    assert (full["latitude"], full["longitude"], full["radius"]) == (-33.5, 151.25, 250.5)
    assert full["updated_at"].endswith("Z") and full["updated_at"][10] == "T"
    assert body["next_cursor"] is None


def test_paging_keeps_one_version_while_the_set_changes(server: Server) -> None:
    original = numbered(2500)
    key = server.new_key(original)
    first = server.get("/v1/geofences", key, params={"limit": 1000}).json()
    assert len(first["geofences"]) == 1000 and first["next_cursor"]
    # The set changes between pages: later pages still come from the first page's version.
    server.patch(key, upsert=[geofence("g00001", lat=0.0), geofence("zz-new")],
                 delete=["g02499", "g01500"])
    items, versions, cursor = list(first["geofences"]), [first["version"]], first["next_cursor"]
    while cursor:
        page = server.get("/v1/geofences", key, params={"limit": 1000, "cursor": cursor})
        assert page.status_code == 200
        assert page.headers["etag"] == f'"{first["version"]}"'
        body = page.json()
        versions.append(body["version"])
        items.extend(body["geofences"])
        cursor = body["next_cursor"]
    assert versions == [first["version"]] * 3
    assert [g["id"] for g in items] == [g["id"] for g in original]
    assert items[1]["latitude"] == original[1]["latitude"]
    # A new listing sees the new version.
    versions2, items2 = server.list_all(key, limit=1000)
    assert len(set(versions2)) == 1 and versions2[0] != first["version"]
    ids2 = [g["id"] for g in items2]
    assert "zz-new" in ids2 and "g02499" not in ids2 and len(ids2) == 2499
    assert ids2 == sorted(ids2)


def test_limit_default_maximum_and_errors(server: Server) -> None:
    key = server.new_key(numbered(1200))
    body = server.get("/v1/geofences", key).json()
    assert len(body["geofences"]) == 1000
    body = server.get("/v1/geofences", key, params={"limit": 50_000}).json()
    assert len(body["geofences"]) == 1200 and body["next_cursor"] is None
    for bad in ("0", "-1", "ten"):
        r = server.get("/v1/geofences", key, params={"limit": bad})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_parameter"
    r = server.get("/v1/geofences", key, params={"cursor": "not-a-cursor"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_cursor"


def test_exact_last_page_has_no_cursor(server: Server) -> None:
    key = server.new_key(numbered(6))
    versions, items = server.list_all(key, limit=3)
    assert len(versions) == 2 and len(items) == 6


def test_etag_and_if_none_match(server: Server) -> None:
    key = server.new_key([geofence("a")])
    r = server.get("/v1/geofences", key)
    etag = r.headers["etag"]
    assert etag == f'"{r.json()["version"]}"' and not etag.startswith("W/")
    for inm in (etag, f"W/{etag}", f'"v999999", {etag}', "*"):
        r304 = server.get("/v1/geofences", key, headers={"If-None-Match": inm})
        assert r304.status_code == 304 and r304.content == b""
        assert r304.headers["etag"] == etag
    assert server.get("/v1/geofences", key, headers={"If-None-Match": '"v0"'}).status_code == 200
    # Writing the same set again does not move the version.
    assert server.put(key, [geofence("a")])["changed"] is False
    assert server.get("/v1/geofences", key, headers={"If-None-Match": etag}).status_code == 304
    server.patch(key, upsert=[geofence("b")])
    r2 = server.get("/v1/geofences", key, headers={"If-None-Match": etag})
    assert r2.status_code == 200 and r2.headers["etag"] != etag


def test_changes_since(server: Server) -> None:
    key = server.new_key([geofence("keep"), geofence("move"), geofence("drop")])
    v1 = server.get("/v1/geofences", key).json()["version"]
    server.patch(key, upsert=[geofence("move", lat=11.0), geofence("new")], delete=["drop"])
    server.patch(key, upsert=[geofence("new", radius=999.0)])
    r = server.get("/v1/geofences/changes", key, params={"since": v1})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"version", "upserted", "deleted"}
    assert body["version"] == server.get("/v1/geofences", key).json()["version"]
    assert r.headers["etag"] == f'"{body["version"]}"'
    assert [(g["id"], g["latitude"], g["radius"]) for g in body["upserted"]] == [
        ("move", 11.0, 100.0), ("new", 10.0, 999.0)]
    assert body["deleted"] == ["drop"]
    # Nothing changed since the current version.
    now = server.get("/v1/geofences/changes", key, params={"since": body["version"]}).json()
    assert now == {"version": body["version"], "upserted": [], "deleted": []}
    # A replace records per-id changes too.
    server.put(key, [geofence("keep"), geofence("other")])
    after = server.get("/v1/geofences/changes", key, params={"since": body["version"]}).json()
    assert [g["id"] for g in after["upserted"]] == ["other"]
    assert after["deleted"] == ["move", "new"]


def test_changes_parameter_errors(server: Server) -> None:
    key = server.new_key([geofence("a")])
    for params in ({}, {"since": "banana"}):
        r = server.get("/v1/geofences/changes", key, params=params)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_parameter"
    r = server.get("/v1/geofences/changes", key, params={"since": "v999"})
    assert r.status_code == 410 and r.json()["error"]["code"] == "unknown_version"


def test_410_once_history_is_pruned(server: Server) -> None:
    key = server.new_key([geofence("a"), geofence("a2")])
    first = server.get("/v1/geofences", key, params={"limit": 1}).json()
    assert first["next_cursor"] is not None
    v_start = int(first["version"][1:])
    server.patch(key, upsert=[geofence("b")])
    assert server.get("/v1/geofences/changes", key,
                      params={"since": first["version"]}).status_code == 200
    for i in range(HISTORY_DEPTH + 1):
        server.patch(key, upsert=[geofence(f"extra{i}")])
    current = int(server.get("/v1/geofences", key).json()["version"][1:])
    assert current == v_start + HISTORY_DEPTH + 2
    r = server.get("/v1/geofences/changes", key, params={"since": first["version"]})
    assert r.status_code == 410
    assert r.json()["error"]["code"] == "history_pruned"
    oldest = f"v{current - HISTORY_DEPTH}"
    ok = server.get("/v1/geofences/changes", key, params={"since": oldest})
    assert ok.status_code == 200 and len(ok.json()["upserted"]) == HISTORY_DEPTH
    # A cursor pinned to a pruned snapshot is gone too: the client restarts the listing.
    r = server.get("/v1/geofences", key, params={"limit": 1, "cursor": first["next_cursor"]})
    assert r.status_code == 410 and r.json()["error"]["code"] == "cursor_expired"


def test_near_filter_with_hand_computed_distances(server: Server) -> None:
    key = server.new_key([
        # Along the equator from (0, 0): 0.5 deg = 55,597.54 m, 1 deg = 111,195.08 m.
        geofence("half-degree", lat=0.0, lon=0.5, radius=100.0),
        geofence("one-degree", lat=0.0, lon=1.0, radius=1000.0),
        # Along the meridian: 0.25 deg north = 27,798.77 m.
        geofence("quarter-north", lat=0.25, lon=0.0, radius=1.0),
        # Across the antimeridian from (0, 179.9): (0, -179.95) is 0.15 deg = 16,679.26 m.
        geofence("across-date-line", lat=0.0, lon=-179.95, radius=10.0),
        geofence("far", lat=45.0, lon=90.0, radius=5000.0),
    ])

    def near_ids(lat: float, lon: float, reach: float) -> list[str]:
        r = server.get("/v1/geofences", key,
                       params={"near": f"{lat},{lon}", "radius_m": reach})
        assert r.status_code == 200, r.text
        return [g["id"] for g in r.json()["geofences"]]

    # Reach 27,798 m + radius 1 m >= 27,798.77 m: "quarter-north" is in, just.
    assert near_ids(0.0, 0.0, 27_798.0) == ["quarter-north"]
    assert near_ids(0.0, 0.0, 27_797.0) == []
    # 55,497.6 m + 100 m >= 55,597.54 m, but 55,497.4 m + 100 m is not.
    assert near_ids(0.0, 0.0, 55_497.6) == ["half-degree", "quarter-north"]
    assert near_ids(0.0, 0.0, 55_497.4) == ["quarter-north"]
    # 110,195.1 m + 1,000 m >= 111,195.08 m.
    assert near_ids(0.0, 0.0, 110_195.1) == ["half-degree", "one-degree", "quarter-north"]
    assert near_ids(0.0, 0.0, 110_195.0) == ["half-degree", "quarter-north"]
    # 16,679.26 m - 10 m = 16,669.26 m across the antimeridian.
    assert near_ids(0.0, 179.9, 16_669.3) == ["across-date-line"]
    assert near_ids(0.0, 179.9, 16_669.2) == []


def test_near_filter_with_paging_and_changes(server: Server) -> None:
    inside = [geofence(f"in{i:02d}", lat=0.0, lon=i * 0.001, radius=10.0) for i in range(7)]
    outside = [geofence(f"out{i:02d}", lat=10.0, lon=10.0 + i, radius=10.0) for i in range(5)]
    key = server.new_key(inside + outside)
    params = {"near": "0,0", "radius_m": "1000"}
    versions, items = server.list_all(key, limit=3, params=params)
    assert [g["id"] for g in items] == [g["id"] for g in inside]
    assert len(versions) == 3 and len(set(versions)) == 1
    first = server.get("/v1/geofences", key, params={"limit": 3, **params}).json()
    r = server.get("/v1/geofences", key, params={"limit": 3, "cursor": first["next_cursor"],
                                                 "near": "1,1", "radius_m": "1000"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_cursor"
    r = server.get("/v1/geofences", key, params={"near": "0,0"})
    assert r.status_code == 400
    # Changes with near: a geofence that moved out of the area is reported as deleted.
    server.patch(key, upsert=[geofence("in00", lat=5.0, lon=5.0, radius=10.0),
                              geofence("in01", lat=0.0, lon=0.002, radius=20.0),
                              geofence("out00", lat=10.0, lon=10.0, radius=30.0)])
    changes = server.get("/v1/geofences/changes", key,
                         params={"since": first["version"], **params}).json()
    assert [g["id"] for g in changes["upserted"]] == ["in01"]
    assert changes["deleted"] == ["in00", "out00"]


@pytest.mark.parametrize("bad", [
    {"id": "", "latitude": 0, "longitude": 0, "radius": 1},
    {"id": "x", "latitude": 91, "longitude": 0, "radius": 1},
    {"id": "x", "latitude": 0, "longitude": 0, "radius": 0},
    {"id": "x", "latitude": 0, "longitude": 0, "radius": 1, "metadata": [1]},
])
def test_admin_rejects_invalid_geofences(server: Server, bad: dict) -> None:
    r = server.http.put("/admin/accounts/k-invalid/geofences", json={"geofences": [bad]})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_geofence"
    assert r.json()["error"]["details"][0]["index"] == 0
