"""Fault injection for client tests (admin mode only).

A fault is armed by ``POST /admin/faults`` and fires on the next ``count`` requests whose
method and path match (optionally only for one account key). :class:`FaultMiddleware` sits
outside the application, so it can answer for it, delay it, cut its answer short, or run it and
then drop the connection without answering. ``/admin/*`` requests are never faulted.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any

STATUS_SHORTHANDS = {"429": 429, "500": 500, "503": 503}
KINDS = ("status", "slow", "truncate", "commit_then_drop", "timeout",
         "self_cursor", "endless_cursor", "drip", "huge_body", "gzip_bomb", "oversized_page",
         "redirect")
"""Fault kinds. The last seven are a hostile server's answers (see ``FaultMiddleware``)."""
TRUNCATE_MODES = ("content_length", "cut_json")
REDIRECT_STATUSES = (301, 302, 303, 307, 308)

DEFAULT_RETRY_AFTER_S = 1
"""``Retry-After`` sent with an injected 429 or 503 when the fault names none, in seconds."""

DEFAULT_SLOW_DELAY_S = 2.0
"""Delay of a ``slow`` fault when the fault names none, in seconds."""

DEFAULT_TIMEOUT_DELAY_S = 30.0
"""How long a ``timeout`` fault holds its answer when the fault names none, in seconds."""

MAX_DELAY_S = 600.0

DEFAULT_DRIP_DELAY_S = 0.5
"""Pause between two bytes of a ``drip`` fault when the fault names none, in seconds."""

DEFAULT_HUGE_BODY_BYTES = 8 << 30
"""Body size of a ``huge_body`` fault when the fault names none: 8 GiB."""

DEFAULT_GZIP_BOMB_BYTES = 1 << 30
"""Decompressed size of a ``gzip_bomb`` fault when the fault names none: 1 GiB."""

MAX_HOSTILE_BYTES = 64 << 30
"""Largest ``size_bytes`` of a ``huge_body`` or ``gzip_bomb`` fault: 64 GiB."""

DEFAULT_OVERSIZED_ITEMS = 200_000
"""Geofences in an ``oversized_page`` answer when the fault names none."""

MAX_OVERSIZED_ITEMS = 5_000_000

STREAM_CHUNK_BYTES = 64 << 10
"""Bytes per body message of a ``huge_body`` or ``gzip_bomb`` answer: 64 KiB."""

REQUEST_LOG_SIZE = 1000
"""Requests kept by :class:`FaultRegistry` for ``GET /admin/requests``."""


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
    size_bytes: int | None = None
    items: int | None = None
    origin: str | None = None
    fired: int = 0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "path": self.path, "count": self.remaining +
            self.fired, "remaining": self.remaining, "fired": self.fired,
        }
        for name in ("method", "key", "status", "retry_after_s", "delay_s", "mode", "size_bytes",
                     "items", "origin"):
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
        raise FaultSpecError("kind must be one of 429, 500, 503, " + ", ".join(KINDS))
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
    elif kind == "drip":
        fault.delay_s = _number(spec, "delay_s", DEFAULT_DRIP_DELAY_S, 0, MAX_DELAY_S)
    elif kind in ("huge_body", "gzip_bomb"):
        default = DEFAULT_HUGE_BODY_BYTES if kind == "huge_body" else DEFAULT_GZIP_BOMB_BYTES
        fault.size_bytes = int(_number(spec, "size_bytes", default, 1, MAX_HOSTILE_BYTES))
    elif kind == "oversized_page":
        fault.items = int(_number(spec, "items", DEFAULT_OVERSIZED_ITEMS, 1, MAX_OVERSIZED_ITEMS))
    elif kind == "redirect":
        if status is None:
            status = 307
        if status not in REDIRECT_STATUSES:
            raise FaultSpecError("a redirect status must be one of 301, 302, 303, 307, 308")
        fault.status = status
        origin = spec.get("origin")
        if origin is not None and (not isinstance(origin, str)
                                   or not origin.startswith(("http://", "https://"))
                                   or "/" in origin.split("://", 1)[1]):
            raise FaultSpecError("origin must be scheme://host[:port], without a path")
        fault.origin = origin
    return fault


