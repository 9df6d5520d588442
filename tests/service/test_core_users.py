"""Users: list filters, views, invite, role changes (owner only, last owner), deactivate, reactivate."""

from __future__ import annotations

import re

import httpx

from bpservice import admin
from tests.conftest import Service
from tests.service.conftest import OpenAPIChecker, checked_client, create_property, ok

SUMMARY_KEYS = {"id", "email", "name", "role", "status", "last_login_at", "created_at"}
DETAIL_KEYS = SUMMARY_KEYS | {"mfa_enabled", "sso_provider", "property_access"}
INVITED_KEYS = {
    "id",
    "email",
    "role",
    "status",
    "property_access",
    "invite_expires_at",
    "created_at",
}


def add_user(service: Service, email: str, role: str) -> str:
    """An active member created the way `bpservice admin create-user` does."""
    with service.app.state.db.write() as session:
        return admin.create_user(session, service.org_id, email, role=role, now=service.clock()).id


def test_list_get_and_filters(service: Service, checked: httpx.Client) -> None:
    service.clock.advance(1)  # users are listed oldest first (ties by id)
    admin_id = add_user(service, "admin@example.com", "admin")
    service.clock.advance(1)
    ok(checked.post("/v1/users/invite", json={"email": "v@example.com", "role": "viewer"}), 201)
    listed = ok(checked.get("/v1/users"))
    assert listed["meta"] == {"total": 3, "page": 1, "per_page": 50, "total_pages": 1}
    assert all(set(u) == SUMMARY_KEYS for u in listed["data"])
    assert listed["data"][0]["email"] == "owner@example.com"

    def emails(**params: str) -> set[str]:
        return {u["email"] for u in ok(checked.get("/v1/users", params=params))["data"]}

    assert emails(**{"filter[role]": "admin"}) == {"admin@example.com"}
    assert emails(**{"filter[status]": "invited"}) == {"v@example.com"}
    assert emails(**{"filter[status]": "active", "filter[role]": "owner"}) == {"owner@example.com"}
    assert emails(**{"filter[status]": "deactivated"}) == set()
    for params in ({"filter[role]": "god"}, {"filter[status]": "asleep"}):
        assert checked.get("/v1/users", params=params).status_code == 422
    user = ok(checked.get(f"/v1/users/{admin_id}"))["data"]
    assert set(user) == DETAIL_KEYS
    assert re.match(r"^usr_[0-9a-z]{24}$", user["id"])
    assert user["role"] == "admin" and user["status"] == "active"
    assert user["property_access"] == "all" and user["mfa_enabled"] is False
    assert checked.get("/v1/users/usr_nobody").status_code == 404


