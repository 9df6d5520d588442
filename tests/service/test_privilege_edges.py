"""Privilege edges between users (issue 14 item 2, decisions S5): nobody changes a user whose
property access is wider than their own; only owners change, deactivate or reactivate owners; an
owner can always restore their own access. Users act through real OAuth tokens (Authorization
Code + PKCE through the sign-in pages), where property access applies; API keys act for the
whole organisation (D38)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from bpservice.db.models import User
from tests.conftest import Service
from tests.service.conftest import create_building, create_meter, create_property, ok
from tests.service.test_oauth import (  # noqa: F401  (cheap_scrypt: fast password hashing)
    add_user,
    cheap_scrypt,
    exchange,
    grant_code,
    register_app,
)

SCOPES = "users:read users:write"


@dataclass
class Org:
    service: Service
    p1: str
    p2: str
    owner: str
    owner_email: str = ""

    def add(self, email: str, role: str, access: list[str] | None = None) -> str:
        return add_user(self.service, email, role=role, property_access=access)

    def client(self, email: str, scope: str = SCOPES) -> httpx.Client:
        """The user signed in over OAuth (sandbox app), with a users:read/write token."""
        app = register_app(self.service, name=f"App for {email}")
        grant = grant_code(self.service, app, email, scope=scope)
        token = exchange(self.service, app, grant).json()["access_token"]
        return self.service.client(token)

    def access(self, user_id: str) -> object:
        with self.service.client() as api:
            return ok(api.get(f"/v1/users/{user_id}"))["data"]["property_access"]


@pytest.fixture
def org(service: Service) -> Iterator[Org]:
    with service.client() as api:
        p1 = create_property(api)["id"]
        p2 = create_property(api, name="Second")["id"]
    owner = Org(service, p1, p2, service.owner_user_id)
    # the bootstrap owner gets a password so it can sign in like everyone else
    with service.app.state.db.write() as session:
        from bpservice import admin
        from tests.service.test_oauth import PASSWORD

        admin.set_password(session, service.owner_user_id, PASSWORD, now=service.clock())
        owner.owner_email = session.get(User, service.owner_user_id).email
    yield owner


def _refused(response: httpx.Response, code: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == code


def test_a_limited_admin_cannot_narrow_the_owner(org: Org) -> None:
    org.add("limited@example.com", "admin", [org.p1])
    with org.client("limited@example.com") as api:
        _refused(
            api.patch(f"/v1/users/{org.owner}", json={"property_access": [org.p1]}),
            "owner_required",
        )
        _refused(api.post(f"/v1/users/{org.owner}/deactivate"), "owner_required")
    assert org.access(org.owner) == "all"


def test_a_limited_admin_cannot_change_a_wider_user(org: Org) -> None:
    org.add("limited@example.com", "admin", [org.p1])
    unrestricted = org.add("wide@example.com", "admin")
    two = org.add("two@example.com", "viewer", [org.p1, org.p2])
    same = org.add("same@example.com", "viewer", [org.p1])
    with org.client("limited@example.com") as api:
        for target in (unrestricted, two):
            _refused(
                api.patch(f"/v1/users/{target}", json={"property_access": [org.p1]}), "forbidden"
            )
            _refused(api.post(f"/v1/users/{target}/deactivate"), "forbidden")
        # within their own reach the change is allowed
        ok(api.patch(f"/v1/users/{same}", json={"property_access": [org.p1]}))
        ok(api.post(f"/v1/users/{same}/deactivate"))
        ok(api.post(f"/v1/users/{same}/reactivate"))
    assert org.access(unrestricted) == "all" and org.access(two) == [org.p1, org.p2]


def test_only_an_owner_reactivates_an_owner(org: Org) -> None:
    second = org.add("second-owner@example.com", "owner")
    org.add("admin@example.com", "admin")
    with org.service.client() as owner:
        ok(owner.post(f"/v1/users/{second}/deactivate"))
    with org.client("admin@example.com") as api:
        _refused(api.post(f"/v1/users/{second}/reactivate"), "owner_required")
    with org.service.client() as owner:
        assert ok(owner.post(f"/v1/users/{second}/reactivate"))["data"]["status"] == "active"


def test_an_owner_can_always_restore_their_own_access(org: Org) -> None:
    """The lock-out the issue found: an owner narrowed to one property (as the old rules let a
    limited admin do) could not grant themselves 'all' back."""
    with org.service.app.state.db.write() as session:
        session.get(User, org.owner).property_access = [org.p1]
    with org.client(org.owner_email) as api:
        # narrowed, the owner cannot change an unrestricted admin until access is restored
        wide = org.add("wide@example.com", "admin")
        _refused(api.patch(f"/v1/users/{wide}", json={"property_access": [org.p1]}), "forbidden")
        restored = ok(api.patch(f"/v1/users/{org.owner}", json={"property_access": "all"}))
        assert restored["data"]["property_access"] == "all"
        ok(api.patch(f"/v1/users/{wide}", json={"property_access": [org.p1]}))


def test_a_limited_admin_cannot_widen_themselves(org: Org) -> None:
    limited = org.add("limited@example.com", "admin", [org.p1])
    with org.client("limited@example.com") as api:
        r = api.patch(f"/v1/users/{limited}", json={"property_access": "all"})
        _refused(r, "forbidden")
        r = api.patch(f"/v1/users/{limited}", json={"property_access": [org.p1, org.p2]})
        _refused(r, "forbidden")
    assert org.access(limited) == [org.p1]


def test_lists_of_many_meters_keep_to_the_users_properties(org: Org) -> None:
    """GET /v1/meters and GET /v1/readings (C2, C3) name meters by id: a user limited to one
    property gets only that property's meters and readings, whatever ids they send."""
    meters = {}
    with org.service.client() as api:
        for prop in (org.p1, org.p2):
            building = create_building(api, prop)["id"]
            meter = create_meter(api, building)["id"]
            body = {"start_date": "2025-01-01", "end_date": "2025-01-31", "consumption": 5.0}
            ok(api.post(f"/v1/buildings/{building}/meters/{meter}/readings", json=body), 201)
            meters[prop] = meter
    both = ",".join(meters.values())
    org.add("one@example.com", "viewer", [org.p1])
    with org.client("one@example.com", scope="meters:read") as api:
        listed = ok(api.get("/v1/meters", params={"filter[id]": both}))["data"]
        assert [m["id"] for m in listed] == [meters[org.p1]]
        readings = ok(api.get("/v1/readings", params={"filter[meter_id]": both}))
        assert [r["meter_id"] for r in readings["data"]] == [meters[org.p1]]
        assert readings["meta"]["total"] == 1
