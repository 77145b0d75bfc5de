"""Every fault switch, observed from an ordinary HTTP client."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from server_support import Server, event, geofence


@pytest.fixture
def key(server: Server):
    key = server.new_key([geofence(f"g{i}") for i in range(40)])
    yield key
    server.http.delete("/admin/faults")


@pytest.mark.parametrize("kind, status, code, retry_after", [
    ("429", 429, "rate_limited", "1"),
    ("503", 503, "unavailable", "1"),
    ("500", 500, "internal_error", None),
])
def test_status_faults(server: Server, key: str, kind: str, status: int, code: str,
                       retry_after: str | None) -> None:
    server.arm(path="/v1/geofences", kind=kind, count=2)
    for _ in range(2):
        r = server.get("/v1/geofences", key)
        assert r.status_code == status
        assert r.json()["error"]["code"] == code
        assert r.headers.get("retry-after") == retry_after
    assert server.get("/v1/geofences", key).status_code == 200


def test_status_fault_with_chosen_status_and_retry_after(server: Server, key: str) -> None:
    server.arm(path="/v1/events", method="POST", kind="status", status=502, retry_after=9)
    assert server.get("/v1/geofences", key).status_code == 200
    r = server.post_events(key, [event("x")])
    assert r.status_code == 502 and r.headers["retry-after"] == "9"
    assert server.events_report(key)["event_count"] == 0


def test_429_on_events_stores_nothing(server: Server, key: str) -> None:
    server.arm(path="/v1/events", kind="429", retry_after=3)
    r = server.post_events(key, [event("e1")])
    assert r.status_code == 429 and r.headers["retry-after"] == "3"
    assert server.events_report(key)["event_count"] == 0
    assert server.post_events(key, [event("e1")], attempt=2).json()["accepted"] == ["e1"]


def test_fault_scoped_to_one_key(server: Server, key: str) -> None:
    other = server.new_key([geofence("o")])
    server.arm(path="/v1/geofences", kind="503", key=other)
    assert server.get("/v1/geofences", key).status_code == 200
    assert server.get("/v1/geofences", other).status_code == 503


def test_fault_list_and_clear(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="429", count=3)
    server.get("/v1/geofences", key)
    faults = server.http.get("/admin/faults").json()["faults"]
    assert [(f["kind"], f["remaining"], f["fired"]) for f in faults] == [("status", 2, 1)]
    server.http.delete("/admin/faults")
    assert server.http.get("/admin/faults").json()["faults"] == []
    assert server.get("/v1/geofences", key).status_code == 200


@pytest.mark.parametrize("spec", [
    {"path": "/v1/events"},
    {"path": "/v1/events", "kind": "explode"},
    {"path": "v1/events", "kind": "429"},
    {"path": "/admin/reset", "kind": "500"},
    {"path": "/v1/events", "kind": "429", "count": 0},
    {"path": "/v1/events", "kind": "truncate", "mode": "half"},
    {"path": "/v1/events", "kind": "status", "status": 200},
])
def test_invalid_fault_specs_are_400(server: Server, spec: dict) -> None:
    r = server.http.post("/admin/faults", json=spec)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_fault"


def test_slow(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="slow", delay_s=0.6)
    started = time.monotonic()
    r = server.get("/v1/geofences", key)
    assert r.status_code == 200 and len(r.json()["geofences"]) == 40
    assert time.monotonic() - started >= 0.6


def test_truncate_declares_more_than_it_sends(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="truncate")
    with pytest.raises(httpx.RemoteProtocolError):
        server.get("/v1/geofences", key)
    assert server.get("/v1/geofences", key).status_code == 200


def test_truncate_cut_json(server: Server, key: str) -> None:
    server.arm(path="/v1/geofences", kind="truncate", mode="cut_json")
    r = server.get("/v1/geofences", key)
    assert r.status_code == 200 and r.content.startswith(b'{"version"')
    with pytest.raises(json.JSONDecodeError):
        r.json()
    assert len(r.content) == int(r.headers["content-length"])


def test_commit_then_drop_stores_then_drops(server: Server, key: str) -> None:
    server.arm(path="/v1/events", kind="commit_then_drop")
    batch = [event("c1"), event("c2")]
    with pytest.raises(httpx.RemoteProtocolError):
        server.post_events(key, batch, attempt=1, headers={"Idempotency-Key": "b1"})
    report = server.events_report(key)
    assert [e["id"] for e in report["events"]] == ["c1", "c2"]
    assert report["batches"][0]["fault"] == "commit_then_drop"
    # The retry finds both already stored: exactly once.
    retry = server.post_events(key, batch, attempt=2, headers={"Idempotency-Key": "b1"})
    assert retry.json() == {"accepted": [], "duplicates": ["c1", "c2"], "rejected": []}
    report = server.events_report(key)
    assert report["event_count"] == 2
    assert [(e["count"], e["attempts"]) for e in report["events"]] == [(2, [1, 2])] * 2


def test_timeout_stores_then_answers_late(server: Server, key: str) -> None:
    server.arm(path="/v1/events", kind="timeout", delay_s=1.5)
    with pytest.raises(httpx.ReadTimeout):
        server.post_events(key, [event("t1")], timeout=0.5)
    assert [e["id"] for e in server.events_report(key)["events"]] == ["t1"]
    retry = server.post_events(key, [event("t1")], attempt=2)
    assert retry.json()["duplicates"] == ["t1"]


def test_admin_routes_are_absent_without_the_flag(plain_server: Server) -> None:
    assert plain_server.http.post("/admin/reset").status_code == 404
    assert plain_server.http.post("/admin/faults", json={}).status_code == 404
    assert plain_server.http.get("/admin/events", params={"key": "k"}).status_code == 404


def test_reset_clears_everything(server: Server) -> None:
    # Other tests make fresh accounts for themselves, so wiping the shared server is safe.
    key = server.new_key([geofence("a")])
    server.post_events(key, [event("e")])
    server.arm(path="/v1/geofences", kind="500")
    assert server.http.post("/admin/reset").json() == {"reset": True}
    assert server.http.get("/admin/faults").json()["faults"] == []
    assert server.get("/v1/geofences", key).status_code == 401
    assert server.events_report(key)["event_count"] == 0
