"""What the main screens look like (pytest-textual-snapshot). Everything shown is fixed: the demo
portfolio seeded for a fixed day, the service's FakeClock, the app's clock, no ids on screen.
Update after a deliberate change with `pytest tests/tui/test_snapshots.py --snapshot-update`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from bpsync.config import Profile, save_profile
from tests.tui.conftest import Seeded, login, shown, until

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
SIZE = (100, 32)


def app(**kwargs: object):  # type: ignore[no-untyped-def]
    from bpsync.tui.app import BPSyncApp

    return BPSyncApp(clock=lambda: NOW, download_dir=Path("downloads"), **kwargs)  # type: ignore[arg-type]


def test_sign_in_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    save_profile(Profile(name="default", base_url="http://127.0.0.1:8400"), make_default=True)
    the_app = app()

    async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: "Sign in below" in shown(the_app, "#note"))

    assert snap_compare(the_app, terminal_size=SIZE, run_before=settle)


def test_portfolio_screen(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    login(seeded.service)
    the_app = app()

    async def loaded(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: type(the_app.screen).__name__ == "PortfolioScreen")
        await until(pilot, lambda: len(the_app.screen.rows) == 5 and not the_app.screen.loading)

    assert snap_compare(the_app, terminal_size=SIZE, run_before=loaded)


def test_building_benchmarks_screen(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    login(seeded.service)
    the_app = app()

    async def opened(pilot) -> None:  # type: ignore[no-untyped-def]
        from bpsync.tui.screens.benchmarks import BenchmarksScreen

        await until(pilot, lambda: type(the_app.screen).__name__ == "PortfolioScreen")
        await until(pilot, lambda: len(the_app.screen.rows) == 5)
        building = next(iter(the_app.screen.rows.values()))  # Back Bay Residences
        async for b in the_app.connection.client.buildings.list(building.id):  # type: ignore[union-attr]
            if b.name == "North Block":
                the_app.push_screen(BenchmarksScreen(b.id, b.name))
        await until(pilot, lambda: "Regional" in shown(the_app, "#scores"))
        await until(pilot, lambda: the_app.screen.query_one("#eui-chart").values)
        await pilot.pause(0.1)

    assert snap_compare(the_app, terminal_size=SIZE, run_before=opened)


def test_reports_screen(snap_compare, service) -> None:  # type: ignore[no-untyped-def]
    login(service)
    the_app = app()

    async def opened(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: type(the_app.screen).__name__ == "PortfolioScreen")
        await pilot.press("f4")
        await until(pilot, lambda: type(the_app.screen).__name__ == "ReportsScreen")
        await until(
            pilot,
            lambda: the_app.screen.types and the_app.screen.query_one("#r-format").value == "pdf",
        )
        # The form has looked for the last year with data (none here: last year, said so).
        await until(pilot, lambda: the_app.screen.query_one("#report-form").period_note)
        await pilot.pause(0.1)

    assert snap_compare(the_app, terminal_size=SIZE, run_before=opened)


def test_building_screen(snap_compare, seeded: Seeded, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Tower A (New York) at 120x36: its LL97 line and periods, EPC and pathway, scores with their
    reasons, the compliance and EUI charts from zero (issue 28)."""
    from bpsync.tui.screens import detail

    fields = detail.building_fields
    # Ids are random per run: the snapshot leaves the Id row out.
    monkeypatch.setattr(
        detail, "building_fields", lambda *a: [r for r in fields(*a) if r[0] != "Id"]
    )
    login(seeded.service)
    the_app = app()

    async def opened(pilot) -> None:  # type: ignore[no-untyped-def]
        from bpsync.tui.widgets.performance import PerformancePanel

        await until(pilot, lambda: type(the_app.screen).__name__ == "PortfolioScreen")
        client = the_app.connection.client  # type: ignore[union-attr]
        async for prop in client.properties.list():
            if prop.name == "Hudson Yards Tower":
                async for b in client.buildings.list(prop.id):
                    the_app.push_screen(detail.BuildingScreen(prop.id, b.id, b.name))
        await until(pilot, lambda: the_app.screen.query(PerformancePanel))
        panel = the_app.screen.query_one(PerformancePanel)
        await until(pilot, lambda: panel.outlook is not None and panel.history is not None)
        await until(pilot, lambda: the_app.screen.query_one("#readings").row_count > 0)
        await pilot.pause(0.1)

    assert snap_compare(the_app, terminal_size=(120, 36), run_before=opened)
