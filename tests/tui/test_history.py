"""The replacement trail in the app (issue 30 item 3): a real `import --update` through the engine
replaces readings of a meter (a correction, a rebill, and one refused by the building's lock),
then `h` on the building's meters opens the meter's replaced readings, read from this machine's
import journal, as `bpsync history METER` lists them."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from textual.widgets import DataTable

from bpsync.client import AsyncServiceClient
from bpsync.ingest.run.import_file import ImportOptions, import_file
from bpsync.tui import messages as M
from bpsync.tui.format import DASH as D
from tests.conftest import Org, Service, make_org
from tests.corrections.conftest import bills, month
from tests.tui.conftest import Messages, login, until
from tests.tui.test_screens import make_app, rows, screen_name, text

pytestmark = pytest.mark.anyio

JAN, FEB, MAR, APR = month(2024, 1), month(2024, 2), month(2024, 3), month(2024, 4)
SIZE = (160, 40)
FILE = "fixed [v2].csv"  # brackets: shown literally, never read as markup


async def engine_import(service: Service, org: Org, path: Path, **options: object) -> object:
    async with AsyncServiceClient(service.base_url, org.key, profile="test") as client:
        return await import_file(
            client, "test", path, ImportOptions(today=dt.date(2026, 11, 20), **options)
        )


async def replaced(service: Service, tmp_path: Path) -> Org:
    """Three stored months of one meter, then a corrected file imported with --update: February
    corrected, March rebilled as March-April, January's correction refused (locked)."""
    org = make_org(service, meters=2)
    m = org.meters[0]
    first = bills(
        tmp_path / "first.csv",
        [(m, *JAN, 1000, None, None), (m, *FEB, 900, 150.0, 20.0), (m, *MAR, 800, 140.0, 18.0)],
    )
    assert (await engine_import(service, org, first)).accepted == 3
    with service.client(org.key) as api:
        api.post(
            f"/v1/buildings/{org.building}/lock", json={"locked_through": "2024-01-31"}
        ).raise_for_status()
    fixed = bills(
        tmp_path / FILE,
        [
            (m, *JAN, 1111, None, None),
            (m, *FEB, 950, 150.0, 20.0),
            (m, MAR[0], APR[1], 1700, None, None),
        ],
    )
    done = await engine_import(service, org, fixed, update=True)
    assert (done.corrections, done.rebills, done.replaced, done.refused) == (1, 1, 2, 1)
    return org


async def open_building(pilot, app) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: screen_name(app) == "PortfolioScreen" and app.screen.rows)
    await pilot.press("enter")
    await until(pilot, lambda: screen_name(app) == "PropertyScreen" and app.screen.buildings)
    await pilot.press("enter")
    await until(pilot, lambda: screen_name(app) == "BuildingScreen" and app.screen.meters)


async def select_meter(pilot, building, meter_id: str) -> None:  # type: ignore[no-untyped-def]
    meters = building.query_one("#meters", DataTable)
    meters.focus()
    meters.move_cursor(row=meters.get_row_index(meter_id))
    await until(pilot, lambda: building.meter_id == meter_id)


