"""Credentials: API keys, OAuth 2.0 Authorization Code + PKCE, and where secrets are kept.

Secrets live in the OS keyring (service `bpsync`, one entry per profile and kind). With no usable
keyring (headless Linux, CI) the client says so and points to `BPSYNC_API_KEY` or the explicit,
insecure opt-in file store (`secret_store = "file"`, a 0600 JSON file); it never falls back silently.

Refresh tokens are single-use, so a refresh happens under a cross-process file lock: take the lock,
re-read the stored tokens, refresh only if still needed, store the new pair, release."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import os
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx
from filelock import FileLock

from bpsync.client.errors import (
    CredentialsError,
    KeyringUnavailableError,
    LoginRequiredError,
    OAuthError,
)

log = logging.getLogger("bpsync.auth")

KEYRING_SERVICE = "bpsync"
Environment = Literal["production", "sandbox"]
KEY_PREFIXES: dict[str, Environment] = {"svc_live_": "production", "svc_test_": "sandbox"}
# Refresh this long before the access token expires, so a request never leaves with a dying token.
REFRESH_MARGIN_SECONDS = 60.0


class Secret:
    """A string that does not show itself: `repr`, `str` and f-strings print a mask."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(
            self._value.encode(), other._value.encode()
        )

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled")


def key_environment(key: str) -> Environment | None:
    """`svc_live_` keys talk to production, `svc_test_` keys to the sandbox."""
    for prefix, env in KEY_PREFIXES.items():
        if key.startswith(prefix):
            return env
    return None


