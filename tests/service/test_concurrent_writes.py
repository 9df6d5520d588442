"""Concurrent writes (issue: freeze under concurrent writes). 200 single-reading POSTs at once,
most to distinct meters and a quarter to one meter, while another client keeps reading, against a
real uvicorn server on SQLite or (with BPSERVICE_TEST_DB_URL/BPSERVICE_TEST_REDIS_URL) PostgreSQL.

Overload may only answer 503 `service_unavailable` with Retry-After (never 500); every 201 is
stored and nothing else is; reads keep answering while writers queue; and a client that waits
Retry-After after a 503 gets every reading stored exactly once. Writers that wait for a database
slot wait on the event loop, not in a worker thread, so the writer holding the slot can always get
a thread to finish and commit (the freeze: 40 waiting writers held the 40 threads)."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from bpservice.app import create_app
from bpservice.db.models import Meter, Organisation
from bpservice.db.session import Database, DatabaseBusy, Gate, is_busy
from bpservice.ids import new_id
from bpservice.settings import DatabaseLimits, RateLimits
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap, service_settings
from tests.service.conftest import create_building, create_property, fast, month

pytestmark = pytest.mark.timeout(180)

WRITERS = 200
# Of the writers, this many post to one meter (each a different month); the rest to a meter each.
SAME_METER = 50
# A read during the burst must answer within this (the freeze made one wait 29.9 s); generous,
# so a loaded CI machine does not flake.
READ_BOUND_SECONDS = 5.0
GENEROUS = {"per_key": 100_000, "bulk": 100_000, "reports": 100_000, "per_user": 100_000}


@dataclass
class Post:
    building_id: str
    meter_id: str
    start: str
    end: str

    @property
    def path(self) -> str:
        return f"/v1/buildings/{self.building_id}/meters/{self.meter_id}/readings"


@dataclass
class Answer:
    post: Post
    status: int
    headers: httpx.Headers
    body: dict[str, Any]
    attempts: int = 1


@dataclass
class Burst:
    answers: list[Answer]
    read_seconds: list[float] = field(default_factory=list)
    read_statuses: Counter[int | str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def statuses(self) -> Counter[int]:
        return Counter(a.status for a in self.answers)


@dataclass
class Setup:
    meters: list[tuple[str, str]]  # (building, meter)
    posts: list[Post]

    @property
    def meter_ids(self) -> list[str]:
        return [m for _, m in self.meters]


# Each write recalculates its building's benchmarks over all the building's meters; a portfolio
# spreads its meters over buildings, and so does the test (one building of 151 meters would make
# every write several times slower, and the test no faster to fail).
METERS_PER_BUILDING = 10


def make_setup(service: Service, writers: int = WRITERS, same_meter: int = SAME_METER) -> Setup:
    """A meter for each writer outside the shared meter's group, plus the shared meter, which
    gets `same_meter` consecutive months; ten meters to a building. The meters are inserted in
    one transaction (a meter is a plain row; 151 POSTs would take most of the test's time)."""
    count = writers - same_meter + 1
    with service.client() as api:
        prop = create_property(api)
        buildings = [
            create_building(api, prop["id"])["id"] for _ in range(0, count, METERS_PER_BUILDING)
        ]
    meters = [(buildings[i // METERS_PER_BUILDING], new_id("meter")) for i in range(count)]
    with service.app.state.db.write() as session:
        session.add_all(
            Meter(
                id=meter,
                org_id=service.org_id,
                environment="test",
                building_id=building,
                type="electricity",
                name=f"M{i}",
                unit="kWh",
                created_at=service.clock(),
            )
            for i, (building, meter) in enumerate(meters)
        )
    (shared_building, shared), others = meters[0], meters[1:]
    posts = [Post(b, m, *month(2025, 1)) for b, m in others]
    posts += [
        Post(shared_building, shared, *month(2021 + i // 12, i % 12 + 1)) for i in range(same_meter)
    ]
    random.Random(7).shuffle(posts)
    return Setup(meters, posts)


async def _post(
    client: httpx.AsyncClient, post: Post, *, retry: bool, start: asyncio.Event
) -> Answer:
    await start.wait()
    attempts = 0
    while True:
        attempts += 1
        r = await client.post(
            post.path,
            json={"start_date": post.start, "end_date": post.end, "consumption": 1000.0},
        )
        body = r.json() if r.content else {}
        if r.status_code != 503 or not retry or attempts >= 20:
            return Answer(post, r.status_code, r.headers, body, attempts)
        # A modest client: wait what the service asked, with a little jitter.
        await asyncio.sleep(float(r.headers["Retry-After"]) + random.uniform(0, 0.25))


def _read_loop(service: Service, paths: list[str], done: threading.Event, burst: Burst) -> None:
    """Another client, in a thread of its own (not behind the writers' tasks on their loop)."""
    with service.client() as client:
        i = 0
        while not done.is_set():
            began = time.monotonic()
            try:
                status: int | str = client.get(paths[i % len(paths)]).status_code
            except httpx.HTTPError as exc:  # the freeze: a read timed out after 30 s
                status = type(exc).__name__
            burst.read_seconds.append(time.monotonic() - began)
            burst.read_statuses[status] += 1
            i += 1
            done.wait(0.1)


async def _burst(
    service: Service, setup: Setup, posts: list[Post], *, retry: bool, readers: int
) -> Burst:
    headers = {"Authorization": f"Bearer {service.test_key}"}
    limits = httpx.Limits(max_connections=len(posts) + 10, max_keepalive_connections=len(posts))
    read_paths = [
        "/v1/properties",
        "/v1/buildings/{}/meters/{}/readings".format(*setup.meters[0]),
        "/v1/readings?filter[meter_id]=" + ",".join(setup.meter_ids[:50]),
    ]
    burst = Burst([])
    done = threading.Event()
    read_threads = [
        threading.Thread(target=_read_loop, args=(service, read_paths, done, burst))
        for _ in range(readers)
    ]
    async with httpx.AsyncClient(
        base_url=service.base_url, headers=headers, timeout=60, limits=limits
    ) as writer:
        start = asyncio.Event()
        tasks = [asyncio.create_task(_post(writer, p, retry=retry, start=start)) for p in posts]
        await asyncio.sleep(0.05)  # every writer waits on `start`, so they go at once
        for thread in read_threads:
            thread.start()
        began = time.monotonic()
        start.set()
        try:
            burst.answers = await asyncio.gather(*tasks)
        finally:
            burst.seconds = time.monotonic() - began
            done.set()
            for thread in read_threads:
                thread.join(60)
    return burst


def run_burst(
    service: Service,
    setup: Setup,
    posts: list[Post] | None = None,
    *,
    retry: bool = False,
    readers: int = 1,
) -> Burst:
    return asyncio.run(
        _burst(
            service, setup, setup.posts if posts is None else posts, retry=retry, readers=readers
        )
    )


def stored(service: Service, setup: Setup) -> Counter[tuple[str, str]]:
    """(meter, start date) of every stored reading of the setup's meters, through the API."""
    found: Counter[tuple[str, str]] = Counter()
    with service.client() as api:
        page = 1
        while True:
            r = api.get(
                "/v1/readings",
                params={
                    "filter[meter_id]": ",".join(setup.meter_ids),
                    "per_page": 1000,
                    "page": page,
                },
            )
            assert r.status_code == 200, r.text
            found.update((x["meter_id"], x["start_date"]) for x in r.json()["data"])
            if page >= r.json()["meta"]["total_pages"]:
                return found
            page += 1


def check_overload_answers(burst: Burst) -> None:
    """Only 201 and 503; each 503 is the service's error envelope with Retry-After."""
    assert set(burst.statuses) <= {201, 503}, burst.statuses
    for a in burst.answers:
        if a.status == 503:
            retry_after = a.headers.get("Retry-After")
            assert retry_after is not None and retry_after.isdigit(), a.headers
            assert int(retry_after) >= 1
            assert a.body["error"]["code"] == "service_unavailable", a.body
            assert a.body["error"]["retry_after"] == int(retry_after)
            assert "X-RateLimit-Limit" in a.headers
        else:
            assert a.body["data"]["meter_id"] == a.post.meter_id


def check_reads(burst: Burst) -> None:
    assert burst.read_seconds, "no read finished during the burst"
    assert set(burst.read_statuses) == {200}, burst.read_statuses
    assert max(burst.read_seconds) < READ_BOUND_SECONDS, max(burst.read_seconds)


def test_200_concurrent_writers_queue_without_freezing(service: Service) -> None:
    setup = make_setup(service)
    burst = run_burst(service, setup)
    check_overload_answers(burst)
    check_reads(burst)
    # Writers made progress, and nobody waited out a lock (the freeze: 30 s, then 500).
    assert burst.statuses[201] > 0 and burst.seconds < 20, (burst.statuses, burst.seconds)
    created = Counter((a.post.meter_id, a.post.start) for a in burst.answers if a.status == 201)
    assert stored(service, setup) == created

    # The writers refused with 503 come back after Retry-After: in the end every reading is
    # stored exactly once (a 503 stored nothing, or its retry would meet a 409 overlap).
    refused = [a.post for a in burst.answers if a.status == 503]
    if refused:
        again = run_burst(service, setup, refused, retry=True)
        assert again.statuses == Counter({201: len(refused)}), again.statuses
        check_reads(again)
    assert stored(service, setup) == Counter((p.meter_id, p.start) for p in setup.posts)


# --- a tight queue and a writer that holds the database ----------------------------------------


def _tight_service(tmp_path: Path, clock: FakeClock, limits: DatabaseLimits) -> Iterator[Service]:
    settings = service_settings(
        tmp_path / "tight.db", clock, rate_limits=RateLimits(**GENEROUS), database_limits=limits
    )
    app = create_app(settings)
    with fast(LiveServer(app)) as server:
        yield _bootstrap(app, clock, server.url)


@pytest.fixture
def tight(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    """Two writers at a time, four waiting, half a second's wait at most."""
    limits = DatabaseLimits(write_slots=2, write_queue=4, wait_seconds=0.5)
    yield from _tight_service(tmp_path, clock, limits)


def test_a_full_queue_answers_503_at_once(tight: Service) -> None:
    setup = make_setup(tight, writers=40, same_meter=10)
    began = time.monotonic()
    burst = run_burst(tight, setup)
    assert time.monotonic() - began < 10
    check_overload_answers(burst)
    check_reads(burst)
    # Two writing and four waiting at any time: most of the 40 are refused, none fails.
    assert burst.statuses[503] >= 20, burst.statuses
    created = Counter((a.post.meter_id, a.post.start) for a in burst.answers if a.status == 201)
    assert stored(tight, setup) == created


def test_a_writer_that_holds_the_meter_too_long_gets_503_not_500(tight: Service) -> None:
    """A transaction outside the API holds the meter (on SQLite: the database) for longer than a
    request may wait: writes to it answer 503 with Retry-After within the bound, reads flow, and
    the write succeeds once the holder is gone."""
    setup = make_setup(tight, writers=4, same_meter=4)
    meter = setup.meter_ids[0]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with tight.app.state.db.write() as session:
            session.scalars(select(Meter).where(Meter.id == meter).with_for_update()).one()
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(5)
        began = time.monotonic()
        burst = run_burst(tight, setup, setup.posts[:2])
        assert time.monotonic() - began < 3.0
        check_overload_answers(burst)
        assert burst.statuses == Counter({503: 2}), burst.statuses
        check_reads(burst)
    finally:
        release.set()
        holder.join(10)
    again = run_burst(tight, setup, setup.posts[:2], retry=True)
    assert again.statuses == Counter({201: 2}), again.statuses
    assert stored(tight, setup) == Counter((p.meter_id, p.start) for p in setup.posts[:2])


# --- the gate and the write session, without HTTP -------------------------------------------------


def test_gate_queues_in_order_refuses_when_full_and_bounds_the_wait() -> None:
    async def main() -> None:
        gate = Gate("write", slots=1, queue=2, wait_seconds=0.3)
        order: list[int] = []
        await gate.acquire()

        async def waiter(i: int) -> None:
            await gate.acquire()
            order.append(i)
            await asyncio.sleep(0.01)
            gate.release()

        tasks = [asyncio.create_task(waiter(i)) for i in range(2)]
        await asyncio.sleep(0.01)
        with pytest.raises(DatabaseBusy, match="waiting"):  # the queue is full: at once
            await gate.acquire()
        gate.release()
        await asyncio.gather(*tasks)
        assert order == [0, 1]

        # A waiter that is cancelled, or waits too long, leaves no slot behind.
        await gate.acquire()
        cancelled = asyncio.create_task(gate.acquire())
        await asyncio.sleep(0.01)
        cancelled.cancel()
        began = time.monotonic()
        with pytest.raises(DatabaseBusy, match="within"):
            await gate.acquire()
        assert 0.25 < time.monotonic() - began < 2
        gate.release()
        await asyncio.wait_for(gate.acquire(), 1)
        gate.release()

    asyncio.run(main())


def test_a_request_cancelled_while_opening_its_transaction_leaks_no_lock(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'cancel.db'}", DatabaseLimits(wait_seconds=2))
    db.create_all()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.write():
            holding.set()
            release.wait(5)

    async def main() -> None:
        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(5)

        async def write() -> None:
            async with db.request_write():
                pass

        task = asyncio.create_task(write())
        await asyncio.sleep(0.1)  # its thread now waits for the lock
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        holder.join(5)
        # The lock the cancelled request's thread took is given back: the next write gets it.
        async with asyncio.timeout(1.5):
            async with db.request_write() as session:
                session.add(Organisation(id="org_x", name="X", created_at=FakeClock()()))

    try:
        asyncio.run(main())
    finally:
        db.dispose()


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("error", "busy"),
    [
        (OperationalError("BEGIN", {}, sqlite3.OperationalError("database is locked")), True),
        (OperationalError("INSERT", {}, sqlite3.OperationalError("disk I/O error")), False),
        (PoolTimeout("QueuePool limit reached"), True),
        (DBAPIError("SELECT", {}, _PgError("55P03")), True),  # lock_timeout
        (DBAPIError("SELECT", {}, _PgError("40P01")), True),  # deadlock broken
        (IntegrityError("INSERT", {}, _PgError("23505")), False),  # a real conflict
        (ValueError("no"), False),
    ],
)
def test_what_counts_as_busy(error: Exception, busy: bool) -> None:
    assert is_busy(error) is busy
