"""Importer: JSON, GeoJSON and CSV readers, rejection reasons, CLI exit codes, --import at start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from server_support import REPO_ROOT, RUN, Server
from tools.server.import_geofences import ImportFileError, import_files
from tools.server.store import Store

import pytest

HAWAII_CSV = REPO_ROOT / "data" / "places" / "osm_places_hawaii.csv"


def current(store: Store, key: str) -> dict[str, dict]:
    _, items, has_more = store.list_page(key, None, None, 10_000, None)
    assert not has_more
    return {g["id"]: g for g in items}


def test_json_list(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps([
        {"id": "a", "latitude": 1.5, "longitude": 2.5, "radius": 30, "name": "A",
         "metadata": {"x": 1}},
        {"id": "b", "latitude": 1, "longitude": 2},
        {"id": "c", "latitude": 100, "longitude": 2, "radius": 5},
        {"id": "a", "latitude": 0, "longitude": 0, "radius": 5},
        "junk",
    ]))
    store = Store(str(tmp_path / "db.sqlite"))
    report = import_files(store, "k", [path], default_radius=250.0)
    assert report.imported == 2
    reasons = dict(report.rejected)
    assert "latitude" in reasons[f"{path}[2]"]
    assert "duplicate id" in reasons[f"{path}[3]"]
    assert "JSON object" in reasons[f"{path}[4]"]
    rows = current(store, "k")
    assert rows["a"]["metadata"] == {"x": 1} and rows["a"]["name"] == "A"
    assert rows["b"]["radius"] == 250.0


def test_geojson_points(tmp_path: Path) -> None:
    path = tmp_path / "places.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": 7, "geometry": {"type": "Point", "coordinates": [-157.8, 21.3]},
         "properties": {"name": "Honolulu", "radius": 900, "population": 390738}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10, 20]},
         "properties": {"id": "meta", "radius_m": 50, "metadata": {"a": "b"}}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10, 20]},
         "properties": {"id": "no-radius"}},
        {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": []},
         "properties": {"id": "poly", "radius": 5}},
    ]}))
    store = Store(str(tmp_path / "db.sqlite"))
    report = import_files(store, "k", [path])
    assert report.imported == 2
    assert [r for _, r in report.rejected] == [
        "missing radius (give --radius for a default)",
        "geometry must be a non-empty array of rings"]
    rows = current(store, "k")
    assert (rows["7"]["latitude"], rows["7"]["longitude"], rows["7"]["radius"]) == (
        21.3, -157.8, 900.0)
    assert rows["7"]["metadata"] == {"population": 390738}
    assert rows["meta"]["metadata"] == {"a": "b"}


def test_csv_with_and_without_radius(tmp_path: Path) -> None:
    path = tmp_path / "places.csv"
    path.write_text(
        "id,name,latitude,longitude,radius,kind\n"
        'a,"Comma, Town",1.0,2.0,300,town\n'
        "b,Bee,1.0,2.0,,\n"
        "c,Cee,north,2.0,10,x\n"
        ",Nameless,1,2,10,x\n"
        "d,Dee,1,2,-5,x\n"
    )
    store = Store(str(tmp_path / "db.sqlite"))
    report = import_files(store, "k", [path], default_radius=1500.0)
    assert report.imported == 2
    assert [where.rsplit(":", 1)[1] for where, _ in report.rejected] == ["4", "5", "6"]
    rows = current(store, "k")
    assert rows["a"]["name"] == "Comma, Town" and rows["a"]["metadata"] == {"kind": "town"}
    assert rows["b"]["radius"] == 1500.0 and "metadata" not in rows["b"]


def test_csv_radius_under_the_names_the_engine_reads(tmp_path: Path) -> None:
    # The engine's generated workloads write radius_m; it is the radius, not metadata.
    path = tmp_path / "workload.csv"
    path.write_text("id,latitude,longitude,radius_m,kind\n0,48.8,2.3,471.5,x\n1,48.6,2.1,,\n")
    store = Store(str(tmp_path / "db.sqlite"))
    report = import_files(store, "k", [path], default_radius=100.0)
    assert report.imported == 2
    rows = current(store, "k")
    assert rows["0"]["radius"] == 471.5 and rows["0"]["metadata"] == {"kind": "x"}
    assert rows["1"]["radius"] == 100.0 and "metadata" not in rows["1"]


def test_replace_and_merge_modes(tmp_path: Path) -> None:
    first, second = tmp_path / "1.json", tmp_path / "2.json"
    first.write_text(json.dumps([{"id": "a", "latitude": 0, "longitude": 0, "radius": 1},
                                 {"id": "b", "latitude": 0, "longitude": 0, "radius": 1}]))
    second.write_text(json.dumps([{"id": "c", "latitude": 0, "longitude": 0, "radius": 1}]))
    store = Store(str(tmp_path / "db.sqlite"))
    import_files(store, "k", [first])
    import_files(store, "k", [second], mode="merge")
    assert sorted(current(store, "k")) == ["a", "b", "c"]
    report = import_files(store, "k", [second])
    assert sorted(current(store, "k")) == ["c"] and report.result.deleted == 2


def test_unreadable_files(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db.sqlite"))
    with pytest.raises(ImportFileError):
        import_files(store, "k", [tmp_path / "missing.csv"])
    bad = tmp_path / "bad.csv"
    bad.write_text("name,lat,lon\nx,1,2\n")
    with pytest.raises(ImportFileError):
        import_files(store, "k", [bad])


def test_cli_imports_repository_csv(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "tools.server.import_geofences", "--db", str(db), "--key", "hi",
         "--radius", "1500", str(HAWAII_CSV)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "imported 490 geofences" in done.stderr
    rows = current(Store(str(db)), "hi")
    assert rows["osm:21442033"]["name"] == "Honolulu"
    assert rows["osm:21442033"]["metadata"] == {"population": "390738", "type": "city"}


def test_cli_usage_errors_exit_64(tmp_path: Path) -> None:
    usage = subprocess.run(
        [sys.executable, "-m", "tools.server.import_geofences", "--db", str(tmp_path / "x")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 64
    for args in (["--host", "0.0.0.0"], ["--port", "0"], ["--import", str(HAWAII_CSV)]):
        run = subprocess.run([sys.executable, str(RUN), "--db", str(tmp_path / "x"), *args],
                             cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
        assert run.returncode == 64, (args, run.stderr)


def test_server_started_with_import(plain_server: Server) -> None:
    versions, items = plain_server.list_all("hawaii", limit=200)
    assert len(items) == 490 and len(set(versions)) == 1
    assert all(g["radius"] == 1500.0 for g in items)
    honolulu = next(g for g in items if g["id"] == "osm:21442033")
    assert honolulu["name"] == "Honolulu"
