"""Security over EVERY route of the app, table-driven: each route has an entry (a new route without
one fails here), each scoped route refuses a key without its scope and admits one with only it;
the benchmark, report, template and webhook routes are isolated by organisation and environment;
OAuth viewers are read-only there, `property_access` limits what an OAuth user reaches, and a
deactivated user is locked out on the very next request. The core routes' own matrix lives in
tests/service/test_core_access.py; this file reuses its table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from bpservice.domain.vocab import SCOPES
from bpservice.oauth import rules
from bpservice.workers.webhooks import deliver_due
from tests.conftest import Service
from tests.service.conftest import PROPERTY, Tree, ok, reading
from tests.service.test_core_access import ENDPOINTS as CORE_ENDPOINTS
from tests.service.test_core_access import Endpoint
from tests.service.test_oauth import add_user, exchange, grant_code, refresh, register_app

PERIOD = {"start": "2025-01-01", "end": "2025-12-31"}
CERTIFICATE = {
    "type": "benchmark_certificate",
    "format": "pdf",
    "reporting_period": PERIOD,
    "building_id": "{bid}",
}
TEMPLATE = {"name": "Energy list", "columns": ["building_name", "eui_kwh_m2"]}
HOOK_URL = "http://127.0.0.1:9/hooks"  # discard port: deliveries fail, which is fine here
W = "/v1/webhooks/{wid}"

# The part-2 routes with their scopes (spec endpoint tables; R9 for templates, WH2 for webhooks).
# Destructive operations come last so the ids stay valid for the rest of a pass.
PART2 = [
    Endpoint("GET", "/v1/buildings/{bid}/benchmarks", "benchmarks:read"),
    Endpoint("GET", "/v1/buildings/{bid}/benchmarks/history", "benchmarks:read"),
    Endpoint("GET", "/v1/benchmarks/portfolio", "benchmarks:read"),
    Endpoint("GET", "/v1/reports/types", "reports:read"),
    Endpoint("POST", "/v1/reports", "reports:write", CERTIFICATE),
    Endpoint("GET", "/v1/reports", "reports:read"),
    Endpoint("GET", "/v1/reports/{rpid}", "reports:read"),
    Endpoint("GET", "/v1/reports/{rpid}/download", "reports:read"),
    Endpoint("GET", "/v1/reports/templates/columns", "reports:read"),
    Endpoint("GET", "/v1/reports/templates", "reports:read"),
    Endpoint("POST", "/v1/reports/templates", "reports:write", TEMPLATE),
    Endpoint("GET", "/v1/reports/templates/{tid}", "reports:read"),
    Endpoint("PATCH", "/v1/reports/templates/{tid}", "reports:write", {"title": "T"}),
    Endpoint("POST", "/v1/webhooks", "webhooks:manage", {"url": HOOK_URL, "events": ["*"]}),
    Endpoint("GET", "/v1/webhooks", "webhooks:manage"),
    Endpoint("GET", W, "webhooks:manage"),
    Endpoint("PATCH", W, "webhooks:manage", {"description": "d"}),
    Endpoint("POST", W + "/pause", "webhooks:manage"),
    Endpoint("POST", W + "/resume", "webhooks:manage"),
    Endpoint("GET", W + "/deliveries", "webhooks:manage"),
    Endpoint("GET", W + "/deliveries/{did}", "webhooks:manage"),
    Endpoint("DELETE", "/v1/reports/templates/{tid}", "reports:write"),
    Endpoint("DELETE", W, "webhooks:manage"),
]
# Routes outside the API's bearer scopes: the authorization server (OAuth's own rules, tested in
# tests/service/test_oauth.py), health and the API documents.
UNSCOPED = {
    ("GET", "/oauth/authorize"),
    ("POST", "/oauth/authorize/login"),
    ("POST", "/oauth/authorize/consent"),
    ("POST", "/oauth/token"),
    ("GET", "/oauth/invitations/{}"),
    ("POST", "/oauth/invitations/{}"),
    ("GET", "/healthz"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("GET", "/redoc"),
}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path.split("?")[0])


def app_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every (method, path) the app serves, walking included routers."""

    def walk(routes: list[Any], prefix: str) -> Iterator[tuple[str, str]]:
        for route in routes:
            if hasattr(route, "original_router"):  # FastAPI >= 0.120 keeps included routers
                yield from walk(route.original_router.routes, prefix + route.include_context.prefix)
                continue
            for method in sorted((getattr(route, "methods", None) or set()) - {"HEAD"}):
                yield method, _shape(prefix + route.path)

    return set(walk(app.routes, ""))


