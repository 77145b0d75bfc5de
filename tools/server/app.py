"""HTTP application: the sync protocol (``/v1``), event ingest, and test-only ``/admin`` routes.

The wire format is specified in ``docs/openapi.yaml``; ``docs/sync-protocol.md`` explains it.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .limits import Limits
from .faults import FaultMiddleware, FaultRegistry, FaultSpecError, bearer_key
from .store import Gone, Near, Store, parse_version_token, version_token
from .validation import MAX_RADIUS_M, validate_geofence
from .webhook import MAX_BODY_BYTES, WebhookLog, parse_event, verify

DEFAULT_PAGE_LIMIT = 1000
MAX_PAGE_LIMIT = 10_000


class ApiError(Exception):
    """An error answer: HTTP ``status`` with body ``{"error": {"code", "message"}}``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        details: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.details = details


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None,
    details: Any = None,
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return JSONResponse({"error": error}, status_code=status, headers=headers)


def json_bytes_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None
                        ) -> Response:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json", headers=headers)


# -- request parsing --------------------------------------------------------------------------


def parse_limit(raw: str | None) -> int:
    """Page size: default 1000; values above 10000 are treated as 10000; below 1 is an error."""
    if raw is None:
        return DEFAULT_PAGE_LIMIT
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "invalid_parameter", "limit must be an integer") from None
    if value < 1:
        raise ApiError(400, "invalid_parameter", "limit must be at least 1")
    return min(value, MAX_PAGE_LIMIT)


def parse_near(query: Any) -> Near | None:
    """``near=LAT,LON`` and ``radius_m=R`` (both or neither)."""
    near, radius = query.get("near"), query.get("radius_m")
    if near is None and radius is None:
        return None
    if near is None or radius is None:
        raise ApiError(400, "invalid_parameter", "near and radius_m must be given together")
    parts = near.split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        lat, lon, reach = float(parts[0]), float(parts[1]), float(radius)
    except ValueError:
        raise ApiError(400, "invalid_parameter",
                       "near must be LAT,LON in degrees and radius_m a number of metres") from None
    if not (math.isfinite(lat) and -90 <= lat <= 90 and math.isfinite(lon) and -180 <= lon <= 180):
        raise ApiError(400, "invalid_parameter", "near is outside [-90, 90] x [-180, 180]")
    if not (math.isfinite(reach) and 0 <= reach <= MAX_RADIUS_M):
        raise ApiError(400, "invalid_parameter", f"radius_m must be in [0, {MAX_RADIUS_M:.0f}]")
    return Near(lat, lon, reach)


