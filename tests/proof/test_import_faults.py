"""`bpsync import` through 10 % injected faults of every kind ends with exactly the file on the
server: every (meter, start, end, consumption) once, none missing, none twice.

Sizes: 100 meters x 80 daily readings plus 20 meters with one monthly bill (8,020 readings, about
140 write requests) by default, so CI stays fast; 250 meters x 80 plus 20 (20,020 readings, about
300 write requests) with `BPSYNC_PROOF_FULL=1`. The meters are created through the
same faulty API first (an unanswered create is looked up by name before it is tried again), the
import runs in-process through `import_file` (the code `bpsync import` runs) with a client whose
timeout is shorter than the injected hang, and the result is read back through the API (reads
retried through the faults) and cross-checked against the database itself."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bpservice.app import create_app
from bpservice.db.models import Reading
from bpservice.faults import FAULT_KINDS, FaultSettings
from bpservice.settings import RateLimits, Settings
from bpsync.client import AsyncServiceClient, RetryPolicy
from bpsync.ingest.run.import_file import ImportOptions, import_file
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap
from tests.proof.conftest import FULL, count_rows

pytestmark = pytest.mark.anyio

# Many meters with 80 daily readings each (one batch call apiece), plus meters holding a single
# monthly bill (a single call apiece): enough write requests that every fault kind hits writes.
METERS = 250 if FULL else 100
DAYS = 80
SINGLE_METERS = 20
FIRST_DAY = dt.date(2021, 1, 1)
PROFILE = "proof"
TODAY = dt.date(2026, 11, 20)
# The client gives up after TIMEOUT; an injected hang lasts HANG, then the request still runs.
# TIMEOUT stays well above a real 200-reading batch on 2 cores, so only injected hangs time out.
TIMEOUT = 0.5
HANG = 1.0
# Generous limits, the bulk one lower than the per-key one so that a batch's answer describes
# the bulk bucket (the service's headers name the tightest bucket) and the client learns it.
LIMITS = RateLimits(per_key=1_000_000, per_user=1_000_000, bulk=100_000, reports=1_000)
# Ten consecutive faults (p = 1e-10 at 10 %) are needed to fail an idempotent call.
PATIENT = RetryPolicy(max_retries=9, base_delay=0.001, max_delay=0.01, rate_limit_jitter=0.0)
Row = tuple[str, dt.date, dt.date, float]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def faulty(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    """The real service over loopback with 10 % faults of every kind."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'faulty.db'}",
        rate_limits=LIMITS,
        clock=clock,
        run_workers=False,
        faults=FaultSettings(rate=0.1, seed=2026, kinds=FAULT_KINDS, hang_seconds=HANG),
    )
    app = create_app(settings)
    with LiveServer(app) as server:
        yield _bootstrap(app, clock, server.url)


