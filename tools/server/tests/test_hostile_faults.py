"""The hostile-server switches, observed from an ordinary HTTP client, and keyed account names."""

from __future__ import annotations

import gzip
import json
import sqlite3
import time
import zlib

import httpx
import pytest

from server_support import Server, geofence

from tools.server.store import Store


@pytest.fixture
def key(server: Server):
    key = server.new_key([geofence(f"g{i:02d}") for i in range(30)])
    yield key
    server.http.delete("/admin/faults")


def test_self_cursor_points_back_at_itself(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="self_cursor", count=3)
    first = server.get("/v1/geofences", key, params={"limit": 10}).json()
    assert first["next_cursor"] == "self" and len(first["geofences"]) == 10
    second = server.get("/v1/geofences", key, params={"limit": 10, "cursor": "self"}).json()
    assert second["next_cursor"] == "self"
    assert second["geofences"] == first["geofences"]


def test_endless_cursor_is_new_every_time(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="endless_cursor", count=5)
    cursors = [server.get("/v1/geofences", key, params={"limit": 10, "cursor": c}).json()[
        "next_cursor"] for c in (None, "a", "b", "c", "d")]
    assert len(set(cursors)) == 5 and all(cursors)
    # Disarmed after five: the real listing again.
    assert len(server.list_all(key, limit=10)[1]) == 30


def test_drip_sends_one_byte_per_delay(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="drip", delay_s=0.05)
    started = time.monotonic()
    with server.http.stream("GET", "/v1/geofences", params={"limit": 1},
                            headers={"Authorization": f"Bearer {key}"}) as r:
        declared = int(r.headers["content-length"])
        pieces = list(r.iter_raw())
    body = b"".join(pieces)
    assert len(body) == declared and json.loads(body)["version"] == "v1"
    # One byte per 50 ms: at least (bytes - 1) pauses.
    assert time.monotonic() - started >= 0.05 * (declared - 1)


def test_huge_body_has_no_length_and_the_asked_size(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="huge_body", size_bytes=3_000_000)
    with server.http.stream("GET", "/v1/geofences",
                            headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.status_code == 200 and "content-length" not in r.headers
        total = sum(len(p) for p in r.iter_raw())
    assert total == 3_000_000


def test_gzip_bomb_inflates_to_its_size(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="gzip_bomb", size_bytes=50_000_000)
    with server.http.stream("GET", "/v1/geofences",
                            headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.headers["content-encoding"] == "gzip"
        wire = b"".join(r.iter_raw())
    assert len(wire) < 200_000
    inflated = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total = 0
    for i in range(0, len(wire), 4096):
        total += len(inflated.decompress(wire[i:i + 4096]))
    total += len(inflated.flush())
    assert total == 50_000_000
    assert gzip.decompress(wire)[:29] == b'{"version":"v1","geofences":['


def test_oversized_page_ignores_limit(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="oversized_page", items=5000)
    page = server.get("/v1/geofences", key, params={"limit": 10}).json()
    assert len(page["geofences"]) == 5000 and page["next_cursor"] is None
    assert page["version"] == "v1"


@pytest.mark.parametrize("origin", [None, "http://localhost:9"])
def test_redirect_keeps_path_and_query(server: Server, key: str, origin: str | None) -> None:
    spec = {"path": "/v1/geofences", "kind": "redirect", "status": 308}
    if origin:
        spec["origin"] = origin
    server.arm(**spec)
    r = server.get("/v1/geofences", key, params={"limit": 5})
    assert r.status_code == 308
    assert r.headers["location"] == (origin or "") + "/v1/geofences?limit=5"


def test_request_log_says_whether_credentials_came_never_which(server: Server, key: str) -> None:
    server.http.delete("/admin/faults")
    server.get("/v1/geofences", key, params={"limit": 2})
    server.get("/v1/geofences", None)
    log = server.http.get("/admin/requests").json()["requests"][-2:]
    assert [(e["path"], e["query"], e["authorization"]) for e in log] == [
        ("/v1/geofences", "limit=2", True), ("/v1/geofences", "", False)]
    assert key not in json.dumps(log)


@pytest.mark.parametrize("spec", [
    {"path": "/v1/geofences", "kind": "redirect", "status": 200},
    {"path": "/v1/geofences", "kind": "redirect", "origin": "ftp://x"},
    {"path": "/v1/geofences", "kind": "redirect", "origin": "http://x/path"},
    {"path": "/v1/geofences", "kind": "huge_body", "size_bytes": 0},
    {"path": "/v1/geofences", "kind": "oversized_page", "items": -1},
])
def test_invalid_hostile_specs_are_400(server: Server, spec: dict) -> None:
    r = server.http.post("/admin/faults", json=spec)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_fault"


def test_no_table_holds_a_key(tmp_path) -> None:
    db = tmp_path / "k.sqlite"
    store = Store(str(db))
    store.replace_geofences("secret-key-1", [])
    store.record_batch("secret-key-1", [{"id": "e"}], "1", None, None)
    assert store.account_exists("secret-key-1") and not store.account_exists("secret-key-2")
    raw = db.read_bytes() + (tmp_path / "k.sqlite-wal").read_bytes()
    assert b"secret-key-1" not in raw
    secret = (tmp_path / "k.sqlite.secret").read_bytes()
    assert len(secret) == 32 and (tmp_path / "k.sqlite.secret").stat().st_mode & 0o777 == 0o600
    import hashlib
    import hmac
    expected = hmac.new(secret, b"secret-key-1", hashlib.sha256).hexdigest()
    (name,) = sqlite3.connect(db).execute("SELECT key FROM accounts").fetchone()
    assert name == expected
    # Reopened with the same secret file: the same account.
    assert Store(str(db)).current_version("secret-key-1") == 0


def test_plain_keys_of_an_older_database_are_converted(tmp_path) -> None:
    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE accounts (key TEXT PRIMARY KEY, version INTEGER NOT NULL DEFAULT 0,
                               history_floor INTEGER NOT NULL DEFAULT 0);
        INSERT INTO accounts (key, version) VALUES ('old-key', 3);
    """)
    conn.commit()
    conn.close()
    store = Store(str(db))
    assert store.account_exists("old-key") and store.current_version("old-key") == 3
    names = [r[0] for r in sqlite3.connect(db).execute("SELECT key FROM accounts")]
    assert names == [store.account_id("old-key")]
    # A second open converts nothing twice.
    assert Store(str(db)).account_exists("old-key")
