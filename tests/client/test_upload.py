"""The client's CSV upload (`client.readings.upload`) against the real service: readings of two
meters in one bulk call, exact values through the CSV (floats written with repr), a refused row
named by its index, and the size limit checked before sending."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.client import AsyncServiceClient
from tests.client.test_endpoints import make_meter

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