@pytest.fixture(autouse=True)
def private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The journal, meter map and rate-limit state go to this test's own folders."""
    for name in list(os.environ):
        if name.startswith("BPSYNC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("BPSYNC_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("BPSYNC_STATE_DIR", str(tmp_path / "state"))
    yield tmp_path


class NoSleep:
    """Injected 429/503 answers say Retry-After: 1; the client's waits are recorded, not slept."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def consumption(meter: int, day: int) -> float:
    """Values that vary (so a mix-up between rows would show) but stay within ±25 % of the
    meter's level (no spike/drop warnings to muddy the counts)."""
    return round(80 + 3 * meter + ((meter * 31 + day * 17) % 41) / 4, 2)


def write_long_csv(path: Path, meters: list[str], days: int, singles: list[str]) -> list[Row]:
    """The `long_csv` layout: `days` readings a day for each of `meters` (inclusive ends, D18),
    then one monthly bill for each of `singles`."""
    rows: list[Row] = []
    lines = ["Meter ID,Start Date,End Date,Consumption,Unit"]
    for m, meter in enumerate(meters):
        for d in range(days):
            day = FIRST_DAY + dt.timedelta(days=d)
            value = consumption(m, d)
            rows.append((meter, day, day, value))
            lines.append(f"{meter},{day},{day},{value},kWh")
    for m, meter in enumerate(singles):
        start, end = dt.date(2021, 3, 1), dt.date(2021, 3, 31)
        value = 2500.0 + m
        rows.append((meter, start, end, value))
        lines.append(f"{meter},{start},{end},{value},kWh")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rows


def create_once(api: httpx.Client, path: str, body: dict, find: dict[str, str]) -> dict:
    """POST through faults without ever creating twice: after any failure, look for the object
    (by the fields in `find`) on the list endpoint before trying again."""
    for _ in range(20):
        try:
            r = api.post(path, json=body)
            if r.status_code == 201:
                return r.json()["data"]
        except httpx.TransportError:
            pass  # dropped, reset or timed out: it may have been applied
        for _ in range(20):  # the list is idempotent: retry it until it answers
            try:
                listed = api.get(path, params={"per_page": 200})
            except httpx.TransportError:
                continue
            if listed.status_code == 200:
                break
        else:
            raise AssertionError(f"could not list {path} through the faults")
        for item in listed.json()["data"]:
            if all(item.get(k) == v for k, v in find.items()):
                return item
    raise AssertionError(f"could not create {body} through the faults")


def make_meters(service: Service, count: int) -> tuple[str, list[str]]:
    with httpx.Client(
        base_url=service.base_url,
        headers={"Authorization": f"Bearer {service.test_key}"},
        timeout=TIMEOUT,
    ) as api:
        prop = create_once(
            api,
            "/v1/properties",
            {
                "name": "Faults",
                "address": {"street": "1 A St", "city": "Leeds", "country": "GB"},
                "type": "office",
                "internal_ref": "FAULTS",
            },
            {"internal_ref": "FAULTS"},
        )
        building = create_once(
            api,
            f"/v1/properties/{prop['id']}/buildings",
            {
                "name": "Main",
                "primary_use_type": "office",
                "gfa_m2": 20_000,
                "year_built": 2001,
                "floors": 8,
            },
            {"name": "Main"},
        )
        meters = [
            create_once(
                api,
                f"/v1/buildings/{building['id']}/meters",
                {"type": "electricity", "unit": "kWh", "name": f"E{i:02d}"},
                {"name": f"E{i:02d}"},
            )["id"]
            for i in range(count)
        ]
    return building["id"], meters


async def read_back(client: AsyncServiceClient, building: str, meters: list[str]) -> list[Row]:
    """Every stored reading of the meters, through the API (and its faults)."""
    out: list[Row] = []
    for m in meters:
        async for r in client.readings.list(building, m, per_page=200):
            out.append((m, r.start_date, r.end_date, r.consumption))
    return out


async def import_until_complete(
    client: AsyncServiceClient, path: Path, uploads: bool = True
) -> list:
    """`bpsync import FILE`, then `--resume` while it stops short (a call kept failing)."""
    summaries = []
    for attempt in range(5):
        options = ImportOptions(
            template="long_csv", resume=attempt > 0, today=TODAY, uploads=uploads
        )
        summaries.append(await import_file(client, PROFILE, path, options))
        if summaries[-1].status == "complete":
            break
    return summaries


@pytest.mark.parametrize("uploads", [True, False], ids=["uploads", "batches"])
async def test_import_through_faults_stores_exactly_the_file(
    faulty: Service, tmp_path: Path, uploads: bool
) -> None:
    service = faulty
    building, meters = make_meters(service, METERS + SINGLE_METERS)
    assert len(set(meters)) == METERS + SINGLE_METERS
    rows = write_long_csv(tmp_path / "bills.csv", meters[:METERS], DAYS, meters[METERS:])
    assert len(rows) == METERS * DAYS + SINGLE_METERS
    # A first small import (two of the file's rows) teaches the client the bulk bucket, as any
    # earlier import would; the big one then plans batches, and finds those two already there.
    warm = tmp_path / "first.csv"
    lines = (tmp_path / "bills.csv").read_text(encoding="utf-8").splitlines()
    warm.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")

    sleeper = NoSleep()
    client = AsyncServiceClient(
        service.base_url,
        service.test_key,
        profile=PROFILE,
        timeout=TIMEOUT,
        retry=PATIENT,
        sleep=sleeper,
    )
    async with client:
        first = await import_until_complete(client, warm, uploads)
        assert first[-1].status == "complete"
        summaries = await import_until_complete(client, tmp_path / "bills.csv", uploads)
        stored = await read_back(client, building, meters)

    final = summaries[-1]
    assert final.status == "complete", [s.message for s in summaries]
    assert final.rejected == 0 and final.pending == 0
    if uploads:
        # CSV uploads for the daily meters, single calls alongside (C1).
        assert summaries[0].plan and summaries[0].plan["upload_calls"] >= 1
    else:
        # Batches for the daily meters (the bulk bucket was known), single calls for the others.
        assert final.plan and final.plan["single_calls"] == SINGLE_METERS
    # Every row is accounted for once: accepted, or found already stored (the two rows of the
    # first import, and any write that landed after its client gave up and was re-sent).
    assert final.accepted + final.skipped == len(rows), (final.accepted, final.skipped)
    assert set(final.skipped_by_reason) == {"already_stored"}, final.skipped_by_reason
    counts = Counter(stored)
    assert not [r for r, n in counts.items() if n > 1], "a reading was stored twice"
    assert not set(rows) - set(counts), "a reading is missing"
    assert not set(counts) - set(rows), "a reading the file does not hold was stored"
    assert sorted(stored) == sorted(rows)
    assert count_rows(service, Reading) == len(rows)  # the database agrees with the API
    # The faults really happened, of every kind.
    injector = service.app.state.fault_injector
    assert set(injector.counts) == set(FAULT_KINDS), injector.counts
    assert sum(injector.counts.values()) >= 0.05 * injector.requests
    assert 1.0 in sleeper.waits  # Retry-After of an injected 429/503 was honoured
    # Some writes had an unknown outcome and were settled by looking, not by re-sending blindly.
    with sqlite3.connect(tmp_path / "state" / "imports.sqlite") as journal:
        statuses = dict(journal.execute("SELECT status, COUNT(*) FROM requests GROUP BY status"))
    assert statuses.get("reconciled", 0) > 0 and "in_flight" not in statuses, statuses
