"""The OpenAPI document describes every core endpoint, body, status and header the service actually
answers with. Other test files already send every response through the checker; here the
document's own promises are checked, and one walk covers each documented status class."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Service
from tests.service.conftest import (
    BUILDING,
    PROPERTY,
    OpenAPIChecker,
    ServiceFactory,
    Tree,
    checked_client,
    ok,
    reading,
)
from tests.service.test_core_access import CORE_PREFIXES
from tests.service.test_core_buildings import METER_TYPES

RATE = {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Window"}


def core_operations(openapi: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, ops in openapi["paths"].items()
        if path.startswith(CORE_PREFIXES)
        for method, op in ops.items()
    ]


def test_every_core_operation_documents_its_statuses_and_headers(openapi: dict[str, Any]) -> None:
    operations = core_operations(openapi)
    # the spec's 24, the CSV upload (C1), all meters (C2), readings of many meters (C3)
    assert len(operations) == 27
    for method, path, op in operations:
        responses = op["responses"]
        for status in ("401", "403", "422", "429", "503"):
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)
        assert "Retry-After" in responses["429"]["headers"]
        assert "Retry-After" in responses["503"]["headers"]  # overload (decisions D39)
        success = [s for s in responses if s.startswith("2")]
        assert len(success) == 1, (method, path)
        assert set(responses[success[0]]["headers"]) >= RATE, (method, path)
        if method == "GET":
            assert "ETag" in responses["200"]["headers"] and "304" in responses
            assert "content" not in responses["304"]
        if "requestBody" in op:
            assert {"400", "413", "415"} <= set(responses), (method, path)
        assert op.get("security") == [{"HTTPBearer": []}], (method, path)
    assert "HTTPValidationError" not in str([op for _, _, op in operations])
    upload = openapi["paths"]["/v1/readings/upload"]["post"]
    assert set(upload["requestBody"]["content"]) == {"text/csv"}
    delete = openapi["paths"]["/v1/buildings/{building_id}/meters/{meter_id}/readings/{reading_id}"]
    assert "content" not in delete["delete"]["responses"]["204"]


def test_request_schemas_state_the_rules(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    for name in ("PropertyCreate", "BuildingCreate", "MeterCreate", "ReadingCreate", "UserInvite"):
        assert schemas[name]["additionalProperties"] is False, name
    assert schemas["MeterCreate"]["properties"]["type"]["enum"] == METER_TYPES
    assert schemas["UserInvite"]["properties"]["role"]["enum"] == ["owner", "admin", "viewer"]
    assert set(schemas["PropertyCreate"]["required"]) == {"name", "address", "type"}
    assert set(schemas["AddressIn"]["required"]) == {"street", "city", "country"}
    assert set(schemas["BuildingCreate"]["required"]) == {
        "name",
        "primary_use_type",
        "gfa_m2",
        "year_built",
        "floors",
    }
    assert set(schemas["ReadingCreate"]["required"]) == {"start_date", "end_date", "consumption"}
    batch = schemas["BatchRequest"]["properties"]["readings"]
    assert (batch["minItems"], batch["maxItems"]) == (1, 500)
    per_page = next(
        p
        for p in openapi["paths"]["/v1/properties"]["get"]["parameters"]
        if p["name"] == "per_page"
    )
    assert per_page["schema"]["maximum"] == 200 and per_page["schema"]["default"] == 50


def test_walk_every_status_class_through_the_checker(
    service: Service, checker: OpenAPIChecker, checked: httpx.Client
) -> None:
    tree = Tree(checked)
    rid = ok(checked.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)["data"][
        "id"
    ]
    ok(checked.post(tree.batch, json={"readings": [reading("2025-01-01", "2025-01-31")] * 2}), 201)
    assert checked.post(tree.readings, json=reading("2025-01-05", "2025-01-06")).status_code == 409
    assert (
        checked.post(
            "/v1/properties", content=b"{", headers={"Content-Type": "application/json"}
        ).status_code
        == 400
    )
    assert (
        checked.post(
            "/v1/properties", content=b"x", headers={"Content-Type": "text/plain"}
        ).status_code
        == 415
    )
    assert (
        checked.post(
            f"/v1/properties/{tree.pid}/buildings",
            json={**BUILDING, "use_types": [{"type": "office", "gfa_m2": 1}]},
        ).status_code
        == 422
    )
    assert checked.get("/v1/properties/prp_none").status_code == 404
    ok(checked.post(f"/v1/buildings/{tree.bid}/lock", json={"locked_through": "2025-01-31"}))
    assert checked.delete(f"{tree.readings}/{rid}").status_code == 403
    ok(checked.post(f"/v1/properties/{tree.pid}/archive"))
    assert checked.post(f"/v1/properties/{tree.pid}/archive").status_code == 409
    etag = checked.get("/v1/users").headers["ETag"]
    assert checked.get("/v1/users", headers={"If-None-Match": etag}).status_code == 304
    with checked_client(service, checker, "") as anonymous:
        assert anonymous.get("/v1/users").status_code == 401
    with checked_client(service, checker, service.new_key(["users:read"])) as reader:
        assert reader.post("/v1/properties", json=PROPERTY).status_code == 403
    assert checker.checked >= 15


def test_429_matches_the_document(scaled_service: ServiceFactory, checker: OpenAPIChecker) -> None:
    service = scaled_service(per_key=1)
    with checked_client(service, checker) as client:
        assert client.get("/v1/properties").status_code == 200
        assert client.get("/v1/properties").status_code == 429
        assert client.post("/v1/properties", json=PROPERTY).status_code == 429
    assert checker.checked == 3
