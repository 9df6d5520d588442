"""Retry policy and backoff: pure table tests, then the loop against the real service with a fake
clock (sleeps are recorded, never slept) and a transport that injects network faults."""

from __future__ import annotations

import datetime as dt
import email.utils
from collections.abc import Callable

import httpx
import pytest

from bpsync.client import (
    AmbiguousWriteError,
    APIConnectionError,
    APITimeoutError,
    AsyncServiceClient,
    RateLimitError,
    RetryPolicy,
    ServerError,
)
from bpsync.client.base import (
    Failure,
    backoff_delay,
    classify,
    parse_retry_after,
    rate_limit_delay,
)
from tests.conftest import Service

POLICY = RetryPolicy(max_retries=4, base_delay=0.5, max_delay=4.0, rate_limit_jitter=1.0)


@pytest.mark.parametrize(
    ("method", "failure", "expected"),
    [
        ("GET", Failure("connect"), "retry"),
        ("POST", Failure("connect"), "retry"),  # never left: nothing to be ambiguous about
        ("GET", Failure("timeout"), "retry"),
        ("POST", Failure("timeout"), "ambiguous"),
        ("DELETE", Failure("connection"), "retry"),
        ("PATCH", Failure("connection"), "retry"),
        ("POST", Failure("connection"), "ambiguous"),
        ("GET", Failure("status", 429), "retry"),
        ("POST", Failure("status", 429), "retry"),  # refused before anything happened
        ("GET", Failure("status", 500), "retry"),
        ("DELETE", Failure("status", 503), "retry"),
        ("POST", Failure("status", 502), "ambiguous"),
        ("GET", Failure("status", 501), "raise"),
        ("GET", Failure("status", 404), "raise"),
        ("POST", Failure("status", 409), "raise"),
        ("PATCH", Failure("status", 422), "raise"),
        ("GET", Failure("status", 401), "raise"),
    ],
)
def test_classify(method: str, failure: Failure, expected: str) -> None:
    assert classify(method, failure) == expected


def test_classify_explicit_idempotency() -> None:
    assert classify("POST", Failure("timeout"), idempotent=True) == "retry"
    assert classify("PATCH", Failure("status", 500), idempotent=False) == "ambiguous"


@pytest.mark.parametrize(
    ("attempt", "rand", "expected"),
    [
        (0, 1.0, 0.5),
        (1, 1.0, 1.0),
        (2, 1.0, 2.0),
        (3, 1.0, 4.0),
        (4, 1.0, 4.0),  # capped
        (10, 1.0, 4.0),
        (2, 0.5, 1.0),  # full jitter: a fraction of the ceiling
        (3, 0.0, 0.0),
    ],
)
def test_backoff_full_jitter(attempt: int, rand: float, expected: float) -> None:
    assert backoff_delay(attempt, POLICY, lambda: rand) == pytest.approx(expected)


NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7.0),
        ("0", 0.0),
        (" 2.5 ", 2.5),
        (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),
        (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


@pytest.mark.parametrize(
    ("headers", "body", "rand", "expected"),
    [
        ({"retry-after": "12"}, 99, 0.0, 12.0),  # the header wins
        ({"retry-after": "12"}, None, 0.5, 12.5),  # plus jitter
        ({}, 7, 0.25, 7.25),  # error.retry_after
        ({"x-ratelimit-reset": str(int(NOW + 20))}, None, 0.0, 20.0),  # until the reset
        ({}, None, 1.0, 2.0),  # nothing said: the backoff (attempt 2)
    ],
)
def test_rate_limit_delay(
    headers: dict[str, str], body: float | None, rand: float, expected: float
) -> None:
    delay = rate_limit_delay(headers, body, NOW, 2, POLICY, lambda: rand)
    assert delay == pytest.approx(expected)


# --- the loop, with the real service ---------------------------------------------------------------


class FaultyTransport(httpx.AsyncBaseTransport):
    """Real HTTP to the service, except for the faults queued in `faults`, one per request:
    `refuse` (connection refused, nothing sent), `503` (answered without reaching the app),
    `lose` (the service handles the request, then the answer is lost: a read timeout)."""

    def __init__(self, faults: list[str]) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.faults = list(faults)
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.faults.pop(0) if self.faults else None
        self.sent.append(f"{request.method} {fault or 'ok'}")
        if fault == "refuse":
            raise httpx.ConnectError("connection refused", request=request)
        if fault == "503":
            return httpx.Response(503, json={"error": {"code": "unavailable", "message": "busy"}})
        response = await self.inner.handle_async_request(request)
        if fault == "lose":
            await response.aread()
            raise httpx.ReadTimeout("no answer", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class Sleeps:
    def __init__(self, on_sleep: Callable[[float], None] | None = None) -> None:
        self.calls: list[float] = []
        self.on_sleep = on_sleep

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if self.on_sleep:
            self.on_sleep(seconds)


ADDRESS = {"street": "1 Way", "city": "Leeds", "country": "GB"}


def faulty_client(
    service: Service, faults: list[str], sleeps: Sleeps, rand: float = 1.0
) -> tuple[AsyncServiceClient, FaultyTransport]:
    transport = FaultyTransport(faults)
    client = AsyncServiceClient(
        service.base_url,
        service.test_key,
        transport=transport,
        retry=POLICY,
        limiter=False,
        sleep=sleeps,
        rand=lambda: rand,
    )
    return client, transport


@pytest.mark.anyio
async def test_get_retries_through_faults_with_backoff(service: Service) -> None:
    sleeps = Sleeps()
    client, transport = faulty_client(service, ["refuse", "503", "lose"], sleeps)
    async with client:
        page = await client.properties.list()
    assert page.meta.total == 0
    assert transport.sent == ["GET refuse", "GET 503", "GET lose", "GET ok"]
    assert sleeps.calls == [0.5, 1.0, 2.0]


@pytest.mark.anyio
async def test_retries_give_up_after_the_budget(service: Service) -> None:
    sleeps = Sleeps()
    client, transport = faulty_client(service, ["503"] * 10, sleeps)
    async with client:
        with pytest.raises(ServerError) as info:
            await client.properties.list()
    assert info.value.status == 503 and info.value.code == "unavailable"
    assert len(transport.sent) == POLICY.max_retries + 1
    assert sleeps.calls == [0.5, 1.0, 2.0, 4.0]

    sleeps = Sleeps()
    client, _ = faulty_client(service, ["refuse"] * 10, sleeps)
    async with client:
        with pytest.raises(APIConnectionError):
            await client.properties.list()
    client, _ = faulty_client(service, ["lose"] * 10, Sleeps())
    async with client:
        with pytest.raises(APITimeoutError):
            await client.properties.list()


@pytest.mark.anyio
async def test_creating_post_is_never_resent_blindly(service: Service) -> None:
    sleeps = Sleeps()
    client, transport = faulty_client(service, ["lose"], sleeps)
    async with client:
        with pytest.raises(AmbiguousWriteError) as info:
            await client.properties.create(name="Lost answer", address=ADDRESS, type="office")
        assert isinstance(info.value.cause, APITimeoutError)
        assert transport.sent == ["POST lose"] and sleeps.calls == []
        # It was applied: the caller reconciles by looking for it.
        names = [p.name async for p in client.properties.list()]
        assert names == ["Lost answer"]

    client, transport = faulty_client(service, ["503"], sleeps)
    async with client:
        with pytest.raises(AmbiguousWriteError) as info:
            await client.properties.create(name="Busy", address=ADDRESS, type="office")
        assert isinstance(info.value.cause, ServerError)

    client, transport = faulty_client(service, ["refuse"], sleeps)
    async with client:
        created = await client.properties.create(
            name="Refused once", address=ADDRESS, type="office"
        )
    assert transport.sent == ["POST refuse", "POST ok"]
    assert created.name == "Refused once"


@pytest.mark.anyio
async def test_delete_whose_answer_was_lost_counts_as_done(service: Service) -> None:
    async with AsyncServiceClient(service.base_url, service.test_key, limiter=False) as setup:
        prop = await setup.properties.create(name="P", address=ADDRESS, type="office")
        building = await setup.buildings.create(
            prop.id, name="B", primary_use_type="office", gfa_m2=10, year_built=2000, floors=1
        )
        meter = await setup.meters.create(building.id, type="electricity", unit="kWh")
        reading = await setup.readings.create(
            building.id, meter.id, start_date="2025-01-01", end_date="2025-01-31", consumption=5
        )
    sleeps = Sleeps()
    client, transport = faulty_client(service, ["lose"], sleeps)
    async with client:
        await client.readings.delete(building.id, meter.id, reading.id)
        assert transport.sent == ["DELETE lose", "DELETE ok"]  # the second answered 404
        assert await client.readings.list(building.id, meter.id).to_list() == []


@pytest.mark.anyio
async def test_429_waits_retry_after_on_the_fake_clock(limited_service: Service) -> None:
    """The spec's bulk limit (10 a minute) with client pacing off: the 11th batch is refused with
    429 and Retry-After; the client waits exactly that (plus jitter) and the retry succeeds."""
    service = limited_service
    service.clock.advance(-service.clock().second)  # at the start of a minute
    service.clock.advance(15)
    sleeps = Sleeps(on_sleep=service.clock.advance)
    client = AsyncServiceClient(
        service.base_url,
        service.test_key,
        limiter=False,
        retry=POLICY,
        sleep=sleeps,
        rand=lambda: 0.5,
        clock=lambda: service.clock().timestamp(),
    )
    async with client:
        prop = await client.properties.create(name="P", address=ADDRESS, type="office")
        building = await client.buildings.create(
            prop.id, name="B", primary_use_type="office", gfa_m2=10, year_built=2000, floors=1
        )
        meter = await client.meters.create(building.id, type="electricity", unit="kWh")
        start = dt.date(2024, 1, 1)
        for i in range(11):
            day = start + dt.timedelta(days=i)
            reading = {"start_date": day, "end_date": day, "consumption": 1}
            result = await client.readings.create_batch(building.id, meter.id, [reading])
            assert result.accepted == 1
    assert sleeps.calls == [pytest.approx(45.5)]  # 45 s to the window's end, plus jitter 0.5

    # A 429 asking for longer than the policy allows is raised, carrying retry_after.
    service.clock.advance(60 - service.clock().second + 15)  # 15 s into a fresh window
    impatient = AsyncServiceClient(
        service.base_url,
        service.test_key,
        limiter=False,
        retry=RetryPolicy(max_rate_limit_wait=5),
        sleep=Sleeps(),
    )
    async with impatient:
        for i in range(10):
            day = dt.date(2024, 6, 1) + dt.timedelta(days=i)
            reading = {"start_date": day, "end_date": day, "consumption": 1}
            await impatient.readings.create_batch(building.id, meter.id, [reading])
        with pytest.raises(RateLimitError) as info:
            reading = {"start_date": "2024-07-01", "end_date": "2024-07-01", "consumption": 1}
            await impatient.readings.create_batch(building.id, meter.id, [reading])
    assert info.value.retry_after == 45
    assert info.value.bucket == "bulk"
