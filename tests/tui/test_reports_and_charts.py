"""Issue 28, items 5 and 6: the reports screen defaults to the last complete year with data, names
buildings, shows sizes and failure reasons whole, and leaves the form after a request; charts
start their value axes at zero and count in whole numbers. Pure rules first, then the screens
against the real service at 80x24 and 120x36."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from bpservice.demo import seed
from bpservice.workers.reports import generate_pending
from bpsync.client.models import Meter, Report
from bpsync.tui import messages as M
from bpsync.tui.app import BPSyncApp
from bpsync.tui.widgets.charts import (
    BarChart,
    LineChart,
    change_text,
    count_axis,
    nice_step,
    tick_label,
    zero_axis,
)
from bpsync.tui.widgets.report_form import data_year, year_period
from bpsync.tui.widgets.report_list import ReportList, detail_text, report_cells
from tests.conftest import Service
from tests.tui.conftest import Messages, login, until

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
TODAY = NOW.date()
SIZES = [(80, 24), (120, 36)]


# --- pure rules ----------------------------------------------------------------------------------


def meter(kind: str, latest: str | None) -> Meter:
    return Meter.model_validate(
        {
            "id": f"mtr_{kind}",
            "building_id": "bld_x",
            "type": kind,
            "unit": "kWh",
            "source": "manual",
            "status": "active",
            "latest_reading_date": latest,
            "created_at": "2024-01-01T00:00:00Z",
        }
    )


def test_the_default_year_is_the_last_complete_one_with_energy_data() -> None:
    # Data that stopped at the end of 2024: 2024, not last year (the no_data LL97 of the demo).
    assert data_year([meter("electricity", "2024-12-31")], TODAY) == 2024
    # Data running into this year: last year, the last complete one.
    assert data_year([meter("electricity", "2026-10-31")], TODAY) == 2025
    # Any reading in a year is data (as for the service's compliance reports).
    assert data_year([meter("natural_gas", "2025-01-31")], TODAY) == 2025
    # Water is not energy; no energy data at all: no year (the form keeps last year).
    assert data_year([meter("water", "2026-10-31"), meter("electricity", "2023-12-31")], TODAY) == (
        2023
    )
    assert data_year([meter("water", "2026-10-31"), meter("steam", None)], TODAY) is None
    assert year_period(2024) == (dt.date(2024, 1, 1), dt.date(2024, 12, 31))


def report(**fields: object) -> Report:
    base = {
        "id": "rpt_1",
        "type": "compliance_ll97",
        "status": "complete",
        "format": "pdf",
        "created_at": "2026-11-20T09:00:00Z",
        "completed_at": "2026-11-20T09:00:02Z",
        "file_size_bytes": 5427,
        "building_id": "bld_tower",
        "reporting_period": {"start": "2024-01-01", "end": "2024-12-31"},
    }
    return Report.model_validate(base | fields)


def test_a_report_row_names_its_building_and_shows_its_size_whole() -> None:
    cells = report_cells(report(), NOW, {"bld_tower": "Tower A · Hudson Yards Tower"})
    assert cells[-1] == "Tower A · Hudson Yards Tower"
    assert str(cells[5]) == "5.3 KB" and cells[5].justify == "right"
    assert report_cells(report(), NOW, {})[-1] == "bld_tower"  # until the name is known
    org = report(building_id=None, filters={"country": "US", "type": "office"})
    assert report_cells(org, NOW)[-1] == "US · office"
    assert report_cells(report(building_id=None), NOW)[-1] == "all buildings"


def test_a_failed_report_gives_its_reason_whole() -> None:
    reason = (
        "The building has no energy data for the reporting period 2025-01-01 to 2025-12-31: "
        "choose a year in which its meters have readings."
    )
    failed = report(status="failed", reason_code="no_data", reason=reason, file_size_bytes=None)
    assert report_cells(failed, NOW)[4] == "no_data"
    line = detail_text(failed, NOW, {"bld_tower": "Tower A"}).plain
    assert reason in line and "Tower A" in line


def test_value_axes_start_at_zero_and_counts_are_whole() -> None:
    # The demo's 269.8-273.1 EUI: an axis from 0, and the change said in words.
    assert zero_axis([269.8, 273.1]) == [0, 100, 200, 300]
    assert change_text([269.8, 273.1]) == "269.8 → 273.1 (+1.2 %)"
    assert change_text([270.0]) == ""
    assert zero_axis([40, 62], top=100) == [0, 25, 50, 75, 100]
    assert zero_axis([]) == [0, 1] and zero_axis([0.0]) == [0, 1]
    assert zero_axis([-3, 10]) == [-5, 0, 5, 10]
    assert nice_step(7) == 2.0 and nice_step(0) == 1.0
    # Grades of six buildings: 0..3 in steps of one, never 0.5 of a building.
    assert count_axis([0, 2, 3, 1, 0, 0]) == [0, 1, 2, 3]
    assert count_axis([0, 0]) == [0, 1]
    ticks = count_axis([40, 3])
    assert ticks[0] == 0 and ticks[-1] >= 40 and all(isinstance(t, int) for t in ticks)
    assert [tick_label(t) for t in (0.0, 2.5, 1200.0)] == ["0", "2.5", "1,200"]


# --- screens -------------------------------------------------------------------------------------


@pytest.fixture
def data_to_2024(service: Service) -> Service:
    """The demo portfolio with two years of bills that end in December 2024, while the app's
    clock says November 2026: the consultant's case."""
    asyncio.run(seed(service.app, service.test_key, months=24, today=dt.date(2025, 1, 20)))
    return service


