"""The request path, in layers (as httpx and the OpenAI SDK build theirs): `CredentialsAuth` (an
httpx auth flow: the header, and one refresh-and-resend on a refused token), `_attempt` (pacing,
the ETag cache, error mapping) and `request` (a loop that only retries).

Everything that decides (should this failure be retried? how long to wait? which exception?) is a
pure function here and is table-tested; the loop only sends, sleeps and asks those functions.
Clock, sleep and randomness are injected so tests drive time instead of waiting for it."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from bpsync import __version__
from bpsync.client.auth import Credentials
from bpsync.client.errors import (
    AmbiguousWriteError,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    BPSyncError,
    RateLimitError,
    from_response,
)
from bpsync.client.etag import ETagCache
from bpsync.client.ratelimit import RateLimiter, limit_classes

log = logging.getLogger("bpsync.client")

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"})
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})

# How a request failed, as far as retrying is concerned.
FailureKind = Literal["connect", "timeout", "connection", "status"]
Action = Literal["retry", "raise", "ambiguous"]


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_delay: float = 0.5  # seconds; the first retry waits up to this
    max_delay: float = 30.0  # cap of the exponential backoff
    rate_limit_jitter: float = 1.0  # up to this much is added to a 429's wait
    max_rate_limit_wait: float = 300.0  # a 429 asking for longer than this is raised instead


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    status: int = 0


def classify(method: str, failure: Failure, *, idempotent: bool | None = None) -> Action:
    """What to do about one failed attempt, before counting attempts.

    - `connect`: the request never left (refused, DNS, connect timeout): safe to send again.
    - 429: the service refused it before doing anything: safe to send again after waiting.
    - `timeout`/`connection` after sending, and 5xx: retried only when the request is idempotent
      (GET, DELETE, PATCH of the same body); a POST may have been applied, so it is `ambiguous`.
    - every other status: raised."""
    is_idempotent = method.upper() in IDEMPOTENT_METHODS if idempotent is None else idempotent
    if failure.kind == "connect":
        return "retry"
    if failure.kind == "status":
        if failure.status == 429:
            return "retry"
        if failure.status not in RETRYABLE_STATUSES:
            return "raise"
    return "retry" if is_idempotent else "ambiguous"


def backoff_delay(attempt: int, policy: RetryPolicy, rand: Callable[[], float]) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2^attempt)); `attempt` counts from 0."""
    return rand() * min(policy.max_delay, policy.base_delay * (2**attempt))


def parse_retry_after(value: str | None, now: float) -> float | None:
    """`Retry-After` as seconds or as an HTTP-date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def rate_limit_delay(
    headers: Mapping[str, str],
    body_retry_after: float | None,
    now: float,
    attempt: int,
    policy: RetryPolicy,
    rand: Callable[[], float],
) -> float:
    """How long to wait after a 429: `Retry-After` (header, then body), else until
    `X-RateLimit-Reset`, else the backoff; plus up to `rate_limit_jitter` so that clients
    released together do not collide again."""
    wait = parse_retry_after(headers.get("retry-after"), now)
    if wait is None and body_retry_after is not None:
        wait = body_retry_after
    if wait is None:
        reset = headers.get("x-ratelimit-reset")
        try:
            wait = max(0.0, float(reset) - now) if reset else None
        except ValueError:
            wait = None
    if wait is None:
        return backoff_delay(attempt, policy, rand)
    return wait + rand() * policy.rate_limit_jitter


def retry_delay(
    failure: Failure,
    error: BPSyncError,
    headers: Mapping[str, str],
    now: float,
    attempt: int,
    policy: RetryPolicy,
    rand: Callable[[], float],
) -> float:
    if failure.kind == "status" and failure.status == 429:
        retry_after = error.retry_after if isinstance(error, RateLimitError) else None
        return rate_limit_delay(headers, retry_after, now, attempt, policy, rand)
    return backoff_delay(attempt, policy, rand)


def failure_of(exc: httpx.TransportError) -> tuple[Failure, type[APIConnectionError]]:
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return Failure("connect"), APITimeoutError
    if isinstance(exc, httpx.TimeoutException):
        return Failure("timeout"), APITimeoutError
    if isinstance(exc, httpx.ConnectError):
        return Failure("connect"), APIConnectionError
    return Failure("connection"), APIConnectionError


def transport_problem(exc: httpx.TransportError, base_url: str) -> str:
    """A sentence naming the URL and the likely cause (never the raw exception class alone)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 8:  # httpx wraps httpcore wraps the OSError
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " ".join(str(e) for e in chain).lower()
    refused = any(isinstance(e, ConnectionRefusedError) for e in chain)
    where = f"the service at {base_url}"
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return f"{where} did not accept a connection in time (network down, a firewall, or the wrong host)"
    if isinstance(exc, httpx.TimeoutException):
        return f"{where} did not answer in time (it may be overloaded; try again)"
    if isinstance(exc, httpx.ConnectError):
        if refused or "refused" in text or "all connection attempts failed" in text:
            return (
                f"cannot reach {where}: connection refused. Is the service running, and is the "
                "URL (host and port) right? `bpsync status` shows the profile's URL"
            )
        if (
            "name or service not known" in text
            or "nodename nor servname" in text
            or ("getaddrinfo" in text)
        ):
            return f"cannot reach {where}: its host name does not resolve (check the URL or DNS)"
        if "ssl" in text or "certificate" in text:
            return f"cannot reach {where}: the TLS handshake failed ({exc})"
        return f"cannot reach {where} ({exc or type(exc).__name__})"
    return f"the connection to {where} failed ({type(exc).__name__})"


Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Call:
    """What the caller asked for, the same on every attempt."""

    method: str
    path: str
    params: dict[str, Any]
    json: Any
    kinds: list[str]  # the rate-limit classes it counts against
    stream: bool
    content: bytes | None = None  # a body other than JSON (the CSV upload)
    content_type: str | None = None


