"""The portfolio's table of buildings (issue 28, items 1, 3, 4) against the real service with the
demo portfolio, at 80x24 and 120x36: scores, grades and the city law with its projected penalty,
filter as you type, sort by any column, SI/US units by a key, export of what is shown."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import pytest
from openpyxl import load_workbook

from bpsync.building_table import KEYS
from bpsync.config import Profile, save_profile
from bpsync.tui.app import BPSyncApp
from tests.tui.conftest import Seeded, login, shown, until

pytestmark = pytest.mark.anyio
NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
SIZES = [(80, 24), (120, 36)]
DEMO_BUILDINGS = 6


def make_app(tmp_path: Path) -> BPSyncApp:
    return BPSyncApp(clock=lambda: NOW, download_dir=tmp_path / "downloads")


def screen_name(app: BPSyncApp) -> str:
    return type(app.screen).__name__


async def open_buildings(pilot, app: BPSyncApp) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
    await pilot.press("t")
    await until(pilot, lambda: screen_name(app) == "BuildingsScreen")
    await until(pilot, lambda: app.screen.phase == "done", timeout=60)
    await pilot.pause(0.3)  # the last rebuild


def cells(app: BPSyncApp) -> list[list[str]]:
    table = app.screen.table
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def column(app: BPSyncApp, key: str) -> list[str]:
    from bpsync.building_table import KEYS

    return [r[KEYS.index(key)] for r in cells(app)]


@pytest.mark.parametrize("size", SIZES)
async def test_rows_scores_and_compliance(seeded: Seeded, tmp_path: Path, size) -> None:  # type: ignore[no-untyped-def]
    login(seeded.service)
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await open_buildings(pilot, app)
        assert app.units == "si"  # a mostly European portfolio
        rows = {r.building: r for r in app.screen.table.rows_by_id.values()}
        assert len(rows) == DEMO_BUILDINGS
        tower = rows["Tower A"]
        assert tower.law == "LL97" and tower.outlook and tower.outlook.basis_year == 2025
        assert tower.eui_kwh_m2 is not None and tower.grade
        assert {r.law for r in rows.values()} == {"LL97", "BERDO", None}
        assert all(r.benchmarked for r in rows.values())
        # Every demo building's svc score is missing (too few peers): the reason is on screen.
        assert all(r.svc_score is None and "a score needs 5" in r.score_note for r in rows.values())
        by_name = dict(zip(column(app, "building"), cells(app), strict=True))
        riverside = dict(zip(KEYS, by_name["Riverside House"], strict=True))
        assert [riverside[k] for k in ("law", "status", "penalty_now", "penalty_next")] == [
            "\u2013",
            "not covered",
            "\u2013",
            "\u2013",
        ]
        assert by_name["Tower A"][KEYS.index("status")] in ("compliant", "over limit")
        # The highlighted row's detail: the score's reason and the projection's basis.
        await pilot.press("home")
        while app.screen.table.selected().building != "Tower A":  # type: ignore[union-attr]
            await pilot.press("down")
        detail = shown(app, "#detail")
        assert "no svc score: 1 building(s)" in detail
        assert "LL97" in detail and "projected from 2025's emissions" in detail
        assert "2024\u20132029" in detail and "/yr" in detail
        assert "6 buildings · sorted by Building ▲ · SI units" in shown(app, "#status")


@pytest.mark.parametrize("size", SIZES)
async def test_filter_sort_units_and_export(seeded: Seeded, tmp_path: Path, size) -> None:  # type: ignore[no-untyped-def]
    login(seeded.service)
    app = make_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await open_buildings(pilot, app)
        # Filter as you type: building or property name, city, country, use type.
        await pilot.press("slash", *"tower")
        assert column(app, "building") == ["Tower A"]
        assert "1 of 6 buildings match “tower”" in shown(app, "#status")
        for term, expected in (
            ("boston", 2),
            ("fr", 1),
            ("residential", 2),
            ("north residential", 1),
            ("", 6),
        ):
            app.screen.query_one("#filter").value = term
            await pilot.pause()
            assert len(cells(app)) == expected, term
        await pilot.press("enter")  # back to the table
        # Sort: s cycles the column (Building → GFA → ...), S reverses; a heading click sorts.
        await pilot.press("s")
        assert app.screen.table.sort_key == "gfa"
        gfa = [float(v.replace(",", "")) for v in column(app, "gfa")]
        assert gfa == sorted(gfa)
        await pilot.press("S")
        assert column(app, "building")[0] == "Tower A"  # 46,000 m²
        table = app.screen.table
        x = 1 + sum(c.get_render_width(table) for c in table.ordered_columns[:2])
        await pilot.click("#buildings", offset=(x, 0))  # the EUI heading
        await pilot.pause()
        assert table.sort_key == "eui" and not table.descending
        eui = [float(v.replace(",", "")) for v in column(app, "eui")]
        assert eui == sorted(eui)
        table.sort_by("property")
        await pilot.pause()
        props = column(app, "property")
        assert props == sorted(props, key=str.casefold)
        app.screen.table.sort_by("gfa")
        app.screen.table.sort_by("gfa")  # again: descending
        await pilot.pause()
        assert column(app, "building")[0] == "Tower A"
        # Units: u switches to ft², kBtu/ft², kgCO2e/ft² (the reference's factors).
        await pilot.press("u")
        await pilot.pause()
        assert app.units == "us"
        headings = [str(c.label) for c in app.screen.table.ordered_columns]
        assert headings[1:4] == ["GFA ft² ▼", "EUI kBtu/ft²", "kgCO₂e/ft²"]
        assert column(app, "gfa")[0] == f"{46_000 * 10.7639:,.0f}"
        assert "US units" in shown(app, "#status")
        # Export: what is shown (sorted, filtered, in US units), CSV and XLSX in the download dir.
        app.screen.query_one("#filter").value = "boston"
        await pilot.pause()
        await pilot.press("e")
        folder = tmp_path / "downloads"
        await until(pilot, lambda: len(list(folder.glob("*.xlsx"))) == 1)
        await until(pilot, lambda: "Exported 2 row(s)" in shown(app, "#note"))
        (csv_path,) = folder.glob("*.csv")
        assert str(csv_path) in shown(app, "#note")
        with csv_path.open(encoding="utf-8-sig") as f:
            table = list(csv.reader(f))
        assert table[0][1:4] == ["GFA ft²", "EUI kBtu/ft²", "kgCO₂e/ft²"]
        assert [r[0] for r in table[1:]] == column(app, "building")
        assert float(table[1][1]) == pytest.approx(12_500 * 10.7639)  # North Block
        sheet = load_workbook(next(folder.glob("*.xlsx"))).active
        assert sheet is not None
        values = list(sheet.iter_rows(values_only=True))
        assert values[0][-2:] == ("Penalty now (USD/yr)", "Penalty next (USD/yr)")
        assert [r[0] for r in values[1:]] == column(app, "building")
        assert values[1][1] == pytest.approx(12_500 * 10.7639)
        await pilot.press("u")  # back to SI
        await pilot.pause()
        assert app.units == "si" and column(app, "gfa")[0] == "12,500"


async def test_a_profile_sets_the_units_and_other_tables_export_too(
    seeded: Seeded, tmp_path: Path
) -> None:
    login(seeded.service)
    save_profile(Profile(name="default", base_url=seeded.service.base_url, units="us"))
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        assert app.units == "us"
        await until(pilot, lambda: len(app.screen.rows) == 5)
        props = app.screen.query_one("#properties")
        assert str(props.ordered_columns[5].label) == "GFA ft²"
        riverside = next(
            r for r in range(props.row_count) if str(props.get_row_at(r)[0]) == "Riverside House"
        )
        assert str(props.get_row_at(riverside)[5]) == "88,264"  # 8,200 m²
        await pilot.press("e")  # any table: the property list as shown
        folder = tmp_path / "downloads"
        await until(pilot, lambda: len(list(folder.glob("portfolio-*.csv"))) == 1)
        with next(folder.glob("portfolio-*.csv")).open(encoding="utf-8-sig") as f:
            table = list(csv.reader(f))
        assert table[0][0] == "Name" and len(table) == 6
        await pilot.press("f8")
        await until(pilot, lambda: screen_name(app) == "BuildingsScreen")
        await until(pilot, lambda: app.screen.phase == "done", timeout=60)
        assert app.units == "us"  # the profile's choice wins over the portfolio's default
        await pilot.press("f1")
        await until(pilot, lambda: screen_name(app) == "HelpScreen")
        keys = shown(app, "#help-keys")
        for binding in (
            "buildings.sort",
            "buildings.reverse",
            "buildings.units",
            "buildings.export",
        ):
            assert binding in keys
        await pilot.press("escape", "f2")
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        await pilot.press("u")  # the app's key, on any screen
        assert app.units == "si"
        await pilot.pause()
        props = app.screen.query_one("#properties")
        assert str(props.ordered_columns[5].label) == "GFA m²"
        assert "8,200" in [str(props.get_row_at(r)[5]) for r in range(props.row_count)]
        await pilot.press("f1")
        await until(pilot, lambda: screen_name(app) == "HelpScreen")
        keys = shown(app, "#help-keys")
        assert "app.units" in keys and "screen.export" in keys and "portfolio.buildings" in keys
