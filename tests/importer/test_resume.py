"""Nothing lost, nothing sent twice: answers lost after the service committed, a crash between
"sent" and the answer, and the resume that follows."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest.lookup.fetch import fetch_portfolio
from bpsync.ingest.run.import_file import ImportOptions, import_file, target_of
from bpsync.ingest.send.journal import Journal
from tests.conftest import Service
from tests.importer.conftest import PROFILE
from tests.importer.helpers import Crash, LoseAnswer, monthly_csv, server_readings

pytestmark = pytest.mark.anyio


UNITS: dict[str, str] = {}


async def meter_ids(client: AsyncServiceClient) -> list[str]:
    """The sample portfolio's 7 meters (their units noted for the generated files)."""
    portfolio = await fetch_portfolio(client, {})
    UNITS.update({m.id: m.unit for m in portfolio.catalog.meters.values()})
    return sorted(portfolio.building_of)


def expected(path) -> set[tuple]:
    lines = path.read_text().splitlines()[1:]
    return {
        (m, dt.date.fromisoformat(s), dt.date.fromisoformat(e), float(c))
        for m, s, e, c, _ in (line.split(",") for line in lines)
    }


async def stored_set(client: AsyncServiceClient) -> list[tuple]:
    out = []
    for meter, rows in (await server_readings(client)).items():
        out += [(meter, s, e, c) for s, e, c, _ in rows]
    return out


def lossy(service: Service, fail_on: set[int], error) -> tuple[AsyncServiceClient, LoseAnswer]:
    transport = LoseAnswer(fail_on, error)
    client = AsyncServiceClient(
        service.base_url, service.test_key, profile=PROFILE, transport=transport
    )
    return client, transport


async def test_crash_between_sent_and_answer_then_resume(service, client, registered, tmp_path):
    meters = await meter_ids(client)
    # three meters with batches, four with one reading each (single calls)
    path = monthly_csv(
        tmp_path / "bills.csv",
        {meters[0]: 30, meters[1]: 24, meters[2]: 12} | {m: 1 for m in meters[3:]},
        units=UNITS,
    )
    crashing, transport = lossy(service, {3}, Crash)
    async with crashing:
        with pytest.raises(Crash):
            # Batches and single calls, numbered; uploads: tests/importer/test_uploads.py.
            await import_file(crashing, PROFILE, path, ImportOptions(concurrency=1, uploads=False))
    assert transport.lost == 1
    with Journal() as journal:
        flights = journal.in_flight(target_of(client))
        # journaled as sent, never answered (the other lane's request was in flight too)
        assert 1 <= len(flights) <= 2 and all(f.rows for f in flights)
        record = journal.latest(target_of(client), _hash(path))
        assert record is not None and record.status == "open"
    committed = await stored_set(client)
    assert len(committed) >= 1  # the service did commit the lost request
    notes: list[str] = []
    # A fresh limiter state (another profile name): the crashed run left a bulk-bucket probe
    # that would make the next run of the same profile wait up to 5 s for it to expire.
    async with AsyncServiceClient(service.base_url, service.test_key, profile="after") as fresh:
        resumed = await import_file(
            fresh, PROFILE, path, ImportOptions(resume=True), note=notes.append
        )
    assert any(f"reconciled {len(flights)} request" in n for n in notes)
    assert any("resuming" in n for n in notes)
    assert resumed.status == "complete" and resumed.pending == 0 and resumed.rejected == 0
    assert resumed.accepted == 70  # every row accepted once, across both runs
    final = await stored_set(client)
    assert len(final) == len(set(final)) == 70
    assert set(final) == expected(path)
    with Journal() as journal:
        assert journal.in_flight(target_of(client)) == []
        rows = journal.rows(resumed.import_id)
        assert {r.status for r in rows} == {"accepted"}
        assert all(r.reading_id and r.reading_id.startswith("rdg_") for r in rows)
    assert (await import_file(client, PROFILE, path)).status == "no-op"


@pytest.mark.parametrize("lost", [{1}, {2, 3}])
async def test_lost_answers_are_reconciled_in_the_same_run(
    service, client, registered, tmp_path, lost
):
    meters = await meter_ids(client)
    path = monthly_csv(
        tmp_path / "bills.csv", {meters[0]: 14, meters[1]: 1, meters[2]: 1}, units=UNITS
    )
    lossy_client, transport = lossy(service, lost, httpx.ReadError)
    async with lossy_client:
        summary = await import_file(
            lossy_client, PROFILE, path, ImportOptions(concurrency=1, uploads=False)
        )
    assert transport.lost == len(lost)
    assert summary.status == "complete" and summary.accepted == 16 and summary.rejected == 0
    final = await stored_set(client)
    assert len(final) == len(set(final)) == 16 and set(final) == expected(path)