@dataclass
class FaultRegistry:
    """The armed faults, shared between the admin endpoints and the middleware (thread-safe)."""

    _faults: list[Fault] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _requests: Any = field(default_factory=lambda: collections.deque(maxlen=REQUEST_LOG_SIZE))

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
            self._requests.clear()

    def record(self, scope: dict) -> None:
        """Logs one request: method, path, query, ``Host`` and whether it carried credentials.

        The credentials themselves are never kept, only whether an ``Authorization`` header
        arrived and whether it names a key (for redirect tests).
        """
        headers = dict(scope.get("headers", ()))
        entry = {
            "method": scope["method"], "path": scope["path"],
            "query": scope.get("query_string", b"").decode("latin-1"),
            "host": headers.get(b"host", b"").decode("latin-1"),
            "authorization": b"authorization" in headers,
        }
        with self._lock:
            self._requests.append(entry)

    def requests(self) -> list[dict[str, Any]]:
        """The last :data:`REQUEST_LOG_SIZE` requests that reached the middleware, oldest first."""
        with self._lock:
            return list(self._requests)


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

    The hostile kinds answer as a server that breaks the protocol or the client's resources:

    - ``self_cursor``: the listing's first page (any cursor sent is ignored), whose
      ``next_cursor`` is the cursor the request sent (``"self"`` when it sent none), so the
      second page points back at itself;
    - ``endless_cursor``: the first page with a new ``next_cursor`` every time;
    - ``drip``: the real answer, with its ``Content-Length``, one byte every ``delay_s``;
    - ``huge_body``: ``200`` with a chunked JSON-looking body of ``size_bytes`` (no length);
    - ``gzip_bomb``: ``200``, ``Content-Encoding: gzip``, a chunked body that inflates to
      ``size_bytes`` (a JSON prefix, then spaces: about 1 MiB on the wire per GiB);
    - ``oversized_page``: the real page with its geofences replaced by ``items`` valid ones,
      whatever ``limit`` asked for;
    - ``redirect``: ``status`` (default 307) to the same path and query at ``origin`` (same
      origin when omitted).
    """

    def __init__(self, app: Any, registry: FaultRegistry) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/admin"):
            await self.app(scope, receive, send)
            return
        self.registry.record(scope)
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
        elif fault.kind in ("self_cursor", "endless_cursor"):
            await _HostileAnswers.cursor_loop(self.app, fault, scope, receive, send)
        elif fault.kind == "drip":
            captured = _Captured()
            await self.app(scope, receive, captured)
            await _HostileAnswers.drip(fault, captured, send)
        elif fault.kind == "huge_body":
            await _HostileAnswers.stream(send, _huge_body_chunks(fault.size_bytes or 0), [])
        elif fault.kind == "gzip_bomb":
            await _HostileAnswers.stream(send, _gzip_bomb_chunks(fault.size_bytes or 0),
                                         [(b"content-encoding", b"gzip")])
        elif fault.kind == "oversized_page":
            captured = _Captured()
            await self.app(scope, receive, captured)
            await _HostileAnswers.oversized(fault, captured, send)
        elif fault.kind == "redirect":
            await _HostileAnswers.redirect(fault, scope, send)

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


def _connection_closed(send: Any) -> bool:
    transport = _transport(send)
    return transport is None or transport.is_closing()


def _huge_body_chunks(size: int) -> Any:
    """``size`` bytes: ``{"version":"v1","geofences":[`` then spaces, in 64 KiB pieces."""
    head = b'{"version":"v1","geofences":['
    yield head[:size]
    left = size - len(head)
    block = b" " * STREAM_CHUNK_BYTES
    while left > 0:
        yield block[: min(left, STREAM_CHUNK_BYTES)]
        left -= STREAM_CHUNK_BYTES


def _gzip_bomb_chunks(size: int) -> Any:
    """A gzip member (RFC 1952) that inflates to the ``huge_body`` bytes of ``size``."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    pending = bytearray()
    for piece in _huge_body_chunks(size):
        pending += compressor.compress(piece)
        if len(pending) >= 4096:
            yield bytes(pending)
            pending.clear()
    pending += compressor.flush()
    yield bytes(pending)


def _json_headers(start: dict, body: bytes) -> list:
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    return headers


async def _forward_start(send: Any, start: dict, body: bytes) -> None:
    await send({**start, "headers": _json_headers(start, body)})


class _HostileAnswers:
    """The hostile answers of :class:`FaultMiddleware`, kept apart from the classic faults."""

    @staticmethod
    async def cursor_loop(app: Any, fault: Fault, scope: dict, receive: Any, send: Any) -> None:
        query = [(k, v) for k, v in _query_pairs(scope) if k != "cursor"]
        sent = dict(_query_pairs(scope)).get("cursor")
        inner = {**scope, "query_string": "&".join(f"{k}={v}" for k, v in query).encode()}
        captured = _Captured()
        await app(inner, receive, captured)
        if captured.start is None:
            return
        body = bytes(captured.body)
        if captured.start["status"] == 200:
            page = json.loads(body)
            if fault.kind == "self_cursor":
                page["next_cursor"] = sent or "self"
            else:
                page["next_cursor"] = f"endless-{fault.fired}"
            body = json.dumps(page, separators=(",", ":")).encode()
        await _forward_start(send, captured.start, body)
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def drip(fault: Fault, captured: _Captured, send: Any) -> None:
        if captured.start is None:
            return
        body = bytes(captured.body)
        await _forward_start(send, captured.start, body)
        for i in range(len(body)):
            if _connection_closed(send):
                return
            await send({"type": "http.response.body", "body": body[i:i + 1], "more_body": True})
            await asyncio.sleep(fault.delay_s or 0)
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def stream(send: Any, chunks: Any, headers: list) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), *headers]})
        for chunk in chunks:
            if _connection_closed(send):
                return
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def oversized(fault: Fault, captured: _Captured, send: Any) -> None:
        if captured.start is None:
            return
        body = bytes(captured.body)
        if captured.start["status"] == 200:
            page = json.loads(body)
            page["geofences"] = [
                {"id": f"flood-{i:07d}", "latitude": (i % 1700) / 10 - 85,
                 "longitude": (i % 3500) / 10 - 175, "radius": 100}
                for i in range(fault.items or 0)
            ]
            page["next_cursor"] = None
            body = json.dumps(page, separators=(",", ":")).encode()
        await _forward_start(send, captured.start, body)
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def redirect(fault: Fault, scope: dict, send: Any) -> None:
        target = (fault.origin or "") + scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        if query:
            target += "?" + query
        body = json.dumps({"error": {"code": "redirected", "message": target}}).encode()
        await send({"type": "http.response.start", "status": fault.status or 307, "headers": [
            (b"location", target.encode("latin-1")), (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _query_pairs(scope: dict) -> list[tuple[str, str]]:
    pairs = []
    for part in scope.get("query_string", b"").decode("latin-1").split("&"):
        if part:
            name, _, value = part.partition("=")
            pairs.append((name, value))
    return pairs