def fingerprint(value: str) -> str:
    """A short non-reversible name for a credential (rate-limit state, cache keys)."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def mask_key(key: str) -> str:
    """`svc_test_…a1b2`: enough to tell keys apart, too little to use one."""
    env_prefix = next((p for p in KEY_PREFIXES if key.startswith(p)), "")
    return f"{env_prefix}…{key[-4:]}" if len(key) > len(env_prefix) + 8 else "…"


# --- secret stores -------------------------------------------------------------------------------


class SecretStore(Protocol):
    kind: str
    insecure: bool

    def get(self, name: str) -> str | None: ...
    def set(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> bool: ...


def keyring_problem() -> str | None:
    """Why the OS keyring cannot be used, or None when it can."""
    import keyring
    from keyring.backends import chainer, fail

    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # a broken keyring configuration is reported, not raised
        return f"the keyring could not be loaded ({type(exc).__name__})"
    if isinstance(backend, fail.Keyring):
        return "no OS keyring backend is available"
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return "no OS keyring backend is available"
    if type(backend).__module__ == "keyring.backends.null":
        return "the keyring is disabled (null backend)"
    return None


UNAVAILABLE_HINT = (
    "Set BPSYNC_API_KEY in the environment, or opt in to the insecure file store with "
    "`bpsync login --api-key --secret-store file` (a 0600 file in the state dir)."
)


class KeyringStore:
    kind = "keyring"
    insecure = False

    def __init__(self, service: str = KEYRING_SERVICE) -> None:
        self.service = service

    def _check(self) -> None:
        problem = keyring_problem()
        if problem:
            raise KeyringUnavailableError(f"No usable OS keyring: {problem}. {UNAVAILABLE_HINT}")

    def get(self, name: str) -> str | None:
        import keyring

        self._check()
        return keyring.get_password(self.service, name)

    def set(self, name: str, value: str) -> None:
        import keyring

        self._check()
        keyring.set_password(self.service, name, value)

    def delete(self, name: str) -> bool:
        import keyring
        from keyring.errors import PasswordDeleteError

        self._check()
        try:
            keyring.delete_password(self.service, name)
        except PasswordDeleteError:
            return False
        return True


class FileSecretStore:
    """The explicit opt-in for machines without a keyring: a JSON file only its owner can read.
    Insecure (anyone with the account's files has the secrets); `bpsync status` says so."""

    kind = "file"
    insecure = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(str(path) + ".lock", timeout=10, thread_local=False)

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError:
            raise CredentialsError(f"The secret file {self.path} is damaged.") from None
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write(self, data: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def get(self, name: str) -> str | None:
        with self._lock:
            return self._read().get(name)

    def set(self, name: str, value: str) -> None:
        with self._lock:
            data = self._read()
            data[name] = value
            self._write(data)

    def delete(self, name: str) -> bool:
        with self._lock:
            data = self._read()
            if name not in data:
                return False
            del data[name]
            self._write(data)
            return True


# --- credentials used by the client --------------------------------------------------------------


class Credentials(Protocol):
    kind: str  # the rate-limit class of the principal: "key" or "user"
    identity: str  # non-secret name of the credential (a fingerprint)
    refreshable: bool

    @property
    def environment(self) -> Environment | None: ...

    async def authorization(self) -> str: ...

    async def invalidate(self) -> None: ...


class ApiKeyAuth:
    """`Authorization: Bearer svc_…` for server-to-server use on behalf of the organisation."""

    kind = "key"
    refreshable = False

    def __init__(self, key: str | Secret) -> None:
        secret = key if isinstance(key, Secret) else Secret(key.strip())
        if not secret:
            raise CredentialsError("The API key is empty.")
        self._key = secret
        self.identity = "key-" + fingerprint(secret.reveal())

    @property
    def environment(self) -> Environment | None:
        return key_environment(self._key.reveal())

    @property
    def masked(self) -> str:
        return mask_key(self._key.reveal())

    async def authorization(self) -> str:
        return f"Bearer {self._key.reveal()}"

    async def invalidate(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"ApiKeyAuth({self.masked})"


# --- OAuth 2.0 -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OAuthTokens:
    access_token: Secret
    refresh_token: Secret | None
    expires_at: float  # local Unix time
    scope: str = ""
    token_type: str = "Bearer"

    @classmethod
    def from_response(cls, body: dict[str, Any], now: float) -> OAuthTokens:
        try:
            access = str(body["access_token"])
            expires_in = float(body.get("expires_in") or 3600)
        except (KeyError, TypeError, ValueError):
            raise OAuthError("invalid_response", "the token response has no access_token") from None
        refresh = body.get("refresh_token")
        return cls(
            access_token=Secret(access),
            refresh_token=Secret(str(refresh)) if refresh else None,
            expires_at=now + expires_in,
            scope=str(body.get("scope") or ""),
            token_type=str(body.get("token_type") or "Bearer"),
        )

    def needs_refresh(self, now: float, margin: float = REFRESH_MARGIN_SECONDS) -> bool:
        return now >= self.expires_at - margin

    def dumps(self) -> str:
        return json.dumps(
            {
                "access_token": self.access_token.reveal(),
                "refresh_token": self.refresh_token.reveal() if self.refresh_token else None,
                "expires_at": self.expires_at,
                "scope": self.scope,
                "token_type": self.token_type,
            }
        )

    @classmethod
    def loads(cls, text: str) -> OAuthTokens:
        data = json.loads(text)
        return cls(
            access_token=Secret(data["access_token"]),
            refresh_token=Secret(data["refresh_token"]) if data.get("refresh_token") else None,
            expires_at=float(data["expires_at"]),
            scope=data.get("scope", ""),
            token_type=data.get("token_type", "Bearer"),
        )

    def __repr__(self) -> str:
        return f"OAuthTokens(expires_at={self.expires_at:.0f}, scope={self.scope!r})"


def make_pkce() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge) per RFC 7636: 43+ unreserved characters, then
    BASE64URL(SHA256(verifier)) without padding."""
    verifier = secrets.token_urlsafe(64)[:96]
    return verifier, pkce_challenge(verifier)


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(
    auth_url: str,
    *,
    client_id: str,
    redirect_uri: str,
    scopes: list[str],
    state: str,
    code_challenge: str,
) -> str:
    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(scopes),
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
        },
        quote_via=urllib.parse.quote,
    )
    return f"{auth_url.rstrip('/')}/authorize?{query}"


def parse_redirect(url: str, expected_state: str) -> str:
    """The authorization code from the redirect URL, after checking `state` (CSRF) and errors."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url.strip()).query)
    state = (query.get("state") or [""])[0]
    if not secrets.compare_digest(state.encode(), expected_state.encode()):
        raise OAuthError("state_mismatch", "the redirect does not belong to this login attempt")
    if "error" in query:
        error = query["error"][0]
        raise OAuthError(error, (query.get("error_description") or [""])[0])
    code = (query.get("code") or [""])[0]
    if not code:
        raise OAuthError("invalid_request", "the redirect carries no authorization code")
    return code


def _oauth_error(response: httpx.Response) -> OAuthError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):  # the service's own error shape
        return OAuthError(
            str(error.get("code", "invalid_request")),
            str(error.get("message", "")),
            response.status_code,
        )
    if isinstance(error, str):  # RFC 6749 §5.2
        return OAuthError(error, str(body.get("error_description", "")), response.status_code)
    return OAuthError(f"http_{response.status_code}", "token endpoint error", response.status_code)


def token_request(
    token_url: str, body: dict[str, str], *, timeout: float = 30.0, transport: Any = None
) -> dict[str, Any]:
    """POST the token endpoint with a JSON body (spec); synchronous because it runs under a
    cross-process lock in a worker thread. Never logs the body."""
    try:
        with httpx.Client(timeout=timeout, transport=transport) as http:
            response = http.post(token_url, json=body, headers={"Accept": "application/json"})
    except httpx.TimeoutException:
        raise OAuthError("timeout", "the authorization server did not answer in time") from None
    except httpx.TransportError as exc:
        raise OAuthError("connection_error", type(exc).__name__) from None
    if response.status_code != 200:
        raise _oauth_error(response)
    try:
        data = response.json()
    except ValueError:
        raise OAuthError("invalid_response", "the token response is not JSON") from None
    if not isinstance(data, dict):
        raise OAuthError("invalid_response", "the token response is not an object")
    return data


class TokenStore:
    """OAuth tokens of one profile in a secret store, guarded by a cross-process file lock."""

    def __init__(self, store: SecretStore, profile: str, lock_path: Path) -> None:
        self.store = store
        self.name = f"{profile}:oauth"
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.lock = FileLock(str(lock_path), timeout=60, thread_local=False)

    def load(self) -> OAuthTokens | None:
        text = self.store.get(self.name)
        if not text:
            return None
        try:
            return OAuthTokens.loads(text)
        except (ValueError, KeyError, TypeError):
            log.warning("stored OAuth tokens are unreadable; a new login is needed")
            return None

    def save(self, tokens: OAuthTokens) -> None:
        self.store.set(self.name, tokens.dumps())

    def clear(self) -> bool:
        return self.store.delete(self.name)


@dataclass(frozen=True)
class OAuthApp:
    """What the client needs to talk to the authorization server."""

    auth_url: str
    client_id: str
    client_secret: Secret | None = None

    @property
    def token_url(self) -> str:
        return f"{self.auth_url.rstrip('/')}/token"

    def _with_secret(self, body: dict[str, str]) -> dict[str, str]:
        if self.client_secret:
            body["client_secret"] = self.client_secret.reveal()
        return body

    def exchange_body(self, code: str, redirect_uri: str, verifier: str) -> dict[str, str]:
        return self._with_secret(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "client_id": self.client_id,
                "code_verifier": verifier,
            }
        )

    def refresh_body(self, refresh_token: Secret) -> dict[str, str]:
        return self._with_secret(
            {
                "grant_type": "refresh_token",
                "refresh_token": refresh_token.reveal(),
                "client_id": self.client_id,
            }
        )


