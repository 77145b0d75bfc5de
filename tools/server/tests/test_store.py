"""Store against a brute-force oracle: snapshots, changes and the near filter, for many seeds."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

import server_support  # noqa: F401  (puts the repository root on sys.path)
from tools.server.store import Gone, Near, Store
from tools.server.validation import validate_geofence

SEEDS = range(8)


def definition(gid: str, rng: random.Random):
    raw = {"id": gid, "latitude": rng.uniform(-90, 90), "longitude": rng.uniform(-180, 180),
           "radius": rng.choice([1.0, 50.0, 5000.0, 200_000.0])}
    if rng.random() < 0.3:
        raw["name"] = f"n{rng.randrange(3)}"
    if rng.random() < 0.2:
        raw["metadata"] = {"k": rng.randrange(3)}
    d, reason = validate_geofence(raw)
    assert d is not None, reason
    return d


def as_tuple(g: dict) -> tuple:
    return (g["id"], g["latitude"], g["longitude"], g["radius"], g.get("name"), g.get("metadata"))


def def_tuple(d) -> tuple:
    meta = json.loads(d.metadata_json) if d.metadata_json else None
    return (d.id, d.latitude, d.longitude, d.radius_m, d.name, meta)


def list_all(store: Store, key: str, version: int | None, limit: int, near=None) -> list[dict]:
    items, after, pinned = [], None, version
    while True:
        v, page, more = store.list_page(key, pinned, after, limit, near)
        pinned = v
        items.extend(page)
        if not more:
            return items
        after = page[-1]["id"]


def central_angle_distance_m(lat1, lon1, lat2, lon2) -> float:
    """An independent formula: the angle between unit vectors (atan2 of cross and dot)."""
    def vec(lat, lon):
        la, lo = math.radians(lat), math.radians(lon)
        return (math.cos(la) * math.cos(lo), math.cos(la) * math.sin(lo), math.sin(la))
    a, b = vec(lat1, lon1), vec(lat2, lon2)
    cross = (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
    dot = sum(x * y for x, y in zip(a, b))
    return 6_371_008.8 * math.atan2(math.sqrt(sum(c * c for c in cross)), dot)


@pytest.mark.parametrize("seed", SEEDS)
def test_snapshots_and_changes_match_an_oracle(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    depth = 4
    store = Store(str(tmp_path / "s.sqlite"), history_depth=depth)
    key = "k"
    ids = [f"id{i:03d}" for i in range(60)]
    current: dict[str, tuple] = {}
    snapshots: dict[int, dict[str, tuple]] = {0: {}}
    version = 0
    for _ in range(12):
        if rng.random() < 0.3:
            chosen = rng.sample(ids, rng.randrange(0, 40))
            defs = [definition(i, rng) for i in chosen]
            result = store.replace_geofences(key, defs)
            new = {d.id: def_tuple(d) for d in defs}
        else:
            ups = [definition(i, rng) for i in rng.sample(ids, rng.randrange(0, 8))]
            dels = [i for i in rng.sample(ids, rng.randrange(0, 8)) if i not in {d.id for d in ups}]
            result = store.patch_geofences(key, ups, dels)
            new = dict(current)
            for i in dels:
                new.pop(i, None)
            new.update({d.id: def_tuple(d) for d in ups})
        assert result.changed == (new != current), f"seed {seed}"
        if result.changed:
            version += 1
        assert result.version == version, f"seed {seed}"
        current = new
        snapshots[version] = dict(current)

    for v, expected in snapshots.items():
        if v < version - depth:
            with pytest.raises(Gone):
                store.list_page(key, v, None, 5, None)
            with pytest.raises(Gone):
                store.changes_since(key, v, None)
            continue
        listed = list_all(store, key, v, limit=rng.randrange(1, 9))
        assert [as_tuple(g) for g in listed] == sorted(expected.values()), f"seed {seed} v{v}"
        # Applying changes since v to the snapshot at v gives the current set.
        now, upserted, deleted = store.changes_since(key, v, None)
        assert now == version
        rebuilt = dict(expected)
        for gid in deleted:
            rebuilt.pop(gid, None)
        rebuilt.update({g["id"]: as_tuple(g) for g in upserted})
        assert rebuilt == current, f"seed {seed} since v{v}"


@pytest.mark.parametrize("seed", SEEDS)
def test_near_filter_matches_a_full_scan(tmp_path: Path, seed: int) -> None:
    rng = random.Random(1000 + seed)
    store = Store(str(tmp_path / "n.sqlite"))
    # Cluster some geofences near the poles and the antimeridian, where shortcuts go wrong.
    defs = []
    for i in range(300):
        d = definition(f"g{i:03d}", rng)
        if i % 3 == 0:
            lat = rng.choice([rng.uniform(80, 90), rng.uniform(-90, -80), rng.uniform(-5, 5)])
            lon = rng.choice([rng.uniform(170, 180), rng.uniform(-180, -170)])
            d = validate_geofence({"id": d.id, "latitude": lat, "longitude": lon,
                                   "radius": d.radius_m})[0]
        defs.append(d)
    store.replace_geofences("k", defs)
    for _ in range(10):
        lat = rng.choice([rng.uniform(-90, 90), rng.uniform(85, 90), 0.0])
        lon = rng.choice([rng.uniform(-180, 180), 179.99, -180.0])
        reach = rng.choice([0.0, 1000.0, 300_000.0, 2_000_000.0])
        got = [g["id"] for g in list_all(store, "k", None, 37, Near(lat, lon, reach))]
        expected = [d.id for d in defs
                    if central_angle_distance_m(lat, lon, d.latitude, d.longitude)
                    <= reach + d.radius_m - 1e-6]
        maybe = [d.id for d in defs
                 if abs(central_angle_distance_m(lat, lon, d.latitude, d.longitude)
                        - (reach + d.radius_m)) <= 1e-6]
        assert set(expected) <= set(got) <= set(expected) | set(maybe), (
            f"seed {seed} near {lat},{lon} reach {reach}")
