"""The authorization server end to end: authlib's httpx OAuth2Client is the peer, the test plays the
browser (GET /authorize, POST the sign-in and consent forms, read the redirect), and the tokens are
used against the live API. Then the attacks."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client, OAuthError
from typer.testing import CliRunner

from bpservice import admin
from bpservice.cli import app as cli_app
from bpservice.db.models import User
from bpservice.oauth import rules
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap, make_service_app

PASSWORD = "correct horse battery staple"
REDIRECT = "http://127.0.0.1/callback"  # loopback: any port is accepted (RFC 8252)
PROPERTY = {
    "name": "Riverside House",
    "address": {"street": "12 Riverside Walk", "city": "London", "country": "GB"},
    "type": "office",
}


@dataclass
class App:
    client_id: str
    client_secret: str


def register_app(
    service: Service, *, environment: str = "test", name: str = "Energy Dashboard"
) -> App:
    with service.app.state.db.write() as session:
        new = admin.create_oauth_app(
            session,
            service.org_id,
            name=name,
            description="Reads your portfolio",
            redirect_uris=[REDIRECT, "https://app.example.com/cb"],
            environment=environment,
            now=service.clock(),
        )
    return App(new.client_id, new.client_secret)


def add_user(
    service: Service,
    email: str,
    *,
    role: str = "admin",
    property_access: list[str] | None = None,
) -> str:
    with service.app.state.db.write() as session:
        user = admin.create_user(
            session, service.org_id, email, role=role, name=email.split("@")[0], now=service.clock()
        )
        user.property_access = property_access
        admin.set_password(session, user.id, PASSWORD, now=service.clock())
        return user.id


def hidden_token(html: str) -> str:
    match = re.search(r'name=form_token value="([^"]+)"', html)
    assert match, html
    return match.group(1)


def browser_consent(
    service: Service,
    authorize_url: str,
    email: str,
    password: str = PASSWORD,
    decision: str = "allow",
) -> httpx.Response:
    """What a person does in the browser; returns the final redirect (303) to the app."""
    with httpx.Client(base_url=service.base_url, follow_redirects=False) as browser:
        page = browser.get(authorize_url)
        assert page.status_code == 200, page.text
        assert "text/html" in page.headers["content-type"]
        consent = browser.post(
            "/oauth/authorize/login",
            data={"form_token": hidden_token(page.text), "email": email, "password": password},
        )
        assert consent.status_code == 200, consent.text
        done = browser.post(
            "/oauth/authorize/consent",
            data={"form_token": hidden_token(consent.text), "decision": decision},
        )
        assert done.status_code == 303, done.text
        return done


def oauth_client(service: Service, app: App, scope: str, port: int = 53682) -> OAuth2Client:
    return OAuth2Client(
        client_id=app.client_id,
        client_secret=app.client_secret,
        scope=scope,
        redirect_uri=f"http://127.0.0.1:{port}/callback",
        code_challenge_method="S256",
        timeout=30,
    )


def authorize_with_authlib(
    service: Service, app: App, email: str, scope: str = "properties:read properties:write"
) -> tuple[OAuth2Client, dict]:
    client = oauth_client(service, app, scope)
    verifier = generate_token(64)
    url, state = client.create_authorization_url(
        f"{service.base_url}/oauth/authorize", code_verifier=verifier
    )
    callback = browser_consent(service, url, email).headers["location"]
    assert parse_qs(urlsplit(callback).query)["state"] == [state]
    token = client.fetch_token(
        f"{service.base_url}/oauth/token", authorization_response=callback, code_verifier=verifier
    )
    return client, token


@dataclass
class Grant:
    code: str
    verifier: str
    redirect_uri: str


def grant_code(
    service: Service,
    app: App,
    email: str,
    scope: str = "properties:read properties:write",
    redirect_uri: str = "http://127.0.0.1:40000/callback",
) -> Grant:
    """A code obtained through the pages, for token-endpoint tests that speak JSON directly."""
    verifier = generate_token(64)
    query = httpx.QueryParams(
        response_type="code",
        client_id=app.client_id,
        redirect_uri=redirect_uri,
        scope=scope,
        state="st-123",
        code_challenge=rules.s256(verifier),
        code_challenge_method="S256",
    )
    done = browser_consent(service, f"/oauth/authorize?{query}", email)
    params = parse_qs(urlsplit(done.headers["location"]).query)
    assert params["state"] == ["st-123"]
    return Grant(params["code"][0], verifier, redirect_uri)


def exchange(service: Service, app: App, grant: Grant, **overrides: str) -> httpx.Response:
    body = {
        "grant_type": "authorization_code",
        "code": grant.code,
        "redirect_uri": grant.redirect_uri,
        "client_id": app.client_id,
        "client_secret": app.client_secret,
        "code_verifier": grant.verifier,
        **overrides,
    }
    return httpx.post(f"{service.base_url}/oauth/token", json=body)


def refresh(service: Service, app: App, refresh_token: str) -> httpx.Response:
    body = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": app.client_id,
        "client_secret": app.client_secret,
    }
    return httpx.post(f"{service.base_url}/oauth/token", json=body)


def bearer(service: Service, token: str) -> httpx.Client:
    return service.client(token)


@pytest.fixture(autouse=True)
def cheap_scrypt(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lower the scrypt cost for flow tests (the cost is stored in each hash, so verification
    follows); the hashing test itself keeps the production parameters."""
    if request.node.name != "test_password_hashes_are_salted_scrypt":
        monkeypatch.setattr(rules, "SCRYPT_N", 2**10)