def test_every_route_has_an_entry(service: Service) -> None:
    listed = {(e.method, _shape(e.path)) for e in [*CORE_ENDPOINTS, *PART2]}
    assert len(listed) == len(CORE_ENDPOINTS) + len(PART2)  # no entry twice
    routes = app_routes(service.app)
    assert routes - listed - UNSCOPED == set(), "a route without a security entry"
    assert (listed | UNSCOPED) - routes == set(), "an entry for a route that is gone"


# --- fixtures: one of everything ---------------------------------------------------------------


def make_ids(service: Service, client: httpx.Client) -> dict[str, str]:
    tree = Tree(client)
    ok(client.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)
    body = {
        k: (v.format(bid=tree.bid) if k == "building_id" else v) for k, v in CERTIFICATE.items()
    }
    rpid = ok(client.post("/v1/reports", json=body), 202)["data"]["id"]
    tid = ok(client.post("/v1/reports/templates", json=TEMPLATE), 201)["data"]["id"]
    wid = ok(client.post("/v1/webhooks", json={"url": HOOK_URL, "events": ["*"]}), 201)["data"][
        "id"
    ]
    ok(client.post("/v1/properties", json={**PROPERTY, "name": "Event source"}), 201)
    assert deliver_due(service.app, service.clock()) >= 1  # a failed attempt: a delivery exists
    deliveries = ok(client.get(f"/v1/webhooks/{wid}/deliveries"))["data"]
    return {
        "pid": tree.pid,
        "bid": tree.bid,
        "mid": tree.mid,
        "rpid": rpid,
        "tid": tid,
        "wid": wid,
        "did": deliveries[0]["id"],
    }


def send(client: httpx.Client, endpoint: Endpoint, ids: dict[str, str]) -> httpx.Response:
    body = endpoint.body
    if body is not None:
        body = {k: (v.format(**ids) if isinstance(v, str) else v) for k, v in body.items()}
    return client.request(endpoint.method, endpoint.path.format(**ids), json=body)


@pytest.fixture
def ids(service: Service) -> dict[str, str]:
    with service.client() as full:
        return make_ids(service, full)


def test_every_part2_route_refuses_a_key_without_its_scope(
    service: Service, ids: dict[str, str]
) -> None:
    for endpoint in PART2:
        others = [s for s in SCOPES if s != endpoint.scope]
        with service.client(service.new_key(others)) as lacking:
            r = send(lacking, endpoint, ids)
        assert r.status_code == 403, (endpoint, r.text)
        error = r.json()["error"]
        assert error["code"] == "insufficient_scope", endpoint
        assert error["required_scope"] == endpoint.scope


def test_every_part2_route_admits_a_key_with_only_its_scope(
    service: Service, ids: dict[str, str]
) -> None:
    for endpoint in PART2:
        with service.client(service.new_key([endpoint.scope])) as only:
            r = send(only, endpoint, ids)
        # 409: the report is still processing (download), a state rule, not a refusal.
        assert r.status_code in (200, 201, 202, 204, 409), (endpoint, r.text)
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "report_not_ready", endpoint


def test_a_key_with_no_scopes_is_refused_on_every_part2_route(
    service: Service, ids: dict[str, str]
) -> None:
    with service.client(service.new_key([])) as none:
        for endpoint in PART2:
            assert send(none, endpoint, ids).status_code == 403, endpoint


WITH_IDS = [e for e in PART2 if "{" in e.path]


def _assert_invisible(client: httpx.Client, ids: dict[str, str]) -> None:
    for endpoint in WITH_IDS:
        r = send(client, endpoint, ids)
        assert r.status_code == 404, (endpoint, r.text)
        assert r.json()["error"]["code"] == "not_found"
    for path in ("/v1/reports", "/v1/reports/templates", "/v1/webhooks"):
        assert ok(client.get(path))["meta"]["total"] == 0, path
    assert ok(client.get("/v1/benchmarks/portfolio"))["data"]["building_count"] == 0


def test_another_organisation_sees_none_of_it(service: Service, ids: dict[str, str]) -> None:
    other = service.bootstrap(org_name="Other", owner_email="boss@other.example")
    with service.client(other["test_key"]) as theirs:
        _assert_invisible(theirs, ids)
    with service.client() as mine:  # nothing was changed by the attempts
        assert ok(mine.get(f"/v1/webhooks/{ids['wid']}"))["data"]["status"] == "enabled"
        assert ok(mine.get(f"/v1/reports/templates/{ids['tid']}"))["data"]["title"] is None


def test_production_sees_none_of_the_sandbox(service: Service, ids: dict[str, str]) -> None:
    with service.client(service.live_key) as live:
        _assert_invisible(live, ids)


