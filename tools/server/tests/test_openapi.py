"""docs/openapi.yaml is a valid OpenAPI 3.1 document and the server's answers match it."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from server_support import REPO_ROOT, Server, event, geofence

OPENAPI = REPO_ROOT / "docs" / "openapi.yaml"


@lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    return yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))


def assert_matches(schema_name: str, instance: Any) -> None:
    schema = {"$ref": f"#/components/schemas/{schema_name}",
              "components": document()["components"]}
    Draft202012Validator(schema).validate(instance)


def test_document_is_valid_openapi_3_1() -> None:
    doc = document()
    assert doc["openapi"].startswith("3.1")
    validate(doc)


def test_document_lists_every_route() -> None:
    paths = document()["paths"]
    assert set(paths) == {
        "/v1/geofences", "/v1/geofences/changes", "/v1/events", "/healthz",
        "/admin/accounts/{key}/geofences", "/admin/accounts/{key}", "/admin/faults",
        "/admin/events", "/admin/reset", "/v1/webhook", "/admin/webhook",
    }


def test_answers_match_the_schemas(server: Server) -> None:
    key = server.new_key([geofence("a", name="A", metadata={"k": 1}), geofence("b")])
    page = server.get("/v1/geofences", key, params={"limit": 1}).json()
    assert_matches("GeofencePage", page)
    server.patch(key, upsert=[geofence("c")], delete=["b"])
    changes = server.get("/v1/geofences/changes", key, params={"since": page["version"]}).json()
    assert_matches("Changes", changes)
    result = server.post_events(key, [event("e1"), event("e1"), event("e2", type="leave")]).json()
    assert_matches("EventBatchResult", result)
    assert_matches("EventsReport", server.events_report(key))
    assert_matches("Error", server.get("/v1/geofences", "wrong").json())
    fault = server.arm(path="/v1/nothing", kind="429")
    assert_matches("FaultState", fault)
    assert_matches("WriteResult", server.put(key, [geofence("a")]))
    server.http.delete("/admin/faults")