@pytest.fixture
def app(service: Service) -> App:
    return register_app(service)


# --- the happy path with a real client library --------------------------------------------------


def test_authlib_authorization_code_pkce_flow_and_refresh(service: Service, app: App) -> None:
    add_user(service, "ana@example.com")
    client, token = authorize_with_authlib(service, app, "ana@example.com")
    assert token["token_type"] == "Bearer" and token["expires_in"] == 3600
    assert token["scope"] == "properties:read properties:write"
    assert token["access_token"].startswith("oat_") and token["refresh_token"]

    try:
        r = client.post(f"{service.base_url}/v1/properties", json=PROPERTY)
        assert r.status_code == 201, r.text
        r = client.get(f"{service.base_url}/v1/properties")
        assert r.status_code == 200 and r.json()["meta"]["total"] == 1
        assert r.headers["X-RateLimit-Bucket"] == "user"
        # The token carries only what was granted.
        r = client.get(f"{service.base_url}/v1/users")
        assert r.status_code == 403 and r.json()["error"]["code"] == "insufficient_scope"

        new = client.refresh_token(f"{service.base_url}/oauth/token")
        assert new["refresh_token"] != token["refresh_token"]
        assert new["access_token"] != token["access_token"]
        assert new["scope"] == "properties:read properties:write"
        r = client.get(f"{service.base_url}/v1/properties")
        assert r.status_code == 200
    finally:
        client.close()

    # The spent refresh token again: the whole family is revoked, including the newest tokens.
    thief = oauth_client(service, app, "properties:read properties:write")
    try:
        with pytest.raises(OAuthError) as err:
            thief.refresh_token(
                f"{service.base_url}/oauth/token", refresh_token=token["refresh_token"]
            )
        assert err.value.error == "invalid_grant"
    finally:
        thief.close()
    with bearer(service, new["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 401
    assert refresh(service, app, new["refresh_token"]).json()["error"] == "invalid_grant"


def test_json_token_request_per_spec(service: Service, app: App) -> None:
    add_user(service, "ana@example.com")
    grant = grant_code(service, app, "ana@example.com", scope="properties:read")
    r = exchange(service, app, grant)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    body = r.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert (body["token_type"], body["expires_in"], body["scope"]) == (
        "Bearer",
        3600,
        "properties:read",
    )
    with bearer(service, body["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200
        r = api.post("/v1/properties", json=PROPERTY)
        assert r.status_code == 403 and r.json()["error"]["code"] == "insufficient_scope"


# --- attacks on the token endpoint --------------------------------------------------------------


def test_wrong_verifier_and_mismatched_redirect_are_refused(service: Service, app: App) -> None:
    add_user(service, "ana@example.com")
    grant = grant_code(service, app, "ana@example.com")
    r = exchange(service, app, grant, code_verifier=generate_token(64))
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = exchange(service, app, grant, code_verifier="short")
    assert r.json()["error"] == "invalid_grant"
    r = exchange(service, app, grant, redirect_uri="http://127.0.0.1:40001/callback")
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = exchange(service, app, grant, code_verifier="")
    assert r.json()["error"] == "invalid_grant"
    assert exchange(service, app, grant).status_code == 200


def test_code_reuse_is_refused_and_revokes_its_tokens(service: Service, app: App) -> None:
    add_user(service, "ana@example.com")
    grant = grant_code(service, app, "ana@example.com")
    first = exchange(service, app, grant).json()
    with bearer(service, first["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200
    again = exchange(service, app, grant)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    with bearer(service, first["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 401
    assert refresh(service, app, first["refresh_token"]).json()["error"] == "invalid_grant"


def test_code_and_tokens_expire(service: Service, app: App) -> None:
    add_user(service, "ana@example.com")
    grant = grant_code(service, app, "ana@example.com")
    service.clock.advance(61)
    assert exchange(service, app, grant).json()["error"] == "invalid_grant"

    tokens = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    service.clock.advance(3599)
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200
    service.clock.advance(1)
    with bearer(service, tokens["access_token"]) as api:
        r = api.get("/v1/properties")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    renewed = refresh(service, app, tokens["refresh_token"])
    assert renewed.status_code == 200
    with bearer(service, renewed.json()["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200
    service.clock.advance(30 * 86400)
    assert refresh(service, app, renewed.json()["refresh_token"]).json()["error"] == "invalid_grant"


def test_codes_and_tokens_of_another_client_are_refused(service: Service, app: App) -> None:
    other = register_app(service, name="Other app")
    add_user(service, "ana@example.com")
    grant = grant_code(service, app, "ana@example.com")
    stolen = exchange(
        service, other, grant, client_id=other.client_id, client_secret=other.client_secret
    )
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
    tokens = exchange(service, app, grant).json()
    assert refresh(service, other, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    # Still usable by its own client: the refusal did not spend it.
    assert refresh(service, app, tokens["refresh_token"]).status_code == 200

    wrong = exchange(service, app, grant, client_secret="ocs_wrong")
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    r = httpx.post(
        f"{service.base_url}/oauth/token",
        json={"grant_type": "password", "client_id": app.client_id},
    )
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    r = httpx.post(
        f"{service.base_url}/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": app.client_id,
            "client_secret": app.client_secret,
        },
    )
    assert r.status_code == 400 and r.json()["error"] == "unsupported_grant_type"
    r = httpx.post(
        f"{service.base_url}/oauth/token",
        content=b"{nope",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


# --- what a token may do --------------------------------------------------------------------------


def test_deactivated_users_tokens_stop_at_once(service: Service, app: App) -> None:
    user_id = add_user(service, "ana@example.com")
    tokens = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200
    with service.client() as owner:
        assert owner.post(f"/v1/users/{user_id}/deactivate").status_code == 200
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 401
    assert refresh(service, app, tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_viewer_is_read_only_and_role_changes_apply_at_once(service: Service, app: App) -> None:
    user_id = add_user(service, "vic@example.com", role="viewer")
    tokens = exchange(service, app, grant_code(service, app, "vic@example.com")).json()
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200
        r = api.post("/v1/properties", json=PROPERTY)
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    with service.client() as owner:
        assert owner.patch(f"/v1/users/{user_id}", json={"role": "admin"}).status_code == 200
    with bearer(service, tokens["access_token"]) as api:
        assert api.post("/v1/properties", json=PROPERTY).status_code == 201


def test_property_access_limits_what_the_user_sees(service: Service, app: App) -> None:
    with service.client() as owner:
        seen = owner.post("/v1/properties", json=PROPERTY).json()["data"]["id"]
        hidden = owner.post("/v1/properties", json={**PROPERTY, "name": "Hidden"}).json()["data"]
    add_user(service, "pat@example.com", property_access=[seen])
    tokens = exchange(service, app, grant_code(service, app, "pat@example.com")).json()
    with bearer(service, tokens["access_token"]) as api:
        listed = api.get("/v1/properties").json()
        assert [p["id"] for p in listed["data"]] == [seen] and listed["meta"]["total"] == 1
        assert api.get(f"/v1/properties/{seen}").status_code == 200
        assert api.get(f"/v1/properties/{hidden['id']}").status_code == 404
        r = api.post(
            f"/v1/properties/{hidden['id']}/buildings",
            json={
                "name": "B",
                "primary_use_type": "office",
                "gfa_m2": 100,
                "year_built": 2000,
                "floors": 1,
            },
        )
        assert r.status_code == 404


def test_client_environment_decides_the_data_space(service: Service) -> None:
    live_app = register_app(service, environment="live", name="Live app")
    with service.client() as sandbox:
        assert sandbox.post("/v1/properties", json=PROPERTY).status_code == 201
    add_user(service, "ana@example.com")
    tokens = exchange(service, live_app, grant_code(service, live_app, "ana@example.com")).json()
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").json()["meta"]["total"] == 0


def test_users_of_another_organisation_cannot_sign_in(service: Service, app: App) -> None:
    other = service.bootstrap(owner_email="eve@example.com")
    with service.app.state.db.write() as session:
        admin.set_password(session, other["owner_user_id"], PASSWORD, now=service.clock())
    query = httpx.QueryParams(
        response_type="code",
        client_id=app.client_id,
        redirect_uri=REDIRECT,
        scope="properties:read",
        state="s",
        code_challenge=rules.s256(generate_token(64)),
        code_challenge_method="S256",
    )
    with httpx.Client(base_url=service.base_url) as browser:
        page = browser.get(f"/oauth/authorize?{query}")
        r = browser.post(
            "/oauth/authorize/login",
            data={
                "form_token": hidden_token(page.text),
                "email": "eve@example.com",
                "password": PASSWORD,
            },
        )
        assert r.status_code == 401 and "incorrect" in r.text


@pytest.fixture
def tight_service(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    app = make_service_app(tmp_path / "svc.db", clock, per_user=3)
    with LiveServer(app) as server:
        yield _bootstrap(app, clock, server.url)


def test_per_user_bucket_is_shared_by_the_users_tokens(tight_service: Service) -> None:
    service = tight_service
    app = register_app(service)
    add_user(service, "ana@example.com")
    one = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    two = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    with bearer(service, one["access_token"]) as a, bearer(service, two["access_token"]) as b:
        r = a.get("/v1/properties")
        assert r.headers["X-RateLimit-Limit"] == "3" and r.headers["X-RateLimit-Bucket"] == "user"
        assert b.get("/v1/properties").headers["X-RateLimit-Remaining"] == "1"
        assert a.get("/v1/properties").status_code == 200
        r = b.get("/v1/properties")
        assert r.status_code == 429 and r.json()["error"]["bucket"] == "user"
    # The organisation's API key has its own bucket.
    with service.client() as api:
        assert api.get("/v1/properties").status_code == 200


# --- the authorization endpoint and its pages -----------------------------------------------------


def authorize_query(app: App, **overrides: str) -> str:
    params = {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": REDIRECT,
        "scope": "properties:read",
        "state": "xyz",
        "code_challenge": rules.s256(generate_token(64)),
        "code_challenge_method": "S256",
        **overrides,
    }
    return "/oauth/authorize?" + str(httpx.QueryParams({k: v for k, v in params.items() if v}))


def test_authorize_refuses_bad_requests(service: Service, app: App) -> None:
    with httpx.Client(base_url=service.base_url, follow_redirects=False) as browser:
        # Unknown client or unregistered redirect URI: an error page, never a redirect.
        for bad in (
            authorize_query(app, client_id="cli_unknown"),
            authorize_query(app, redirect_uri="https://evil.example.com/cb"),
            authorize_query(app, redirect_uri="http://127.0.0.1:5000/other"),
            authorize_query(app, redirect_uri="http://localhost:5000/callback"),
        ):
            r = browser.get(bad)
            assert r.status_code == 400 and "location" not in r.headers, bad

        def error_of(url: str) -> dict[str, list[str]]:
            r = browser.get(url)
            assert r.status_code == 303, r.text
            assert r.headers["location"].startswith("http://127.0.0.1/callback?")
            return parse_qs(urlsplit(r.headers["location"]).query)

        assert error_of(authorize_query(app, response_type="token"))["error"] == [
            "unsupported_response_type"
        ]
        assert error_of(authorize_query(app, scope="properties:read admin:all"))["error"] == [
            "invalid_scope"
        ]
        missing_pkce = error_of(authorize_query(app, code_challenge=""))
        assert missing_pkce["error"] == ["invalid_request"] and missing_pkce["state"] == ["xyz"]
        plain = error_of(authorize_query(app, code_challenge_method="plain"))
        assert plain["error"] == ["invalid_request"]
        assert error_of(authorize_query(app, state=""))["error"] == ["invalid_request"]
        # Any port on the registered loopback redirect.
        assert (
            browser.get(
                authorize_query(app, redirect_uri="http://127.0.0.1:61111/callback")
            ).status_code
            == 200
        )


def test_login_form_is_csrf_safe_and_escapes(service: Service) -> None:
    app = register_app(service, name='<script>alert("x")</script>')
    add_user(service, "ana@example.com")
    with httpx.Client(base_url=service.base_url, follow_redirects=False) as browser:
        page = browser.get(authorize_query(app))
        assert "<script>" not in page.text and "&lt;script&gt;" in page.text
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        token = hidden_token(page.text)
        wrong = browser.post(
            "/oauth/authorize/login",
            data={"form_token": token, "email": "ana@example.com", "password": "nope-nope-nope"},
        )
        assert wrong.status_code == 401 and "incorrect" in wrong.text
        # A forged (tampered) token is refused.
        forged = browser.post(
            "/oauth/authorize/login",
            data={
                "form_token": token[:-2] + "xx",
                "email": "ana@example.com",
                "password": PASSWORD,
            },
        )
        assert forged.status_code == 403

    # The same form posted from another browser (no CSRF cookie) is refused.
    with httpx.Client(base_url=service.base_url) as attacker:
        r = attacker.post(
            "/oauth/authorize/login",
            data={"form_token": token, "email": "ana@example.com", "password": PASSWORD},
        )
        assert r.status_code == 403


def test_denied_consent_redirects_with_access_denied(service: Service, app: App) -> None:
    add_user(service, "ana@example.com")
    done = browser_consent(service, authorize_query(app), "ana@example.com", decision="deny")
    params = parse_qs(urlsplit(done.headers["location"]).query)
    assert params["error"] == ["access_denied"] and params["state"] == ["xyz"]
    assert "code" not in params


# --- invitations, passwords and the admin commands ------------------------------------------------


def test_invited_user_accepts_and_signs_in(service: Service, app: App) -> None:
    with service.client() as owner:
        r = owner.post("/v1/users/invite", json={"email": "new@example.com", "role": "viewer"})
        assert r.status_code == 201, r.text
        user_id = r.json()["data"]["id"]
    with service.app.state.db.write() as session:
        token = admin.create_invitation_link(session, user_id, now=service.clock())
    link = f"/oauth/invitations/{token}"
    with httpx.Client(base_url=service.base_url) as browser:
        page = browser.get(link)
        assert page.status_code == 200 and "new@example.com" in page.text
        form = {"form_token": hidden_token(page.text), "name": "Nia <b>"}
        r = browser.post(link, data={**form, "password": PASSWORD, "confirm": PASSWORD + "!"})
        assert r.status_code == 400 and "differ" in r.text
        r = browser.post(link, data={**form, "password": "short", "confirm": "short"})
        assert r.status_code == 400 and "12 characters" in r.text
        r = browser.post(link, data={**form, "password": PASSWORD, "confirm": PASSWORD})
        assert r.status_code == 200 and "now active" in r.text
        assert browser.get(link).status_code == 404  # single use

    with service.client() as owner:
        user = owner.get(f"/v1/users/{user_id}").json()["data"]
    assert (user["status"], user["name"]) == ("active", "Nia <b>")
    with service.app.state.db.read() as session:
        row = session.get(User, user_id)
        assert row is not None and row.activated_at == service.clock()
        assert row.password_hash and PASSWORD not in row.password_hash
    tokens = exchange(service, app, grant_code(service, app, "new@example.com")).json()
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 200


def test_expired_invitation_link_is_refused(service: Service) -> None:
    with service.client() as owner:
        user_id = owner.post(
            "/v1/users/invite", json={"email": "late@example.com", "role": "viewer"}
        ).json()["data"]["id"]
    with service.app.state.db.write() as session:
        token = admin.create_invitation_link(session, user_id, now=service.clock())
    service.clock.advance(7 * 86400 + 1)
    with httpx.Client(base_url=service.base_url) as browser:
        assert browser.get(f"/oauth/invitations/{token}").status_code == 404
        assert browser.get("/oauth/invitations/inv_bogus").status_code == 404


def test_password_hashes_are_salted_scrypt() -> None:
    one, two = rules.hash_password(PASSWORD), rules.hash_password(PASSWORD)
    assert one != two and one.startswith("scrypt$32768$8$1$")
    assert rules.verify_password(PASSWORD, one) and rules.verify_password(PASSWORD, two)
    assert not rules.verify_password(PASSWORD + "x", one)
    assert not rules.verify_password(PASSWORD, None)
    assert not rules.verify_password(PASSWORD, "md5$whatever")


def test_redirect_uri_rules() -> None:
    assert rules.redirect_uri_problem("https://app.example.com/cb") is None
    assert rules.redirect_uri_problem("http://127.0.0.1/cb") is None
    assert rules.redirect_uri_problem("com.example.app:/oauth") is None
    assert rules.redirect_uri_problem("http://app.example.com/cb") is not None
    assert rules.redirect_uri_problem("https://app.example.com/cb#frag") is not None
    assert rules.redirect_uri_problem("javascript:alert(1)") is not None
    registered = ["http://127.0.0.1/cb", "https://app.example.com/cb"]
    assert rules.redirect_uri_matches("http://127.0.0.1:8123/cb", registered)
    assert rules.redirect_uri_matches("https://app.example.com/cb", registered)
    assert not rules.redirect_uri_matches("https://app.example.com:444/cb", registered)
    assert not rules.redirect_uri_matches("https://app.example.com/cb/", registered)
    assert not rules.redirect_uri_matches("http://127.0.0.1:8123/cb?x=1", registered)
    assert not rules.redirect_uri_matches("http://[::1]:8123/cb", registered)


def test_admin_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    r = runner.invoke(cli_app, ["admin", "bootstrap", "--db", db, "--json"])
    assert r.exit_code == 0, r.output
    import json

    info = json.loads(r.output)
    r = runner.invoke(
        cli_app,
        [
            "admin",
            "create-oauth-app",
            info["org_id"],
            "--name",
            "CLI app",
            "--redirect-uri",
            "http://127.0.0.1/cb",
            "--db",
            db,
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    created = json.loads(r.output)
    assert created["client_id"].startswith("cli_") and created["client_secret"].startswith("ocs_")
    r = runner.invoke(
        cli_app,
        [
            "admin",
            "create-oauth-app",
            info["org_id"],
            "--name",
            "x",
            "--redirect-uri",
            "http://evil.example.com/cb",
            "--db",
            db,
        ],
    )
    assert r.exit_code == 1 and "loopback" in r.output
    r = runner.invoke(
        cli_app,
        ["admin", "set-password", info["owner_user_id"], "--db", db],
        input=f"{PASSWORD}\n{PASSWORD}\n",
    )
    assert r.exit_code == 0, r.output
    assert PASSWORD not in r.output and "status active" in r.output


def _sign_in_as(browser: httpx.Client, token: str, email: str, password: str) -> httpx.Response:
    return browser.post(
        "/oauth/authorize/login",
        data={"form_token": token, "email": email, "password": password},
    )


def test_repeated_failed_sign_ins_slow_down_but_never_lock_out(service: Service, app: App) -> None:
    """Security item 4: guesses on one account wait 1, 2, 4 … s (capped at 60 s) after 5 free
    failures; the real user waits at most a minute, never the old 15-minute lock."""
    add_user(service, "ana@example.com")
    with httpx.Client(base_url=service.base_url) as browser:
        token = hidden_token(browser.get(authorize_query(app)).text)

        def sign_in(password: str) -> httpx.Response:
            return _sign_in_as(browser, token, "ana@example.com", password)

        for _ in range(5):
            assert sign_in("wrong-password-guess").status_code == 401
        for expected_wait in (1, 2, 4, 8):
            slowed = sign_in(PASSWORD)
            assert slowed.status_code == 429
            assert f"try again in {expected_wait} seconds" in slowed.text
            service.clock.advance(expected_wait)
            assert sign_in("wrong-password-guess").status_code == 401
        assert "try again in 16 seconds" in sign_in(PASSWORD).text
        service.clock.advance(16)
        for _ in range(5):  # the delay is capped at 60 s however many guesses come in
            assert sign_in("wrong-password-guess").status_code == 401
            service.clock.advance(60)
        assert sign_in(PASSWORD).status_code == 200


def test_password_spraying_from_one_address_is_slowed(service: Service, app: App) -> None:
    """Security item 4: one wrong password tried on many accounts from one address: after 20
    failures the address itself waits, whichever account it names next."""
    for i in range(22):
        add_user(service, f"user{i}@example.com")
    with httpx.Client(base_url=service.base_url) as browser:
        token = hidden_token(browser.get(authorize_query(app)).text)
        for i in range(20):
            r = _sign_in_as(browser, token, f"user{i}@example.com", "Spring2026!")
            assert r.status_code == 401
        r = _sign_in_as(browser, token, "user21@example.com", PASSWORD)
        assert r.status_code == 429 and "try again in 1 seconds" in r.text
        service.clock.advance(1)
        assert _sign_in_as(browser, token, "user21@example.com", PASSWORD).status_code == 200


def test_the_authorization_server_is_metered(service: Service, app: App) -> None:
    """Security item 4: /oauth/* carries rate-limit headers and counts against the address."""
    with httpx.Client(base_url=service.base_url) as browser:
        r = browser.get(authorize_query(app))
        assert r.status_code == 200
        first = int(r.headers["X-RateLimit-Remaining"])
        r = browser.post("/oauth/token", data={"grant_type": "refresh_token"})
        assert int(r.headers["X-RateLimit-Remaining"]) == first - 1


def test_revoking_a_users_tokens(service: Service, app: App) -> None:
    from bpservice.oauth import store

    user_id = add_user(service, "ana@example.com")
    tokens = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    with service.app.state.db.write() as session:
        assert store.revoke_user_tokens(session, user_id, "user_deactivated", service.clock()) == 1
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 401
    assert refresh(service, app, tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_limited_user_cannot_widen_property_access(service: Service, app: App) -> None:
    with service.client() as owner:
        seen = owner.post("/v1/properties", json=PROPERTY).json()["data"]["id"]
        other = owner.post("/v1/properties", json={**PROPERTY, "name": "Other"}).json()["data"][
            "id"
        ]
    pat = add_user(service, "pat@example.com", property_access=[seen])
    tokens = exchange(
        service, app, grant_code(service, app, "pat@example.com", scope="users:read users:write")
    ).json()
    with bearer(service, tokens["access_token"]) as api:
        for access in ("all", [seen, other]):
            r = api.patch(f"/v1/users/{pat}", json={"property_access": access})
            assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
        r = api.post(
            "/v1/users/invite",
            json={"email": "friend@example.com", "role": "viewer", "property_access": "all"},
        )
        assert r.status_code == 403
        # Granting within one's own access is fine.
        r = api.post(
            "/v1/users/invite",
            json={"email": "friend@example.com", "role": "viewer", "property_access": [seen]},
        )
        assert r.status_code == 201, r.text
    with service.client() as owner:
        assert owner.get(f"/v1/users/{pat}").json()["data"]["property_access"] == [seen]


def test_limited_user_sees_the_property_they_create(service: Service, app: App) -> None:
    with service.client() as owner:
        seen = owner.post("/v1/properties", json=PROPERTY).json()["data"]["id"]
    add_user(service, "pat@example.com", property_access=[seen])
    tokens = exchange(service, app, grant_code(service, app, "pat@example.com")).json()
    with bearer(service, tokens["access_token"]) as api:
        created = api.post("/v1/properties", json={**PROPERTY, "name": "Mine"}).json()["data"]
        assert api.get(f"/v1/properties/{created['id']}").status_code == 200
        assert api.get("/v1/properties").json()["meta"]["total"] == 2


def test_reactivation_does_not_revive_old_tokens(service: Service, app: App) -> None:
    user_id = add_user(service, "ana@example.com")
    tokens = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    with service.client() as owner:
        assert owner.post(f"/v1/users/{user_id}/deactivate").status_code == 200
        assert owner.post(f"/v1/users/{user_id}/reactivate").status_code == 200
    with bearer(service, tokens["access_token"]) as api:
        assert api.get("/v1/properties").status_code == 401
    assert refresh(service, app, tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_concurrent_exchanges_of_one_code_or_refresh_token_have_one_winner(
    service: Service, app: App
) -> None:
    """Issue 13: on PostgreSQL (the CI's second run) the code and refresh-token rows are locked,
    so of four simultaneous uses exactly one succeeds; 5 rounds each (bounded)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    add_user(service, "ana@example.com")

    def race(send: Callable[[], httpx.Response]) -> list[int]:
        barrier = threading.Barrier(4)

        def one(_: int) -> int:
            barrier.wait()
            return send().status_code

        with ThreadPoolExecutor(4) as pool:
            return sorted(pool.map(one, range(4)))

    for _ in range(5):
        grant = grant_code(service, app, "ana@example.com")
        assert race(lambda grant=grant: exchange(service, app, grant)) == [200, 400, 400, 400]
    tokens = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
    for _ in range(5):
        token = tokens["refresh_token"]
        codes = race(lambda token=token: refresh(service, app, token))
        assert codes == [200, 400, 400, 400]
        tokens = exchange(service, app, grant_code(service, app, "ana@example.com")).json()