def make_app(**kwargs: object) -> BPSyncApp:
    kwargs.setdefault("clock", lambda: NOW)
    return BPSyncApp(**kwargs)  # type: ignore[arg-type]


async def tower(app: BPSyncApp) -> tuple[str, str]:
    assert app.connection is not None
    client = app.connection.client
    async for prop in client.properties.list():
        if prop.name == "Hudson Yards Tower":
            async for b in client.buildings.list(prop.id):
                return b.id, b.name
    raise AssertionError("no Tower A")


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_a_building_report_defaults_to_its_last_year_and_is_downloaded_from_the_list(
    data_to_2024: Service, tmp_path: Path, size: tuple[int, int]
) -> None:
    from bpsync.tui.screens.reports import ReportsScreen

    service = data_to_2024
    login(service)
    msgs = Messages()
    app = make_app(download_dir=tmp_path, poll_interval=0.05)
    async with app.run_test(size=size, message_hook=msgs) as pilot:
        await until(pilot, lambda: type(app.screen).__name__ == "PortfolioScreen")
        building_id, name = await tower(app)
        # Pushed from the app's own task, where the message hook is set.
        app.call_later(app.push_screen, ReportsScreen(building_id=building_id, building_name=name))
        await until(pilot, lambda: type(app.screen).__name__ == "ReportsScreen")
        screen = app.screen
        await until(pilot, lambda: screen.types)
        # The Building field names the building; the period is its last year with data, 2024.
        building = screen.query_one("#r-building", Select)
        await until(pilot, lambda: building.value == building_id and len(building._options) > 3)
        labels = [str(label) for label, value in building._options if value == building_id]
        assert labels == ["Tower A · Hudson Yards Tower"]
        await until(pilot, lambda: screen.query_one("#r-start", Input).value == "2024-01-01")
        assert screen.query_one("#r-end", Input).value == "2024-12-31"
        screen.query_one("#r-type", Select).value = "compliance_ll97"
        await pilot.pause()
        screen.query_one("#r-start", Input).focus()  # the consultant's focus: a date field
        await pilot.press("ctrl+g")
        # The request leaves the form: the list has the focus, so d is Download, not a "d".
        await until(pilot, lambda: msgs.of(M.ReportUpdated) or msgs.of(M.ActionFailed))
        assert not msgs.of(M.ActionFailed), msgs.of(M.ActionFailed)
        table = screen.query_one(ReportList)
        assert app.focused is table
        row = [str(c) for c in table.get_row_at(0)]
        assert (row[1], row[-1]) == ("compliance_ll97", "Tower A · Hudson Yards Tower"), row
        generate_pending(service.app, service.clock())
        await until(pilot, lambda: msgs.of(M.ReportUpdated)[-1].report.status.value == "complete")
        done = msgs.of(M.ReportUpdated)[-1].report
        assert done.reporting_period and done.reporting_period.start == dt.date(2024, 1, 1)
        row = [str(c) for c in table.get_row_at(0)]
        assert row[5].endswith(" KB")
        size_column = table.ordered_columns[5]
        assert size_column.get_render_width(table) - 2 * table.cell_padding >= len(row[5])
        # ...and on screen, whole, at 80 columns too.
        assert (
            table.region.x + sum(c.get_render_width(table) for c in table.ordered_columns[:6])
            <= size[0]
        )
        await pilot.press("d")
        await until(pilot, lambda: msgs.of(M.DownloadFinished))
        assert screen.query_one("#r-start", Input).value == "2024-01-01"  # no "d" typed
        assert msgs.of(M.DownloadFinished)[0].path.read_bytes()[:4] == b"%PDF"
    assert not msgs.of(M.ActionFailed)


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_the_organisation_period_and_a_failure_reason_in_full(
    data_to_2024: Service, tmp_path: Path, size: tuple[int, int]
) -> None:
    service = data_to_2024
    with service.client() as api:
        # A New York building without a single reading: its LL97 report fails (no_data).
        prop = api.post(
            "/v1/properties",
            json={
                "name": "Empty Lot",
                "type": "office",
                "address": {"street": "1 W 1st St", "city": "New York", "state": "NY",
                            "postal_code": "10001", "country": "US"},
            },
        ).raise_for_status().json()["data"]  # fmt: skip
        empty = api.post(
            f"/v1/properties/{prop['id']}/buildings",
            json={"name": "Empty Block", "primary_use_type": "office", "gfa_m2": 9000,
                  "year_built": 2000, "floors": 5},
        ).raise_for_status().json()["data"]  # fmt: skip
    login(service)
    msgs = Messages()
    app = make_app(download_dir=tmp_path, poll_interval=0.05)
    async with app.run_test(size=size, message_hook=msgs) as pilot:
        await until(pilot, lambda: type(app.screen).__name__ == "PortfolioScreen")
        await pilot.press("f4")
        await until(pilot, lambda: type(app.screen).__name__ == "ReportsScreen")
        screen = app.screen
        # The organisation's data ends in 2024 too; a period typed in is the user's, unlabelled.
        await until(pilot, lambda: screen.query_one("#r-start", Input).value == "2024-01-01")
        note = screen.query_one("#r-period-note")
        assert "last full year with data" in str(note.render())
        screen.query_one("#r-end", Input).value = "2024-06-30"
        await until(pilot, lambda: str(note.render()) == "")
        screen.query_one("#r-end", Input).value = "2024-12-31"
        await until(pilot, lambda: screen.types)
        screen.query_one("#r-type", Select).value = "compliance_ll97"
        building = screen.query_one("#r-building", Select)
        await until(pilot, lambda: any(v == empty["id"] for _, v in building._options))
        building.value = empty["id"]
        await pilot.pause()
        await pilot.press("ctrl+g")
        await until(pilot, lambda: msgs.of(M.ReportUpdated))
        generate_pending(service.app, service.clock())
        await until(pilot, lambda: msgs.of(M.ReportUpdated)[-1].report.status.value == "failed")
        failed = msgs.of(M.ReportUpdated)[-1].report
        assert failed.reason and failed.reason_code == "no_data"
        from tests.tui.conftest import shown

        detail = " ".join(shown(app, "#report-detail").split())
        assert " ".join(failed.reason.split()) in detail
        assert "Empty Block · Empty Lot" in detail
        # Its whole line fits the screen: nothing of the reason is below the footer.
        line = screen.query_one("#report-detail")
        assert line.region.bottom <= size[1] and line.region.right <= size[0]


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_charts_start_at_zero_and_count_in_whole_numbers(
    data_to_2024: Service, size: tuple[int, int]
) -> None:
    from bpsync.tui.screens.benchmarks import BenchmarksScreen

    login(data_to_2024)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: type(app.screen).__name__ == "PortfolioScreen")
        await pilot.press("f3")
        await until(pilot, lambda: type(app.screen).__name__ == "PortfolioBenchmarksScreen")
        chart = app.screen.query_one("#grades-chart", BarChart)
        await until(pilot, lambda: sum(chart.values) == 6)
        assert chart.ticks == list(range(chart.ticks[-1] + 1))  # 0, 1, 2 ... buildings
        assert chart.ticks[-1] >= max(chart.values)
        # A building's EUI from zero with its change in the title; svc on 0-100, or why not.
        building_id, name = await tower(app)
        app.call_later(app.push_screen, BenchmarksScreen(building_id, name))
        await until(pilot, lambda: type(app.screen).__name__ == "BenchmarksScreen")
        await until(pilot, lambda: app.screen.query(LineChart))
        eui = app.screen.query_one("#eui-chart", LineChart)
        svc = app.screen.query_one("#score-chart", LineChart)
        await until(pilot, lambda: eui.values and svc.empty_note != "no data yet")
        assert eui.ticks[0] == 0 and eui.ticks[-1] >= max(eui.values)
        assert "→" in eui.title_text() and "%" in eui.title_text()
        assert svc.title_text() == "svc score: needs 5 in its peer group, has 1"


@pytest.mark.anyio
async def test_building_names_with_brackets_are_offered_literally(service: Service) -> None:
    with service.client() as api:
        prop = api.post(
            "/v1/properties",
            json={"name": "[red]Depot", "type": "office",
                  "address": {"street": "1 A St", "city": "Leeds", "country": "GB"}},
        ).raise_for_status().json()["data"]  # fmt: skip
        api.post(
            f"/v1/properties/{prop['id']}/buildings",
            json={"name": "[bold]Annex[/]", "primary_use_type": "office", "gfa_m2": 900,
                  "year_built": 2000, "floors": 2},
        ).raise_for_status()  # fmt: skip
    login(service)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: type(app.screen).__name__ == "PortfolioScreen")
        await pilot.press("f4")
        await until(pilot, lambda: type(app.screen).__name__ == "ReportsScreen")
        screen = app.screen
        await until(pilot, lambda: screen.types)
        screen.query_one("#r-type", Select).value = "benchmark_certificate"
        building = screen.query_one("#r-building", Select)
        await until(pilot, lambda: len(building._options) > 1)
        labels = [str(label) for label, value in building._options if value != Select.NULL]
        assert labels == ["[bold]Annex[/] · [red]Depot"]