class OAuthAuth:
    """Bearer access tokens for a user, refreshed shortly before expiry under a file lock."""

    kind = "user"
    refreshable = True

    def __init__(
        self,
        app: OAuthApp,
        tokens: TokenStore,
        *,
        identity: str,
        clock: Callable[[], float] = time.time,
        transport: Any = None,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.identity = identity
        self.clock = clock
        self.transport = transport
        self._current: OAuthTokens | None = None
        self._lock = asyncio.Lock()
        self.refreshes = 0  # how many refresh grants this object sent (tests, status)

    @property
    def environment(self) -> Environment | None:
        return None  # an OAuth user's environment is decided by the service, not by the token

    async def authorization(self) -> str:
        current = self._current
        if current is None or current.needs_refresh(self.clock()):
            async with self._lock:
                current = self._current
                if current is None or current.needs_refresh(self.clock()):
                    current = await asyncio.to_thread(self._load_or_refresh, False)
                    self._current = current
        return f"Bearer {current.access_token.reveal()}"

    async def invalidate(self) -> None:
        """The service refused the access token (revoked, or expired early): refresh now."""
        async with self._lock:
            used = self._current
            self._current = await asyncio.to_thread(self._load_or_refresh, True, used)

    def _load_or_refresh(self, force: bool, used: OAuthTokens | None = None) -> OAuthTokens:
        with self.tokens.lock:
            stored = self.tokens.load()
            if stored is None:
                raise LoginRequiredError("Not logged in: run `bpsync login`.")
            # Another process may have refreshed already: its pair is the one to use.
            stale = force and (used is None or stored.access_token == used.access_token)
            if not stale and not stored.needs_refresh(self.clock()):
                return stored
            return self._refresh_locked(stored)

    def _refresh_locked(self, stored: OAuthTokens) -> OAuthTokens:
        if stored.refresh_token is None:
            raise LoginRequiredError("The session has expired: run `bpsync login` again.")
        try:
            self.refreshes += 1
            body = token_request(
                self.app.token_url,
                self.app.refresh_body(stored.refresh_token),
                transport=self.transport,
            )
        except OAuthError as exc:
            if exc.error != "invalid_grant":
                raise
            # Re-read once: a process that did not take the lock may have stored a new pair.
            again = self.tokens.load()
            if (
                again is not None
                and again.refresh_token != stored.refresh_token
                and not again.needs_refresh(self.clock())
            ):
                return again
            raise LoginRequiredError(
                "The saved login is no longer valid (refresh refused): run `bpsync login` again."
            ) from None
        tokens = OAuthTokens.from_response(body, self.clock())
        if tokens.refresh_token is None:  # a server that does not rotate keeps the old one valid
            tokens = OAuthTokens(
                tokens.access_token,
                stored.refresh_token,
                tokens.expires_at,
                tokens.scope,
                tokens.token_type,
            )
        self.tokens.save(tokens)  # stored before the lock is released
        log.info("OAuth access token refreshed")
        return tokens

    def status(self) -> OAuthTokens | None:
        return self.tokens.load()

    def __repr__(self) -> str:
        return f"OAuthAuth(client_id={self.app.client_id!r})"


# --- interactive login ---------------------------------------------------------------------------


class LoopbackReceiver:
    """A one-shot HTTP listener on 127.0.0.1 (port chosen by the OS) that catches the redirect
    (RFC 8252 §7.3). Only the path and query of the first request to `/callback` are kept."""

    def __init__(self, host: str = "127.0.0.1", path: str = "/callback") -> None:
        self.host = host
        self.path = path
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._result: asyncio.Future[str] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    async def __aenter__(self) -> LoopbackReceiver:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line.decode("latin-1").split()
            target = parts[1] if len(parts) >= 2 else "/"
            if parts[:1] == ["GET"] and urllib.parse.urlsplit(target).path == self.path:
                body = b"<html><body><p>bpsync: login received. You can close this window.</p>"
                status = b"200 OK"
                if self._result is not None and not self._result.done():
                    self._result.set_result(target)
            else:
                body, status = b"Not found", b"404 Not Found"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                b"Content-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    async def wait(self, timeout: float) -> str:
        """The redirect URL (as received) once the browser arrives."""
        assert self._result is not None
        target = await asyncio.wait_for(asyncio.shield(self._result), timeout)
        return f"http://{self.host}:{self.port}{target}"


async def login_with_browser(
    app: OAuthApp,
    scopes: list[str],
    *,
    open_url: Callable[[str], Any] | None,
    read_pasted: Callable[[], str] | None = None,
    timeout: float = 300.0,
    clock: Callable[[], float] = time.time,
    transport: Any = None,
) -> OAuthTokens:
    """Run Authorization Code + PKCE: start the loopback listener, send the user to the
    authorization page (`open_url`, e.g. `webbrowser.open`), and take the code from the redirect;
    with `read_pasted` (no browser, SSH) the user pastes the redirect URL instead."""
    verifier, challenge = make_pkce()
    state = secrets.token_urlsafe(24)
    async with LoopbackReceiver() as receiver:
        url = authorization_url(
            app.auth_url,
            client_id=app.client_id,
            redirect_uri=receiver.redirect_uri,
            scopes=scopes,
            state=state,
            code_challenge=challenge,
        )
        if open_url is not None:
            result = open_url(url)
            if asyncio.iscoroutine(result):
                await result
        if read_pasted is not None:
            redirect = await asyncio.to_thread(read_pasted)
        else:
            redirect = await receiver.wait(timeout)
        redirect_uri = receiver.redirect_uri
    code = parse_redirect(redirect, state)
    body = await asyncio.to_thread(
        token_request,
        app.token_url,
        app.exchange_body(code, redirect_uri, verifier),
        transport=transport,
    )
    return OAuthTokens.from_response(body, clock())
