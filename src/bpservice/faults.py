"""Fault injection for proving clients: a share of `/v1` requests fail the way real networks and
servers fail. Off unless `Settings.faults.rate > 0` (`bpservice serve --faults 0.1`).

The middleware wraps the whole app, outside the rate limiter and ETags, so a fault hits before
(or, for `drop_after`, after) everything the service does. Kinds:

| kind          | what the server does                        | what an HTTP client sees            |
|---------------|---------------------------------------------|-------------------------------------|
| `http_500`    | answers 500 without running the request     | status 500 (service error body)     |
| `http_502`    | answers 502 without running the request     | status 502 (a proxy's plain text)   |
| `http_503`    | answers 503 + Retry-After, request not run  | status 503                          |
| `rate_limit`  | answers 429 + Retry-After, request not run  | status 429 `rate_limit_exceeded`    |
| `hang`        | waits `hang_seconds`, then runs the request | a read timeout (if shorter); the    |
|               |                                             | write may still be applied later    |
| `drop_before` | starts a response, closes the connection;   | `RemoteProtocolError`, nothing done |
|               | the request never runs                      |                                     |
| `drop_after`  | runs the request to completion (committed), | `RemoteProtocolError`, but the      |
|               | then sends half the answer and closes       | write WAS applied (the nasty case)  |

Decisions come from one `random.Random(seed)`, drawn in arrival order, so a sequential client sees
the same faults on every run with the same seed. `/healthz` and paths outside `/v1` are never
touched. An ASGI app cannot reset a TCP connection itself: a drop is a response that starts and
never completes, which the server then closes (uvicorn closes the socket when the app returns
early). Real resets before any byte are what the tests' TCP proxy is for."""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from dataclasses import dataclass, field

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("bpservice.faults")

FAULT_KINDS: tuple[str, ...] = (
    "http_500",
    "http_502",
    "http_503",
    "rate_limit",
    "hang",
    "drop_before",
    "drop_after",
)


@dataclass(frozen=True)
class FaultSettings:
    """How often and how requests fail. `rate` 0 switches injection off entirely."""

    rate: float = 0.0  # share of /v1 requests that get a fault, 0..1
    seed: int | None = None  # None: a different sequence on every start
    kinds: tuple[str, ...] = FAULT_KINDS  # drawn uniformly among these
    # Longer than bpsync's default 30 s timeout; tests use a fraction of a second.
    hang_seconds: float = 35.0
    retry_after_seconds: int = 1  # Retry-After of injected 429 and 503 answers

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be between 0 and 1, not {self.rate}")
        unknown = sorted(set(self.kinds) - set(FAULT_KINDS))
        if unknown or not self.kinds:
            raise ValueError(
                f"unknown fault kinds {unknown}; choose from {', '.join(FAULT_KINDS)}"
                if unknown
                else "at least one fault kind is needed"
            )
        if self.hang_seconds < 0 or self.retry_after_seconds < 0:
            raise ValueError("hang_seconds and retry_after_seconds must not be negative")

    @property
    def enabled(self) -> bool:
        return self.rate > 0


def parse_kinds(text: str | None) -> tuple[str, ...]:
    """`"http_500,drop_after"` → the tuple; empty or None → every kind."""
    if not text:
        return FAULT_KINDS
    return tuple(k.strip() for k in text.split(",") if k.strip())


@dataclass
class FaultInjector:
    """The decisions and a tally of what was injected (tests and logs read `counts`)."""

    settings: FaultSettings
    counts: Counter[str] = field(default_factory=Counter)
    requests: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.settings.seed)

    def applies_to(self, path: str) -> bool:
        return path == "/v1" or path.startswith("/v1/")

    def draw(self) -> str | None:
        """The fault for the next request, or None. Two draws per request, always, so the
        sequence does not depend on which kinds are enabled after the first."""
        self.requests += 1
        hit = self._rng.random() < self.settings.rate
        kind = self.settings.kinds[self._rng.randrange(len(self.settings.kinds))]
        if not hit:
            return None
        self.counts[kind] += 1
        return kind


class FaultMiddleware:
    """Pure ASGI middleware; install outermost (`create_app` does when faults are enabled)."""

    def __init__(self, app: ASGIApp, *, injector: FaultInjector) -> None:
        self.app = app
        self.injector = injector

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.injector.applies_to(scope["path"]):
            await self.app(scope, receive, send)
            return
        kind = self.injector.draw()
        if kind is None:
            await self.app(scope, receive, send)
            return
        log.info("injecting %s into %s %s", kind, scope["method"], scope["path"])
        settings = self.injector.settings
        retry_after = str(settings.retry_after_seconds).encode()
        if kind == "http_500":
            await _answer(send, 500, "internal_error", "Injected fault: internal error.")
        elif kind == "http_502":
            # What a reverse proxy in front of the service sends: not the service's error shape.
            await _send(send, 502, [(b"content-type", b"text/html")], b"<h1>502 Bad Gateway</h1>")
        elif kind == "http_503":
            await _answer(
                send,
                503,
                "service_unavailable",
                "Injected fault: service unavailable.",
                headers=[(b"retry-after", retry_after)],
            )
        elif kind == "rate_limit":
            await _answer(
                send,
                429,
                "rate_limit_exceeded",
                "Injected fault: rate limit exceeded.",
                headers=[(b"retry-after", retry_after)],
                retry_after=settings.retry_after_seconds,
                bucket="key",
            )
        elif kind == "hang":
            # A stalled server: the request has arrived, the client gives up first, then the
            # request runs anyway (so a write may land after its client saw a timeout).
            replay = await _buffered(receive)
            await anyio.sleep(settings.hang_seconds)
            await self.app(scope, replay, send)
        elif kind == "drop_before":
            await _send_incomplete(send, 200, [(b"content-type", b"application/json")], b"{}")
        else:  # drop_after: run to completion (the write commits), lose the answer
            status, headers, body = await _run_captured(self.app, scope, receive)
            await _send_incomplete(send, status, headers, body)


async def _send(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _answer(
    send: Send,
    status: int,
    code: str,
    message: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    **extra: object,
) -> None:
    body = json.dumps({"error": {"code": code, "message": message, **extra}}).encode()
    await _send(send, status, [(b"content-type", b"application/json"), *(headers or [])], body)


async def _send_incomplete(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """Announce the whole body, send less than half of it, and return: the server then closes
    the connection mid-response, which the client sees as a protocol error."""
    headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    headers.append((b"content-length", str(max(len(body), 2)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})


async def _buffered(receive: Receive) -> Receive:
    """Read the whole request body now; the returned `receive` replays it, then passes through."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    pending: list[Message] = [
        {"type": "http.request", "body": b"".join(chunks), "more_body": False}
    ]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


async def _run_captured(
    app: ASGIApp, scope: Scope, receive: Receive
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
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

    await app(scope, receive, capture)
    return status, headers, b"".join(chunks)
