"""Fault injection for client tests (admin mode only).

A fault is armed by ``POST /admin/faults`` and fires on the next ``count`` requests whose
method and path match (optionally only for one account key). :class:`FaultMiddleware` sits
outside the application, so it can answer for it, delay it, cut its answer short, or run it and
then drop the connection without answering. ``/admin/*`` requests are never faulted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

STATUS_SHORTHANDS = {"429": 429, "500": 500, "503": 503}
KINDS = ("status", "slow", "truncate", "commit_then_drop", "timeout")
TRUNCATE_MODES = ("content_length", "cut_json")

DEFAULT_RETRY_AFTER_S = 1
"""``Retry-After`` sent with an injected 429 or 503 when the fault names none, in seconds."""

DEFAULT_SLOW_DELAY_S = 2.0
"""Delay of a ``slow`` fault when the fault names none, in seconds."""

DEFAULT_TIMEOUT_DELAY_S = 30.0
"""How long a ``timeout`` fault holds its answer when the fault names none, in seconds."""

MAX_DELAY_S = 600.0


class FaultSpecError(ValueError):
    """An ``/admin/faults`` request body that does not describe a fault."""


@dataclass
class Fault:
    """One armed fault. ``remaining`` counts down as it fires; at 0 it is removed."""

    id: int
    kind: str
    path: str
    method: str | None
    key: str | None
    remaining: int
    status: int | None = None
    retry_after_s: int | None = None
    delay_s: float | None = None
    mode: str | None = None
    fired: int = 0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "path": self.path, "count": self.remaining +
            self.fired, "remaining": self.remaining, "fired": self.fired,
        }
        for name in ("method", "key", "status", "retry_after_s", "delay_s", "mode"):
            value = getattr(self, name)
            if value is not None:
                out["retry_after" if name == "retry_after_s" else name] = value
        return out

    def matches(self, method: str, path: str, key: str | None) -> bool:
        if self.path != path:
            return False
        if self.method is not None and self.method != method:
            return False
        return self.key is None or self.key == key


def _number(spec: dict, name: str, default: float | None, low: float, high: float) -> float | None:
    value = spec.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise FaultSpecError(f"{name} must be a number in [{low:g}, {high:g}]")
    return value


def parse_fault(spec: Any, fault_id: int) -> Fault:
    """Build a :class:`Fault` from an ``/admin/faults`` body; raises :class:`FaultSpecError`."""
    if not isinstance(spec, dict):
        raise FaultSpecError("body must be a JSON object")
    path = spec.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise FaultSpecError("path must be a request path starting with '/'")
    if path.startswith("/admin"):
        raise FaultSpecError("/admin paths cannot be faulted")
    method = spec.get("method")
    if method is not None and (not isinstance(method, str) or not method.isalpha()):
        raise FaultSpecError("method must be an HTTP method name")
    key = spec.get("key")
    if key is not None and not isinstance(key, str):
        raise FaultSpecError("key must be a string")
    kind = spec.get("kind")
    status = spec.get("status")
    if isinstance(kind, int) and not isinstance(kind, bool):
        kind = str(kind)
    if kind in STATUS_SHORTHANDS:
        status, kind = STATUS_SHORTHANDS[kind], "status"
    if kind not in KINDS:
        raise FaultSpecError(
            "kind must be one of 429, 500, 503, status, slow, truncate, commit_then_drop, timeout"
        )
    count = spec.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise FaultSpecError("count must be an integer >= 1")
    fault = Fault(id=fault_id, kind=kind, path=path, method=method.upper() if method else None,
                  key=key, remaining=count)
    if kind == "status":
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise FaultSpecError("status must be an HTTP status in [400, 599]")
        fault.status = status
        default_retry = DEFAULT_RETRY_AFTER_S if status in (429, 503) else None
        retry = _number(spec, "retry_after", default_retry, 0, 86_400)
        fault.retry_after_s = None if retry is None else int(retry)
    elif kind == "slow":
        fault.delay_s = _number(spec, "delay_s", DEFAULT_SLOW_DELAY_S, 0, MAX_DELAY_S)
    elif kind == "timeout":
        fault.delay_s = _number(spec, "delay_s", DEFAULT_TIMEOUT_DELAY_S, 0, MAX_DELAY_S)
    elif kind == "truncate":
        mode = spec.get("mode", "content_length")
        if mode not in TRUNCATE_MODES:
            raise FaultSpecError("mode must be content_length or cut_json")
        fault.mode = mode
    return fault


@dataclass
class FaultRegistry:
    """The armed faults, shared between the admin endpoints and the middleware (thread-safe)."""

    _faults: list[Fault] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, spec: Any) -> Fault:
        with self._lock:
            fault = parse_fault(spec, next(self._ids))
            self._faults.append(fault)
            return fault

    def take(self, method: str, path: str, key: str | None) -> Fault | None:
        """The first armed fault matching this request, counted as fired; ``None`` if none."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, key):
                    fault.remaining -= 1
                    fault.fired += 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [f.as_json() for f in self._faults]

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()


