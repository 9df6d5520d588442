"""The terminal app's PM export dialog, on its own: an App that pushes it, a client of the real
service, Textual's Pilot pressing its buttons."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from pathlib import Path

import openpyxl
import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Input, Select, Static

from bpsync.client import AsyncServiceClient
from bpsync.ingest import link_meter
from bpsync.tui.screens.pm_export import PmExportScreen, read_form
from tests.conftest import Service
from tests.pm_export.conftest import monthly, new_org

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated(isolated):  # type: ignore[no-untyped-def]
    return isolated


class Host(App[None]):
    def __init__(self, client: AsyncServiceClient, folder: Path) -> None:
        super().__init__()
        self.client, self.folder = client, folder
        self.result: object = "not dismissed"

    def on_mount(self) -> None:
        screen = PmExportScreen(
            self.client, "default", folder=self.folder, today=dt.date(2026, 11, 20)
        )
        self.push_screen(screen, self._done)

    def _done(self, outcome: object) -> None:
        self.result = outcome


def text_of(app: App, selector: str) -> str:  # type: ignore[type-arg]
    console = Console(width=200, color_system=None)
    with console.capture() as captured:
        console.print(app.screen.query_one(selector, Static).content)
    return captured.get()


async def until(pilot, condition, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            shown = (text_of(pilot.app, "#pm-note"), text_of(pilot.app, "#pm-result"))
            raise AssertionError(f"timed out; the dialog shows {shown!r}")
        await pilot.pause(0.02)


@pytest.fixture
def seeded(service: Service):  # type: ignore[no-untyped-def]
    org = new_org(service)
    with service.client(org.key) as api:
        elec = org.meter(api, "electricity", "kWh", "Main Electric")
        water = org.meter(api, "water", "m3", "Domestic Water")
        for meter in (elec, water):
            monthly(
                api,
                org,
                meter,
                [{"start_date": "2024-01-01", "end_date": "2024-01-31", "consumption": 12.5}],
            )
    link_meter("default", "139067318", elec)
    return org, elec, water


async def test_export_bills_shows_the_summary_and_unlinked_meters(service, seeded, tmp_path):  # type: ignore[no-untyped-def]
    org, _, water = seeded
    async with AsyncServiceClient(service.base_url, org.key, profile="default") as client:
        app = Host(client, tmp_path)
        async with app.run_test(size=(120, 50)) as pilot:
            await pilot.pause()
            assert app.screen.query_one("#pm-path", Input).value == str(
                tmp_path / "pm_bills_2026-11-20.xlsx"
            )
            await pilot.click("#pm-run")
            await until(pilot, lambda: "Wrote" in text_of(app, "#pm-result"))
            shown = text_of(app, "#pm-result")
            assert f"Wrote 1 reading(s) to {tmp_path / 'pm_bills_2026-11-20.xlsx'}" in shown
            assert "Domestic Water" in shown and "no PM Meter ID" in shown
            assert f"fix: bpsync meters link <PM Meter ID> {water}" in shown
            wb = openpyxl.load_workbook(tmp_path / "pm_bills_2026-11-20.xlsx")
            assert wb["Add Bills-Electricity"]["A2"].value == 139067318
            # the same file again is refused in the dialog, before any request
            await pilot.click("#pm-run")
            await pilot.pause()
            assert "exists" in text_of(app, "#pm-note")
            await pilot.press("escape")
            await pilot.pause()
        assert app.result is not None and app.result.plan.readings == 1  # type: ignore[attr-defined]


async def test_export_meters_and_a_bad_scope(service, seeded, tmp_path):  # type: ignore[no-untyped-def]
    org, _, water = seeded
    async with AsyncServiceClient(service.base_url, org.key, profile="default") as client:
        app = Host(client, tmp_path)
        async with app.run_test(size=(120, 50)) as pilot:
            await pilot.pause()
            app.screen.query_one("#pm-what", Select).value = "meters"
            await pilot.pause()
            assert not app.screen.query_one("#pm-period").display
            app.screen.query_one("#pm-scope", Select).value = "meter"
            await pilot.press("ctrl+g")  # the binding, from any field
            await pilot.pause()
            assert "Give the meter id(s)" in text_of(app, "#pm-note")
            app.screen.query_one("#pm-ids", Input).value = "mtr_missing"
            await pilot.press("ctrl+g")  # the binding, from any field
            await until(pilot, lambda: "Export:" in text_of(app, "#pm-note"), timeout=5)
            assert "no meter 'mtr_missing'" in text_of(app, "#pm-note")
            app.screen.query_one("#pm-ids", Input).value = water
            await pilot.press("ctrl+g")  # the binding, from any field
            await until(pilot, lambda: "Wrote" in text_of(app, "#pm-result"))
            assert "Wrote 1 meter(s)" in text_of(app, "#pm-result")
        wb = openpyxl.load_workbook(tmp_path / "pm_meters_2026-11-20.xlsx")
        assert wb["Create Meters (Water)"]["E2"].value == "Domestic Water"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("bills", "property", "", "", "", "x.xlsx", False), "Give the property id(s)"),
        (("bills", "building", "prp_1", "", "", "x.xlsx", False), "start with bld_"),
        (("bills", "all", "", "2024-02-30", "", "x.xlsx", False), "From must be a date"),
        (("bills", "all", "", "2024-03-01", "2024-01-01", "x.xlsx", False), "To is before From"),
        (("bills", "all", "", "", "", "x.csv", False), "Save to an .xlsx file"),
        (("bills", "all", "", "", "", "/nope/x.xlsx", False), "No folder /nope"),
    ],
)
async def test_form_refusals(fields, message):  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=re.escape(message)):
        read_form(*fields)
