"""Event upload: per-account dedup by event id, per-event rejection, 413, receipt records."""

from __future__ import annotations

import json

import pytest

from server_support import Server, event


def test_same_id_twice_is_stored_once(server: Server) -> None:
    key = server.new_key()
    first = server.post_events(key, [event("e1"), event("e2")], attempt=1)
    assert first.status_code == 200
    assert first.json() == {"accepted": ["e1", "e2"], "duplicates": [], "rejected": []}
    again = server.post_events(key, [event("e2"), event("e3"), event("e3")], attempt=2)
    assert again.json() == {"accepted": ["e3"], "duplicates": ["e2", "e3"], "rejected": []}
    report = server.events_report(key)
    assert report["event_count"] == 3 and report["delivery_count"] == 5
    counts = {e["id"]: e["count"] for e in report["events"]}
    assert counts == {"e1": 1, "e2": 2, "e3": 2}
    e2 = next(e for e in report["events"] if e["id"] == "e2")
    assert e2["attempts"] == [1, 2]
    assert e2["event"] == event("e2")


def test_dedup_is_per_account(server: Server) -> None:
    alice, bob = server.new_key(), server.new_key()
    assert server.post_events(alice, [event("same")]).json()["accepted"] == ["same"]
    assert server.post_events(bob, [event("same")]).json()["accepted"] == ["same"]
    assert server.events_report(bob)["event_count"] == 1


def test_attempt_and_idempotency_key_are_recorded(server: Server) -> None:
    key = server.new_key()
    server.post_events(key, [event("a")], attempt=1, headers={"Idempotency-Key": "batch-1"})
    server.post_events(key, [event("a")], attempt=3, headers={"Idempotency-Key": "batch-1"})
    report = server.events_report(key)
    assert [(b["attempt"], b["idempotency_key"]) for b in report["batches"]] == [
        (1, "batch-1"), (3, "batch-1")]
    assert report["events"][0]["idempotency_keys"] == ["batch-1", "batch-1"]
    assert report["batches"][1]["duplicates"] == ["a"]


@pytest.mark.parametrize("bad, reason_part", [
    (event("r1", type="leave"), "unknown type"),
    (event("r2", geofence_id=None), "missing field geofence_id"),
    (event("r3", device_id=""), "device_id"),
    (event("r4", time="yesterday"), "RFC 3339"),
    (event("r5", time="2026-11-30T05:00:00"), "RFC 3339"),
    (event("r6", time="2026-02-30T05:00:00Z"), "RFC 3339"),
    (event("r7", latitude=123.0), "latitude"),
    (event("r8", longitude=None), "missing field longitude"),
    (event("r9", accuracy=-1), "accuracy"),
    (event("r10", after_gap="yes"), "after_gap"),
    (event("r11", gap_start="not a time"), "gap_start"),
    (event("r12", dwell_s="long"), "dwell_s"),
    (event("r13", visit_s=-2), "visit_s"),
    (event("r14", removal="no"), "removal"),
    (event("r15", metadata=["url"]), "metadata"),
    (event("r16", url=7), "url"),
    (event("r17", anonymous_id=3), "anonymous_id"),
    (event("r18", processed_at="soon"), "processed_at"),
    (event("r19", inferred="true"), "inferred"),
])
def test_invalid_event_is_rejected_and_the_rest_accepted(
    server: Server, bad: dict, reason_part: str
) -> None:
    key = server.new_key()
    r = server.post_events(key, [event("ok1"), bad, event("ok2")])
    assert r.status_code == 200
    body = r.json()
    assert body["accepted"] == ["ok1", "ok2"] and body["duplicates"] == []
    assert len(body["rejected"]) == 1
    assert body["rejected"][0]["id"] == bad["id"]
    assert reason_part in body["rejected"][0]["reason"]
    assert server.events_report(key)["event_count"] == 2


def test_event_without_usable_id_is_rejected_with_null_id(server: Server) -> None:
    key = server.new_key()
    body = server.post_events(key, [event(None), "not an object", event("fine")]).json()
    assert body["accepted"] == ["fine"]
    assert [r["id"] for r in body["rejected"]] == [None, None]