async def test_overlap_with_the_same_values_is_already_there(service, client, registered, tmp_path):
    """Readings stored by someone else after the file was checked: the service refuses them as
    overlaps, and since the values are the same they count as already there, not errors."""
    meters = await meter_ids(client)
    path = monthly_csv(tmp_path / "bills.csv", {meters[0]: 3, meters[1]: 1}, units=UNITS)
    portfolio = await fetch_portfolio(client, {})

    class StoreFirst(httpx.AsyncBaseTransport):
        """Before the first readings POST, another client stores the same readings."""

        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()
            self.done = False

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "POST" and "/readings" in request.url.path and not self.done:
                self.done = True
                with service.client() as other:
                    for line in path.read_text().splitlines()[1:]:
                        m, s, e, c, _ = line.split(",")
                        url = f"/v1/buildings/{portfolio.building_of[m]}/meters/{m}/readings"
                        answer = other.post(
                            url, json={"start_date": s, "end_date": e, "consumption": float(c)}
                        )
                        assert answer.status_code == 201, answer.text
            return await self.inner.handle_async_request(request)

    async with AsyncServiceClient(
        service.base_url, service.test_key, profile=PROFILE, transport=StoreFirst()
    ) as racing:
        summary = await import_file(racing, PROFILE, path)
    assert summary.rejected == 0 and summary.accepted == 0
    assert summary.skipped == 4 and summary.skipped_by_reason == {"already_stored": 4}
    assert len(await stored_set(client)) == 4


async def test_unreachable_service_stops_cleanly_and_resumes(service, client, registered, tmp_path):
    meters = await meter_ids(client)
    path = monthly_csv(tmp_path / "bills.csv", {meters[0]: 5, meters[1]: 5}, units=UNITS)

    class RefuseWrites(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "POST":
                raise httpx.ConnectError("refused", request=request)
            return await self.inner.handle_async_request(request)

    from bpsync.client.base import RetryPolicy

    async with AsyncServiceClient(
        service.base_url,
        service.test_key,
        profile=PROFILE,
        transport=RefuseWrites(),
        retry=RetryPolicy(max_retries=0),
    ) as down:
        summary = await import_file(down, PROFILE, path)
    assert summary.status == "interrupted" and summary.pending == 10
    assert summary.exit_code == 130 and "--resume" in summary.message
    assert await stored_set(client) == []
    resumed = await import_file(client, PROFILE, path, ImportOptions(resume=True))
    assert resumed.status == "complete" and resumed.accepted == 10


def _hash(path) -> str:
    from bpsync.ingest.run.import_file import file_hash

    return file_hash(path)


class _RefuseLookups(httpx.AsyncBaseTransport):
    """The service is reachable for everything but the meter lookups."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.rstrip("/").endswith("/meters"):
            raise httpx.ConnectError("refused", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.timeout(60)
async def test_lookup_failure_while_the_file_is_read_ends_the_import(
    service, client, registered, tmp_path
):
    """The file is read while its meters are looked up (the reader waits for them only where
    meters are resolved): a failed lookup reaches the reader too, so the import ends with the
    lookup's error instead of waiting, and nothing is journaled or sent."""
    meters = await meter_ids(client)
    path = monthly_csv(tmp_path / "bills.csv", {meters[0]: 30, meters[1]: 30}, units=UNITS)
    await _import_refused(service, _RefuseLookups(), path, client)
    assert await stored_set(client) == []
    done = await import_file(client, PROFILE, path)  # and the next run imports it
    assert done.status == "complete" and done.accepted == 60


class _RefuseReadingLists(_RefuseLookups):
    """Meters are found, but the stored readings cannot be listed."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.rstrip("/").endswith("/readings"):
            raise httpx.ConnectError("refused", request=request)
        return await self.inner.handle_async_request(request)


@pytest.mark.timeout(60)
async def test_stored_readings_failing_while_the_check_waits_end_the_import(
    service, client, registered, tmp_path
):
    """The check starts while the stored readings it needs are still arriving: when they cannot
    be listed the check stops waiting and the import ends with the listing's error, nothing
    journaled or sent."""
    meters = await meter_ids(client)
    first = monthly_csv(tmp_path / "first.csv", {meters[0]: 3}, units=UNITS)
    assert (await import_file(client, PROFILE, first)).accepted == 3  # now it holds readings
    path = monthly_csv(
        tmp_path / "more.csv", {meters[0]: 6, meters[1]: 6}, dt.date(2022, 4, 1), units=UNITS
    )
    await _import_refused(service, _RefuseReadingLists(), path, client)
    assert len(await stored_set(client)) == 3


async def _import_refused(service, transport, path, client) -> None:
    """Importing `path` through `transport` (no retries) ends with its connection error, and
    nothing is journaled."""
    from bpsync.client import APIConnectionError
    from bpsync.client.base import RetryPolicy

    async with AsyncServiceClient(
        service.base_url,
        service.test_key,
        profile=PROFILE,
        transport=transport,
        retry=RetryPolicy(max_retries=0),
    ) as down:
        with pytest.raises(APIConnectionError):
            await import_file(down, PROFILE, path)
    with Journal() as journal:
        assert journal.latest(target_of(client), _hash(path), None) is None
