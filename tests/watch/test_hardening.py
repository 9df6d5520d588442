"""The watcher against hostile or unlucky input (issue 14 items 7, 8, 9, 11): a zip bomb fails
fast and the queue goes on; `--once` exits non-zero when a file errored; a file name cannot forge
log lines; explanations are private and capped; symbolic links are skipped out loud."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from bpsync.commands.watch import exit_code_of
from bpsync.watch import core
from bpsync.watch.log import WatchLog
from tests.conftest import Service
from tests.ingest.test_hostile_files import bomb
from tests.watch.conftest import (
    Harness,
    Org,
    bills_text,
    drop,
    expected,
    history,
    month,
    stored,
    wait_for,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "drop"
    path.mkdir()
    return path


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_a_zip_bomb_goes_to_failed_at_once_and_the_queue_goes_on(
    service: Service, org: Org, folder: Path, state: Path, tmp_path: Path
) -> None:
    bomb(folder / ".bomb.tmp", inflated_mb=100).rename(folder / "bills.xlsx")
    rows = [(org.meters[0], *month(2024, 3), 42.0)]
    h = Harness(folder, once=True)
    drop(folder, "march.csv", bills_text(rows))
    h.thread.start()
    h.thread.join(timeout=60)
    assert h.result is not None and (h.result.processed, h.result.failed) == (1, 1)
    why = (folder / "failed" / "bills.xlsx.error.txt").read_text()
    assert "BPSYNC_XLSX_MAX_RATIO" in why and "xl/sharedStrings.xml" in why
    assert stored(service, org) == expected(rows)
    assert exit_code_of(h.result, once=True) == 13


def test_once_exits_non_zero_when_a_file_errored(
    service: Service, org: Org, folder: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local failure while settling (SQLite's own "database or disk is full", raised by the
    ledger) leaves the file for the next run; a scheduler must see that run as failed."""

    def full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(core.Ledger, "settle", full)
    drop(folder, "march.csv", bills_text([(org.meters[0], *month(2024, 3), 42.0)]))
    h = Harness(folder, once=True)
    h.thread.start()
    h.thread.join(timeout=30)
    assert h.result is not None and h.result.errored == 1 and h.result.failed == 0
    assert exit_code_of(h.result, once=True) == 1
    # nothing lost: the file is still there or already moved, its claim kept for the next run
    assert list(folder.rglob("march.csv"))
    assert any("database or disk is full" in e["message"] for e in h.events("error"))


def test_a_file_name_cannot_forge_log_lines(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    name = "bills.csv\n2026-01-01 00:00:00 processed payroll.csv: accepted 9999\x1b[2J"
    drop(folder, name, "Colour\nred\n")
    h = Harness(folder, once=True)
    h.log = WatchLog(h.stream, json_lines=False, verbose=True)  # human lines this time
    h.watcher.log = h.log
    h.thread.start()
    h.thread.join(timeout=30)
    lines = h.stream.getvalue().splitlines()
    forged = [x for x in lines if x.startswith("2026-01-01")]
    assert forged == []
    assert any("bills.csv\\n2026-01-01" in x and "\\x1b[2J" in x for x in lines)
    assert all("\x1b" not in x for x in lines)


def test_explanations_are_private_and_capped(
    service: Service, org: Org, folder: Path, state: Path
) -> None:
    header = ",".join(f"Secret column {i} {'x' * 60}" for i in range(200))
    drop(folder, "notes.csv", header + "\n" + ",".join("v" for _ in range(200)) + "\n")
    h = Harness(folder, once=True)
    h.thread.start()
    h.thread.join(timeout=30)
    explanation = folder / "failed" / "notes.csv.error.txt"
    mode = stat.S_IMODE(explanation.stat().st_mode)
    assert mode == 0o600, oct(mode)
    text = explanation.read_text()
    assert "(shortened)" in text and len(text) < 2500
    receipt = folder / "failed" / "notes.csv.receipt.json"
    assert stat.S_IMODE(receipt.stat().st_mode) == 0o600
    assert json.loads(receipt.read_text())["status"] == "failed"


def test_symbolic_links_are_skipped_with_one_line_each(
    service: Service, org: Org, folder: Path, state: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.csv"
    outside.write_text(bills_text([(org.meters[0], *month(2024, 3), 1.0)]))
    os.symlink(outside, folder / "linked.csv")
    h = Harness(folder, rescan_seconds=0.02)
    rescans: list[int] = []
    original = h.watcher.scanner.rescan

    def counted() -> list[Path]:
        rescans.append(1)
        return original()

    h.watcher.scanner.rescan = counted  # type: ignore[method-assign]
    with h:
        wait_for(lambda: len(rescans) >= 5, what="five rescans")
        events = h.events("skipped_link")
    assert len(events) == 1 and events[0]["file"] == "linked.csv"
    assert "symbolic link" in events[0]["message"]
    assert stored(service, org) == [] and history(state) == []
    assert (folder / "linked.csv").is_symlink()


def test_watch_log_escapes_in_json_too() -> None:
    stream = io.StringIO()
    WatchLog(stream, json_lines=True).info("x", "m", file="a\u2028b\x85c")
    [line] = stream.getvalue().splitlines()
    assert json.loads(line)["file"] == "a\u2028b\x85c" and "\u2028" not in line
