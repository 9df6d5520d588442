"""Watched files whose names are not valid UTF-8 (bytes a Latin-1 or Shift-JIS machine wrote on a
share): Python gives them as str with surrogate escapes (os.fsdecode). They are imported like any
other file, settled under their own bytes, counted, and named readably in the log and receipts."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from tests.conftest import Service
from tests.watch.conftest import (
    Harness,
    Org,
    bills_text,
    expected,
    history,
    month,
    stored,
    wait_for,
)

GOOD = b"bills-\xff.csv"  # 0xff never occurs in UTF-8
BAD = b"r\xe9jets-\xfe.csv"  # "réjets" in Latin-1


def listing(folder: Path) -> list[bytes]:
    return sorted(os.listdir(os.fsencode(folder)))


def test_names_that_are_not_utf8_are_imported_and_settled(
    service: Service, org: Org, tmp_path: Path
) -> None:
    folder, state = tmp_path / "drop", tmp_path / "state"
    folder.mkdir()
    good = [(org.meters[0], *month(2024, 5), 50.0), (org.meters[1], *month(2024, 5), 51.0)]
    other = [(org.meters[2], *month(2024, 5), 52.0)]
    (folder / os.fsdecode(GOOD)).write_text(bills_text(good), encoding="utf-8")
    bad_text = bills_text(other) + f"{org.meters[2]},2024-06-01,not a date,9,kWh\n"
    (folder / os.fsdecode(BAD)).write_text(bad_text, encoding="utf-8")
    with Harness(folder) as h:
        wait_for(lambda: len(history(state)) >= 2, what="both files settled")
        result = h.stop()
        events = h.events()
        raw = h.stream.getvalue()
    assert (result.processed, result.failed, result.errored) == (1, 1, 0)
    assert stored(service, org) == expected(good + other)
    assert sorted(os.fsencode(name) for name, _, _, _ in history(state)) == sorted([GOOD, BAD])
    assert listing(folder) == [b"failed", b"processed"]

    month_dir = folder / "processed" / dt.datetime.now(dt.UTC).astimezone().strftime("%Y-%m")
    assert listing(month_dir) == [GOOD, GOOD + b".receipt.json"]
    receipt_bytes = (month_dir / os.fsdecode(GOOD + b".receipt.json")).read_bytes()
    receipt = json.loads(receipt_bytes.decode("utf-8"))  # the receipt itself is valid UTF-8
    assert receipt["file"] == os.fsdecode(GOOD) and receipt["counts"]["accepted"] == 2
    assert receipt["accounting"] == {  # every row read, accounted for (issue 27 item 6)
        "rows_read": 2,
        "with_readings": 2,
        "refused": 0,
        "skipped": {},
        "nothing_to_import": 0,
    }
    assert receipt["stored_as"] == str(month_dir / os.fsdecode(GOOD))

    failed = folder / "failed"
    assert listing(failed) == [BAD, BAD + b".receipt.json", b"r\xe9jets-\xfe.rejects.csv"]
    report = (failed / os.fsdecode(b"r\xe9jets-\xfe.rejects.csv")).read_text(encoding="utf-8-sig")
    assert "not a date" in report
    receipt = json.loads((failed / os.fsdecode(BAD + b".receipt.json")).read_bytes())
    assert receipt["counts"] == {"accepted": 1, "rejected_rows": 1, "skipped": 0, "warnings": 0}

    # Every log line names the files with the undecodable bytes written as escapes, so a UTF-8
    # stream (journald, a log file) takes it and a JSON reader gets the name back.
    raw.encode("utf-8")
    assert "processed bills-\\udcff.csv: " in raw
    by_event = {e["event"]: e for e in events}
    assert by_event["processed"]["file"] == os.fsdecode(GOOD)
    assert "error" not in by_event
    stopped = by_event["stopped"]
    assert (stopped["processed"], stopped["failed"]) == (1, 1)


def test_the_summary_counts_a_file_that_could_not_be_handled(tmp_path: Path) -> None:
    """A file a local error keeps in the folder is said in the stop line, not "0 failed"."""
    from bpsync.watch.core import RunResult, summary_line

    assert summary_line(RunResult(processed=2, failed=0, skipped=1)) == (
        "stopped: 2 processed, 0 failed, 1 skipped"
    )
    assert summary_line(RunResult(processed=0, failed=0, skipped=0, errored=1)) == (
        "stopped: 0 processed, 0 failed, 0 skipped, 1 could not be handled (left in the folder "
        "and tried again later)"
    )
