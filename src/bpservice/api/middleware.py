"""The HTTP edge, in one pure ASGI middleware: body-size guard, caller identification, rate limits
(with X-RateLimit-* on every response), and ETags with If-None-Match → 304 (a 304 is not counted)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpservice.auth import Principal, resolve_bearer
from bpservice.ratelimit import (
    BucketKey,
    BucketState,
    LimiterUnavailable,
    RateLimiter,
    rate_headers,
    tightest,
)

_BULK_ROUTES = (
    re.compile(r"^/v1/buildings/[^/]+/meters/[^/]+/readings/batch$"),
    re.compile(r"^/v1/readings/upload$"),
)
_REPORT_ROUTES = (re.compile(r"^/v1/reports$"),)
# Paths outside the API that are not rate limited (health, docs). The authorization server
# (/oauth/*) is metered per client address like any unauthenticated caller.
_UNMETERED = re.compile(r"^/(healthz|docs|redoc|openapi\.json)")


def bucket_keys(
    principal: Principal | None, method: str, path: str, client: str
) -> list[BucketKey]:
    if principal is None:
        keys = [BucketKey("anonymous", client)]
    elif principal.is_user:
        keys = [BucketKey("user", principal.identity)]
    else:
        keys = [BucketKey("key", principal.identity)]
    identity = keys[0].identity
    if method == "POST" and any(r.match(path) for r in _BULK_ROUTES):
        keys.append(BucketKey("bulk", identity))
    if method == "POST" and any(r.match(path) for r in _REPORT_ROUTES):
        keys.append(BucketKey("reports", identity))
    return keys


def etag_of(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def etag_matches(if_none_match: str, etag: str) -> bool:
    if if_none_match.strip() == "*":
        return True
    wanted = etag.removeprefix("W/")
    return any(t.strip().removeprefix("W/") == wanted for t in if_none_match.split(","))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def _encode(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode(), v.encode()) for k, v in headers.items()]


async def _off_loop(method: Any, *args: Any) -> Any:
    """Call a limiter method; a Redis-backed one does network I/O, so off the event loop."""
    if getattr(method.__self__, "remote", False):
        return await anyio.to_thread.run_sync(method, *args)
    return method(*args)


class EdgeMiddleware:
    def __init__(self, app: ASGIApp, *, state: Any) -> None:
        self.app = app
        # The app's state: settings, database, limiter and token resolvers.
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        method: str = scope["method"]
        limiter: RateLimiter = self.state.limiter
        client = (scope.get("client") or ("unknown", 0))[0]

        principal = await self._identify(scope)
        scope.setdefault("state", {})["principal"] = principal
        metered = not _UNMETERED.match(path)
        keys = bucket_keys(principal, method, path, client)

        if "\x00" in path:
            # No id contains NUL, and PostgreSQL cannot even compare one: answer as SQLite does.
            await self._send_error(
                send,
                404,
                "not_found",
                "No resource has this path.",
                await _off_loop(limiter.states, keys),
            )
            return

        too_large = self._body_too_large(scope)
        if too_large is not None:
            states = await _off_loop(limiter.states, keys)
            await self._send_error(send, 413, "payload_too_large", too_large, states)
            return

        try:
            granted, states = await _off_loop(limiter.acquire, keys) if metered else (True, [])
        except LimiterUnavailable:
            # Fail closed: without the shared counts no limit can be enforced.
            await self._send_error(
                send,
                503,
                "service_unavailable",
                "The service cannot check rate limits right now; retry shortly.",
                [],
            )
            return
        if_none_match = _header(scope, b"if-none-match")
        # `*` matches any current representation: answering it means running the handler, so it
        # is counted like any GET. Only a specific tag that matches is free (a real cache hit).
        star = if_none_match is not None and if_none_match.strip() == "*"
        conditional = method in ("GET", "HEAD") and if_none_match is not None and not star
        if not granted and not conditional:
            await self._send_rate_limited(send, states)
            return

        receive = self._limit_body(receive)
        if method != "GET" or path.startswith("/oauth/"):
            # The authorization server's pages set cookies: never answered with a 304.
            await self._pass_through(scope, receive, send, states)
            return

        status, headers, body = await self._capture(scope, receive)
        not_modified = False
        if status == 200:
            etag = etag_of(body)
            headers = [(k, v) for k, v in headers if k != b"etag"] + [(b"etag", etag.encode())]
            not_modified = if_none_match is not None and etag_matches(if_none_match, etag)
        if not_modified:
            if granted and metered and not star:
                window = states[0].window_start if states else None
                states = await _off_loop(limiter.release, keys, window)
            keep = {b"etag", b"cache-control", b"vary"}
            headers = [(k, v) for k, v in headers if k in keep]
            await self._send(send, 304, headers, b"", states)
            return
        if not granted:
            await self._send_rate_limited(send, states)
            return
        await self._send(send, status, headers, body, states)

    async def _identify(self, scope: Scope) -> Principal | None:
        auth = _header(scope, b"authorization")
        if not auth:
            return None
        scheme, _, token = auth.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > 512:
            return None
        db = self.state.db
        now = self.state.settings.clock()
        resolvers = self.state.token_resolvers

        def lookup() -> Principal | None:
            with db.read() as session:
                return resolve_bearer(session, token, now, resolvers)

        return await anyio.to_thread.run_sync(lookup)

    def _body_too_large(self, scope: Scope) -> str | None:
        length = _header(scope, b"content-length")
        limit = self.state.settings.max_body_bytes
        if length is not None and length.isdigit() and int(length) > limit:
            return f"The request body is larger than {limit} bytes."
        return None

    def _limit_body(self, receive: Receive) -> Receive:
        """Refuse bodies that grow past the limit while streaming (no Content-Length given)."""
        limit = self.state.settings.max_body_bytes
        seen = 0

        async def guarded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    from starlette.exceptions import HTTPException

                    raise HTTPException(413, f"The request body is larger than {limit} bytes.")
            return message

        return guarded

    async def _capture(self, scope: Scope, receive: Receive) -> tuple[int, list, bytes]:
        status = 500
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        return status, headers, b"".join(chunks)

    async def _pass_through(
        self, scope: Scope, receive: Receive, send: Send, states: list[BucketState]
    ) -> None:
        extra = _encode(rate_headers(tightest(states))) if states else []

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        await self.app(scope, receive, with_headers)

    async def _send(
        self, send: Send, status: int, headers: list, body: bytes, states: list[BucketState]
    ) -> None:
        headers = [(k, v) for k, v in headers if k != b"content-length"]
        if status != 304:
            headers.append((b"content-length", str(len(body)).encode()))
        if states:
            headers += _encode(rate_headers(tightest(states)))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _send_error(
        self,
        send: Send,
        status: int,
        code: str,
        message: str,
        states: list[BucketState],
        **extra: Any,
    ) -> None:
        body = json.dumps({"error": {"code": code, "message": message, **extra}}).encode()
        headers = [(b"content-type", b"application/json")]
        await self._send(send, status, headers, body, states)

    async def _send_rate_limited(self, send: Send, states: list[BucketState]) -> None:
        exhausted = [s for s in states if s.remaining <= 0]
        now = self.state.settings.clock().timestamp()
        retry_after = max(s.retry_after(now) for s in exhausted)
        limited = min(exhausted, key=lambda s: s.limit)
        body = json.dumps(
            {
                "error": {
                    "code": "rate_limit_exceeded",
                    "message": f"Rate limit of {limited.limit} requests per {limited.window} s "
                    f"exceeded for the {limited.kind} bucket; retry in {retry_after} s.",
                    "retry_after": retry_after,
                    "bucket": limited.kind,
                }
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"retry-after", str(retry_after).encode()),
        ]
        headers_states = [limited]
        await self._send(send, 429, headers, body, headers_states)
