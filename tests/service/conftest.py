"""Helpers for the service-core tests: request bodies, resource factories, a service with scaled
limits, and a client whose every response is checked against the service's own OpenAPI document."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from bpservice.app import create_app
from bpservice.settings import Settings
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap, make_service_app

PROPERTY: dict[str, Any] = {
    "name": "Riverside House",
    "address": {"street": "12 Riverside Walk", "city": "London", "country": "GB"},
    "type": "office",
}
BUILDING: dict[str, Any] = {
    "name": "Main",
    "primary_use_type": "office",
    "gfa_m2": 1000,
    "year_built": 1999,
    "floors": 4,
}
RATE_HEADERS = (
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "X-RateLimit-Window",
)


def month(year: int, m: int) -> tuple[str, str]:
    """First and last day of a calendar month, as the API writes them."""
    import calendar

    last = calendar.monthrange(year, m)[1]
    return f"{year}-{m:02d}-01", f"{year}-{m:02d}-{last:02d}"


def reading(start: str, end: str, consumption: float = 1000.0, **extra: Any) -> dict[str, Any]:
    return {"start_date": start, "end_date": end, "consumption": consumption, **extra}


def monthly(year: int, months: range, consumption: float = 1000.0) -> list[dict[str, Any]]:
    return [reading(*month(year, m), consumption) for m in months]


def ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()


def create_property(client: httpx.Client, **overrides: Any) -> dict[str, Any]:
    return ok(client.post("/v1/properties", json={**PROPERTY, **overrides}), 201)["data"]


def create_building(client: httpx.Client, property_id: str, **overrides: Any) -> dict[str, Any]:
    body = {**BUILDING, **overrides}
    return ok(client.post(f"/v1/properties/{property_id}/buildings", json=body), 201)["data"]


def create_meter(client: httpx.Client, building_id: str, **overrides: Any) -> dict[str, Any]:
    body = {"type": "electricity", "unit": "kWh", **overrides}
    return ok(client.post(f"/v1/buildings/{building_id}/meters", json=body), 201)["data"]


class Tree:
    """One property with one building and one electricity meter, made through the API."""

    def __init__(self, client: httpx.Client) -> None:
        self.property = create_property(client)
        self.building = create_building(client, self.property["id"])
        self.meter = create_meter(client, self.building["id"])

    @property
    def pid(self) -> str:
        return self.property["id"]

    @property
    def bid(self) -> str:
        return self.building["id"]

    @property
    def mid(self) -> str:
        return self.meter["id"]

    @property
    def readings(self) -> str:
        return f"/v1/buildings/{self.bid}/meters/{self.mid}/readings"

    @property
    def batch(self) -> str:
        return self.readings + "/batch"


# --- every response against the OpenAPI document ---------------------------------------------


class OpenAPIChecker:
    """Finds the documented operation for a request and checks the response against it: the
    status is documented, a JSON body matches its schema, and documented headers are present."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.checked = 0
        self._routes: list[tuple[int, re.Pattern[str], str]] = []
        for template in document["paths"]:
            pattern = re.sub(r"\{[^/}]+\}", "[^/]+", template)
            self._routes.append((template.count("{"), re.compile(f"^{pattern}$"), template))
        self._routes.sort(key=lambda route: (route[0], route[2]))

    def operation(self, method: str, path: str) -> dict[str, Any] | None:
        for _params, pattern, template in self._routes:
            op = self.document["paths"][template].get(method.lower())
            if op is not None and pattern.match(path):
                return op
        return None

    def validate(self, schema: dict[str, Any], instance: Any) -> None:
        wrapped = {**schema, "components": self.document["components"]}
        jsonschema.Draft202012Validator(wrapped).validate(instance)

    def check(self, response: httpx.Response) -> None:
        request = response.request
        op = self.operation(request.method, request.url.path)
        if op is None:
            return
        documented = op["responses"]
        status = str(response.status_code)
        assert status in documented, (
            f"{request.method} {request.url.path} answered {status}, which the OpenAPI document "
            f"does not list ({sorted(documented)}): {response.text[:300]}"
        )
        spec = documented[status]
        for header in spec.get("headers", {}):
            assert header in response.headers, f"{status} lacks documented header {header}"
        content = spec.get("content", {}).get("application/json")
        if content is None:
            assert response.content == b"", f"{status} has an undocumented body"
            return
        self.validate(content["schema"], response.json())
        self.checked += 1


@pytest.fixture(scope="session")
def openapi() -> dict[str, Any]:
    """The service's OpenAPI document (the same for every app; building it takes ~0.3 s)."""
    app = create_app(Settings(database_url="sqlite://", run_workers=False))
    return app.openapi()


@pytest.fixture
def checker(openapi: dict[str, Any]) -> OpenAPIChecker:
    return OpenAPIChecker(openapi)


def checked_client(
    service: Service, checker: OpenAPIChecker, key: str | None = None
) -> httpx.Client:
    def hook(response: httpx.Response) -> None:
        response.read()
        checker.check(response)

    return service.client(key, event_hooks={"response": [hook]})


@pytest.fixture
def checked(service: Service, checker: OpenAPIChecker) -> Iterator[httpx.Client]:
    """The sandbox client; every response is validated against /openapi.json."""
    with checked_client(service, checker) as client:
        yield client


# --- live servers ------------------------------------------------------------------------------


def fast(server: LiveServer) -> LiveServer:
    """Set TCP_NODELAY on the listening socket (accepted sockets inherit it on Linux).

    tests/conftest.py binds a socket whose proto is 0, so asyncio's transport does not switch
    Nagle's algorithm off; a response written as headers + body then waits ~40 ms for the
    client's delayed ACK, which makes every request over loopback ten times slower."""
    server.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return server


@pytest.fixture
def service(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    """tests/conftest.py's `service` (same app, limits and bootstrap) without the Nagle delay."""
    app = make_service_app(
        tmp_path / "svc.db", clock, per_key=100_000, bulk=100_000, reports=100_000, per_user=100_000
    )
    with fast(LiveServer(app)) as server:
        yield _bootstrap(app, clock, server.url)


# --- a service with scaled limits ----------------------------------------------------------------

ServiceFactory = Callable[..., Service]


@pytest.fixture
def scaled_service(tmp_path: Path, clock: FakeClock) -> Iterator[ServiceFactory]:
    """Start a live service with the given limits (per_key=, bulk=, reports=, window_seconds=)."""
    servers: list[LiveServer] = []

    def start(**limits: int) -> Service:
        app = make_service_app(tmp_path / f"scaled{len(servers)}.db", clock, **limits)
        server = fast(LiveServer(app)).__enter__()
        servers.append(server)
        return _bootstrap(app, clock, server.url)

    yield start
    for server in servers:
        server.__exit__(None, None, None)
