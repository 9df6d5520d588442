"""Every screen against the real service (loopback HTTP, demo portfolio): what the workers post
(`message_hook`) and what the widgets then show."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import httpx
import keyring
import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, Static
from textual.widgets._footer import FooterKey

from bpservice.workers.reports import generate_pending
from bpsync.paths import config_file
from bpsync.tui import messages as M
from bpsync.tui.app import BPSyncApp
from bpsync.tui.screens.base import ConfirmScreen
from bpsync.tui.widgets.charts import BarChart, LineChart
from bpsync.tui.widgets.topbar import EnvBadge
from bpsync.watch.status import LedgerEntry, WatchStatus, write_status
from tests.conftest import Service
from tests.tui.conftest import Messages, Seeded, login, until

pytestmark = pytest.mark.anyio
SIZE = (100, 32)
NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


def make_app(**kwargs: object) -> BPSyncApp:
    kwargs.setdefault("clock", lambda: NOW)
    return BPSyncApp(**kwargs)  # type: ignore[arg-type]


def screen_name(app: BPSyncApp) -> str:
    return type(app.screen).__name__


def text(app: BPSyncApp, selector: str) -> str:
    """What a Static shows, as plain text (markup and rich tables rendered)."""
    console = Console(width=200, color_system=None)
    with console.capture() as captured:
        console.print(app.screen.query_one(selector, Static).content)
    return captured.get()


def badge(app: BPSyncApp) -> str:
    found = app.screen.query(EnvBadge)
    return str(found.first().render()) if found else ""


def rows(app: BPSyncApp, selector: str) -> list[list[str]]:
    table = app.screen.query_one(selector, DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def ids(api: httpx.Client, path: str) -> list[dict]:
    return api.get(path, params={"per_page": 200}).raise_for_status().json()["data"]


async def open_portfolio(pilot, app: BPSyncApp, count: int = 5) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
    await until(pilot, lambda: len(app.screen.rows) >= count)


# --- sign in -------------------------------------------------------------------------------------


async def test_sign_in_with_an_api_key_typed_into_the_masked_field(seeded: Seeded) -> None:
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await until(pilot, lambda: "Sign in below" in text(app, "#note"))
        assert badge(app) == "NOT SIGNED IN"
        app.screen.query_one("#base-url", Input).value = seeded.service.base_url
        key_input = app.screen.query_one("#api-key", Input)
        assert key_input.password  # masked
        key_input.value = "svc_test_not_a_real_key_0000000000000"
        await pilot.click("#save-key")
        await until(pilot, lambda: msgs.of(M.ActionFailed))
        assert msgs.of(M.ActionFailed)[0].status == 401 and not msgs.of(M.SignedIn)

        key_input.value = seeded.service.test_key
        # The second try submits the field with Enter (the form's other way in): Textual ignores a
        # click on a button still showing its 0.2 s press effect, and the 401 often comes back
        # sooner than that, so a second click here was sometimes dropped.
        key_input.focus()
        await pilot.press("enter")
        await until(pilot, lambda: msgs.of(M.KeyStored) or len(msgs.of(M.ActionFailed)) > 1)
        await open_portfolio(pilot, app)
        await until(pilot, lambda: badge(app) == "SANDBOX")
        assert [m.masked for m in msgs.of(M.KeyStored)] == [
            "svc_test_…" + seeded.service.test_key[-4:]
        ]
        assert msgs.of(M.SignedIn)[0].environment == "sandbox"
    # The key went to the keyring, never into the config file.
    assert seeded.service.test_key not in config_file().read_text()
    assert keyring.get_password("bpsync", "default:api_key") == seeded.service.test_key


async def test_without_a_keyring_the_file_store_is_offered_with_its_warning(
    seeded: Seeded, tmp_path: Path
) -> None:
    """No OS keyring: the form offers the unencrypted file (with the warning) and uses it only
    when ticked for this sign-in."""
    from keyring.backends import fail as fail_backend

    from bpsync.paths import state_dir

    keyring.set_keyring(fail_backend.Keyring())
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        box = app.screen.query_one("#file-store")
        await until(pilot, lambda: box.display)
        assert "unencrypted file" in str(box.label) and "no OS keyring" in str(box.label)
        app.screen.query_one("#base-url", Input).value = seeded.service.base_url
        key_input = app.screen.query_one("#api-key", Input)
        key_input.value = seeded.service.test_key
        key_input.focus()
        await pilot.press("enter")  # not ticked: refused, nothing written
        await until(pilot, lambda: msgs.of(M.ActionFailed))
        assert "keyring" in msgs.of(M.ActionFailed)[0].message.lower()
        assert not (state_dir() / "secrets.json").exists()
        box.value = True
        key_input.focus()
        await pilot.press("enter")
        await open_portfolio(pilot, app)
    assert (state_dir() / "secrets.json").exists()
    assert 'secret_store = "file"' in config_file().read_text()


async def test_oauth_sign_in_through_the_browser_and_cancel(service: Service) -> None:
    from tests.client.test_oauth import browser, setup_oauth

    oauth = setup_oauth(service)
    login(service)
    opened: list[str] = []

    def fake_browser(url: str) -> bool:
        opened.append(url)
        if len(opened) > 1:  # the first attempt is cancelled by the user
            threading.Thread(target=browser, args=(url,), daemon=True).start()
        return True

    msgs = Messages()
    app = make_app(open_browser=fake_browser, auto_connect=False)
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await until(pilot, lambda: app.screen.selected is not None)
        signin = app.screen
        signin.query_one("#client-id", Input).value = oauth.client_id
        signin.query_one("#client-secret", Input).value = oauth.client_secret.reveal()  # type: ignore[union-attr]
        signin.query_one("#methods").active = "tab-oauth"
        await pilot.pause()
        await pilot.click("#oauth")
        await until(pilot, lambda: screen_name(app) == "OAuthWaitScreen")
        assert opened[0].startswith(f"{service.base_url}/oauth/authorize?")
        await pilot.press("escape")
        await until(pilot, lambda: "cancelled" in text(app, "#note"))
        assert not msgs.of(M.SignedIn)

        await pilot.click("#oauth")
        await open_portfolio(pilot, app, 0)
        assert msgs.of(M.SignedIn)[0].environment is None
        await until(pilot, lambda: badge(app) == "OAUTH · ENV SET BY APP")
        assert app.connection is not None and app.connection.profile.auth_method == "oauth"


# --- portfolio -----------------------------------------------------------------------------------


async def test_portfolio_pages_filters_sort_search(seeded: Seeded) -> None:
    service = seeded.service
    with service.client() as api:
        for i in range(75):
            api.post(
                "/v1/properties",
                json={
                    "name": f"Depot {i:02d}",
                    "address": {"street": f"{i} Quay", "city": "Leeds", "country": "GB"},
                    "type": "warehouse",
                },
            ).raise_for_status()
    login(service)
    msgs = Messages()
    app = make_app(page_size=40)  # a page more than fills the table: the next waits for a scroll
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app, 40)
        portfolio = app.screen
        table = portfolio.query_one("#properties", DataTable)
        await pilot.pause(0.2)
        assert len(msgs.of(M.PropertiesPage)) == 1 and len(portfolio.rows) == 40
        assert "40 of 80 properties" in text(app, "#status")
        # Scrolling to the end fetches the next pages, one at a time.
        table.focus()
        for _ in range(3):
            await pilot.press("ctrl+end")
            await until(pilot, lambda: not portfolio.loading)
        await until(pilot, lambda: len(portfolio.rows) == 80)
        assert [m.page for m in msgs.of(M.PropertiesPage)] == [1, 2]

        portfolio.query_one("#country", Input).value = "FR"
        await until(
            pilot, lambda: [r[0] for r in rows(app, "#properties")] == ["Galerie Haussmann"]
        )
        portfolio.query_one("#country", Input).value = ""
        await until(pilot, lambda: len(portfolio.rows) >= 40)
        portfolio.query_one("#type").value = "residential"
        await until(
            pilot, lambda: [r[0] for r in rows(app, "#properties")] == ["Back Bay Residences"]
        )
        portfolio.query_one("#type").clear()
        await pilot.press("s")  # Name Z→A
        await until(
            pilot,
            lambda: (
                rows(app, "#properties") and rows(app, "#properties")[0][0] == "Spreeufer Campus"
            ),
        )

        await pilot.press("slash")
        await pilot.press(*"quay 4")
        await pilot.press("enter")
        await until(pilot, lambda: not portfolio.loading and "match" in text(app, "#status"))
        names = sorted(r[0] for r in rows(app, "#properties"))
        assert names == sorted(f"Depot {i:02d}" for i in range(75) if "4" in str(i))
        assert "scanned 80 of 80" in text(app, "#status")


async def test_archive_asks_first_and_marks_the_row(seeded: Seeded) -> None:
    login(seeded.service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await pilot.pause()
        assert not msgs.of(M.ArchiveDone)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: msgs.of(M.ArchiveDone))
        assert rows(app, "#properties")[0][0] == "Back Bay Residences"
        await until(pilot, lambda: rows(app, "#properties")[0][-1] == "archived")
        archived_id = msgs.of(M.ArchiveDone)[0].result.id
        await pilot.press("a")  # archiving twice is refused before asking
        await pilot.pause()
        assert "already archived" in text(app, "#note")
    with seeded.service.client() as api:
        assert api.get(f"/v1/properties/{archived_id}").json()["data"]["status"] == "archived"


# --- drill-down ----------------------------------------------------------------------------------


async def test_property_building_readings_locks_and_delete(seeded: Seeded) -> None:
    service = seeded.service
    with service.client() as api:
        riverside = next(p for p in ids(api, "/v1/properties") if p["name"] == "Riverside House")
        building = ids(api, f"/v1/properties/{riverside['id']}/buildings")[0]
        meters = ids(api, f"/v1/buildings/{building['id']}/meters")
        electricity = next(m for m in meters if m["type"] == "electricity")
        base = f"/v1/buildings/{building['id']}/meters/{electricity['id']}/readings"
        # A spike in the newest month, and readings up to mid-2025 locked.
        api.delete(f"{base}/{ids(api, base)[-1]['id']}").raise_for_status()
        api.post(
            base, json={"start_date": "2026-10-01", "end_date": "2026-10-31", "consumption": 900000}
        ).raise_for_status()
        api.post(
            f"/v1/buildings/{building['id']}/lock", json={"locked_through": "2025-06-30"}
        ).raise_for_status()
        total = len(ids(api, base))
    login(service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        await pilot.press("down", "down", "down", "enter")  # Riverside House
        await until(pilot, lambda: screen_name(app) == "PropertyScreen" and app.screen.buildings)
        assert "Total GFA  8,200 m²" in text(app, "#property-fields") or "8,200 m²" in text(
            app, "#property-fields"
        )
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "BuildingScreen" and app.screen.readings)
        screen = app.screen
        meters_table = screen.query_one("#meters", DataTable)
        meters_table.move_cursor(row=meters_table.get_row_index(electricity["id"]))
        await until(
            pilot, lambda: screen.meter_id == electricity["id"] and len(screen.readings) == total
        )
        assert "office 7,400 + retail 800 = 8,200 m² = GFA" in text(app, "#use-types")
        assert "through 2025-06-30" in text(app, "#building-fields")
        shown = rows(app, "#readings")
        assert shown[0][:2] == ["2026-10-01", "2026-10-31"] and "spike" in shown[0][5], shown[0]
        starts = [r[0] for r in shown]
        assert starts == sorted(starts, reverse=True)  # newest first (sort=-start_date)
        locked = [r for r in shown if "locked" in r[6]]
        assert locked and all(r[1] <= "2025-06-30" for r in locked)
        assert all(r[1] > "2025-06-30" for r in shown if "locked" not in r[6])

        # A reading the lock covers: refused on the spot, nothing asked, nothing sent.
        table = screen.query_one("#readings", DataTable)
        table.focus()
        table.move_cursor(row=len(shown) - 1)
        await pilot.press("d")
        await pilot.pause()
        assert "is locked" in text(app, "#note") and not isinstance(app.screen, ConfirmScreen)

        # The lock moves forward behind the screen's back: the service's 403 is shown inline.
        with service.client() as api:
            api.post(
                f"/v1/buildings/{building['id']}/lock", json={"locked_through": "2025-12-31"}
            ).raise_for_status()
        target = next(i for i, r in enumerate(shown) if r[0] == "2025-09-01")
        table.move_cursor(row=target)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: msgs.of(M.ActionFailed))
        refused = msgs.of(M.ActionFailed)[0]
        assert (refused.status, refused.code) == (403, "building_locked")
        assert "locked through 2025-12-31" in text(app, "#note")
        await until(pilot, lambda: "locked" in rows(app, "#readings")[target][6])

        # An unlocked reading: confirmed, deleted, gone from the table and the service.
        table.move_cursor(row=0)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: msgs.of(M.ReadingDeleted))
        assert rows(app, "#readings")[0][0] == "2026-09-01"
    with service.client() as api:
        assert len(ids(api, base)) == total - 1


# --- benchmarks ----------------------------------------------------------------------------------


async def test_building_benchmarks_and_history_charts(seeded: Seeded) -> None:
    login(seeded.service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        await pilot.press("down", "down", "down", "enter")
        await until(pilot, lambda: screen_name(app) == "PropertyScreen" and app.screen.buildings)
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "BuildingScreen" and app.screen.building)
        await pilot.press("b")
        await until(pilot, lambda: msgs.of(M.BenchmarksLoaded) and msgs.of(M.HistoryLoaded))
        scores = text(app, "#scores")
        for label in (
            "Data quality",
            "svc score",
            "percentile",
            "Energy rating",
            "eligible",
            "EPC grade",
            "Pathway",
            "stranding",
            "Regional rating",
        ):
            assert label in scores, label
        assert msgs.of(M.HistoryLoaded)[0].periods == 4
        eui = app.screen.query_one("#eui-chart", LineChart)
        assert eui.values and len(eui.values) <= 4
        await pilot.press("p")
        await until(pilot, lambda: [m.periods for m in msgs.of(M.HistoryLoaded)] == [4, 8])


async def test_portfolio_benchmarks_with_filters(seeded: Seeded) -> None:
    login(seeded.service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        await pilot.press("f3")
        await until(pilot, lambda: msgs.of(M.PortfolioBenchmarkLoaded))
        everything = msgs.of(M.PortfolioBenchmarkLoaded)[-1].result
        assert everything.building_count == 6
        chart = app.screen.query_one("#grades-chart", BarChart)
        assert chart.labels == ["A", "B", "C", "D", "E", "F"] and sum(chart.values) == 6
        app.screen.query_one("#bm-country", Input).value = "US"
        app.screen.query_one("#bm-country", Input).focus()
        await pilot.press("enter")
        await until(
            pilot, lambda: msgs.of(M.PortfolioBenchmarkLoaded)[-1].filters == {"country": "US"}
        )
        assert msgs.of(M.PortfolioBenchmarkLoaded)[-1].result.building_count == 3
        assert "country=US" in text(app, "#note")


# --- reports -------------------------------------------------------------------------------------


async def test_generate_watch_and_download_a_report(seeded: Seeded, tmp_path: Path) -> None:
    service = seeded.service
    login(service)
    folder = tmp_path / "downloads"
    folder.mkdir()
    msgs = Messages()
    app = make_app(download_dir=folder, poll_interval=0.05)
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        await pilot.press("f4")
        await until(pilot, lambda: screen_name(app) == "ReportsScreen" and app.screen.types)
        screen = app.screen
        assert set(screen.types) >= {"benchmark_certificate", "portfolio_summary", "custom"}
        assert screen.query_one("#r-type").value == "portfolio_summary"
        assert [
            v
            for _, v in screen.query_one("#r-format")._options
            if v != screen.query_one("#r-format").NULL
        ] == ["pdf", "xlsx"]
        screen.query_one("#r-format").value = "xlsx"
        screen.query_one("#r-fcountry", Input).value = "US"
        await pilot.press("ctrl+g")
        await until(pilot, lambda: msgs.of(M.ReportUpdated))
        report = msgs.of(M.ReportUpdated)[0].report
        assert report.status.value == "processing" and report.format == "xlsx"
        assert rows(app, "#reports")[0][3] == "processing"
        # The service's report worker runs when the test says so; the screen's poll notices.
        generate_pending(service.app, service.clock())
        await until(pilot, lambda: msgs.of(M.ReportUpdated)[-1].report.status.value == "complete")
        assert rows(app, "#reports")[0][3] == "complete"
        await pilot.press("d")
        await until(pilot, lambda: msgs.of(M.DownloadFinished))
        done = msgs.of(M.DownloadFinished)[0]
        assert done.path.parent == folder and done.path.suffix == ".xlsx"
        complete = msgs.of(M.ReportUpdated)[-1].report
        assert done.path.read_bytes()[:2] == b"PK" and done.size == complete.file_size_bytes
        assert "Saved" in text(app, "#note")
        # A building report without a building is refused by the form, before any request.
        screen.query_one("#r-type").value = "benchmark_certificate"
        await pilot.pause()
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert "choose it in the Building field" in text(app, "#note")


async def test_an_expired_download_link_is_renewed_before_downloading(
    seeded: Seeded, tmp_path: Path
) -> None:
    service = seeded.service
    with service.client() as api:
        created = (
            api.post(
                "/v1/reports",
                json={
                    "type": "portfolio_summary",
                    "format": "pdf",
                    "reporting_period": {"start": "2025-01-01", "end": "2025-12-31"},
                },
            )
            .raise_for_status()
            .json()["data"]
        )
    generate_pending(service.app, service.clock())
    login(service)
    msgs = Messages()
    later = NOW + dt.timedelta(days=2)  # the link read now expires after 24 h
    app = make_app(download_dir=tmp_path, clock=lambda: later)
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        await pilot.press("f4")
        await until(pilot, lambda: screen_name(app) == "ReportsScreen" and app.screen.reports)
        screen = app.screen
        screen.reports[created["id"]] = screen.reports[created["id"]].model_copy(
            update={"download_expires_at": NOW + dt.timedelta(hours=24)}
        )
        screen.query_one("#reports", DataTable).focus()
        await pilot.press("d")
        await until(pilot, lambda: msgs.of(M.DownloadFinished))
        refreshed = [m.report for m in msgs.of(M.ReportUpdated) if m.report.id == created["id"]]
        assert refreshed and refreshed[-1].download_url
        assert msgs.of(M.DownloadFinished)[0].path.suffix == ".pdf"


# --- sync status ---------------------------------------------------------------------------------


async def test_sync_status_shows_the_watcher_ledger_and_rate_limits(service: Service) -> None:
    login(service)
    write_status(
        WatchStatus(
            pid=777,
            profile="default",
            folder="/srv/bills",
            started_at=NOW - dt.timedelta(hours=1),
            heartbeat_at=NOW - dt.timedelta(seconds=4),
            queue_length=3,
            last_file="april.xlsx",
            last_result="accepted 12, rejected 1",
            recent=[
                LedgerEntry("april.xlsx", "a" * 64, "processed", NOW, 12, 1, "/srv/r/april.json"),
                LedgerEntry("broken.csv", "b" * 64, "failed", NOW),
            ],
        )
    )
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        await pilot.press("f5")
        await until(pilot, lambda: msgs.of(M.SyncStatusLoaded) and rows(app, "#ledger"))
        loaded = msgs.of(M.SyncStatusLoaded)[-1]
        assert loaded.status.pid == 777 and not loaded.stale
        assert "RUNNING" in text(app, "#watcher") and "/srv/bills" in text(app, "#watcher")
        assert [r[1:5] for r in rows(app, "#ledger")] == [
            ["april.xlsx", "processed", "12", "1"],
            ["broken.csv", "failed", "0", "0"],
        ]
        assert "key" in loaded.buckets and "left" in text(app, "#limits")
    stale = make_app(clock=lambda: NOW + dt.timedelta(minutes=5))
    async with stale.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: screen_name(stale) == "PortfolioScreen")
        await pilot.press("f5")
        await until(pilot, lambda: "STOPPED" in text(stale, "#watcher"))


# --- keys, help, palette, small terminals --------------------------------------------------------


async def test_keymap_help_and_command_palette(seeded: Seeded) -> None:
    login(seeded.service)
    msgs = Messages()
    app = make_app(keymap={"portfolio.reload": "ctrl+r", "app.help": "f1,question_mark"})
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        portfolio = app.screen
        before = portfolio.generation
        await pilot.press("r")  # the default key no longer reloads
        await pilot.pause()
        assert portfolio.generation == before
        await pilot.press("ctrl+r")
        await until(pilot, lambda: portfolio.generation == before + 1)
        commands = {c.title: c for c in app.get_system_commands(portfolio)}
        assert {"Archive", "Search", "Go to Reports", "Go to Sync status", "Help"} <= set(commands)
        assert "ctrl+r" in commands["Reload"].help or "^r" in commands["Reload"].help
        await pilot.press("question_mark")
        await until(pilot, lambda: screen_name(app) == "HelpScreen")
        keys = text(app, "#help-keys")
        assert "portfolio.reload" in keys and "portfolio.archive" in keys
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")


async def test_every_section_fits_80x24_with_the_live_badge(service: Service) -> None:
    """A production key: the LIVE badge on every section, and nothing falls off an 80x24 screen."""
    login(service, service.live_key)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=(80, 24), message_hook=msgs) as pilot:
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        for key, name in (
            ("f2", "Portfolio"),
            ("f3", "PortfolioBenchmarks"),
            ("f4", "Reports"),
            ("f5", "SyncStatus"),
            ("f6", "ImportWizard"),
        ):
            await pilot.press(key)
            await until(pilot, lambda name=name: screen_name(app) == f"{name}Screen")
            await until(pilot, lambda: badge(app) == "LIVE")
            screen = app.screen
            assert screen.query_one(EnvBadge).region.right <= 80
            for widget in screen.query("Footer, #note, DataTable, DirectoryTree"):
                assert widget.region.bottom <= 24, widget
            # Quit and Help are the first keys of the footer, whole within 80 columns
            keys = [k for k in screen.query(FooterKey) if "-command-palette" not in k.classes]
            assert [k.action for k in keys[:2]] == ["quit", "help"], name
            assert all(k.region.right <= 80 for k in keys[:2]), name
        assert not msgs.of(M.ActionFailed)


async def test_a_half_typed_country_is_refused_here_not_sent(seeded: Seeded) -> None:
    """One letter in the country filter is never sent (the service would answer 422): Enter says
    what the field takes and stays there; digits cannot be typed; a full code filters."""
    login(seeded.service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        field = app.screen.query_one("#country", Input)
        field.focus()
        await pilot.press("f", "1")
        assert field.value == "f"  # the digit was not taken
        await pilot.press("enter")
        await pilot.pause()
        assert "two-letter code" in text(app, "#note") and app.focused is field
        # any reload meanwhile (a sort change) asks without the half code
        assert app.screen.query_params()["country"] is None
        await pilot.press("r", "enter")  # "fr": France
        await until(pilot, lambda: app.focused is not field)
        await until(
            pilot, lambda: [r[0] for r in rows(app, "#properties")] == ["Galerie Haussmann"]
        )
        assert not msgs.of(M.ActionFailed)


async def test_c_copies_the_selected_id_whole(seeded: Seeded) -> None:
    """Tables cut long ids: c puts the selected row's id on the clipboard and in the note."""
    login(seeded.service)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_portfolio(pilot, app)
        table = app.screen.query_one(DataTable)
        table.focus()
        await pilot.press("down")
        expected = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        assert expected.startswith("prp_")
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == expected
        assert f"Copied {expected}" in text(app, "#note")


