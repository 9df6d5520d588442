"""Imports through the CSV upload (decisions C1) against the real service: a many-meter file in
one bulk call with every reading stored once, exact and journaled with its id; a service without
the upload (its route answers 404) gets the same readings as batches; a lost answer to an upload
is reconciled meter by meter and only the missing rows are sent again."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from bpsync.client import readings as readings_module
from bpsync.ingest.run.import_file import ImportOptions, import_file
from bpsync.ingest.send.journal import Journal
from tests.importer.conftest import PROFILE
from tests.importer.test_resume import UNITS, expected, lossy, meter_ids, stored_set

pytestmark = pytest.mark.anyio


def _file(tmp_path, meters: list[str]):
    from tests.importer.helpers import monthly_csv

    return monthly_csv(
        tmp_path / "bills.csv", {m: 12 + i for i, m in enumerate(meters)}, units=UNITS
    )


async def test_a_many_meter_file_goes_in_one_upload(client, registered, tmp_path):
    meters = await meter_ids(client)
    path = _file(tmp_path, meters)
    total = sum(12 + i for i in range(len(meters)))
    dry = await import_file(client, PROFILE, path, ImportOptions(dry_run=True))
    assert dry.plan and dry.plan["upload_calls"] == 1 and "1 upload" in (dry.message or "")
    summary = await import_file(client, PROFILE, path)
    assert summary.status == "complete" and summary.accepted == total and summary.rejected == 0
    assert summary.plan and summary.plan["upload_calls"] == 1
    final = await stored_set(client)
    assert len(final) == len(set(final)) == total and set(final) == expected(path)
    with Journal() as journal:
        rows = journal.rows(summary.import_id)
        assert {r.status for r in rows} == {"accepted"}
        assert all(r.reading_id and r.reading_id.startswith("rdg_") for r in rows)
    assert (await import_file(client, PROFILE, path)).status == "no-op"


async def test_a_service_without_the_upload_gets_batches(client, registered, tmp_path, monkeypatch):
    """The route answers 404 (as a service before C1 would): nothing was stored, the rows go as
    batches, and later uploads of the same run are not tried."""
    monkeypatch.setattr(readings_module, "UPLOAD_PATH", "/v1/readings/upload-before-c1")
    meters = await meter_ids(client)
    path = _file(tmp_path, meters)
    summary = await import_file(client, PROFILE, path)
    total = sum(12 + i for i in range(len(meters)))
    assert summary.status == "complete" and summary.accepted == total
    final = await stored_set(client)
    assert len(final) == len(set(final)) == total and set(final) == expected(path)


async def test_a_lost_upload_answer_is_reconciled(service, client, registered, tmp_path):
    meters = await meter_ids(client)
    path = _file(tmp_path, meters)
    total = sum(12 + i for i in range(len(meters)))
    lossy_client, transport = lossy(service, {1}, httpx.ReadError)
    async with lossy_client:
        summary = await import_file(lossy_client, PROFILE, path, ImportOptions(concurrency=1))
    assert transport.lost == 1
    assert summary.status == "complete" and summary.accepted == total and summary.rejected == 0
    final = await stored_set(client)
    assert len(final) == len(set(final)) == total


async def test_the_rest_is_planned_again_when_the_limits_differ(scaled_service, tmp_path):
    """A first import (nothing learned about the bulk bucket) plans with the spec's 10 bulk calls
    a window; the service allows 3. After the first upload the headers say so, the import stops
    at the next call boundary, plans the readings left with the service's figures, says so, and
    finishes with every reading stored once."""
    from bpsync.client import AsyncServiceClient

    service = scaled_service(per_key=5000, bulk=3)
    async with AsyncServiceClient(service.base_url, service.test_key, profile=PROFILE) as api:
        prop = await api.properties.create(
            name="Depot",
            address={"street": "1 Way", "city": "Leeds", "country": "GB"},
            type="office",
        )
        building = await api.buildings.create(
            prop.id, name="Main", primary_use_type="office", gfa_m2=900, year_built=1990, floors=2
        )
        meters = [
            (await api.meters.create(building.id, type="electricity", unit="kWh")).id
            for _ in range(7)
        ]
        lines = ["Meter ID,Start Date,End Date,Consumption,Unit"]
        for m in meters:
            for d in range(800):  # 5,600 daily readings: two uploads
                day = dt.date(2022, 1, 1) + dt.timedelta(days=d)
                lines.append(f"{m},{day},{day},{10 + d % 5},kWh")
        path = tmp_path / "daily.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        notes: list[str] = []
        summary = await import_file(api, PROFILE, path, note=notes.append)
        assert summary.status == "complete" and summary.accepted == 5600, summary.message
        said = [n for n in notes if n.startswith("re-planned")]
        assert said and "bulk limit is 3 per 60 s; the plan assumed 10 per 60 s" in said[0]
        assert said[0] in summary.notes
        stored = 0
        for m in meters:
            stored += (await api.readings.list(building.id, m, per_page=1)).meta.total
        assert stored == 5600
