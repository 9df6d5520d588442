"""Issue 28, item 2: the building screen shows the compliance that applies (LL97 for New York,
BERDO for Boston, "not covered" with the reason elsewhere), the EPC grade and pathway stranding
years, every missing score with its reason inline, and the EUI history from zero; `t` switches
between performance and the meters' readings. Against the real service at 80x24 and 120x36."""

# ruff: noqa: RUF001  (the en dashes of period labels and missing values are what is checked)

from __future__ import annotations

import datetime as dt

import pytest
from textual.widgets import DataTable, Input, Select, TabbedContent

from bpsync.client.models import BenchmarkResult
from bpsync.compliance import ComplianceOutlook, PeriodOutlook
from bpsync.tui.app import BPSyncApp
from bpsync.tui.widgets.charts import GroupedBarChart, LineChart
from bpsync.tui.widgets.performance import (
    PerformancePanel,
    compliance_line,
    compliance_series,
    missing_svc,
    score_rows,
    svc_text,
    with_reasons,
)
from tests.tui.conftest import Messages, Seeded, login, shown, until

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
SIZES = [(80, 24), (120, 36)]


# --- pure rules ----------------------------------------------------------------------------------


def result(**fields: object) -> BenchmarkResult:
    base = {
        "building_id": "bld_x",
        "reporting_period": {"start": "2025-01-01", "end": "2025-12-31"},
        "data_quality_grade": "A",
        "eui_kwh_m2": 220.8,
        "carbon_intensity_kgco2e_m2": 64.7,
        "scores": [
            {"standard": "svc", "score": None, "percentile": None, "peer_group": "office:US",
             "peer_count": 1},
            {"standard": "energy_rating", "score": 68, "eligible": True,
             "certification_eligible": False},
            {"standard": "decarbonisation_pathway", "stranding_year_1_5c": 2024,
             "stranding_year_2c": None, "current_intensity_kgco2e_m2": 64.7,
             "target_intensity_kgco2e_m2": 42.0, "pathway": "derived-1.5c-us-office"},
            {"standard": "regional_rating", "applicable": False, "reason": "GB only."},
        ],
    }  # fmt: skip
    return BenchmarkResult.model_validate(base | fields)


def test_every_missing_score_says_why_where_it_would_be() -> None:
    rows = dict(score_rows(result(), "si", "US"))
    assert rows["svc score"] == "– · needs 5 buildings in its peer group: office:US has 1"
    assert rows["EPC grade"] == "not covered in US (the service grades EU and GB buildings)"
    assert rows["Stranding"] == "1.5 °C 2024 · 2 °C not before 2050"
    assert rows["Energy rating"].startswith("68 · not certifiable")
    assert "Regional rating" not in rows  # "only applies in GB" is not news for New York
    empty = result(eui_kwh_m2=None, carbon_intensity_kgco2e_m2=None, reporting_period={})
    assert svc_text(empty) == "– · no energy data in the period"
    # The benchmarks screen's lines get the same reasons.
    regional = "not applicable: No scheme is modelled for US; the service rates GB (UK DEC)."
    lines = [("svc score", "–"), ("Energy rating", "68"), ("Regional rating", regional)]
    assert with_reasons(lines, result()) == [
        ("svc score", "– · needs 5 buildings in its peer group: office:US has 1"),
        ("Energy rating", "68"),
        ("Regional rating", "not applicable: No scheme is modelled for US"),
    ]


def test_the_compliance_line_says_the_law_its_state_and_the_cost() -> None:
    periods = (
        PeriodOutlook("2024–2029", 2024, 2029, 1509.0, 976.0, 0.0, 0.0),
        PeriodOutlook("2030–2034", 2030, 2034, 514.0, 976.0, 462.0, 123812.0),
        PeriodOutlook("2035–2039", 2035, 2039, None, 976.0, None, None, note="No limits."),
    )
    outlook = ComplianceOutlook("LL97", True, "Covered.", 2025, "compliant", periods)
    line = compliance_line(outlook).plain
    assert line == (
        "Compliance LL97 compliant in 2024–2029 · 2030–2034 over limit: 462 tCO₂e over, "
        "$123,812 a year"
    )
    assert compliance_series(outlook) == (
        ["2024–2029", "2030–2034"],
        [[1509.0, 514.0], [976.0, 976.0]],
    )
    away = ComplianceOutlook(
        None, False, "No city emissions law applies here.", None, "not covered"
    )
    assert compliance_line(away).plain == (
        "Compliance LL97/BERDO: not covered · No city emissions law applies here."
    )
    assert compliance_line(None).plain == "Compliance: reading…"


# --- the screen ----------------------------------------------------------------------------------


def outlook_building(app: BPSyncApp, name: str) -> str:
    """The id of the building of that name among the session's outlooks."""
    screens = [s for s in app.screen_stack if type(s).__name__ == "BuildingScreen"]
    found = [s.building_id for s in screens if s.title_text == name]  # type: ignore[attr-defined]
    assert found and found[0] in app.outlooks
    return found[0]


def make_app() -> BPSyncApp:
    return BPSyncApp(clock=lambda: NOW)  # type: ignore[arg-type]


