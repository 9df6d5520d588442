"""What the portfolio's table of buildings looks like (issue 28) at 80x24 and 120x36: the demo
portfolio seeded for a fixed day, every column filled, the detail line of the first row.
Update after a deliberate change with
`pytest tests/tui/test_snapshots_buildings.py --snapshot-update`, and look at the SVGs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.tui.conftest import Seeded, login, until

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
def test_buildings_screen(snap_compare, seeded: Seeded, size) -> None:  # type: ignore[no-untyped-def]
    from bpsync.tui.app import BPSyncApp

    login(seeded.service)
    the_app = BPSyncApp(clock=lambda: NOW, download_dir=Path("downloads"))

    async def loaded(pilot) -> None:  # type: ignore[no-untyped-def]
        await until(pilot, lambda: type(the_app.screen).__name__ == "PortfolioScreen")
        await pilot.press("f8")
        await until(pilot, lambda: type(the_app.screen).__name__ == "BuildingsScreen")
        await until(pilot, lambda: the_app.screen.phase == "done", timeout=60)
        await pilot.pause(0.4)

    assert snap_compare(the_app, terminal_size=size, run_before=loaded)