@dataclass
class Outcome:
    """One attempt's result: a response to return, or an error and how it failed."""

    request: httpx.Request
    response: httpx.Response | None = None
    error: BPSyncError | None = None
    failure: Failure | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


class CredentialsAuth(httpx.Auth):
    """httpx's auth flow over our credentials: the Authorization header on every request, and
    when the service refuses a refreshable token (revoked, or expired early), one refresh and
    one resend, paced like any request."""

    def __init__(
        self, credentials: Credentials, pace: Callable[[list[str]], Awaitable[None]]
    ) -> None:
        self.credentials = credentials
        self.pace = pace

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        request.headers["Authorization"] = await self.credentials.authorization()
        response = yield request
        if response.status_code == 401 and self.credentials.refreshable:
            await response.aread()
            await self.credentials.invalidate()
            await self.pace(request.extensions.get("bpsync.kinds", []))
            request.headers["Authorization"] = await self.credentials.authorization()
            yield request


class BaseClient:
    """Sends requests to `base_url` with `credentials`; shared by every resource."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        limiter: RateLimiter | None = None,
        etags: ETagCache | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self.etags = etags if etags is not None else ETagCache()
        self.clock = clock
        self.sleep = sleep
        self.rand = rand
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": f"bpsync/{__version__}", "Accept": "application/json"},
        )
        self.last_rate_limit: dict[str, str] = {}
        self._auth = CredentialsAuth(credentials, self._pace)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _pace(self, kinds: list[str]) -> None:
        if self.limiter is None:
            return
        while (wait := await asyncio.to_thread(self.limiter.try_acquire, kinds)) > 0:
            log.debug("pacing: waiting %.2f s for %s", wait, "/".join(kinds))
            await self.sleep(wait)

    def _learn(self, response: httpx.Response, kinds: list[str]) -> None:
        headers = {k.lower(): v for k, v in response.headers.items() if k.lower().startswith("x-r")}
        if headers:
            self.last_rate_limit = headers
        if self.limiter is None:
            return
        self.limiter.update(response.headers, kinds, response.status_code)
        if response.status_code == 429:
            retry = parse_retry_after(response.headers.get("retry-after"), self.clock())
            bucket = response.headers.get("x-ratelimit-bucket") or kinds[0]
            self.limiter.rate_limited(bucket, retry if retry is not None else 1.0)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotent: bool | None = None,
        stream: bool = False,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> httpx.Response:
        """Send with retries; returns a successful response (2xx, or a cached body on 304).
        This loop only decides about retries: one attempt (pacing, credentials, the ETag cache,
        error mapping) is `_attempt`."""
        method = method.upper()
        call = Call(
            method,
            path,
            {k: v for k, v in (params or {}).items() if v is not None},
            json,
            limit_classes(method, path, self.credentials.kind),
            stream,
            content,
            content_type,
        )
        attempt = 0
        maybe_applied = False  # an earlier attempt may have reached the service
        while True:
            outcome = await self._attempt(call, attempt)
            if outcome.response is not None:
                return outcome.response
            failure, error = outcome.failure, outcome.error
            assert failure is not None and error is not None
            if method == "DELETE" and failure.status == 404 and maybe_applied:
                # The earlier attempt deleted it; only its answer was lost.
                return httpx.Response(204, request=outcome.request)
            action = classify(method, failure, idempotent=idempotent)
            if action == "ambiguous":
                raise AmbiguousWriteError(method, path, error)
            if action == "raise" or attempt >= self.retry.max_retries:
                raise error
            delay = retry_delay(
                failure, error, outcome.headers, self.clock(), attempt, self.retry, self.rand
            )
            if delay > self.retry.max_rate_limit_wait:
                raise error
            if failure.kind != "connect" and failure.status != 429:
                maybe_applied = True
            log.info(
                "%s %s failed (%s); retry %d in %.2f s",
                method,
                path,
                error.code if isinstance(error, APIStatusError) else type(error).__name__,
                attempt + 1,
                delay,
            )
            await self.sleep(delay)
            attempt += 1

    async def _attempt(self, call: Call, attempt: int) -> Outcome:
        """One try: paced, authorised (a refused OAuth token is refreshed and sent again once, by
        `CredentialsAuth`), answered from the ETag cache on a 304; failures become an error and
        the `Failure` that `classify` reads."""
        await self._pace(call.kinds)
        request = self._http.build_request(
            call.method,
            call.path,
            params=call.params,
            json=call.json,
            content=call.content,
            headers={"Content-Type": call.content_type} if call.content_type else None,
        )
        request.extensions["bpsync.kinds"] = call.kinds
        url = str(request.url)
        use_cache = call.method == "GET" and not call.stream
        cached = self.etags.get(self.credentials.identity, url) if use_cache else None
        if cached is not None:
            request.headers["If-None-Match"] = cached.etag
        started = time.monotonic()
        try:
            response = await self._http.send(request, stream=call.stream, auth=self._auth)
        except httpx.TransportError as exc:
            if self.limiter is not None:
                self.limiter.failed(call.kinds)
            failure, cls = failure_of(exc)
            log.debug(
                "%s %s -> %s (attempt %d)", call.method, call.path, type(exc).__name__, attempt + 1
            )
            error = cls(transport_problem(exc, self.base_url), method=call.method, path=call.path)
            return Outcome(request, error=error, failure=failure)
        self._learn(response, call.kinds)
        log.debug(
            "%s %s -> %d in %.0f ms (attempt %d)",
            call.method,
            call.path,
            response.status_code,
            (time.monotonic() - started) * 1000,
            attempt + 1,
        )
        if response.status_code == 304 and cached is not None:
            self.etags.hits += 1
            headers = {"content-type": cached.content_type, "etag": cached.etag}
            body = httpx.Response(200, content=cached.content, headers=headers, request=request)
            return Outcome(request, response=body)
        if response.status_code < 400:
            if use_cache:
                await response.aread()
                self.etags.store(
                    self.credentials.identity,
                    url,
                    response.headers.get("etag"),
                    response.content,
                    response.headers.get("content-type", ""),
                )
            return Outcome(request, response=response)
        await response.aread()
        await response.aclose()
        try:
            body_json = response.json()
        except ValueError:
            body_json = None
        headers = {k.lower(): v for k, v in response.headers.items()}
        error = from_response(
            response.status_code, body_json, method=call.method, path=call.path, headers=headers
        )
        return Outcome(
            request, error=error, failure=Failure("status", response.status_code), headers=headers
        )

    async def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return (await self.request("GET", path, params=params)).json()

    async def send_json(
        self, method: str, path: str, body: Any = None, *, idempotent: bool | None = None
    ) -> Any:
        response = await self.request(method, path, json=body, idempotent=idempotent)
        return response.json() if response.content else None
