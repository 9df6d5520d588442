"""A replacement whose new dates reach into a locked period (issue 30, decisions D23): the stored
readings it replaces end after the lock, so the service would delete them, but it refuses a
reading that *starts* on or before the lock date. Deleting first and submitting second left
neither; the group is now refused before anything of it is deleted, with the service's reason."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest.run.import_file import ImportOptions, import_file
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.trail import Trail
from tests.conftest import Org, Service
from tests.corrections.conftest import PROFILE, bills, events, month, stored

pytestmark = pytest.mark.anyio

FEB, MAR, APR = month(2024, 2), month(2024, 3), month(2024, 4)
LOCK = dt.date(2024, 1, 31)
TODAY = dt.date(2026, 11, 20)
# A stored bill over the lock date: it ends after the lock (deletable), it starts inside it (a
# reading with its dates could not be submitted again).
ACROSS = (dt.date(2024, 1, 15), dt.date(2024, 2, 14))


async def run(service: Service, org: Org, path: Path, **options) -> object:
    async with AsyncServiceClient(service.base_url, org.key, profile=PROFILE) as client:
        return await import_file(client, PROFILE, path, ImportOptions(today=TODAY, **options))


async def test_a_rebill_reaching_into_the_locked_period_deletes_nothing(service, org, tmp_path):
    m, n = org.meters
    first = bills(
        tmp_path / "first.csv",
        [
            (m, *FEB, 900, 150.0, 20.0),
            (m, *MAR, 800, 140.0, 18.0),
            (n, *ACROSS, 500, None, None),
            (n, dt.date(2024, 2, 15), dt.date(2024, 3, 14), 600, None, None),
        ],
    )
    assert (await run(service, org, first)).accepted == 4
    with service.client(org.key) as api:
        r = api.post(f"/v1/buildings/{org.building}/lock", json={"locked_through": str(LOCK)})
        assert r.status_code in (200, 201), r.text
    path = bills(
        tmp_path / "rebill.csv",
        [
            (m, dt.date(2024, 1, 20), FEB[1], 1200, None, None),  # rebill from inside the lock
            (m, *MAR, 810, 140.0, 18.0),  # a correction after the lock: applied
            (n, *ACROSS, 555, None, None),  # a correction of the bill across the lock date
            (n, *APR, 700, None, None),  # a new reading
        ],
    )
    deleted_before = len(events(service, "meter.reading.deleted"))
    done = await run(service, org, path, update=True)
    assert done.exit_code == 13, done
    assert (done.corrections, done.rebills, done.replaced, done.refused) == (1, 0, 1, 2)
    assert (done.accepted, done.rejected) == (1, 2)
    # Nothing of the refused groups was deleted: the old readings stay, the new are not sent.
    assert stored(service, org, m) == [(*FEB, 900, 150.0, 20.0), (*MAR, 810, 140.0, 18.0)]
    assert stored(service, org, n) == [
        (*ACROSS, 500, None, None),
        (dt.date(2024, 2, 15), dt.date(2024, 3, 14), 600, None, None),
        (*APR, 700, None, None),
    ]
    deleted = events(service, "meter.reading.deleted")[deleted_before:]
    assert [e["reading"]["consumption"] for e in deleted] == [800]  # March's correction only

    with Journal() as journal:
        rejected = {r.source_row: r for r in journal.rows(done.import_id, "rejected")}
        assert sorted(rejected) == [2, 4]
        for row in rejected.values():
            assert row.code == "building_locked"
        # The service's own words for a reading starting inside the lock.
        assert (
            "The building's readings are locked through 2024-01-31; a reading starting "
            "2024-01-20 falls in the locked period." in (rejected[2].reason or "")
        )
        assert "2024-01-15" in (rejected[4].reason or "")
        trail = Trail(journal).for_meter([m, n])
    statuses = {(t["meter_id"], t["old"]["start_date"]): t["status"] for t in trail}
    assert statuses == {
        (m, "2024-02-01"): "refused",
        (m, "2024-03-01"): "deleted",
        (n, "2024-01-15"): "refused",
    }
    report = Path(done.reject_report).read_text(encoding="utf-8-sig")
    assert "was not replaced" in report and "locked through 2024-01-31" in report

    # Run again: the refused groups stay refused, nothing is deleted or sent twice.
    again = await run(service, org, path, update=True, resume=True)
    assert stored(service, org, m) == [(*FEB, 900, 150.0, 20.0), (*MAR, 810, 140.0, 18.0)]
    assert len(stored(service, org, n)) == 3
    assert len(events(service, "meter.reading.deleted")) - deleted_before == 1
    assert again.exit_code in (0, 13)


async def test_killed_after_the_delete_then_locked_then_resumed_puts_the_old_back(
    service, org, tmp_path
):
    """The lock moves between a kill and `--resume`: the group's new reading can no longer be
    submitted, so the old reading its killed run deleted is put back, never neither."""
    from tests.corrections.test_crash import DieAt
    from tests.importer.helpers import Crash

    m = org.meters[0]
    first = bills(tmp_path / "first.csv", [(m, *FEB, 900, 150.0, 20.0)])
    assert (await run(service, org, first)).accepted == 1
    path = bills(tmp_path / "rebill.csv", [(m, dt.date(2024, 1, 20), FEB[1], 1200, None, None)])
    dying = DieAt("DELETE", before=False)  # the service deleted it; the answer never read
    async with AsyncServiceClient(
        service.base_url, org.key, profile=PROFILE, transport=dying
    ) as client:
        with pytest.raises(Crash):
            await import_file(client, PROFILE, path, ImportOptions(today=TODAY, update=True))
    assert stored(service, org, m) == []
    with service.client(org.key) as api:
        r = api.post(f"/v1/buildings/{org.building}/lock", json={"locked_through": str(LOCK)})
        assert r.status_code in (200, 201), r.text

    done = await run(service, org, path, update=True, resume=True)
    assert done.exit_code == 13 and (done.rebills, done.refused, done.rejected) == (0, 1, 1)
    assert stored(service, org, m) == [(*FEB, 900, 150.0, 20.0)]
    with Journal() as journal:
        [row] = journal.rows(done.import_id, "rejected")
        assert row.code == "building_locked" and "locked through 2024-01-31" in (row.reason or "")
        [entry] = Trail(journal).for_meter([m])
    assert entry["status"] == "restored" and entry["reason"].startswith("put back: ")
