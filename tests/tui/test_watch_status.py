"""The watcher's status file: the contract between `bpsync watch` and its readers."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from bpsync.config import ConfigError
from bpsync.watch.status import (
    LedgerEntry,
    StatusFileError,
    WatchStatus,
    is_stale,
    read_status,
    status_path,
    write_status,
)

T0 = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


def status(**changes: object) -> WatchStatus:
    base = WatchStatus(
        pid=4242,
        profile="default",
        folder="/data/bills",
        started_at=T0,
        heartbeat_at=T0 + dt.timedelta(minutes=5),
        queue_length=2,
        last_file="march.csv",
        last_result="accepted 31, rejected 1",
        recent=[
            LedgerEntry("march.csv", "ab" * 32, "processed", T0, 31, 1, "/r/march.receipt.json"),
            LedgerEntry("notes.txt", "cd" * 32, "skipped", T0),
        ],
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def test_round_trip_in_the_state_dir(tmp_path: Path) -> None:
    written = write_status(status())
    assert written == status_path("default") == tmp_path / "state" / "watch" / "default.status.json"
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    assert read_status("default") == status()
    raw = json.loads(written.read_text())
    assert raw["version"] == 1 and raw["heartbeat_at"] == "2026-11-20T09:35:00Z"
    assert raw["recent"][0]["fate"] == "processed" and raw["recent"][1]["receipt_path"] is None


def test_no_status_file_means_no_watcher_ever_ran() -> None:
    assert read_status("default") is None


def test_replace_is_atomic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = write_status(status(queue_length=1))
    write_status(status(queue_length=7))
    assert read_status("default").queue_length == 7  # type: ignore[union-attr]
    assert sorted(os.listdir(path.parent)) == ["default.status.json"]


def test_stale_after_three_missed_heartbeats() -> None:
    s = status(heartbeat_interval=5.0)
    assert not is_stale(s, s.heartbeat_at + dt.timedelta(seconds=15))
    assert is_stale(s, s.heartbeat_at + dt.timedelta(seconds=15.5))


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        json.dumps({"version": 99}),
        json.dumps({"version": 1, "pid": 1}),
        json.dumps(
            {
                "version": 1,
                "pid": 1,
                "profile": "default",
                "folder": "/x",
                "started_at": "2026-11-20T09:30:00Z",
                "heartbeat_at": "2026-11-20T09:30:00Z",
                "recent": [{"file": "a", "sha256": "b", "fate": "exploded", "at": "2026"}],
            }
        ),
    ],
)
def test_damaged_files_are_reported_not_guessed(content: str) -> None:
    path = status_path("default")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(StatusFileError):
        read_status("default")


def test_profile_names_cannot_escape_the_folder() -> None:
    with pytest.raises(ConfigError):
        status_path("../elsewhere")


def test_naive_times_and_unknown_fates_are_refused_on_write() -> None:
    with pytest.raises(ValueError):
        write_status(status(heartbeat_at=dt.datetime(2026, 1, 1)))
    bad = status(recent=[LedgerEntry("a", "b", "exploded", T0)])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        write_status(bad)