# --- user text is never markup (issue 11) ---------------------------------------------------------


def seen(cell: object) -> str:
    """What a DataTable cell shows: a str cell is read as markup by Textual, Text as it is."""
    from rich.text import Text as RichText

    return RichText.from_markup(cell).plain if isinstance(cell, str) else str(cell)


async def test_names_with_brackets_are_shown_literally(service: Service) -> None:
    """Property, building and meter names like "[fixed]" or "[bold]…[/]" (template and
    keymap words users put in names) must be shown, not eaten as Rich/Textual markup."""
    odd = "[bold]Annex[/] [fixed] Tower"
    with service.client() as api:
        prop = api.post(
            "/v1/properties",
            json={
                "name": odd,
                "address": {"street": "1 [red]Quay", "city": "Leeds", "country": "GB"},
                "type": "office",
            },
        ).json()["data"]
    login(service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app, 1)
        table = app.screen.query_one("#properties", DataTable)
        assert seen(table.get_row_at(0)[0]) == odd
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "PropertyScreen")
        await until(pilot, lambda: "Leeds" in text(app, "#property-fields"))
        fields = text(app, "#property-fields")
        assert odd in fields and "1 [red]Quay" in fields
        assert odd in text(app, "#title")
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: msgs.of(M.ArchiveDone))
        await until(pilot, lambda: any(odd in n.message for n in app._notifications))
        note = next(n for n in app._notifications if odd in n.message)
        assert note.markup is False
    assert prop["name"] == odd