def encode_cursor(version: int, after_id: str, near: Near | None) -> str:
    """Opaque cursor: the pinned snapshot version, the last id returned, and the near filter."""
    payload = {"v": version, "a": after_id,
               "n": None if near is None else [near.latitude, near.longitude, near.reach_m]}
    raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(cursor: str, near: Near | None) -> tuple[int, str]:
    """``(pinned_version, after_id)`` from a cursor; it must come with the same near filter."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw)
        version, after_id, filt = payload["v"], payload["a"], payload["n"]
        if not isinstance(version, int) or not isinstance(after_id, str):
            raise ValueError
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ApiError(400, "invalid_cursor", "cursor is not one this server issued") from None
    expected = None if near is None else [near.latitude, near.longitude, near.reach_m]
    if filt != expected:
        raise ApiError(400, "invalid_cursor",
                       "a cursor must be used with the same near and radius_m as its first page")
    return version, after_id


def etag_for(version: int) -> str:
    return f'"{version_token(version)}"'


def if_none_match_hits(header: str | None, etag: str) -> bool:
    """RFC 9110 If-None-Match with weak comparison: ``*`` or any listed tag equal to ``etag``."""
    if header is None:
        return False
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


# -- application ------------------------------------------------------------------------------


def create_app(
    store: Store,
    admin_enabled: bool = False,
    limits: Limits = Limits(),
    faults: FaultRegistry | None = None,
    webhook_secret: bytes | None = None,
) -> Any:
    """The ASGI application. Admin routes and fault injection exist only when ``admin_enabled``.

    ``webhook_secret`` enables the webhook receiver (``POST /v1/webhook``, see ``webhook.py``).
    """
    app = FastAPI(
        title="Geofence sync reference server",
        docs_url=None, redoc_url=None, openapi_url=None,
    )
    registry = faults or FaultRegistry()

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> Response:
        return error_response(exc.status, exc.code, exc.message, exc.headers, exc.details)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> Response:
        return error_response(400, "invalid_request", "request is malformed")

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> Response:
        if isinstance(exc, RecursionError):
            # A body that parsed but is too deep to handle further (to store, to validate).
            return error_response(400, "invalid_json", TOO_DEEP)
        return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")

    def authenticate(request: Request) -> str:
        key = bearer_key(request.scope)
        if key is None or not store.account_exists(key):
            raise ApiError(401, "unauthorized", "missing or unknown API key",
                           headers={"WWW-Authenticate": 'Bearer realm="geofences"'})
        return key

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/geofences")
    def list_geofences(request: Request) -> Response:
        key = authenticate(request)
        query = request.query_params
        limit = parse_limit(query.get("limit"))
        near = parse_near(query)
        pinned, after_id = None, None
        if query.get("cursor"):
            pinned, after_id = decode_cursor(query["cursor"], near)
        inm = request.headers.get("if-none-match")
        if inm is not None:
            version = pinned if pinned is not None else store.current_version(key)
            if version is not None and if_none_match_hits(inm, etag_for(version)):
                return Response(status_code=304, headers={"ETag": etag_for(version),
                                                          "Cache-Control": "no-cache"})
        try:
            version, items, has_more = store.list_page(key, pinned, after_id, limit, near)
        except Gone as gone:
            raise ApiError(410, gone.code, gone.message) from None
        next_cursor = encode_cursor(version, items[-1]["id"], near) if has_more else None
        return json_bytes_response(
            {"version": version_token(version), "geofences": items, "next_cursor": next_cursor},
            headers={"ETag": etag_for(version), "Cache-Control": "no-cache"},
        )

    @app.get("/v1/geofences/changes")
    def geofence_changes(request: Request) -> Response:
        key = authenticate(request)
        query = request.query_params
        since_raw = query.get("since")
        if since_raw is None:
            raise ApiError(400, "invalid_parameter", "since is required")
        since = parse_version_token(since_raw)
        if since is None:
            raise ApiError(400, "invalid_parameter", "since must be a version such as v42")
        near = parse_near(query)
        try:
            version, upserted, deleted = store.changes_since(key, since, near)
        except Gone as gone:
            raise ApiError(410, gone.code, gone.message) from None
        return json_bytes_response(
            {"version": version_token(version), "upserted": upserted, "deleted": deleted},
            headers={"ETag": etag_for(version), "Cache-Control": "no-cache"},
        )

    @app.post("/v1/events")
    async def post_events(request: Request) -> Response:
        key = await run_in_threadpool(authenticate, request)
        too_large = ApiError(
            413, "payload_too_large",
            f"a batch may hold at most {limits.max_batch_events} events"
            f" and {limits.max_batch_bytes} bytes",
        )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_batch_bytes:
            raise too_large
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limits.max_batch_bytes:
                raise too_large
        payload = load_json_body(bytes(body))
        if not isinstance(payload, dict) or not isinstance(payload.get("events"), list):
            raise ApiError(400, "invalid_request", 'body must be {"events": [...]}')
        events = payload["events"]
        if len(events) > limits.max_batch_events:
            raise too_large
        fault = request.scope.get("state", {}).get("fault")
        result = await run_in_threadpool(
            store.record_batch, key, events, request.headers.get("x-attempt"),
            request.headers.get("idempotency-key"), fault,
        )
        return json_bytes_response(result)

    webhook_log = WebhookLog()

    @app.post("/v1/webhook")
    async def post_webhook(request: Request) -> Response:
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > MAX_BODY_BYTES:
                webhook_log.refuse()
                raise ApiError(413, "payload_too_large",
                               f"a webhook body may hold at most {MAX_BODY_BYTES} bytes")
        refusal = verify(webhook_secret, request.headers, bytes(body))
        if refusal is not None:
            webhook_log.refuse()
            raise ApiError(*refusal)
        event = parse_event(bytes(body))
        if event is None:
            webhook_log.refuse()
            raise ApiError(400, "invalid_event", 'body must be a JSON object with a string "id"')
        duplicate = webhook_log.record(event, request.headers.get("x-attempt"))
        return json_bytes_response({"id": event["id"], "duplicate": duplicate})

    if admin_enabled:
        _add_admin_routes(app, store, registry, webhook_log)
        return FaultMiddleware(app, registry)
    return app


def _definitions(items: Any, what: str) -> list:
    if not isinstance(items, list):
        raise ApiError(400, "invalid_request", f"{what} must be a JSON array of geofences")
    definitions, rejected, seen = [], [], set()
    for index, raw in enumerate(items):
        definition, reason = validate_geofence(raw)
        if definition is not None and definition.id in seen:
            definition, reason = None, "duplicate id"
        if definition is None:
            gid = raw.get("id") if isinstance(raw, dict) else None
            rejected.append({"index": index, "id": gid if isinstance(gid, str) else None,
                             "reason": reason})
        else:
            seen.add(definition.id)
            definitions.append(definition)
    if rejected:
        raise ApiError(400, "invalid_geofence", f"{len(rejected)} geofences are invalid",
                       details=rejected)
    return definitions


TOO_DEEP = "request body nests arrays or objects too deeply"


def load_json_body(body: bytes) -> Any:
    """The request body as JSON, or a 400 ``invalid_json``: for text that is not JSON, and for
    nesting so deep that Python's parser runs out of recursion (``'[' * 100000``), which
    would otherwise be a 500 carrying Python's ``RecursionError`` text."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "invalid_json", "request body is not JSON") from None
    except RecursionError:
        raise ApiError(400, "invalid_json", TOO_DEEP) from None


async def _json_body(request: Request) -> Any:
    return load_json_body(await request.body())


def _add_admin_routes(app: FastAPI, store: Store, registry: FaultRegistry,
                      webhook_log: WebhookLog) -> None:
    """Test-only routes. They take no credentials: the server listens on loopback only."""

    @app.put("/admin/accounts/{key}/geofences")
    async def replace_geofences(key: str, request: Request) -> Response:
        body = await _json_body(request)
        items = body.get("geofences") if isinstance(body, dict) else body
        definitions = _definitions(items, "geofences")
        result = await run_in_threadpool(store.replace_geofences, key, definitions)
        return json_bytes_response(result.as_json())

    @app.patch("/admin/accounts/{key}/geofences")
    async def patch_geofences(key: str, request: Request) -> Response:
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise ApiError(400, "invalid_request", 'body must be {"upsert": [...], "delete": [...]}')
        upserts = _definitions(body.get("upsert", []), "upsert")
        deletes = body.get("delete", [])
        if not isinstance(deletes, list) or not all(isinstance(d, str) for d in deletes):
            raise ApiError(400, "invalid_request", "delete must be a JSON array of ids")
        both = {d.id for d in upserts} & set(deletes)
        if both:
            raise ApiError(400, "invalid_request",
                           f"ids both upserted and deleted: {sorted(both)[:10]}")
        result = await run_in_threadpool(store.patch_geofences, key, upserts, deletes)
        return json_bytes_response(result.as_json())

    @app.get("/admin/accounts/{key}")
    def account_info(key: str) -> Response:
        version = store.current_version(key)
        if version is None:
            raise ApiError(404, "not_found", "no such account")
        return json_bytes_response({"key": key, "version": version_token(version),
                                    "geofence_count": store.count_current(key)})

    @app.post("/admin/faults")
    async def arm_fault(request: Request) -> Response:
        body = await _json_body(request)
        try:
            fault = registry.arm(body)
        except FaultSpecError as exc:
            raise ApiError(400, "invalid_fault", str(exc)) from None
        return json_bytes_response({"fault": fault.as_json()}, status=201)

    @app.get("/admin/faults")
    def list_faults() -> Response:
        return json_bytes_response({"faults": registry.snapshot()})

    @app.delete("/admin/faults")
    def clear_faults() -> Response:
        registry.clear()
        return json_bytes_response({"faults": []})

    @app.get("/admin/requests")
    def requests_log() -> Response:
        return json_bytes_response({"requests": registry.requests()})

    @app.get("/admin/events")
    def events_report(key: str) -> Response:
        return json_bytes_response(store.events_report(key))

    @app.get("/admin/webhook")
    def webhook_report() -> Response:
        return json_bytes_response(webhook_log.report())

    @app.post("/admin/reset")
    def reset() -> Response:
        registry.clear()
        store.reset()
        webhook_log.clear()
        return json_bytes_response({"reset": True})
