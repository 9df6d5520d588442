"""Authentication, the scope matrix over every core endpoint, and organisation/environment
isolation (another organisation's or environment's ids answer 404)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from bpservice import admin
from bpservice.domain.vocab import SCOPES
from tests.conftest import Service
from tests.service.conftest import BUILDING, PROPERTY, Tree, ok, reading


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # with {pid}, {bid}, {mid}, {rid}, {uid} placeholders
    scope: str
    body: dict[str, Any] | None = None
    csv: str | None = None  # a text/csv body instead of JSON (the upload)


R = "/v1/buildings/{bid}/meters/{mid}/readings"
# Every core endpoint with the scope the spec's endpoint tables require (D23 for the lock).
ENDPOINTS = [
    Endpoint("GET", "/v1/properties", "properties:read"),
    Endpoint("POST", "/v1/properties", "properties:write", PROPERTY),
    Endpoint("GET", "/v1/properties/{pid}", "properties:read"),
    Endpoint("PATCH", "/v1/properties/{pid}", "properties:write", {"name": "Renamed"}),
    Endpoint("POST", "/v1/properties/{pid}/archive", "properties:write"),
    Endpoint("GET", "/v1/properties/{pid}/buildings", "properties:read"),
    Endpoint("POST", "/v1/properties/{pid}/buildings", "properties:write", BUILDING),
    Endpoint("GET", "/v1/properties/{pid}/buildings/{bid}", "properties:read"),
    Endpoint("PATCH", "/v1/properties/{pid}/buildings/{bid}", "properties:write", {"floors": 5}),
    Endpoint("GET", "/v1/buildings/{bid}/meters", "meters:read"),
    Endpoint("POST", "/v1/buildings/{bid}/meters", "meters:write", {"type": "water", "unit": "m3"}),
    Endpoint("GET", "/v1/buildings/{bid}/meters/{mid}", "meters:read"),
    Endpoint("GET", "/v1/meters", "meters:read"),
    Endpoint("GET", "/v1/readings?filter[meter_id]={mid}", "meters:read"),
    Endpoint("GET", R, "meters:read"),
    Endpoint("POST", R, "meters:write", reading("2025-03-01", "2025-03-31")),
    Endpoint(
        "POST", R + "/batch", "meters:write", {"readings": [reading("2025-04-01", "2025-04-30")]}
    ),
    Endpoint("DELETE", R + "/{rid}", "meters:write"),
    Endpoint(
        "POST",
        "/v1/readings/upload",
        "meters:write",
        csv="meter_id,start_date,end_date,consumption\n{mid},2025-07-01,2025-07-31,5\n",
    ),
    Endpoint("GET", "/v1/buildings/{bid}/lock", "meters:read"),
    Endpoint("POST", "/v1/buildings/{bid}/lock", "meters:write", {"locked_through": "2020-01-01"}),
    Endpoint("GET", "/v1/users", "users:read"),
    Endpoint("GET", "/v1/users/{uid}", "users:read"),
    Endpoint(
        "POST", "/v1/users/invite", "users:write", {"email": "n@example.com", "role": "viewer"}
    ),
    Endpoint("PATCH", "/v1/users/{uid}", "users:write", {"property_access": "all"}),
    Endpoint("POST", "/v1/users/{uid}/deactivate", "users:write"),
    Endpoint("POST", "/v1/users/{uid}/reactivate", "users:write"),
]
CORE_PREFIXES = (
    "/v1/properties",
    "/v1/users",
    "/v1/buildings/{building_id}/meters",
    "/v1/buildings/{building_id}/lock",
    "/v1/readings",
    "/v1/meters",
)


def _ids(client: httpx.Client, service: Service) -> dict[str, str]:
    tree = Tree(client)
    rid = ok(client.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)["data"][
        "id"
    ]
    with service.app.state.db.write() as session:
        uid = admin.create_user(session, service.org_id, "m@example.com", role="viewer").id
    return {"pid": tree.pid, "bid": tree.bid, "mid": tree.mid, "rid": rid, "uid": uid}


def _send(client: httpx.Client, endpoint: Endpoint, ids: dict[str, str]) -> httpx.Response:
    path = endpoint.path.format(**ids)
    if endpoint.csv is not None:
        return client.request(
            endpoint.method,
            path,
            content=endpoint.csv.format(**ids).encode(),
            headers={"Content-Type": "text/csv"},
        )
    return client.request(endpoint.method, path, json=endpoint.body)


def test_matrix_covers_every_core_route(openapi: dict[str, Any]) -> None:
    documented = {
        (method.upper(), path)
        for path, ops in openapi["paths"].items()
        if path.startswith(CORE_PREFIXES)
        for method in ops
    }
    names = {
        "pid": "property_id",
        "bid": "building_id",
        "mid": "meter_id",
        "rid": "reading_id",
        "uid": "user_id",
    }
    listed = {
        (e.method, e.path.split("?")[0].format(**{k: "{" + v + "}" for k, v in names.items()}))
        for e in ENDPOINTS
    }
    assert documented == listed


def test_every_endpoint_refuses_a_key_without_its_scope(service: Service) -> None:
    with service.client() as full:
        ids = _ids(full, service)
    for endpoint in ENDPOINTS:
        others = [s for s in SCOPES if s != endpoint.scope]
        with service.client(service.new_key(others)) as lacking:
            r = _send(lacking, endpoint, ids)
        assert r.status_code == 403, (endpoint, r.text)
        error = r.json()["error"]
        assert error["code"] == "insufficient_scope" and error["required_scope"] == endpoint.scope
        assert "X-RateLimit-Remaining" in r.headers


def test_every_endpoint_admits_a_key_with_only_its_scope(service: Service) -> None:
    with service.client() as full:
        ids = _ids(full, service)
    for endpoint in ENDPOINTS:
        with service.client(service.new_key([endpoint.scope])) as only:
            r = _send(only, endpoint, ids)
        assert r.status_code in (200, 201, 204, 409), (endpoint, r.text)


def test_a_key_with_no_scopes_is_refused_everywhere(service: Service) -> None:
    with service.client() as full:
        ids = _ids(full, service)
    with service.client(service.new_key([])) as none:
        for endpoint in ENDPOINTS:
            assert _send(none, endpoint, ids).status_code == 403, endpoint


BAD_AUTHORIZATION = [
    None,
    "",
    "Bearer",
    "Bearer  svc_test_x",
    "Basic dXNlcjpwYXNz",
    "Bearer svc_test_notarealkey",
    "Bearer svc_prod_0123456789",
    "Bearer " + "x" * 600,
    "Token svc_test_abc",
]


def test_bad_credentials_answer_401(service: Service) -> None:
    for authorization in BAD_AUTHORIZATION:
        headers = {} if authorization is None else {"Authorization": authorization}
        with httpx.Client(base_url=service.base_url, headers=headers) as client:
            for method, path in (("GET", "/v1/properties"), ("POST", "/v1/properties")):
                r = client.request(method, path, json=PROPERTY if method == "POST" else None)
                assert r.status_code == 401, authorization
                assert r.json()["error"]["code"] == "unauthorized"
                assert r.headers["WWW-Authenticate"].startswith("Bearer")
                assert all(h in r.headers for h in ("X-RateLimit-Limit", "X-RateLimit-Reset"))


def test_a_key_with_the_wrong_environment_prefix_is_refused(service: Service) -> None:
    # the same secret under the other environment's prefix is a different, unknown key
    swapped = "svc_live_" + service.test_key.removeprefix("svc_test_")
    with service.client(swapped) as client:
        assert client.get("/v1/properties").status_code == 401


def test_revoked_key_answers_401_at_once(service: Service) -> None:
    with service.app.state.db.write() as session:
        new = admin.create_api_key(session, service.org_id, environment="test")
    with service.client(new.key) as client:
        ok(client.get("/v1/properties"))
        with service.app.state.db.write() as session:
            admin.revoke_api_key(session, new.id)
        r = client.get("/v1/properties")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    with service.client() as other:
        ok(other.get("/v1/properties"))


def _resource_urls(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("GET", "/v1/properties/{pid}", None),
        ("PATCH", "/v1/properties/{pid}", {"name": "x"}),
        ("POST", "/v1/properties/{pid}/archive", None),
        ("GET", "/v1/properties/{pid}/buildings", None),
        ("POST", "/v1/properties/{pid}/buildings", BUILDING),
        ("GET", "/v1/properties/{pid}/buildings/{bid}", None),
        ("PATCH", "/v1/properties/{pid}/buildings/{bid}", {"floors": 3}),
        ("GET", "/v1/buildings/{bid}/meters", None),
        ("POST", "/v1/buildings/{bid}/meters", {"type": "water", "unit": "m3"}),
        ("GET", "/v1/buildings/{bid}/meters/{mid}", None),
        ("GET", R, None),
        ("POST", R, reading("2025-05-01", "2025-05-31")),
        ("POST", R + "/batch", {"readings": [reading("2025-06-01", "2025-06-30")]}),
        ("DELETE", R + "/{rid}", None),
        ("GET", "/v1/buildings/{bid}/lock", None),
        ("POST", "/v1/buildings/{bid}/lock", {"locked_through": "2030-01-01"}),
    ]


def _assert_invisible(client: httpx.Client, ids: dict[str, str]) -> None:
    for method, template, body in _resource_urls(ids):
        r = client.request(method, template.format(**ids), json=body)
        assert r.status_code == 404, (method, template, r.text)
        assert r.json()["error"]["code"] == "not_found"


def test_another_organisations_ids_answer_404(service: Service) -> None:
    with service.client() as mine:
        ids = _ids(mine, service)
        before = ok(mine.get(R.format(**ids)))
    other = service.bootstrap(org_name="Other", owner_email="boss@other.example")
    with service.client(other["test_key"]) as theirs:
        _assert_invisible(theirs, ids)
        assert theirs.get(f"/v1/users/{ids['uid']}").status_code == 404
        assert theirs.patch(f"/v1/users/{ids['uid']}", json={"role": "admin"}).status_code == 404
        assert ok(theirs.get("/v1/properties"))["meta"]["total"] == 0
        # a property id from another organisation is not theirs to grant
        r = theirs.post(
            "/v1/users/invite",
            json={"email": "z@example.com", "role": "viewer", "property_access": [ids["pid"]]},
        )
        assert r.status_code == 422
    with service.client() as mine:
        assert ok(mine.get(R.format(**ids))) == before
        assert ok(mine.get(f"/v1/properties/{ids['pid']}"))["data"]["name"] == PROPERTY["name"]


def test_sandbox_and_production_are_separate_data_spaces(service: Service) -> None:
    with service.client() as sandbox:
        ids = _ids(sandbox, service)
    with service.client(service.live_key) as live:
        _assert_invisible(live, ids)
        assert ok(live.get("/v1/properties"))["meta"]["total"] == 0
        live_tree = Tree(live)
        # the same period on a production meter does not collide with the sandbox
        ok(live.post(live_tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)
    with service.client() as sandbox:
        listed = ok(sandbox.get("/v1/properties"))["data"]
        assert [p["id"] for p in listed] == [ids["pid"]]
        assert sandbox.get(f"/v1/properties/{live_tree.pid}").status_code == 404
