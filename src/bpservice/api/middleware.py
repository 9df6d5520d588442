"""The HTTP edge, in one pure ASGI middleware: body-size guard, caller identification, rate limits
(with X-RateLimit-* on every response), ETags with If-None-Match → 304 (a 304 is not counted; an
empty bucket answers 429 before any handler runs unless the tag was issued for that URL), NUL
refused in /v1 query parameters and JSON bodies (422), and trailing-slash redirects that never
point at the client's Host header."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import anyio
from starlette.datastructures import URL
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bpservice.auth import Principal, resolve_bearer
from bpservice.db.session import DatabaseBusy
from bpservice.errors import is_json_media_type
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


# `\u0000` in JSON text, unless its backslash is itself escaped (`\\u0000` is six characters).
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_NUL_MESSAGE = "must not contain NUL characters"


def nul_query_fields(query_string: bytes) -> list[str]:
    """Names of the query parameters whose name or value holds a NUL once decoded."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    return list(dict.fromkeys(k.replace("\x00", "\\u0000") for k, v in pairs if "\x00" in k + v))


def nul_json_fields(value: Any, path: str = "") -> list[str]:
    """Paths (`address.city`, `property_access[0]`) of the strings in a JSON value that hold NUL."""
    found: list[str] = []
    if isinstance(value, str):
        if "\x00" in value:
            found.append(path or "body")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += nul_json_fields(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            if "\x00" in key:
                found.append(name.replace("\x00", "\\u0000"))
            else:
                found += nul_json_fields(item, name)
    return found


def nul_body_fields(body: bytes) -> list[str]:
    """Fields of a JSON body whose strings hold NUL; the body is parsed only when its text has a
    `\\u0000` escape (a raw NUL byte is not JSON and is refused as such by the handler)."""
    if not _JSON_NUL.search(body):
        return []
    try:
        return nul_json_fields(json.loads(body))
    except ValueError:
        return []  # not JSON: answered 400 invalid_json by the handler


class _Disconnected(Exception):
    """The client went away while its body was being read."""


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the application the body already read, then the client's messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


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


def listed_tags(if_none_match: str | None) -> list[str]:
    """The entity tags of an If-None-Match list, weak prefixes dropped (at most 20)."""
    if if_none_match is None:
        return []
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")[:20]]
    return [t for t in tags if t]


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

        try:
            principal = await self._identify(scope)
        except DatabaseBusy as exc:
            # The key's lookup met a database that stayed busy: overload, like the dependencies.
            await self._send_error(
                send,
                503,
                "service_unavailable",
                f"The service is busy: {exc.message} Retry in {exc.retry_after} s.",
                [],
                retry_after=exc.retry_after,
            )
            return
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
                retry_after=1,
            )
            return
        if_none_match = _header(scope, b"if-none-match")
        # `*` matches any current representation: answering it means running the handler, so it
        # is counted like any GET. Only a specific tag that matches is free (a real cache hit).
        star = if_none_match is not None and if_none_match.strip() == "*"
        # The authorization server's pages set cookies: never answered with a 304.
        cacheable = method == "GET" and not path.startswith("/oauth/")
        presented = listed_tags(if_none_match) if cacheable and metered and not star else []
        # An empty bucket answers 429 before any handler runs, unless the request presents a tag
        # this service gave this caller for this URL: only then can the answer be a 304
        # (decisions D30), and only running the handler can tell.
        if not granted and (not presented or not await self._issued(keys[0], scope, presented)):
            await self._send_rate_limited(send, states)
            return

        refusal = (
            nul_query_fields(scope.get("query_string", b"")) if path.startswith("/v1/") else []
        )
        if not refusal and path.startswith("/v1/") and self._json_body(scope, method):
            try:
                body = await self._read_body(receive)
            except _Disconnected:
                return  # nobody to answer, and a partial body must not reach a handler
            if body is None:
                limit = self.state.settings.max_body_bytes
                message = f"The request body is larger than {limit} bytes."
                await self._send_error(send, 413, "payload_too_large", message, states)
                return
            refusal = nul_body_fields(body)
            receive = _replay(body, receive)
        if refusal:
            # PostgreSQL text cannot hold NUL (and no id, name or URL contains one): refused here,
            # in one place, before any handler could send it to the database (decisions D7).
            details = [
                {"field": f, "code": "nul_character", "message": _NUL_MESSAGE} for f in refusal
            ]
            fields = ", ".join(refusal[:5])
            message = f"The request is invalid: {fields}."
            await self._send_error(send, 422, "validation_error", message, states, details=details)
            return

        receive = self._limit_body(receive)
        if not cacheable:
            await self._pass_through(scope, receive, send, states)
            return

        status, headers, body = await self._capture(scope, receive)
        headers = self._relative_redirect(scope, status, headers)
        not_modified = False
        if status == 200:
            etag = etag_of(body)
            headers = [(k, v) for k, v in headers if k != b"etag"] + [(b"etag", etag.encode())]
            not_modified = if_none_match is not None and etag_matches(if_none_match, etag)
            if metered:
                await self._remember(keys[0], scope, etag)
        if not_modified:
            if granted and metered and not star:
                window = states[0].window_start if states else None
                states = await _off_loop(limiter.release, keys, window)
            keep = {b"etag", b"cache-control", b"vary"}
            headers = [(k, v) for k, v in headers if k in keep]
            await self._send(send, 304, headers, b"", states)
            return
        if not granted:
            # The data changed since that tag was given: it can never make a 304 again.
            await self._forget(keys[0], scope, presented)
            await self._send_rate_limited(send, states)
            return
        await self._send(send, status, headers, body, states)

    def _json_body(self, scope: Scope, method: str) -> bool:
        if method not in ("POST", "PUT", "PATCH", "DELETE"):
            return False
        return is_json_media_type(_header(scope, b"content-type") or "")

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole request body (None when it grows past the limit)."""
        limit = self.state.settings.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _relative_redirect(self, scope: Scope, status: int, headers: list) -> list:
        """Starlette's trailing-slash redirect builds its absolute Location from the request's
        Host header, which the client chooses: point it at the configured public address, else
        make it relative (RFC 9110 §10.2.2 allows a relative reference)."""
        if status not in (307, 308):
            return headers
        location = next((v.decode("latin-1") for k, v in headers if k == b"location"), None)
        path: str = scope["path"]
        other = path.rstrip("/") if path.endswith("/") else path + "/"
        if location is None or location != str(URL(scope={**scope, "path": other})):
            return headers  # a redirect of the application's own (OAuth), left alone
        parts = urlsplit(location)
        target = urlunsplit(("", "", parts.path, parts.query, ""))
        base = self.state.settings.public_base_url
        if base:
            target = base.rstrip("/") + target
        return [(k, v) for k, v in headers if k != b"location"] + [
            (b"location", target.encode("latin-1"))
        ]

    def _tag_names(self, key: BucketKey, scope: Scope, tags: list[str]) -> list[str]:
        # One caller, one URL, one tag: a tag is only ever good for what it was issued for.
        url = scope["path"] + "?" + scope.get("query_string", b"").decode("latin-1")
        return [
            hashlib.sha256(f"{key.kind}:{key.identity}\n{url}\n{tag}".encode()).hexdigest()[:40]
            for tag in tags
        ]

    async def _issued(self, key: BucketKey, scope: Scope, tags: list[str]) -> bool:
        try:
            return await _off_loop(self.state.limiter.known_tag, self._tag_names(key, scope, tags))
        except LimiterUnavailable:
            return False

    async def _remember(self, key: BucketKey, scope: Scope, etag: str) -> None:
        # Unreachable Redis only costs a 304 when the bucket is empty later.
        with contextlib.suppress(LimiterUnavailable):
            await _off_loop(self.state.limiter.remember_tag, self._tag_names(key, scope, [etag])[0])

    async def _forget(self, key: BucketKey, scope: Scope, tags: list[str]) -> None:
        with contextlib.suppress(LimiterUnavailable):
            await _off_loop(self.state.limiter.forget_tags, self._tag_names(key, scope, tags))

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
            return resolve_bearer(db, token, now, resolvers)

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
                headers = self._relative_redirect(
                    scope, message["status"], list(message.get("headers", []))
                )
                message = {**message, "headers": headers + extra}
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
        if "retry_after" in extra:
            headers.append((b"retry-after", str(extra["retry_after"]).encode()))
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
