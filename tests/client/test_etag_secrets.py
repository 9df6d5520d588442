"""The ETag cache against the real service, and secrets kept out of logs, errors, reprs and output."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from bpsync.client import AsyncServiceClient, AuthenticationError, LoginRequiredError
from bpsync.client.auth import (
    ApiKeyAuth,
    KeyringStore,
    OAuthAuth,
    OAuthTokens,
    Secret,
    TokenStore,
    login_with_browser,
)
from bpsync.client.etag import ETagCache
from tests.client.test_oauth import SCOPES, browser, setup_oauth
from tests.conftest import Service

ADDRESS = {"street": "1 Way", "city": "Leeds", "country": "GB"}


class Recorder(httpx.AsyncBaseTransport):
    """Real HTTP, remembering each response's status and the request's If-None-Match."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.seen: list[tuple[str, int, str | None, str | None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.seen.append(
            (
                request.method,
                response.status_code,
                request.headers.get("if-none-match"),
                response.headers.get("x-ratelimit-remaining"),
            )
        )
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.anyio
async def test_etag_revalidation_serves_the_cached_body(service: Service) -> None:
    recorder = Recorder()
    async with AsyncServiceClient(service.base_url, service.test_key, transport=recorder) as c:
        prop = await c.properties.create(name="Cached", address=ADDRESS, type="office")
        first = await c.properties.get(prop.id)
        second = await c.properties.get(prop.id)
        assert second == first and c.base.etags.hits == 1
        (_, s1, inm1, left1), (_, s2, inm2, left2) = recorder.seen[1:3]
        assert (s1, inm1) == (200, None)
        assert s2 == 304 and inm2 is not None
        assert left2 == left1  # a 304 does not count against the limit
        await c.properties.update(prop.id, name="Changed")
        third = await c.properties.get(prop.id)
        assert third.name == "Changed" and recorder.seen[-1][1] == 200
        # Another credential never sees this one's cache entries.
        assert c.base.etags.get("key-other", f"{service.base_url}/v1/properties/{prop.id}") is None


def test_etag_cache_is_bounded() -> None:
    cache = ETagCache(max_entries=2, max_body_bytes=10)
    cache.store("k", "/a", '"1"', b"a", "application/json")
    cache.store("k", "/b", '"2"', b"b", "application/json")
    assert cache.get("k", "/a") is not None  # /a is now the most recent
    cache.store("k", "/c", '"3"', b"c", "application/json")
    assert cache.get("k", "/b") is None and len(cache) == 2
    cache.store("k", "/big", '"4"', b"x" * 11, "application/json")
    assert cache.get("k", "/big") is None
    cache.store("k", "/a", None, b"a", "application/json")  # no ETag: forget the old entry
    assert cache.get("k", "/a") is None


def test_secret_types_never_show_themselves() -> None:
    secret = Secret("svc_test_abcdefghijklmnopqrstuvwxyz123456")
    assert "abcdef" not in repr(secret) + str(secret) + f"{secret}"
    auth = ApiKeyAuth(secret)
    assert "abcdef" not in repr(auth) and auth.masked == "svc_test_…3456"
    tokens = OAuthTokens(Secret("access-xyz"), Secret("refresh-xyz"), time.time() + 60, "a b")
    assert "xyz" not in repr(tokens)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)


@pytest.mark.anyio
async def test_no_secret_in_logs_errors_or_output(
    service: Service, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets: list[str] = [service.test_key, service.live_key]
    bad_key = "svc_test_" + "Q" * 32
    secrets.append(bad_key)

    # API key: requests, a refused key, a refused body.
    async with AsyncServiceClient(service.base_url, service.test_key) as c:
        await c.properties.create(name="P", address=ADDRESS, type="office")
        assert service.test_key[-10:] not in repr(c)
    async with AsyncServiceClient(service.base_url, bad_key) as c:
        with pytest.raises(AuthenticationError) as refused:
            await c.properties.list()
    errors_text = str(refused.value) + repr(refused.value) + str(refused.value.headers)

    # OAuth: login, refresh, a refused refresh.
    oauth_app = setup_oauth(service)
    assert oauth_app.client_secret is not None
    secrets.append(oauth_app.client_secret.reveal())
    printed: list[str] = []
    tokens = await login_with_browser(
        oauth_app,
        SCOPES,
        open_url=printed.append,
        read_pasted=lambda: browser(printed[0], follow=False),
    )
    assert tokens.refresh_token is not None
    secrets += [tokens.access_token.reveal(), tokens.refresh_token.reveal()]
    store = TokenStore(KeyringStore(), "default", tmp_path / "o.lock")
    store.save(tokens)
    now = [tokens.expires_at + 1]
    auth = OAuthAuth(oauth_app, store, identity="user-default", clock=lambda: now[0])
    async with AsyncServiceClient(service.base_url, auth, clock=lambda: now[0]) as c:
        await c.properties.list()
        fresh = store.load()
        assert fresh is not None and fresh.refresh_token is not None
        secrets += [fresh.access_token.reveal(), fresh.refresh_token.reveal()]
        store.save(OAuthTokens(fresh.access_token, tokens.refresh_token, 0, fresh.scope))
        auth._current = None
        with pytest.raises(LoginRequiredError) as again:
            await c.properties.list()
    errors_text += str(again.value) + repr(again.value) + repr(auth) + repr(store.load())

    assert len(caplog.records) > 10  # the client did log
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    for secret in secrets:
        assert secret not in logged, "a secret reached the logs"
        assert secret not in errors_text, "a secret reached an error"


def test_no_secret_in_cli_output_or_logs(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cli = CliRunner()
    result = cli.invoke(
        app,
        ["-v", "login", "--api-key", "--base-url", service.base_url],
        input=service.test_key + "\n",
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    status = cli.invoke(app, ["-v", "status"], catch_exceptions=False)
    listing = cli.invoke(app, ["-v", "properties", "list", "--json"], catch_exceptions=False)
    refused = cli.invoke(
        app, ["-v", "properties", "list"], env={"BPSYNC_API_KEY": "svc_test_" + "Q" * 32}
    )
    assert refused.exit_code == 3
    output = result.output + status.output + listing.output + refused.output
    assert status.exit_code == 0 and listing.exit_code == 0
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert "GET /v1/properties" in logged
    for secret in (service.test_key, "Q" * 32):
        assert secret not in output and secret not in logged