def test_optional_fields_and_extras_are_kept(server: Server) -> None:
    key = server.new_key()
    full = event("full", type="dwell", user_id="u1", accuracy=4.5, distance_m=12.25,
                 dwell_s=300, after_gap=True, gap_start="2026-11-30T04:00:00+02:00",
                 time="2026-11-30T05:00:00.123456789Z", app_version="1.2.3")
    assert server.post_events(key, [full]).json()["accepted"] == ["full"]
    assert server.events_report(key)["events"][0]["event"] == full


def test_the_engines_event_members_are_kept_as_sent(server: Server) -> None:
    """Every member the engine's encoder writes (docs/openapi.yaml, Event) round-trips."""
    key = server.new_key()
    full = event("engine", type="exit", geofence_name="Alpha",
                 metadata={"url": "https://example.com/offer/1", "campaign": {"n": 2}},
                 url="https://example.com/offer/1", user_id=None, anonymous_id="anon-1",
                 processed_at="2026-11-30T05:00:01.000Z", accuracy=5.0, distance_m=120.5,
                 dwell_s=None, visit_s=431.25, after_gap=False, gap_start=None, removal=True)
    assert server.post_events(key, [full]).json()["accepted"] == ["engine"]
    assert server.events_report(key)["events"][0]["event"] == full


def test_an_inferred_crossing_is_kept_with_its_flag(server: Server) -> None:
    key = server.new_key()
    inferred = event("crossed", type="enter", distance_m=1500.0, fix_index=408, inferred=True)
    assert server.post_events(key, [inferred]).json()["accepted"] == ["crossed"]
    assert server.events_report(key)["events"][0]["event"] == inferred


def test_an_event_of_a_track_without_times_has_a_null_time(server: Server) -> None:
    key = server.new_key()
    untimed = {**event("untimed"), "time": None}
    assert server.post_events(key, [untimed]).json()["accepted"] == ["untimed"]
    missing = event("missing")
    del missing["time"]
    assert server.post_events(key, [missing]).json()["rejected"][0]["reason"] == (
        "missing field time")


def test_oversized_batches_are_413_and_store_nothing(server: Server) -> None:
    key = server.new_key()
    r = server.post_events(key, [event(f"e{i}") for i in range(501)])
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    padding = "x" * (1024 * 1024)
    r = server.post_events(key, [event("big", note=padding)])
    assert r.status_code == 413
    assert server.events_report(key)["event_count"] == 0
    assert server.post_events(key, [event(f"e{i}") for i in range(500)]).status_code == 200


def test_malformed_bodies_are_400(server: Server) -> None:
    key = server.new_key()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for body in (b"{not json", json.dumps({"evts": []}).encode(), b"[]"):
        r = server.http.post("/v1/events", content=body, headers=headers)
        assert r.status_code == 400
        assert r.json()["error"]["code"] in ("invalid_json", "invalid_request")


def test_events_need_a_valid_key(server: Server) -> None:
    r = server.post_events("not-a-key", [event("e")])
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


DEEP = "[" * 100_000


@pytest.mark.parametrize("method, path, body", [
    ("POST", "/v1/events", DEEP),
    ("POST", "/v1/events", '{"events": ' + DEEP),
    ("POST", "/v1/events", '{"events": [' + '{"a":' * 100_000),
    ("PUT", "/admin/accounts/deep/geofences", DEEP),
    ("PATCH", "/admin/accounts/deep/geofences", DEEP),
    ("POST", "/admin/faults", DEEP),
], ids=["events-array", "events-member", "events-object", "put-geofences", "patch-geofences",
        "faults"])
def test_a_body_nested_too_deeply_is_a_400_not_a_500(server: Server, method: str, path: str,
                                                     body: str) -> None:
    key = server.new_key()
    r = server.http.request(method, path, content=body.encode(),
                            headers={"Authorization": f"Bearer {key}",
                                     "Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json() == {"error": {"code": "invalid_json",
                                  "message": "request body nests arrays or objects too deeply"}}
    # The server goes on answering.
    assert server.post_events(key, [event("after")]).json()["accepted"] == ["after"]


def test_an_event_nested_deeply_but_readable_is_answered(server: Server) -> None:
    key = server.new_key()
    deep = event("deep")
    deep["metadata"] = json.loads("[" * 900 + "]" * 900)
    r = server.http.post("/v1/events", content=json.dumps({"events": [deep]}).encode(),
                         headers={"Authorization": f"Bearer {key}",
                                  "Content-Type": "application/json"})
    assert r.status_code in (200, 400), r.text
    assert "RecursionError" not in r.text