async def open_building(pilot, app: BPSyncApp, prop_name: str, name: str) -> PerformancePanel:  # type: ignore[no-untyped-def]
    from bpsync.tui.screens.detail import BuildingScreen

    await until(pilot, lambda: type(app.screen).__name__ == "PortfolioScreen")
    assert app.connection is not None
    client = app.connection.client
    async for prop in client.properties.list():
        if prop.name == prop_name:
            async for b in client.buildings.list(prop.id):
                if b.name == name:
                    # Pushed from the app's own task, where the message hook is set.
                    app.call_later(app.push_screen, BuildingScreen(prop.id, b.id, b.name))
    await until(pilot, lambda: type(app.screen).__name__ == "BuildingScreen")
    panel = app.screen.query_one(PerformancePanel)
    await until(pilot, lambda: panel.outlook is not None and panel.result is not None)
    await pilot.pause(0.05)
    return panel


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_a_new_york_building_shows_ll97_epc_pathway_and_reasons(
    seeded: Seeded, size: tuple[int, int]
) -> None:
    login(seeded.service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=size, message_hook=msgs) as pilot:
        panel = await open_building(pilot, app, "Hudson Yards Tower", "Tower A")
        outlook = panel.outlook
        assert outlook is not None and outlook.law == "LL97" and outlook.covered
        assert outlook.basis_year == 2025  # the last complete year of the seeded bills
        line = " ".join(shown(app, "#compliance-line").split())
        assert line.startswith("Compliance LL97 ") and "2024–2029" in line
        table = shown(app, "#perf-compliance")
        for period in ("2024–2029", "2030–2034", "2035–2039", "2040–2049"):
            assert period in table, period
        assert "Limit t" in table and "Penalty/yr" in table and "from 2025's emissions" in table
        scores = " ".join(shown(app, "#perf-scores").split())
        assert "EPC grade not covered in US" in scores
        assert "Stranding 1.5 °C" in scores
        assert "svc score – · needs 5 buildings in its peer group: office:US has 1" in scores
        assert "Regional" not in scores
        chart = app.screen.query_one("#compliance-chart", GroupedBarChart)
        assert chart.labels[:2] == ["2024–2029", "2030–2034"] and chart.ticks[0] == 0
        history = app.screen.query_one("#eui-history", LineChart)
        assert history.values and history.ticks[0] == 0 and history.ticks[-1] >= max(history.values)
        # Everything fits: the compliance line and the tabs are on screen, the panel scrolls.
        assert app.screen.query_one("#compliance-line").region.bottom <= size[1]
        assert panel.region.bottom <= size[1] - 1
        # t: the meters and their readings, focused; t again: back to performance.
        tabs = app.screen.query_one(TabbedContent)
        assert tabs.active == "performance"
        await pilot.press("t")
        await until(pilot, lambda: tabs.active == "readings-tab")
        await until(pilot, lambda: app.focused is app.screen.query_one("#meters", DataTable))
        await until(pilot, lambda: app.screen.query_one("#readings", DataTable).row_count > 0)
        await pilot.press("t")
        await until(pilot, lambda: tabs.active == "performance" and app.focused is panel)
        # u: US units on the scores and the history chart, at once.
        units = app.units
        await pilot.press("u")
        other = "EUI kBtu/ft²" if units == "si" else "EUI kWh/m²"
        await until(pilot, lambda: app.units != units and history.chart_title == other)
        assert other.removeprefix("EUI ") in shown(app, "#perf-scores")
        # g: a report for this building, of the law it is covered by, for its last full year.
        await pilot.press("g")
        await until(pilot, lambda: type(app.screen).__name__ == "ReportsScreen")
        await until(pilot, lambda: app.screen.query(Select) and app.screen.types)
        form = app.screen
        await until(pilot, lambda: form.query_one("#r-type", Select).value == "compliance_ll97")
        assert form.query_one("#r-building", Select).value == outlook_building(app, "Tower A")
        await until(pilot, lambda: form.query_one("#r-start", Input).value == "2025-01-01")
        assert form.query_one("#r-end", Input).value == "2025-12-31"
    assert not [m for m in msgs.seen if type(m).__name__ == "ActionFailed"]


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x36"])
async def test_boston_is_berdo_and_london_is_not_covered_with_its_epc(
    seeded: Seeded, size: tuple[int, int]
) -> None:
    login(seeded.service)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        panel = await open_building(pilot, app, "Back Bay Residences", "North Block")
        assert panel.outlook is not None and panel.outlook.law == "BERDO"
        assert "Compliance BERDO" in shown(app, "#compliance-line")
        await pilot.press("escape")
        panel = await open_building(pilot, app, "Riverside House", "Riverside House")
        assert panel.outlook is not None and not panel.outlook.covered
        line = " ".join(shown(app, "#compliance-line").split())
        assert line.startswith("Compliance LL97/BERDO: not covered · ") and "applies" in line
        scores = " ".join(shown(app, "#perf-scores").split())
        epc = next(s for s in panel.result.scores if s.standard == "eu_epc")  # type: ignore[union-attr]
        assert f"EPC grade {epc.grade} (GB method)" in scores
        chart = app.screen.query_one("#compliance-chart", GroupedBarChart)
        assert not chart.labels and "no city law applies" in chart.title_text()


def test_the_svc_chart_says_why_it_is_empty_in_a_title_that_fits() -> None:
    assert missing_svc(result()) == "needs 5 in its peer group, has 1"
    empty = result(eui_kwh_m2=None, carbon_intensity_kgco2e_m2=None, reporting_period={})
    assert missing_svc(empty) == "no energy data in the period"
