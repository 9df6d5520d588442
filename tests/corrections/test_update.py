"""`bpsync import --update`: corrections of value, cost and demand, a rebill over two stored
months, a locked period, the dry run's three cases, and the trail (issue 30)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest.run.import_file import ImportOptions, import_file
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.results import NOT_APPLIED
from bpsync.ingest.send.trail import Trail
from tests.conftest import Org, Service
from tests.corrections.conftest import PROFILE, bills, events, month, stored

pytestmark = pytest.mark.anyio

JAN, FEB, MAR = month(2024, 1), month(2024, 2), month(2024, 3)
TODAY = dt.date(2026, 11, 20)


async def run(service: Service, org: Org, path: Path, **options) -> object:
    async with AsyncServiceClient(service.base_url, org.key, profile=PROFILE) as client:
        return await import_file(client, PROFILE, path, ImportOptions(today=TODAY, **options))


async def first_import(service: Service, org: Org, tmp_path: Path) -> str:
    m = org.meters[0]
    path = bills(
        tmp_path / "first.csv",
        [(m, *JAN, 1000, None, None), (m, *FEB, 900, 150.0, 20.0), (m, *MAR, 800, 140.0, 18.0)],
    )
    summary = await run(service, org, path)
    assert summary.status == "complete" and summary.accepted == 3
    return m


async def test_corrections_of_value_cost_and_demand(service, org, tmp_path):
    m = await first_import(service, org, tmp_path)
    path = bills(
        tmp_path / "corrected.csv",
        [
            (m, *JAN, 1000, 120.5, None),  # the cost column mapped since: a cost correction
            (m, *FEB, 950, 150.0, 20.0),  # the value corrected
            (m, *MAR, 800, 140.0, 25.0),  # the demand corrected
        ],
    )
    # Without --update nothing changes: listed, exit 16, the command that applies them.
    dry = await run(service, org, path, dry_run=True)
    assert dry.status == "dry-run" and dry.exit_code == NOT_APPLIED
    assert (dry.corrections_listed, dry.rebills_listed, dry.replaced_listed) == (3, 0, 3)
    kinds = {p["row"]: (p["code"], p["reason"]) for p in dry.problems}
    assert kinds[2][0] == kinds[3][0] == kinds[4][0] == "correction"
    assert "cost none → 120.5" in kinds[2][1]
    assert "consumption 900 kWh → 950 kWh" in kinds[3][1]
    assert "demand_kw 18 → 25" in kinds[4][1]
    by_row = {x["rows"][0]: x for x in dry.replacements}
    assert by_row[3]["old"][0]["consumption"] == 900 and by_row[3]["new"][0]["consumption"] == 950
    before = stored(service, org, m)
    plain = await run(service, org, path)
    assert plain.status == "complete" and plain.not_applied == 3 and plain.accepted == 0
    assert plain.exit_code == NOT_APPLIED
    assert f"bpsync import {path.name} --update" in plain.as_dict()["next_steps"][-1]
    assert stored(service, org, m) == before
    repeat = await run(service, org, path)  # the same file again: a no-op that still says so
    assert repeat.status == "no-op" and repeat.exit_code == NOT_APPLIED

    created_before = len(events(service, "meter.reading.created"))
    updated_before = len(events(service, "benchmark.updated"))
    done = await run(service, org, path, update=True)
    assert done.status == "complete" and done.exit_code == 0, done
    assert (done.corrections, done.rebills, done.replaced, done.accepted) == (3, 0, 3, 0)
    assert stored(service, org, m) == [
        (*JAN, 1000, 120.5, None),
        (*FEB, 950, 150.0, 20.0),
        (*MAR, 800, 140.0, 25.0),
    ]
    deleted = events(service, "meter.reading.deleted")
    assert sorted(e["reading"]["consumption"] for e in deleted) == [800, 900, 1000]
    assert len(events(service, "meter.reading.created")) - created_before == 3
    # Three readings replaced, one benchmark recalculation: the deletes defer theirs.
    assert len(events(service, "benchmark.updated")) - updated_before == 1
    # The same file again: all identical now, a no-op.
    again = await run(service, org, path, update=True)
    assert again.status == "no-op" and again.exit_code == 0

    with Journal() as journal:
        trail = Trail(journal).for_meter([m])
    assert len(trail) == 3 and {t["kind"] for t in trail} == {"correction"}
    feb = next(t for t in trail if t["old"]["start_date"] == "2024-02-01")
    assert feb["old"]["consumption"] == 900 and feb["new"][0]["consumption"] == 950
    assert feb["new"][0]["status"] == "accepted" and feb["status"] == "deleted"
    assert feb["file"] == "corrected.csv" and "profile test" in feb["who"] and feb["when"]


async def test_rebill_spanning_two_stored_months_and_a_new_reading(service, org, tmp_path):
    m = await first_import(service, org, tmp_path)
    other = org.meters[1]
    path = bills(
        tmp_path / "rebill.csv",
        [
            (m, JAN[0], FEB[1], 2100, None, None),  # one bill over January and February
            (m, *MAR, 800, 140.0, 18.0),  # identical: skipped
            (other, *JAN, 10, None, None),  # a new reading
        ],
    )
    dry = await run(service, org, path, dry_run=True, update=True)
    assert dry.exit_code == 0 and dry.rebills_listed == 1 and dry.replaced_listed == 2
    [rebill] = dry.replacements
    assert rebill["kind"] == "rebill" and len(rebill["old"]) == 2
    assert [o["start_date"] for o in rebill["old"]] == ["2024-01-01", "2024-02-01"]
    reason = next(p["reason"] for p in dry.problems if p["code"] == "rebill")
    assert "rebill 2024-01-01..2024-02-29 (2100 kWh) replaces stored reading(s)" in reason
    done = await run(service, org, path, update=True)
    assert (done.rebills, done.corrections, done.replaced, done.accepted) == (1, 0, 2, 1)
    assert done.skipped == 1
    assert stored(service, org, m) == [(JAN[0], FEB[1], 2100, None, None), (*MAR, 800, 140.0, 18.0)]
    assert stored(service, org, other) == [(*JAN, 10, None, None)]


async def test_a_locked_period_is_refused_with_its_reason(service, org, tmp_path):
    m = await first_import(service, org, tmp_path)
    with service.client(org.key) as api:
        r = api.post(f"/v1/buildings/{org.building}/lock", json={"locked_through": "2024-01-31"})
        assert r.status_code in (200, 201), r.text
    path = bills(
        tmp_path / "locked.csv", [(m, *JAN, 1111, None, None), (m, *FEB, 999, 150.0, 20.0)]
    )
    done = await run(service, org, path, update=True)
    assert done.rejected == 1 and done.corrections == 1 and done.refused == 1
    assert done.exit_code == 13
    assert stored(service, org, m) == [
        (*JAN, 1000, None, None),  # locked: the old reading stays, the new one is not sent
        (*FEB, 999, 150.0, 20.0),
        (*MAR, 800, 140.0, 18.0),
    ]
    with Journal() as journal:
        [row] = journal.rows(done.import_id, "rejected")
        assert row.code == "building_locked" and "locked" in (row.reason or "")
        assert row.source_row == 2
    report = Path(done.reject_report).read_text(encoding="utf-8-sig")
    assert "was not replaced" in report and "2024-01-31" in report