def bearer_key(scope: dict) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, or ``None``."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            text = value.decode("latin-1").strip()
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


def _transport(send: Any) -> Any:
    """The asyncio transport behind uvicorn's ``send`` callable, or ``None``.

    uvicorn passes the bound ``send`` method of its per-request cycle object, which holds the
    connection's transport. This is the one place that relies on that.
    """
    return getattr(getattr(send, "__self__", None), "transport", None)


async def _drop_connection(send: Any) -> None:
    transport = _transport(send)
    if transport is None:
        raise RuntimeError("cannot reach the connection to drop it")
    transport.abort()
    # Let the server notice the disconnect before the request task ends.
    for _ in range(3):
        await asyncio.sleep(0)


class _Captured:
    """Collects an application's response instead of sending it."""

    def __init__(self) -> None:
        self.start: dict | None = None
        self.body = bytearray()

    async def __call__(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            self.start = message
        elif message["type"] == "http.response.body":
            self.body.extend(message.get("body", b""))


class FaultMiddleware:
    """ASGI middleware that applies armed faults to matching requests.

    The fault kind is also put in ``scope["state"]["fault"]`` so handlers can record it.
    """

    def __init__(self, app: Any, registry: FaultRegistry) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/admin"):
            await self.app(scope, receive, send)
            return
        fault = self.registry.take(scope["method"], scope["path"], bearer_key(scope))
        if fault is None:
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})["fault"] = fault.kind
        if fault.kind == "status":
            await self._send_status(fault, send)
        elif fault.kind == "slow":
            await asyncio.sleep(fault.delay_s or 0)
            await self.app(scope, receive, send)
        elif fault.kind == "commit_then_drop":
            await self.app(scope, receive, _Captured())
            await _drop_connection(send)
        elif fault.kind == "timeout":
            captured = _Captured()
            await self.app(scope, receive, captured)
            await asyncio.sleep(fault.delay_s or 0)
            await self._replay(captured, send)
        elif fault.kind == "truncate":
            captured = _Captured()
            await self.app(scope, receive, captured)
            await self._send_truncated(fault, captured, send)

    @staticmethod
    async def _send_status(fault: Fault, send: Any) -> None:
        status = fault.status or 500
        code = {429: "rate_limited", 503: "unavailable"}.get(
            status, "internal_error" if status >= 500 else "injected_fault"
        )
        body = json.dumps(
            {"error": {"code": code, "message": f"injected fault: HTTP {status}"}}
        ).encode()
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]
        if fault.retry_after_s is not None:
            headers.append((b"retry-after", str(fault.retry_after_s).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def _replay(captured: _Captured, send: Any) -> None:
        if captured.start is None:
            return
        await send(captured.start)
        await send({"type": "http.response.body", "body": bytes(captured.body)})

    @staticmethod
    async def _send_truncated(fault: Fault, captured: _Captured, send: Any) -> None:
        if captured.start is None:
            return
        body = bytes(captured.body)
        cut = body[: len(body) // 2]
        headers = [(k, v) for k, v in captured.start.get("headers", [])
                   if k.lower() != b"content-length"]
        if fault.mode == "cut_json":
            # A complete HTTP message whose body is the first half of the JSON document.
            headers.append((b"content-length", str(len(cut)).encode()))
            await send({**captured.start, "headers": headers})
            await send({"type": "http.response.body", "body": cut})
            return
        # Declare the full length, send half, then close: the client sees a short body.
        headers.append((b"content-length", str(max(len(body), 1)).encode()))
        await send({**captured.start, "headers": headers})
        await send({"type": "http.response.body", "body": cut, "more_body": True})
        transport = _transport(send)
        if transport is not None:
            transport.close()
        for _ in range(3):
            await asyncio.sleep(0)