# --- every key (issue 15 item 1) -------------------------------------------------------------------


async def test_ctrl_o_opens_profiles_and_signing_in_again_works(seeded: Seeded) -> None:
    """Ctrl+O crashed the app (UnknownModeError: '_default'), which under `bpsync demo` took the
    embedded service down too."""
    login(seeded.service)
    msgs = Messages()
    app = make_app()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)
        for _ in range(2):  # twice: the profiles mode is made afresh each time
            await pilot.press("f3")
            await until(pilot, lambda: screen_name(app) == "PortfolioBenchmarksScreen")
            await pilot.press("ctrl+o")
            await until(pilot, lambda: screen_name(app) == "SignInScreen")
            await pilot.press("ctrl+o")  # pressing it again on the sign-in screen does nothing
            await pilot.pause()
            assert screen_name(app) == "SignInScreen"
            await pilot.press("ctrl+n")  # connect with the stored key
            await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
            await open_portfolio(pilot, app)
        assert app.is_running


# Every binding of the app and its screens, where it is pressed below.
SCREEN_KEYS = {
    "PortfolioScreen": ["slash", "escape", "f", "escape", "s", "r", "c", "b"],
    "PropertyScreen": ["r", "c"],
    "BuildingScreen": ["r", "c", "t", "b"],
    "BenchmarksScreen": ["p", "r"],
    "PortfolioBenchmarksScreen": ["r"],
    "ReportsScreen": ["r", "d", "c", "ctrl+g"],
    "SyncStatusScreen": ["r"],
    "ImportWizardScreen": ["ctrl+right", "ctrl+left", "ctrl+s", "ctrl+x"],
}


