"""The client's CSV upload (`client.readings.upload`) against the real service: readings of two
meters in one bulk call, exact values through the CSV (floats written with repr), a refused row
named by its index, and the size limit checked before sending."""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from bpsync.client import AsyncServiceClient
from tests.client.test_endpoints import make_meter
from tests.conftest import Service

pytestmark = pytest.mark.anyio


async def test_upload_two_meters_in_one_call(client: AsyncServiceClient) -> None:
    _, building_id, first = await make_meter(client)
    second = (await client.meters.create(building_id, type="natural_gas", unit="kWh")).id
    readings = [
        (first, {"start_date": "2025-01-01", "end_date": "2025-01-31", "consumption": 0.1 + 0.2}),
        (second, {"start_date": dt.date(2025, 1, 1), "end_date": "2025-01-31", "consumption": 7}),
        (first, {"start_date": "2025-01-15", "end_date": "2025-02-10", "consumption": 1}),
        (
            second,
            {
                "start_date": "2025-02-01",
                "end_date": "2025-02-28",
                "consumption": 1e-05,
                "cost": 12.5,
                "cost_currency": "EUR",
            },
        ),
    ]
    result = await client.readings.upload(readings)
    assert (result.accepted, result.rejected) == (3, 1)
    assert [r.consumption for r in result.readings] == [0.1 + 0.2, 7.0, 1e-05]
    assert result.readings[2].cost == 12.5 and result.readings[2].cost_currency == "EUR"
    [error] = result.errors
    assert (error.index, error.row, error.meter_id, error.code) == (2, 4, first, "reading_overlap")
    stored = await client.readings.list(building_id, second).to_list()
    assert [r.consumption for r in stored] == [7.0, 1e-05]


async def test_upload_size_is_checked_before_sending(client: AsyncServiceClient) -> None:
    with pytest.raises(ValueError, match="1 to 5000"):
        await client.readings.upload([])
    row = {"start_date": "2025-01-01", "end_date": "2025-01-01", "consumption": 1}
    with pytest.raises(ValueError, match="not 5001"):
        await client.readings.upload([("mtr_x", row)] * 5001)


async def test_list_all_meters_by_ids(client: AsyncServiceClient) -> None:
    """GET /v1/meters (C2): the organisation's meters, or only the ids asked for, in one call."""
    _, building_id, first = await make_meter(client)
    second = (await client.meters.create(building_id, type="water", unit="m3")).id
    every = await client.meters.list_all().to_list()
    assert {m.id for m in every} == {first, second}
    page = await client.meters.list_all(ids=[second, "mtr_unknown"])
    assert [(m.id, m.building_id, m.unit) for m in page.items] == [(second, building_id, "m3")]
    with pytest.raises(ValueError, match="not 201"):
        client.meters.list_all(ids=[f"mtr_{i}" for i in range(201)])


async def test_readings_of_many_meters(client: AsyncServiceClient) -> None:
    """GET /v1/readings (C3) through the client: two meters' readings in one list."""
    _, building_id, first = await make_meter(client)
    second = (await client.meters.create(building_id, type="electricity", unit="kWh")).id
    for meter, value in ((first, 1.5), (second, 2.5)):
        await client.readings.create(
            building_id, meter, start_date="2025-01-01", end_date="2025-01-31", consumption=value
        )
    got = await client.readings.list_many([first, second], start_date="2025-01-01").to_list()
    assert sorted((r.meter_id, r.consumption) for r in got) == sorted([(first, 1.5), (second, 2.5)])
    with pytest.raises(ValueError, match="not 0"):
        client.readings.list_many([])
    # The same list read as spans: the period, consumption and ids, and nothing else kept.
    spans = await client.readings.spans_many([first, second], end_date="2025-01-31").to_list()
    assert sorted((s.meter_id, s.start_date, s.end_date, s.consumption) for s in spans) == sorted(
        (r.meter_id, r.start_date, r.end_date, r.consumption) for r in got
    )
    assert {s.id for s in spans} == {r.id for r in got}
    assert not hasattr(spans[0], "unit") and spans[0].model_extra is None
    with pytest.raises(ValueError, match="not 201"):
        client.readings.spans_many([f"mtr_{i}" for i in range(201)])


async def test_pages_asked_ahead_are_the_pages_in_order(service: Service) -> None:
    """`pages(ahead=2)`: once the first page gives the count, the next two are asked for at
    once; the pages come back in order, the same as one at a time, with the same requests."""

    class Watching(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()
            self.pages: list[str] = []
            self.in_flight = self.most_in_flight = 0

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/v1/readings":
                self.pages.append(request.url.params["page"])
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                response = await self.inner.handle_async_request(request)
                await response.aread()
                return response
            finally:
                self.in_flight -= 1

    async with AsyncServiceClient(service.base_url, service.test_key) as c:
        _, building_id, meter = await make_meter(c)
        first = dt.date(2020, 1, 1)
        rows = [
            {"start_date": str(d), "end_date": str(d), "consumption": float(n)}
            for n, d in enumerate(first + dt.timedelta(days=k) for k in range(7))
        ]
        await c.readings.create_batch(building_id, meter, rows)
    results = {}
    for ahead in (0, 2):
        watching = Watching()
        async with AsyncServiceClient(service.base_url, service.test_key, transport=watching) as c:
            pages = [
                [r.consumption for r in page.items]
                async for page in c.readings.spans_many([meter], per_page=2).pages(ahead=ahead)
            ]
        results[ahead] = (pages, sorted(watching.pages), watching.most_in_flight)
    assert results[0][0] == results[2][0] == [[0, 1], [2, 3], [4, 5], [6]]
    assert results[0][1] == results[2][1] == ["1", "2", "3", "4"]
    assert results[0][2] == 1 and results[2][2] == 2

    # Leaving early cancels what was asked ahead: nothing is left running.
    async with AsyncServiceClient(service.base_url, service.test_key) as c:
        walk = c.readings.spans_many([meter], per_page=2).pages(ahead=2)
        async for page in walk:
            if page.meta.page == 2:
                break
        await walk.aclose()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not [t for t in tasks if "fetch" in repr(t.get_coro())]
