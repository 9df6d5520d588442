"""bpsync's client against a live service that injects 10% faults of every kind: idempotent calls
get through on retries; a create whose answer may have been lost raises AmbiguousWriteError and is
never re-sent blindly; a caller that reconciles (looks before re-sending) ends with exactly what it
meant to store."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import httpx
import pytest

from bpservice.db.models import Property, Reading
from bpsync.client import AmbiguousWriteError, AsyncServiceClient, RetryPolicy, ServerError
from bpsync.client.errors import APIConnectionError
from tests.conftest import Service
from tests.proof.conftest import FULL, FaultyFactory, count_rows
from tests.proof.proxy import TCPProxy
from tests.service.conftest import PROPERTY

pytestmark = pytest.mark.anyio

# Enough retries that ten consecutive faults (p = 1e-10 at 10%) are needed to fail a read.
PATIENT = RetryPolicy(max_retries=9, base_delay=0.001, max_delay=0.01, rate_limit_jitter=0.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NoSleep:
    """Records the waits the client asks for instead of waiting (Retry-After is 1 s here)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(service: Service, **kwargs: object) -> AsyncServiceClient:
    options: dict[str, object] = {
        "timeout": 0.15,  # shorter than the injected hang (0.5 s)
        "retry": PATIENT,
        "limiter": False,
        "sleep": NoSleep(),
    }
    options.update(kwargs)
    return AsyncServiceClient(service.base_url, service.test_key, **options)  # type: ignore[arg-type]


def days(count: int, first: dt.date = dt.date(2020, 1, 1)) -> list[dict[str, object]]:
    """`count` consecutive one-day readings (inclusive ends, D18), all in the past."""
    return [
        {
            "start_date": str(first + dt.timedelta(days=i)),
            "end_date": str(first + dt.timedelta(days=i)),
            "consumption": 100.0 + i % 17,
        }
        for i in range(count)
    ]


async def test_idempotent_calls_succeed_and_creates_are_never_resent(
    faulty_service: FaultyFactory,
) -> None:
    service = faulty_service(rate=0.1, seed=11, hang_seconds=0.5)
    count = 80 if FULL else 50
    created: dict[str, str] = {}  # internal_ref -> id, answered
    ambiguous: list[str] = []
    async with make_client(service) as client:
        for i in range(count):
            ref = f"REF-{i:03d}"
            try:
                prop = await client.properties.create({**PROPERTY, "internal_ref": ref})
            except AmbiguousWriteError as exc:
                assert exc.method == "POST" and exc.path == "/v1/properties"
                ambiguous.append(ref)
            else:
                created[ref] = prop.id
        # Reads and PATCHes are idempotent: every one gets through the faults.
        for ref, pid in created.items():
            assert (await client.properties.get(pid)).internal_ref == ref
            updated = await client.properties.update(pid, name=f"Renamed {ref}")
            assert updated.name == f"Renamed {ref}"
        stored = [p async for p in client.properties.list(per_page=200)]

    refs = Counter(p.internal_ref for p in stored)
    assert max(refs.values()) == 1, "a create was sent twice"
    assert set(created) <= set(refs), "an answered create is missing"
    assert set(refs) <= set(created) | set(ambiguous)
    assert count_rows(service, Property) == len(stored)
    # The seed produces both outcomes of an ambiguous create: applied and not applied.
    applied = set(ambiguous) & set(refs)
    assert ambiguous and applied and set(ambiguous) - applied
    counts = service.app.state.fault_injector.counts
    assert len(counts) == 7, counts  # every kind was injected


async def reconcile_batches(
    client: AsyncServiceClient, bid: str, mid: str, readings: list[dict[str, object]]
) -> tuple[int, int]:
    """Submit in batches; after an ambiguous batch, look at what the service holds for the
    batch's date range and re-send only the missing readings (what the importer's journal does)."""
    ambiguous_batches = resent = 0
    pending = [readings[i : i + 25] for i in range(0, len(readings), 25)]
    resent_starts: set[object] = set()
    while pending:
        batch = pending.pop(0)
        try:
            result = await client.readings.create_batch(bid, mid, batch)
            # A `hang` runs its request after the client gave up: the earlier attempt of a
            # re-sent reading may land first, and the re-send then overlaps exactly that reading
            # (what the importer's journal reconciles). Anything else is a failure.
            for error in result.errors:
                reading = batch[error.index]
                assert error.code == "reading_overlap", result.errors
                assert reading["start_date"] in resent_starts, result.errors
        except AmbiguousWriteError:
            ambiguous_batches += 1
            held = {
                str(r.start_date)
                async for r in client.readings.list(
                    bid,
                    mid,
                    start_date=str(batch[0]["start_date"]),
                    end_date=str(batch[-1]["end_date"]),
                    per_page=200,
                )
            }
            missing = [r for r in batch if r["start_date"] not in held]
            if missing:
                resent += 1
                resent_starts.update(r["start_date"] for r in missing)
                pending.insert(0, missing)
    return ambiguous_batches, resent


