"""OAuth end to end with the service's own authorization server: the test plays the browser (sign
in, consent, follow the redirect to the client's loopback listener); tokens live in the keyring;
refresh happens under a file lock, and two processes refreshing at once spend one refresh token."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import func, select

from bpservice import admin
from bpservice.db.oauth_models import AccessToken
from bpsync.client import AsyncServiceClient, LoginRequiredError, OAuthError
from bpsync.client.auth import (
    FileSecretStore,
    KeyringStore,
    OAuthApp,
    OAuthAuth,
    OAuthTokens,
    Secret,
    TokenStore,
    login_with_browser,
)
from tests.conftest import Service

pytestmark = pytest.mark.anyio

PASSWORD = "correct horse battery staple"
SCOPES = ["properties:read", "properties:write"]


def setup_oauth(service: Service, email: str = "ana@example.com") -> OAuthApp:
    with service.app.state.db.write() as session:
        new = admin.create_oauth_app(
            session,
            service.org_id,
            name="bpsync",
            redirect_uris=["http://127.0.0.1/callback"],
            environment="test",
            now=service.clock(),
        )
        user = admin.create_user(session, service.org_id, email, role="admin", now=service.clock())
        admin.set_password(session, user.id, PASSWORD, now=service.clock())
    return OAuthApp(f"{service.base_url}/oauth", new.client_id, Secret(new.client_secret))


def _form_token(html: str) -> str:
    match = re.search(r'name=form_token value="([^"]+)"', html)
    assert match, html
    return match.group(1)


def browser(authorize_url: str, email: str = "ana@example.com", follow: bool = True) -> str:
    """What the person does in the browser; returns the redirect URL to the client."""
    with httpx.Client(follow_redirects=False, timeout=30) as web:
        page = web.get(authorize_url)
        assert page.status_code == 200, page.text
        origin = f"{urlsplit(authorize_url).scheme}://{urlsplit(authorize_url).netloc}"
        consent = web.post(
            f"{origin}/oauth/authorize/login",
            data={"form_token": _form_token(page.text), "email": email, "password": PASSWORD},
        )
        assert consent.status_code == 200, consent.text
        done = web.post(
            f"{origin}/oauth/authorize/consent",
            data={"form_token": _form_token(consent.text), "decision": "allow"},
        )
        assert done.status_code == 303, done.text
        location = done.headers["location"]
        if follow:  # the browser lands on the client's loopback listener
            landed = web.get(location)
            assert landed.status_code == 200 and "close this window" in landed.text
        return location


def open_in_thread(seen: list[str]):  # type: ignore[no-untyped-def]
    """A stand-in for webbrowser.open: the browser is another process, here another thread."""

    def open_url(url: str) -> bool:
        seen.append(url)
        threading.Thread(target=browser, args=(url,), daemon=True).start()
        return True

    return open_url


def access_token_count(service: Service) -> int:
    with service.app.state.db.read() as session:
        return session.scalar(select(func.count()).select_from(AccessToken)) or 0


async def test_login_with_browser_and_use_the_api(service: Service, tmp_path: Path) -> None:
    app = setup_oauth(service)
    seen: list[str] = []
    tokens = await login_with_browser(app, SCOPES, open_url=open_in_thread(seen), timeout=30)
    query = parse_qs(urlsplit(seen[0]).query)
    assert query["code_challenge_method"] == ["S256"] and query["response_type"] == ["code"]
    assert query["redirect_uri"][0].startswith("http://127.0.0.1:")
    assert query["scope"] == ["properties:read properties:write"]
    assert tokens.scope == "properties:read properties:write"
    assert tokens.expires_at == pytest.approx(time.time() + 3600, abs=30)
    assert "access" not in repr(tokens) or "********" in repr(tokens.access_token)

    store = TokenStore(KeyringStore(), "default", tmp_path / "oauth.lock")
    store.save(tokens)
    auth = OAuthAuth(app, store, identity="user-default")
    async with AsyncServiceClient(service.base_url, auth) as client:
        created = await client.properties.create(
            name="Mine", address={"street": "s", "city": "c", "country": "GB"}, type="office"
        )
        assert (await client.properties.get(created.id)).name == "Mine"
        assert client.base.last_rate_limit["x-ratelimit-bucket"] == "user"
    assert auth.refreshes == 0


async def test_no_browser_paste_and_state_check(service: Service) -> None:
    app = setup_oauth(service)
    printed: list[str] = []
    tokens = await login_with_browser(
        app,
        SCOPES,
        open_url=printed.append,  # --no-browser: the URL is printed, nothing is opened
        read_pasted=lambda: browser(printed[0], follow=False),
    )
    assert tokens.refresh_token is not None

    # A redirect from another login attempt (different state) is refused.
    other: list[str] = []

    def forged() -> str:
        url = browser(other[0], follow=False)
        return re.sub(r"state=[^&]+", "state=forged", url)

    with pytest.raises(OAuthError) as info:
        await login_with_browser(app, SCOPES, open_url=other.append, read_pasted=forged)
    assert info.value.error == "state_mismatch"


async def test_refresh_before_expiry_and_invalid_grant(service: Service, tmp_path: Path) -> None:
    app = setup_oauth(service)
    printed: list[str] = []
    tokens = await login_with_browser(
        app, SCOPES, open_url=printed.append, read_pasted=lambda: browser(printed[0], follow=False)
    )
    store = TokenStore(KeyringStore(), "default", tmp_path / "oauth.lock")
    store.save(tokens)
    now = [time.time()]
    auth = OAuthAuth(app, store, identity="user-default", clock=lambda: now[0])
    async with AsyncServiceClient(service.base_url, auth, clock=lambda: now[0]) as client:
        await client.properties.list()
        assert auth.refreshes == 0
        now[0] = tokens.expires_at - 30  # within the refresh margin
        await client.properties.list()
        assert auth.refreshes == 1
        stored = store.load()
        assert stored is not None and stored.refresh_token != tokens.refresh_token

        # The stored refresh token is refused (already spent): re-read once, then ask for login.
        store.save(OAuthTokens(stored.access_token, tokens.refresh_token, now[0] - 1, stored.scope))
        auth._current = None
        with pytest.raises(LoginRequiredError) as info:
            await client.properties.list()
        assert "bpsync login" in str(info.value)
    assert access_token_count(service) == 2


_REFRESHER = """
import asyncio, sys, time
from pathlib import Path
from bpsync.client import AsyncServiceClient
from bpsync.client.auth import FileSecretStore, OAuthApp, OAuthAuth, Secret, TokenStore

