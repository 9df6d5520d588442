"""F7 in the real app opens the Portfolio Manager export (issue 31; the dialog itself is tested in
tests/pm_export/test_tui.py), and the command palette lists it once signed in."""

from __future__ import annotations

import pytest

from bpsync.tui.screens.pm_export import PmExportScreen
from tests.tui.conftest import Messages, Seeded, login, until
from tests.tui.test_screens import SIZE, make_app, open_portfolio, screen_name

pytestmark = pytest.mark.anyio


async def test_f7_opens_the_pm_export_and_escape_closes_it(seeded: Seeded) -> None:
    login(seeded.service)
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=Messages()) as pilot:
        await open_portfolio(pilot, app)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert "Portfolio Manager export" in titles
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, PmExportScreen))
        await pilot.press("f7")  # already open: not stacked twice
        await pilot.pause()
        assert sum(isinstance(s, PmExportScreen) for s in app.screen_stack) == 1
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")


async def test_f7_before_signing_in_asks_to_sign_in(seeded: Seeded) -> None:
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=Messages()) as pilot:
        await pilot.press("f7")
        await pilot.pause()
        assert not isinstance(app.screen, PmExportScreen)
