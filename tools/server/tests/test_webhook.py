"""Webhook receiver: HMAC-SHA256 signature over "timestamp.body", freshness, dedup by id."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator

import pytest

from server_support import Server

SECRET = "whsec-test"


@pytest.fixture(scope="module")
def hook_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("webhook") / "geofences.sqlite"
    srv = Server(["--enable-admin", "--webhook-secret", SECRET], db)
    yield srv
    srv.stop()


def signed(body: bytes, timestamp: int | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    # Written out here rather than imported, so the test checks the server's scheme.
    digest = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"X-Geofence-Timestamp": ts, "X-Geofence-Signature": "sha256=" + digest,
            "Content-Type": "application/json"}


def post(srv: Server, body: bytes, headers: dict[str, str]):
    return srv.http.post("/v1/webhook", content=body, headers=headers)


def test_rfc4231_vector_matches_the_scheme() -> None:
    # RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
    digest = hmac.new(b"Jefe", b"what do ya want for nothing?", hashlib.sha256).hexdigest()
    assert digest == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def test_signed_event_is_accepted_once_then_a_duplicate(hook_server: Server) -> None:
    hook_server.http.post("/admin/reset")
    body = json.dumps({"id": "w1", "type": "enter"}).encode()
    first = post(hook_server, body, signed(body) | {"X-Attempt": "1"})
    assert first.status_code == 200 and first.json() == {"id": "w1", "duplicate": False}
    again = post(hook_server, body, signed(body) | {"X-Attempt": "2"})
    assert again.status_code == 200 and again.json() == {"id": "w1", "duplicate": True}
    report = hook_server.http.get("/admin/webhook").json()
    assert report["event_count"] == 1 and report["delivery_count"] == 2
    assert report["events"][0]["attempts"] == ["1", "2"]
    assert report["events"][0]["event"] == {"id": "w1", "type": "enter"}


@pytest.mark.parametrize("tamper", ["body", "secret", "missing", "stale", "future"])
def test_bad_or_stale_signatures_are_refused_with_401(hook_server: Server, tamper: str) -> None:
    hook_server.http.post("/admin/reset")
    body = json.dumps({"id": "w2"}).encode()
    # A minute beyond the 300 s tolerance: 301 s was within it once the server's clock had
    # passed the next whole second (the test truncates its own time, a loaded host delays).
    now = int(time.time())
    headers = {
        "body": signed(body),
        "secret": signed(body, secret="other"),
        "missing": {"Content-Type": "application/json"},
        "stale": signed(body, timestamp=now - 360),
        "future": signed(body, timestamp=now + 360),
    }[tamper]
    sent = body + b" " if tamper == "body" else body
    answer = post(hook_server, sent, headers)
    assert answer.status_code == 401, answer.text
    report = hook_server.http.get("/admin/webhook").json()
    assert report["event_count"] == 0 and report["refused_count"] == 1


def test_a_body_without_a_string_id_is_a_400(hook_server: Server) -> None:
    for body in (b"[1]", b'{"id": 7}', b"not json"):
        assert post(hook_server, body, signed(body)).status_code == 400


def test_a_body_over_the_cap_is_a_413(hook_server: Server) -> None:
    body = json.dumps({"id": "big", "pad": "x" * 70_000}).encode()
    assert post(hook_server, body, signed(body)).status_code == 413


def test_without_a_secret_the_receiver_is_unavailable(server: Server) -> None:
    body = b'{"id": "x"}'
    assert post(server, body, signed(body)).status_code == 503