async def test_h_lists_the_meters_replaced_readings(service: Service, tmp_path: Path) -> None:
    org = await replaced(service, tmp_path)
    login(service, org.key)
    msgs = Messages()
    app = make_app(download_dir=tmp_path)
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_building(pilot, app)
        building = app.screen
        await select_meter(pilot, building, org.meters[0])
        await pilot.press("h")
        await until(pilot, lambda: screen_name(app) == "ReplacementHistoryScreen")
        screen = app.screen
        await until(pilot, lambda: screen.entries is not None)
        shown = rows(app, "#trail")
        for row in shown:
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row[0]), row[0]
            assert row[-2] == FILE and row[-1].endswith("(profile test)")  # file, who
        # Newest first: the rebill, the correction, the refused correction (the journal's order).
        # kind, old period and consumption, new period and consumption, outcome, old and new cost,
        # old and new demand.
        assert [r[1:-2] for r in shown] == [
            ["rebill", "2024-03-01..2024-03-31", "800.0", "2024-03-01..2024-04-30", "1,700.0",
             "replaced", "140.00", D, "18.0", D],
            ["correction", "2024-02-01..2024-02-29", "900.0", "2024-02-01..2024-02-29", "950.0",
             "replaced", "150.00", "150.00", "20.0", "20.0"],
            ["correction", "2024-01-01..2024-01-31", "1,000.0", "2024-01-01..2024-01-31", "1,111.0",
             "not replaced", D, D, D, D],
        ]  # fmt: skip
        assert "3 stored reading(s) of M0 replaced or tried" in text(app, "#trail-title")
        assert "2 by corrections, 1 by rebills" in text(app, "#trail-title")
        detail = text(app, "#trail-detail")
        assert f"profile test) · {FILE} · rebill" in detail
        assert re.search(
            r"Old  rdg_\w+  2024-03-01\.\.2024-03-31  800\.0 kWh  cost 140\.00 GBP", detail
        )
        assert re.search(
            r"New  row 4  2024-03-01\.\.2024-04-30  1,700\.0 kWh  accepted as rdg_", detail
        )
        table = screen.query_one("#trail", DataTable)
        table.move_cursor(row=2)
        await until(pilot, lambda: "not replaced" in text(app, "#trail-detail"))
        detail = text(app, "#trail-detail")
        assert "New  row 2  2024-01-01..2024-01-31  1,111.0 kWh  rejected" in detail
        assert "was not replaced" in detail and "locked through 2024-01-31" in detail

        await pilot.press("c")  # the stored reading's id, whole
        await until(pilot, lambda: "Copied rdg_" in text(app, "#note"))
        assert text(app, "#note").split()[-1] in detail

        # r reads the journal again; e exports the table as shown.
        loads = len(msgs.of(M.TrailLoaded))
        await pilot.press("r")
        await until(pilot, lambda: len(msgs.of(M.TrailLoaded)) > loads)
        assert rows(app, "#trail") == shown
        await pilot.press("e")
        await until(pilot, lambda: list(tmp_path.glob("replaced-readings-*.csv")))
        [csv] = tmp_path.glob("replaced-readings-*.csv")
        exported = csv.read_text(encoding="utf-8-sig")
        assert FILE in exported and "2024-03-01..2024-04-30" in exported

        # f1 lists the screen's keys; escape goes back to the building.
        await pilot.press("f1")
        await until(pilot, lambda: screen_name(app) == "HelpScreen")
        assert "replacements.reload" in text(app, "#help-keys")
        await pilot.press("escape")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is building)

        # Another meter has no replacements: the empty state says how they get there.
        await select_meter(pilot, building, org.meters[1])
        await pilot.press("h")
        await until(pilot, lambda: screen_name(app) == "ReplacementHistoryScreen")
        await until(pilot, lambda: app.screen.entries is not None)
        empty = text(app, "#trail-title")
        assert "No replaced readings for M1" in empty
        assert "bpsync import FILE --update" in empty
        assert not app.screen.query_one("#trail", DataTable).display


async def test_the_palette_and_help_offer_it_on_the_building(
    service: Service, tmp_path: Path
) -> None:
    org = await replaced(service, tmp_path)
    login(service, org.key)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_building(pilot, app)
        building = app.screen
        await select_meter(pilot, building, org.meters[0])
        commands = {c.title: c for c in app.get_system_commands(building)}
        assert "h · building.history" in commands["Corrections history"].help
        await pilot.press("f1")
        await until(pilot, lambda: screen_name(app) == "HelpScreen")
        keys = text(app, "#help-keys")
        assert "building.history" in keys and "Corrections" in keys
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is building)
        # Through the command palette, as a user would: ctrl+p, the word the CLI uses for it
        # (`bpsync history`), enter.
        await pilot.press("ctrl+p")
        await until(pilot, lambda: screen_name(app) == "CommandPalette")
        await pilot.press(*"history")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "ReplacementHistoryScreen")
        await until(pilot, lambda: app.screen.entries is not None)
        assert len(rows(app, "#trail")) == 3
