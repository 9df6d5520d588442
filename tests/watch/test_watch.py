"""The watcher end to end, in-process: a real watchdog observer on a temporary folder, the real
import engine and journal, the real service over loopback HTTP."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from bpsync.client import AsyncServiceClient
from bpsync.commands.watch import exit_code_of
from bpsync.ingest import read_register
from bpsync.ingest.register.apply import import_register
from bpsync.paths import package_dir
from bpsync.watch.status import read_status
from bpsync.watch.summary import watch_status_lines
from tests.conftest import Service, make_service_app
from tests.watch.conftest import (
    PROFILE,
    Harness,
    Org,
    ServerOnPort,
    Tick,
    bills_text,
    drop,
    expected,
    free_port,
    history,
    journal_imports,
    month,
    stored,
    wait_for,
)

SAMPLES = package_dir("sample_data")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "drop"
    path.mkdir()
    return path


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def settled(state: Path, n: int) -> bool:
    return len(history(state)) >= n


def month_dir() -> str:
    return dt.datetime.now(dt.UTC).astimezone().strftime("%Y-%m")


def test_a_file_written_slowly_is_processed_once_after_it_is_complete(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    rows = [
        (m, *month(2024, k), 100.0 * k + i) for i, m in enumerate(org.meters) for k in range(1, 7)
    ]
    text = bills_text(rows)
    chunks = [text[i : i + 97] for i in range(0, len(text), 97)]
    tick = Tick()
    path = folder / "slow.csv"
    with Harness(folder, clock=tick, stable_seconds=5.0) as h:
        with path.open("w", encoding="utf-8") as f:
            for chunk in chunks:
                f.write(chunk)
                f.flush()
                size = path.stat().st_size
                # The watcher has seen this size (its event or its rescan) before time moves.
                wait_for(
                    lambda s=size: (
                        (h.watcher.tracker.seen(path) or None)
                        and h.watcher.tracker.seen(path).size == s
                    ),
                    what="the chunk to be seen",
                )
                tick.advance(2.0)  # longer in total than stable_seconds, never 5 s unchanged
        assert history(state) == [] and path.exists(), "taken before it was complete"
        assert stored(service, org) == []
        final = path.stat().st_size
        wait_for(lambda: h.watcher.tracker.seen(path).size == final)  # type: ignore[union-attr]
        tick.advance(5.0)
        wait_for(lambda: settled(state, 1), what="the file to be processed")
        time.sleep(0.1)  # a few more ticks: nothing else happens
    assert [(n, fate) for n, _, fate, _ in history(state)] == [("slow.csv", "processed")]
    assert stored(service, org) == expected(rows)
    assert journal_imports(state) == 1
    assert not path.exists()
    moved = folder / "processed" / month_dir() / "slow.csv"
    assert moved.read_text(encoding="utf-8") == text
    receipt = json.loads((moved.parent / "slow.csv.receipt.json").read_text())
    assert receipt["status"] == "processed" and receipt["counts"]["accepted"] == len(rows)
    assert len(receipt["accepted_ids"]) == len(rows)
    assert all(i.startswith("rdg_") for i in receipt["accepted_ids"])
    assert receipt["profile"] == PROFILE and receipt["environment"] == "sandbox"
    assert receipt["template"] == "long_csv" and receipt["finished_at"].endswith("Z")


def test_temporary_and_lock_files_are_ignored(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    ignored = [
        "~$bills.xlsx",
        ".~lock.bills.csv#",
        "export.tmp",
        "bills.csv.part",
        "bills.csv.crdownload",
        ".hidden.csv",
        "Thumbs.db",
    ]
    rows = [(org.meters[0], *month(2024, 1), 10.0)]
    tick = Tick()
    with Harness(folder, clock=tick, rescan_seconds=30.0) as h:
        for name in ignored:
            drop(folder, name, bills_text([(org.meters[1], *month(2024, 2), 5.0)]))
        drop(folder, "real.csv", bills_text(rows))
        wait_for(lambda: settled(state, 1))
        tick.advance(31.0)  # a rescan sees the ignored files too
        time.sleep(0.1)
        assert len(h.watcher.tracker) == 0
    assert [n for n, *_ in history(state)] == ["real.csv"]
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == sorted(ignored)
    assert stored(service, org) == expected(rows)


def test_a_burst_of_200_files_is_processed_in_arrival_order(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    rows = [
        (
            org.meters[i % 3],
            dt.date(2023, 1, 1) + dt.timedelta(days=i // 3),
            dt.date(2023, 1, 1) + dt.timedelta(days=i // 3),
            float(i),
        )
        for i in range(200)
    ]
    started = time.monotonic()
    with Harness(folder):
        for i, row in enumerate(rows):
            drop(folder, f"bill-{i:03}.csv", bills_text([row]))
        # order is what is checked here; speed is bench/ work (about 35 s here, slower on CI)
        wait_for(lambda: settled(state, 200), timeout=240, what="200 files")
    seconds = time.monotonic() - started
    names = [n for n, *_ in history(state)]
    assert names == [f"bill-{i:03}.csv" for i in range(200)]
    assert {fate for _, _, fate, _ in history(state)} == {"processed"}
    assert stored(service, org) == expected(rows)
    assert len(list((folder / "processed" / month_dir()).glob("*.csv"))) == 200
    print(f"200 files in {seconds:.1f} s")


def test_files_that_arrived_while_stopped_are_processed_at_start(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    first = [(org.meters[0], *month(2024, 1), 1.0)]
    with Harness(folder):
        drop(folder, "a.csv", bills_text(first))
        wait_for(lambda: settled(state, 1))
    later = {
        "b.csv": [(org.meters[1], *month(2024, 1), 2.0)],
        "c.csv": [(org.meters[2], *month(2024, 1), 3.0)],
    }
    for i, (name, rows) in enumerate(later.items()):
        path = folder / name
        path.write_text(bills_text(rows))
        os.utime(path, ns=(time.time_ns(), time.time_ns() - (10 - i) * 10**9))
    tick = Tick()
    with Harness(folder, clock=tick, stable_seconds=1.0) as h:
        wait_for(lambda: len(h.watcher.tracker) == 2, what="the start scan")
        tick.advance(1.0)  # they held still
        wait_for(lambda: settled(state, 3))
    assert [n for n, *_ in history(state)] == ["a.csv", "b.csv", "c.csv"]
    assert stored(service, org) == expected(first + later["b.csv"] + later["c.csv"])
    assert journal_imports(state) == 3


def test_the_same_content_twice_is_imported_once_and_a_changed_file_is_new(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    rows = [(org.meters[0], *month(2024, 3), 30.0)]
    with Harness(folder) as h:
        drop(folder, "march.csv", bills_text(rows))
        wait_for(lambda: settled(state, 1))
        drop(folder, "march copy.csv", bills_text(rows))
        wait_for(lambda: settled(state, 2))
        drop(folder, "march.csv", bills_text(rows))  # the same name and content again
        wait_for(lambda: settled(state, 3))
        changed = [*rows, (org.meters[0], *month(2024, 4), 40.0)]
        drop(folder, "march.csv", bills_text(changed))
        wait_for(lambda: settled(state, 4))
        assert h.watcher.result.processed == 2 and h.watcher.result.skipped == 2
    fates = [(n, fate) for n, _, fate, _ in history(state)]
    assert fates == [
        ("march.csv", "processed"),
        ("march copy.csv", "skipped"),
        ("march.csv", "skipped"),
        ("march.csv", "processed"),
    ]
    assert stored(service, org) == expected(changed)
    assert journal_imports(state) == 2  # duplicates never reach the import engine
    done = folder / "processed" / month_dir()
    assert sorted(p.name for p in done.iterdir()) == sorted(
        f"{n}{suffix}"
        for n in ("march.csv", "march copy.csv", "march (2).csv", "march (3).csv")
        for suffix in ("", ".receipt.json")
    )
    dup = json.loads((done / "march copy.csv.receipt.json").read_text())
    assert dup["status"] == "duplicate" and dup["duplicate_of"]["file"] == "march.csv"
    assert dup["accepted_ids"] == [] and "nothing was sent" in dup["message"]
    assert (done / "march (3).csv").read_text() == bills_text(changed)


def test_rejected_rows_go_to_failed_with_the_reject_report_and_accepted_rows_stay(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    good = [(org.meters[0], *month(2024, 5), 50.0), (org.meters[1], *month(2024, 5), 51.0)]
    text = bills_text(good) + "mtr_doesnotexist,2024-05-01,2024-05-31,9,kWh\n"
    text += f"{org.meters[2]},2024-05-01,not a date,9,kWh\n"
    with Harness(folder):
        drop(folder, "may.csv", text)
        wait_for(lambda: settled(state, 1))
    assert [(n, fate) for n, _, fate, _ in history(state)] == [("may.csv", "failed")]
    assert stored(service, org) == expected(good)
    failed = folder / "failed"
    assert sorted(p.name for p in failed.iterdir()) == [
        "may.csv",
        "may.csv.receipt.json",
        "may.rejects.csv",
    ]
    receipt = json.loads((failed / "may.csv.receipt.json").read_text())
    assert receipt["status"] == "failed" and receipt["counts"]["accepted"] == 2
    assert receipt["counts"]["rejected_rows"] == 2 and len(receipt["accepted_ids"]) == 2
    assert receipt["reject_report"] == str(failed / "may.rejects.csv")
    report = (failed / "may.rejects.csv").read_text(encoding="utf-8-sig")
    assert "mtr_doesnotexist" in report and "not a date" in report and "Reason" in report
    assert not list((folder / "processed").rglob("*.csv"))


def test_a_workbook_imported_sheet_by_sheet_keeps_each_sheet_s_reject_report_beside_it(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    """One layout on two sheets (as PM's Add Bills template has): each sheet is imported and
    gets its own reject report; both follow the workbook to failed/ and the receipt names
    both (they were left in the watcher's work folder)."""
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    header = ["Meter ID", "Start Date", "End Date", "Consumption", "Unit"]
    for title, meter, usage in (("North", org.meters[0], 50.0), ("South", org.meters[1], 51.0)):
        sheet = book.create_sheet(title)
        sheet.append(header)
        start, end = month(2024, 5)
        sheet.append([meter, start, end, usage, "kWh"])
        sheet.append([f"mtr_missing{title.lower()}", start, end, 9, "kWh"])
    incoming = folder / ".may.xlsx.incoming"
    book.save(incoming)
    with Harness(folder):
        os.replace(incoming, folder / "may.xlsx")
        wait_for(lambda: settled(state, 1))
    good = [(org.meters[0], *month(2024, 5), 50.0), (org.meters[1], *month(2024, 5), 51.0)]
    assert stored(service, org) == expected(good)
    failed = folder / "failed"
    assert sorted(p.name for p in failed.iterdir()) == [
        "may.North.rejects.xlsx",
        "may.South.rejects.xlsx",
        "may.xlsx",
        "may.xlsx.receipt.json",
    ]
    receipt = json.loads((failed / "may.xlsx.receipt.json").read_text())
    assert receipt["counts"]["rejected_rows"] == 2
    assert receipt["reject_reports"] == [
        str(failed / "may.North.rejects.xlsx"),
        str(failed / "may.South.rejects.xlsx"),
    ]
    assert receipt["reject_report"] == str(failed / "may.North.rejects.xlsx")
    assert not list(state.rglob("*.rejects.xlsx"))  # nothing left in the work folder


def test_a_file_no_template_matches_goes_to_failed_with_an_explanation(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    with Harness(folder) as h:
        drop(folder, "notes.csv", "Colour,Flavour\nred,sweet\n")
        wait_for(lambda: settled(state, 1))
        events = h.events("failed")
    failed = folder / "failed"
    assert sorted(p.name for p in failed.iterdir()) == [
        "notes.csv",
        "notes.csv.error.txt",
        "notes.csv.receipt.json",
    ]
    why = (failed / "notes.csv.error.txt").read_text()
    assert "no template matches" in why and "Colour" in why and "Nothing from this file" in why
    receipt = json.loads((failed / "notes.csv.receipt.json").read_text())
    assert receipt["error"]["code"] == "no_template" and receipt["counts"]["accepted"] == 0
    assert events and events[0]["code"] == "no_template"
    assert stored(service, org) == []


def test_while_the_service_is_down_files_wait_then_go_through(
    service: Service,
    org: Org,
    folder: Path,
    state: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()  # nothing listens there yet: connections are refused
    monkeypatch.setenv("BPSYNC_BASE_URL", f"http://127.0.0.1:{port}")
    rows = [(org.meters[0], *month(2024, 6), 60.0)]
    with Harness(folder) as h:
        drop(folder, "june.csv", bills_text(rows))
        wait_for(lambda: len(h.events("paused")) >= 3, what="the watcher to pause")
        paused = h.events("paused")[0]
        assert paused["code"] == "unreachable" and paused["file"] == "june.csv"
        assert "unreachable" in paused["message"] and "retrying in" in paused["message"]
        delays = [e["retry_in"] for e in h.events("paused")]
        assert all(0.025 <= d <= 0.2 for d in delays) and delays[1] >= delays[0] / 2
        assert (folder / "june.csv").exists() and history(state) == []
        assert not list((folder / "failed").iterdir())
        wait_for(lambda: (read_status(PROFILE) or None) and read_status(PROFILE).paused_reason)
        # The service comes back on the same port, over the same database.
        app = make_service_app(
            tmp_path / "svc.db",
            service.clock,
            per_key=100_000,
            bulk=100_000,
            reports=100_000,
            per_user=100_000,
        )
        with ServerOnPort(app, port):
            wait_for(lambda: settled(state, 1), what="the file to go through")
            assert h.events("resumed")
            wait_for(lambda: read_status(PROFILE).paused_reason is None)  # type: ignore[union-attr]
    assert [(n, fate) for n, _, fate, _ in history(state)] == [("june.csv", "processed")]
    assert stored(service, org) == expected(rows)


def test_refused_credentials_pause_until_a_good_key_is_there(
    service: Service, org: Org, folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BPSYNC_API_KEY", "svc_test_" + "x" * 40)
    rows = [(org.meters[1], *month(2024, 7), 70.0)]
    with Harness(folder) as h:
        drop(folder, "july.csv", bills_text(rows))
        wait_for(lambda: h.events("paused"))
        assert h.events("paused")[0]["code"] == "credentials"
        assert "bpsync login" in h.events("paused")[0]["message"]
        assert (folder / "july.csv").exists() and history(state) == []
        monkeypatch.setenv("BPSYNC_API_KEY", org.key)  # e.g. `bpsync login` in another shell
        wait_for(lambda: settled(state, 1))
    assert "x" * 20 not in h.stream.getvalue()  # the key never reaches the log
    assert stored(service, org) == expected(rows)


def test_a_dead_observer_is_restarted_and_the_folder_rescanned(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    rows = [(org.meters[2], *month(2024, 8), 80.0)]
    with Harness(folder, poll=True) as h:
        wait_for(lambda: h.watcher.scanner._observer is not None)
        dead = h.watcher.scanner._observer
        assert dead is not None
        dead.stop()
        dead.join(timeout=5)
        wait_for(lambda: h.events("observer_started"), what="the observer to be restarted")
        assert h.events("observer_restart")
        assert h.watcher.scanner._observer is not dead and h.watcher.scanner._observer.is_alive()
        drop(folder, "august.csv", bills_text(rows))
        wait_for(lambda: settled(state, 1))
    assert stored(service, org) == expected(rows)


def test_status_file_and_status_lines_follow_the_watcher(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    rows = [(org.meters[0], *month(2024, 9), 90.0)]
    tick = Tick()
    with Harness(folder, clock=tick, stable_seconds=1.0, heartbeat_seconds=0.5) as h:
        (folder / "sept.csv").write_text(bills_text(rows))
        wait_for(
            lambda: (read_status(PROFILE) or None) and read_status(PROFILE).queue_length == 1,
            what="the queue length",
        )
        tick.advance(1.0)
        wait_for(lambda: read_status(PROFILE).recent and not read_status(PROFILE).queue_length)  # type: ignore[union-attr]
        status = read_status(PROFILE)
        assert status is not None and status.pid == os.getpid()
        assert status.folder == str(folder.resolve()) and status.last_file == "sept.csv"
        assert status.last_result == "accepted 1, rejected 0" and status.queue_length == 0
        entry = status.recent[0]
        assert entry.fate == "processed" and entry.accepted == 1
        assert entry.receipt_path and Path(entry.receipt_path).is_file()
        first_beat = status.heartbeat_at
        wait_for(lambda: read_status(PROFILE).heartbeat_at > first_beat)  # type: ignore[union-attr]
        lines = dict(watch_status_lines(PROFILE))
        assert lines["watcher"].startswith("running (pid") and "0 file(s)" in lines["watch queue"]
        assert lines["watch last file"] == "sept.csv: accepted 1, rejected 0"
        assert h.watcher.queue_length == 0
    lines = dict(watch_status_lines(PROFILE, pid_alive=lambda _pid: False))
    assert lines["watcher"].startswith("stopped (last heartbeat")
    assert "1 processed" in lines["watch recent"]


def test_sample_workbooks_through_auto_templates(
    service: Service, folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped samples, matched by header: the deliberate errors go to failed/ with an .xlsx
    reject report (their good rows stay stored); the UK supplier CSV is processed, its meters
    found through the register's references in the profile's meter map."""
    monkeypatch.setenv("BPSYNC_API_KEY", service.test_key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)

    async def register() -> None:
        async with AsyncServiceClient(service.base_url, service.test_key, profile=PROFILE) as c:
            outcome = await import_register(
                c, read_register(SAMPLES / "portfolio_register.xlsx"), PROFILE
            )
            assert outcome.ok, outcome

    asyncio.run(register())
    with Harness(folder):
        shutil.copy(SAMPLES / "deliberate_errors.xlsx", folder / "deliberate_errors.xlsx")
        wait_for(lambda: settled(state, 1), timeout=60)
        shutil.copy(SAMPLES / "utility_read_dates.csv", folder / "utility_read_dates.csv")
        wait_for(lambda: settled(state, 2), timeout=60)
    fates = {n: fate for n, _, fate, _ in history(state)}
    assert fates == {"deliberate_errors.xlsx": "failed", "utility_read_dates.csv": "processed"}
    failed = folder / "failed"
    assert (failed / "deliberate_errors.rejects.xlsx").is_file()
    receipt = json.loads((failed / "deliberate_errors.xlsx.receipt.json").read_text())
    assert receipt["template"] == "utility_service_period"
    # as the import engine's own test of this sample: rows 4 and 9 accepted, 8 rows rejected
    assert receipt["counts"]["rejected_rows"] == 8 and receipt["counts"]["accepted"] == 2
    assert len(receipt["accepted_ids"]) == 2
    done = folder / "processed" / month_dir()
    ok = json.loads((done / "utility_read_dates.csv.receipt.json").read_text())
    assert ok["template"] == "utility_read_date_days" and ok["counts"]["accepted"] > 0
    assert ok["counts"]["rejected_rows"] == 0


def test_once_stops_on_an_unreachable_service_and_the_next_run_finishes(
    service: Service, org: Org, folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [(org.meters[0], *month(2024, 10), 100.0), (org.meters[1], *month(2024, 10), 101.0)]
    (folder / "oct.csv").write_text(bills_text(rows))
    (folder / "nov.csv").write_text(bills_text([(org.meters[2], *month(2024, 11), 5.0)]))
    monkeypatch.setenv("BPSYNC_BASE_URL", f"http://127.0.0.1:{free_port()}")
    first = Harness(folder, once=True)
    first.thread.start()
    first.thread.join(timeout=30)  # --once ends by itself
    result = first.result
    assert (
        result is not None and result.stopped is not None and result.stopped.code == "unreachable"
    )
    assert exit_code_of(result, once=True) == 10
    assert (folder / "oct.csv").exists() and (folder / "nov.csv").exists()
    assert history(state) == [] and stored(service, org) == []
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    h = Harness(folder, once=True)
    h.thread.start()
    h.thread.join(timeout=30)  # --once ends by itself
    assert not h.thread.is_alive() and h.result is not None
    assert (h.result.processed, h.result.failed, h.result.stopped) == (2, 0, None)
    assert h.events("resume")  # the claim the first run left is finished first
    assert [n for n, *_ in history(state)] == ["oct.csv", "nov.csv"]
    assert stored(service, org) == expected([*rows, (org.meters[2], *month(2024, 11), 5.0)])