# --- OAuth users: role, property access, deactivation -------------------------------------------

ALL_SCOPES = " ".join(SCOPES)


@pytest.fixture(autouse=True)
def cheap_scrypt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "SCRYPT_N", 2**10)


def user_token(
    service: Service, email: str, *, role: str, property_access: list[str] | None = None
) -> tuple[str, str]:
    app = register_app(service, name=f"App for {email}")
    user_id = add_user(service, email, role=role, property_access=property_access)
    tokens = exchange(service, app, grant_code(service, app, email, scope=ALL_SCOPES))
    assert tokens.status_code == 200, tokens.text
    return user_id, tokens.json()["access_token"]


def test_viewer_reads_everything_and_writes_nothing(service: Service, ids: dict[str, str]) -> None:
    _, token = user_token(service, "vic@example.com", role="viewer")
    with service.client(token) as viewer:
        for endpoint in PART2:
            r = send(viewer, endpoint, ids)
            if endpoint.method == "GET":
                assert r.status_code in (200, 409), (endpoint, r.text)
            else:
                assert r.status_code == 403, (endpoint, r.text)
                assert r.json()["error"]["code"] == "forbidden", endpoint
    with service.client() as owner:  # the refused writes left everything as it was
        assert ok(owner.get(f"/v1/webhooks/{ids['wid']}"))["data"]["status"] == "enabled"
        assert ok(owner.get("/v1/reports"))["meta"]["total"] == 1


def test_property_access_limits_part2_routes(service: Service, ids: dict[str, str]) -> None:
    with service.client() as owner:
        mine = Tree(owner)
        ok(owner.post(mine.readings, json=reading("2025-01-01", "2025-01-31")), 201)
    _, token = user_token(service, "pat@example.com", role="admin", property_access=[mine.pid])
    hidden_bid = ids["bid"]
    with service.client(token) as limited:
        assert limited.get(f"/v1/buildings/{mine.bid}/benchmarks").status_code == 200
        for path in (
            f"/v1/buildings/{hidden_bid}/benchmarks",
            f"/v1/buildings/{hidden_bid}/benchmarks/history",
            f"/v1/reports/{ids['rpid']}",
            f"/v1/reports/{ids['rpid']}/download",
        ):
            r = limited.get(path)
            assert r.status_code == 404, (path, r.text)
        portfolio = ok(limited.get("/v1/benchmarks/portfolio"))["data"]
        assert portfolio["building_count"] == 1
        assert ok(limited.get("/v1/reports"))["meta"]["total"] == 0
        # A hidden building named in the body is "not found" there (R3: 422, detail not_found).
        r = limited.post("/v1/reports", json={**CERTIFICATE, "building_id": hidden_bid})
        assert r.status_code == 422 and r.json()["error"]["details"][0]["code"] == "not_found"
        body = {**CERTIFICATE, "building_id": mine.bid}
        assert limited.post("/v1/reports", json=body).status_code == 202
        # Webhooks carry every property's events: a limited user cannot manage them (WH2).
        for endpoint in [e for e in PART2 if e.path.startswith("/v1/webhooks")]:
            r = send(limited, endpoint, ids)
            assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", endpoint


def test_deactivated_user_is_locked_out_of_part2_routes_at_once(
    service: Service, ids: dict[str, str]
) -> None:
    user_id, token = user_token(service, "ana@example.com", role="admin")
    reads = [e for e in PART2 if e.method == "GET"]
    with service.client(token) as user:
        for endpoint in reads:
            assert send(user, endpoint, ids).status_code in (200, 409), endpoint
        with service.client() as owner:
            ok(owner.post(f"/v1/users/{user_id}/deactivate"))
        for endpoint in PART2:
            r = send(user, endpoint, ids)
            assert r.status_code == 401, (endpoint, r.text)
            assert r.json()["error"]["code"] == "unauthorized"


def test_token_kinds_are_not_interchangeable(service: Service) -> None:
    """Beyond test_oauth.py's attacks: a refresh token is not a bearer credential, an access token
    is not a refresh token, and an API key is not either."""
    app = register_app(service, name="Kinds")
    add_user(service, "kim@example.com", role="admin")
    tokens = exchange(service, app, grant_code(service, app, "kim@example.com")).json()
    with service.client(tokens["refresh_token"]) as wrong:
        assert wrong.get("/v1/properties").status_code == 401
    for not_a_refresh_token in (tokens["access_token"], service.test_key):
        r = refresh(service, app, not_a_refresh_token)
        assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    # The misuse spent nothing: the real refresh token still works once.
    assert refresh(service, app, tokens["refresh_token"]).status_code == 200
