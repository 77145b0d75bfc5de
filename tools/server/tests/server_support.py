"""Test support: the real server in a subprocess on a free loopback port, and payload builders."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[3]
RUN = REPO_ROOT / "tools" / "server" / "run"

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

HISTORY_DEPTH = 5
"""History depth of the shared server, small so pruning is quick to reach."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A running server process and HTTP helpers for it."""

    def __init__(self, args: list[str], db: Path) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.db = db
        self.process = subprocess.Popen(
            [sys.executable, str(RUN), "--port", str(self.port), "--db", str(db), *args],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.http = httpx.Client(base_url=self.base_url, timeout=10.0)
        deadline = time.monotonic() + 20.0
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.process.stdout.read()}")
            try:
                if self.http.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start within 20 s")
            time.sleep(0.05)

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    # -- helpers ---------------------------------------------------------------------------

    def new_key(self, geofences: list[dict[str, Any]] | None = None) -> str:
        """A fresh account holding ``geofences`` (empty when None)."""
        key = f"key-{uuid.uuid4().hex[:12]}"
        self.put(key, geofences or [])
        return key

    def put(self, key: str, geofences: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.http.put(f"/admin/accounts/{key}/geofences", json={"geofences": geofences})
        assert r.status_code == 200, r.text
        return r.json()

    def patch(self, key: str, upsert: list | None = None, delete: list | None = None) -> dict:
        r = self.http.patch(f"/admin/accounts/{key}/geofences",
                            json={"upsert": upsert or [], "delete": delete or []})
        assert r.status_code == 200, r.text
        return r.json()

    def get(self, path: str, key: str | None, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return self.http.get(path, headers=headers, **kwargs)

    def post_events(self, key: str, events: list, attempt: int = 1, **kwargs: Any
                    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}", "X-Attempt": str(attempt),
                   **kwargs.pop("headers", {})}
        return self.http.post("/v1/events", json={"events": events}, headers=headers, **kwargs)

    def arm(self, **spec: Any) -> dict[str, Any]:
        r = self.http.post("/admin/faults", json=spec)
        assert r.status_code == 201, r.text
        return r.json()["fault"]

    def events_report(self, key: str) -> dict[str, Any]:
        r = self.http.get("/admin/events", params={"key": key})
        assert r.status_code == 200, r.text
        return r.json()

    def list_all(self, key: str, limit: int = 1000, params: dict | None = None
                 ) -> tuple[list[str], list[dict]]:
        """Every page of one listing: the versions seen and the geofences in order."""
        versions, items, cursor = [], [], None
        while True:
            query = {"limit": limit, **(params or {})}
            if cursor:
                query["cursor"] = cursor
            r = self.get("/v1/geofences", key, params=query)
            assert r.status_code == 200, r.text
            body = r.json()
            versions.append(body["version"])
            items.extend(body["geofences"])
            cursor = body["next_cursor"]
            if cursor is None:
                return versions, items


def geofence(gid: str, lat: float = 10.0, lon: float = 20.0, radius: float = 100.0, **extra: Any
             ) -> dict[str, Any]:
    return {"id": gid, "latitude": lat, "longitude": lon, "radius": radius, **extra}


def event(eid: str, **overrides: Any) -> dict[str, Any]:
    base = {
        "id": eid, "type": "enter", "geofence_id": "g1", "device_id": "device-1",
        "time": "2026-11-30T05:00:00Z", "latitude": 10.0, "longitude": 20.0,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}