async def test_batches_reconciled_after_ambiguity_store_every_reading_once(
    faulty_service: FaultyFactory,
) -> None:
    service = faulty_service(rate=0.1, seed=99, hang_seconds=0.5)
    total = 1200 if FULL else 600
    readings = days(total)
    async with make_client(service) as client:
        tree = await _tree(client)
        ambiguous_batches, _ = await reconcile_batches(client, *tree, readings)
        stored = [r async for r in client.readings.list(*tree, per_page=200)]
    starts = Counter(str(r.start_date) for r in stored)
    assert len(stored) == total and max(starts.values()) == 1
    assert {str(r["start_date"]) for r in readings} == set(starts)
    assert count_rows(service, Reading) == total
    assert ambiguous_batches > 0


async def _tree(client: AsyncServiceClient) -> tuple[str, str]:
    """A property, building and meter, created through faults: an ambiguous create is resolved
    by looking for it (by internal_ref / name) before trying again."""

    async def once(create, find):  # type: ignore[no-untyped-def]
        while True:
            try:
                return await create()
            except AmbiguousWriteError:
                found = await find()
                if found is not None:
                    return found

    async def first(items, keep=lambda _: True):  # type: ignore[no-untyped-def]
        # next() cannot take an async generator: the first match, read through the pages.
        async for item in items:
            if keep(item):
                return item
        return None

    async def find_property():  # type: ignore[no-untyped-def]
        return await first(client.properties.list(per_page=200), lambda p: p.internal_ref == "TREE")

    prop = await once(
        lambda: client.properties.create({**PROPERTY, "internal_ref": "TREE"}), find_property
    )
    body = {"name": "Main", "primary_use_type": "office", "gfa_m2": 1000, "year_built": 1999}

    async def find_building():  # type: ignore[no-untyped-def]
        return await first(client.buildings.list(prop.id))

    building = await once(
        lambda: client.buildings.create(prop.id, {**body, "floors": 3}), find_building
    )

    async def find_meter():  # type: ignore[no-untyped-def]
        return await first(client.meters.list(building.id))

    meter = await once(
        lambda: client.meters.create(building.id, type="electricity", unit="kWh"), find_meter
    )
    return building.id, meter.id


async def test_a_server_error_on_create_is_ambiguous_and_sent_once(
    faulty_service: FaultyFactory,
) -> None:
    service = faulty_service(rate=1.0, kinds=("http_503",))
    injector = service.app.state.fault_injector
    async with make_client(service) as client:
        with pytest.raises(AmbiguousWriteError) as err:
            await client.properties.create(PROPERTY)
        assert isinstance(err.value.cause, ServerError)
        assert injector.requests == 1  # not re-sent
        with pytest.raises(ServerError):
            await client.properties.get("prp_missing")
        assert injector.requests == 1 + 1 + PATIENT.max_retries  # a read is retried


async def test_a_rate_limit_answer_is_retried_even_for_a_create(
    faulty_service: FaultyFactory,
) -> None:
    service = faulty_service(rate=1.0, kinds=("rate_limit",))
    sleep = NoSleep()
    async with make_client(service, sleep=sleep) as client:
        with pytest.raises(Exception, match="rate_limit_exceeded"):
            await client.properties.create(PROPERTY)
    # 429 means "not done": retried after the Retry-After the service gave, never ambiguous.
    assert sleep.waits == [1.0] * PATIENT.max_retries
    assert count_rows(service, Property) == 0


async def test_a_lost_answer_through_a_real_reset_is_ambiguous(service: Service) -> None:
    port = int(service.base_url.rsplit(":", 1)[1])
    no_reuse = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))
    with TCPProxy(("127.0.0.1", port)) as proxy:
        client = AsyncServiceClient(
            proxy.url, service.test_key, retry=PATIENT, limiter=False, transport=no_reuse
        )
        async with client:
            proxy.plan("reset_after_request")
            with pytest.raises(AmbiguousWriteError) as err:
                await client.properties.create(PROPERTY)
            assert isinstance(err.value.cause, APIConnectionError)
            assert proxy.taken == {"reset_after_request": 1}  # one connection: no re-send
            proxy.plan("reset", "reset")
            listed = [p async for p in client.properties.list()]  # retried through two resets
    assert len(listed) == 1 and count_rows(service, Property) == 1
    assert proxy.taken["reset"] == 2