async def test_every_binding_can_be_pressed_without_a_crash(seeded: Seeded) -> None:
    """Each documented key, on its screen: the app keeps running and no unexpected error is
    reported (the specific behaviour of each key has its own test above)."""
    from bpsync.tui.screens.base import AppScreen  # noqa: F401  (the screens' base)

    login(seeded.service)
    msgs = Messages()
    app = make_app()
    pressed: set[str] = set()
    async with app.run_test(size=SIZE, message_hook=msgs) as pilot:
        await open_portfolio(pilot, app)

        async def press_all(name: str) -> None:
            await until(pilot, lambda: screen_name(app) == name)
            for key in SCREEN_KEYS[name]:
                if screen_name(app) != name:
                    await pilot.press("escape")
                    await until(pilot, lambda: screen_name(app) == name)
                await pilot.press(key)
                await pilot.pause(0.05)
                assert app.is_running, (name, key)
                pressed.add(f"{name}:{key}")

        await press_all("PortfolioScreen")  # ends with b: portfolio benchmarks
        await press_all("PortfolioBenchmarksScreen")
        await pilot.press("f2")
        await open_portfolio(pilot, app)
        await pilot.press("enter")
        await press_all("PropertyScreen")
        await until(pilot, lambda: app.screen.query_one("#buildings", DataTable).row_count > 0)
        app.screen.query_one("#buildings", DataTable).focus()
        await pilot.press("enter")
        await press_all("BuildingScreen")  # ends with b: the building's benchmarks
        await press_all("BenchmarksScreen")
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) == "BuildingScreen")
        await pilot.press("g")  # a report for this building
        await press_all("ReportsScreen")
        await pilot.press("f5")
        await press_all("SyncStatusScreen")
        await pilot.press("f6")
        await press_all("ImportWizardScreen")
        await pilot.press("f1")
        await until(pilot, lambda: screen_name(app) == "HelpScreen")
        await pilot.press("q")
        await until(pilot, lambda: screen_name(app) == "ImportWizardScreen")
        await pilot.press("f2")  # back to the portfolio section, where Reports sits on top
        await until(pilot, lambda: screen_name(app) == "ReportsScreen")
        while screen_name(app) != "PortfolioScreen":
            await pilot.press("escape")
            await pilot.pause(0.05)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await until(pilot, lambda: screen_name(app) == "PortfolioScreen")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: screen_name(app) == "SignInScreen")
        await pilot.press("ctrl+q")
        await pilot.pause()
    unexpected = [m for m in msgs.of(M.ActionFailed) if "Unexpected" in m.action]
    assert not unexpected, unexpected
    assert {p.split(":")[0] for p in pressed} == set(SCREEN_KEYS)