base_url, client_id, client_secret, state = sys.argv[1:5]
app = OAuthApp(base_url + "/oauth", client_id, Secret(client_secret))
store = TokenStore(FileSecretStore(Path(state) / "secrets.json"), "default", Path(state) / "o.lock")
clock = lambda: time.time() + 4000  # the stored access token looks expired
auth = OAuthAuth(app, store, identity="user-default", clock=clock)
go = Path(state) / "go"
(Path(state) / f"ready-{sys.argv[5]}").touch()
while not go.exists():
    time.sleep(0.005)

async def main():
    async with AsyncServiceClient(base_url, auth, limiter=False) as client:
        page = await client.properties.list()
        print(page.meta.total, auth.refreshes)

asyncio.run(main())
"""


def test_two_processes_refresh_once(service: Service, tmp_path: Path) -> None:
    """Both processes see an expired access token at the same moment. Under the file lock, one
    refreshes and stores the new pair; the other re-reads it and does not refresh. Had both sent
    the same refresh token, the server would have revoked the whole family and both would fail."""
    app = setup_oauth(service)
    printed: list[str] = []
    import asyncio

    tokens = asyncio.run(
        login_with_browser(
            app,
            SCOPES,
            open_url=printed.append,
            read_pasted=lambda: browser(printed[0], follow=False),
        )
    )
    store = FileSecretStore(tmp_path / "secrets.json")
    TokenStore(store, "default", tmp_path / "o.lock").save(tokens)
    assert (tmp_path / "secrets.json").stat().st_mode & 0o777 == 0o600
    assert app.client_secret is not None
    args = [service.base_url, app.client_id, app.client_secret.reveal(), str(tmp_path)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _REFRESHER, *args, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    deadline = time.monotonic() + 30
    while not all((tmp_path / f"ready-{n}").exists() for n in range(2)):  # both at the gate
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.005)
    (tmp_path / "go").touch()
    outputs = [p.communicate(timeout=60) for p in procs]
    for (_out, err), proc in zip(outputs, procs, strict=True):
        assert proc.returncode == 0, err
    refreshes = sorted(int(out.split()[1]) for out, _ in outputs)
    assert refreshes == [0, 1]
    assert access_token_count(service) == 2  # the login's token and exactly one refresh
    saved = json.loads((tmp_path / "secrets.json").read_text())["default:oauth"]
    assert json.loads(saved)["refresh_token"] != tokens.refresh_token.reveal()  # type: ignore[union-attr]


async def test_a_refused_access_token_is_refreshed_once(service: Service, tmp_path: Path) -> None:
    """The service's clock runs past the token's hour while the client's has not: the API answers
    401, the client refreshes and repeats the request."""
    app = setup_oauth(service)
    printed: list[str] = []
    tokens = await login_with_browser(
        app, SCOPES, open_url=printed.append, read_pasted=lambda: browser(printed[0], follow=False)
    )
    store = TokenStore(KeyringStore(), "default", tmp_path / "oauth.lock")
    store.save(tokens)
    auth = OAuthAuth(app, store, identity="user-default")
    async with AsyncServiceClient(service.base_url, auth) as client:
        await client.properties.list()
        service.clock.advance(3601)
        page = await client.properties.list()
    assert page.meta.total == 0 and auth.refreshes == 1
    assert access_token_count(service) == 2


def test_pkce_matches_rfc_7636_and_redirects_are_checked() -> None:
    from bpsync.client.auth import make_pkce, parse_redirect, pkce_challenge

    # RFC 7636 Appendix B.
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert pkce_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    made, challenge = make_pkce()
    assert 43 <= len(made) <= 128 and challenge == pkce_challenge(made)
    assert make_pkce()[0] != made

    base = "http://127.0.0.1:5000/callback"
    assert parse_redirect(f"{base}?code=abc&state=s1", "s1") == "abc"
    with pytest.raises(OAuthError) as denied:
        parse_redirect(f"{base}?error=access_denied&error_description=no&state=s1", "s1")
    assert denied.value.error == "access_denied"
    with pytest.raises(OAuthError) as forged:
        parse_redirect(f"{base}?error=access_denied&state=other", "s1")
    assert forged.value.error == "state_mismatch"  # an unmatched error is not trusted either
    with pytest.raises(OAuthError):
        parse_redirect(f"{base}?state=s1", "s1")