def test_invite(service: Service, checked: httpx.Client) -> None:
    prop = create_property(checked)
    body = {"email": "New.Person@Example.com", "role": "admin", "property_access": [prop["id"]]}
    r = checked.post("/v1/users/invite", json=body)
    assert r.status_code == 201
    invited = r.json()["data"]
    assert set(invited) == INVITED_KEYS
    assert invited["email"] == "new.person@example.com"
    assert (invited["role"], invited["status"]) == ("admin", "invited")
    assert invited["property_access"] == [prop["id"]]
    assert invited["created_at"] == "2026-11-20T09:30:00Z"
    assert invited["invite_expires_at"] == "2026-11-27T09:30:00Z"
    got = ok(checked.get(f"/v1/users/{invited['id']}"))["data"]
    assert got["name"] is None and got["last_login_at"] is None
    again = checked.post("/v1/users/invite", json={**body, "email": "new.person@example.com"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "email_taken"
    default = ok(
        checked.post("/v1/users/invite", json={"email": "b@example.com", "role": "viewer"}), 201
    )
    assert default["data"]["property_access"] == "all"


def test_invite_validation(service: Service, checked: httpx.Client) -> None:
    with service.client(service.live_key) as live:
        live_prop = create_property(live)
    for body, field in [
        ({"role": "admin"}, "email"),
        ({"email": "a@example.com"}, "role"),
        ({"email": "not-an-email", "role": "admin"}, "email"),
        ({"email": "a@example.com", "role": "superuser"}, "role"),
        ({"email": "a@example.com", "role": "admin", "property_access": "some"}, "property_access"),
        ({"email": "a@example.com", "role": "admin", "property_access": [1]}, "property_access"),
        # ids must be properties of the caller's environment
        (
            {"email": "a@example.com", "role": "admin", "property_access": ["prp_x"]},
            "property_access",
        ),
        (
            {"email": "a@example.com", "role": "admin", "property_access": [live_prop["id"]]},
            "property_access",
        ),
    ]:
        r = checked.post("/v1/users/invite", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"]["details"][0]["field"] == field
    assert ok(checked.get("/v1/users"))["meta"]["total"] == 1


def test_only_owners_change_roles(service: Service, checker: OpenAPIChecker) -> None:
    admin_id = add_user(service, "admin@example.com", "admin")
    viewer_id = add_user(service, "viewer@example.com", "viewer")
    admin_key = service.new_key(None, user_id=admin_id)
    with checked_client(service, checker, admin_key) as as_admin:
        r = as_admin.patch(f"/v1/users/{viewer_id}", json={"role": "admin"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "owner_required"
        r = as_admin.patch(f"/v1/users/{admin_id}", json={"role": "owner"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "owner_required"
        r = as_admin.post("/v1/users/invite", json={"email": "o2@example.com", "role": "owner"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "owner_required"
        r = as_admin.post(f"/v1/users/{service.owner_user_id}/deactivate")
        assert r.status_code == 403 and r.json()["error"]["code"] == "owner_required"
        # admins manage users otherwise: property access, sending the same role, inviting
        prop = create_property(as_admin)
        r = as_admin.patch(
            f"/v1/users/{viewer_id}", json={"property_access": [prop["id"]], "role": "viewer"}
        )
        assert ok(r)["data"]["property_access"] == [prop["id"]]
        ok(
            as_admin.post("/v1/users/invite", json={"email": "v2@example.com", "role": "viewer"}),
            201,
        )
        assert ok(as_admin.get(f"/v1/users/{viewer_id}"))["data"]["role"] == "viewer"
    with checked_client(service, checker) as as_owner:
        r = as_owner.patch(f"/v1/users/{viewer_id}", json={"role": "admin"})
        updated = ok(r)["data"]
        assert set(updated) == DETAIL_KEYS and updated["role"] == "admin"
        assert updated["property_access"] == [prop["id"]]


def test_last_owner_cannot_step_down(service: Service, checked: httpx.Client) -> None:
    owner = service.owner_user_id
    r = checked.patch(f"/v1/users/{owner}", json={"role": "admin"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "last_owner"
    r = checked.post(f"/v1/users/{owner}/deactivate")
    assert r.status_code == 409 and r.json()["error"]["code"] == "last_owner"
    # an invited owner is not yet an active owner
    ok(checked.post("/v1/users/invite", json={"email": "o2@example.com", "role": "owner"}), 201)
    assert checked.patch(f"/v1/users/{owner}", json={"role": "admin"}).status_code == 409
    second = add_user(service, "o3@example.com", "owner")
    assert (
        ok(checked.patch(f"/v1/users/{owner}", json={"role": "admin"}))["data"]["role"] == "admin"
    )
    # the bootstrap key's owner is now an admin: it can no longer change roles
    r = checked.patch(f"/v1/users/{second}", json={"role": "admin"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "owner_required"
    second_key = service.new_key(None, user_id=second)
    with service.client(second_key) as as_second:
        r = as_second.patch(f"/v1/users/{second}", json={"role": "viewer"})
        assert r.status_code == 409 and r.json()["error"]["code"] == "last_owner"
        ok(as_second.patch(f"/v1/users/{owner}", json={"role": "owner"}))
        assert (
            ok(as_second.patch(f"/v1/users/{second}", json={"role": "viewer"}))["data"]["role"]
            == "viewer"
        )


def test_deactivate_and_reactivate(service: Service, checked: httpx.Client) -> None:
    member = add_user(service, "member@example.com", "admin")
    invited = ok(
        checked.post("/v1/users/invite", json={"email": "i@example.com", "role": "viewer"}), 201
    )["data"]
    service.clock.advance(3600)
    r = checked.post(f"/v1/users/{member}/deactivate")
    data = ok(r)["data"]
    assert data == {"id": member, "status": "deactivated", "deactivated_at": "2026-11-20T10:30:00Z"}
    again = checked.post(f"/v1/users/{member}/deactivate")
    assert again.status_code == 409 and again.json()["error"]["code"] == "invalid_state"
    got = ok(checked.get(f"/v1/users/{member}"))["data"]
    assert got["status"] == "deactivated"
    assert {
        u["id"]
        for u in ok(checked.get("/v1/users", params={"filter[status]": "deactivated"}))["data"]
    } == {member}
    back = ok(checked.post(f"/v1/users/{member}/reactivate"))["data"]
    assert set(back) == DETAIL_KEYS and back["status"] == "active"
    r = checked.post(f"/v1/users/{member}/reactivate")
    assert r.status_code == 409 and r.json()["error"]["code"] == "invalid_state"
    # an invitee who never accepted goes back to invited with a fresh invitation
    ok(checked.post(f"/v1/users/{invited['id']}/deactivate"))
    service.clock.advance(86400)
    assert ok(checked.post(f"/v1/users/{invited['id']}/reactivate"))["data"]["status"] == "invited"
    assert checked.post("/v1/users/usr_nobody/deactivate").status_code == 404
    assert checked.post("/v1/users/usr_nobody/reactivate").status_code == 404


def test_users_belong_to_the_organisation(service: Service) -> None:
    other = service.bootstrap(org_name="Other", owner_email="boss@other.example")
    with service.client(service.live_key) as live:
        # the same team in production and sandbox
        assert ok(live.get(f"/v1/users/{service.owner_user_id}"))["data"]["role"] == "owner"
        assert live.get(f"/v1/users/{other['owner_user_id']}").status_code == 404
        assert (
            live.patch(f"/v1/users/{other['owner_user_id']}", json={"role": "viewer"}).status_code
            == 404
        )
        assert live.post(f"/v1/users/{other['owner_user_id']}/deactivate").status_code == 404
        assert {u["email"] for u in ok(live.get("/v1/users"))["data"]} == {"owner@example.com"}
    # the same email may belong to two organisations
    with service.client(other["test_key"]) as theirs:
        ok(
            theirs.post("/v1/users/invite", json={"email": "owner@example.com", "role": "viewer"}),
            201,
        )
