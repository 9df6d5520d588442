"""The watcher's pure rules: ignore patterns, stability, backoff, error verdicts, names, receipts,
exit codes and the `bpsync status` lines."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.client import errors as E
from bpsync.commands.watch import exit_code_of
from bpsync.config import ConfigError
from bpsync.ingest.problems import IngestError
from bpsync.ingest.run.import_file import ImportBusyError
from bpsync.watch.core import RunResult, WatchConfig
from bpsync.watch.rules import (
    ImportInterrupted,
    ReceiptInput,
    Snapshot,
    StabilityTracker,
    Verdict,
    backoff_delay,
    classify,
    explanation_text,
    is_ignored,
    make_receipt,
    month_folder,
    reject_report_name,
    unique_name,
)
from bpsync.watch.status import WatchStatus, status_path, write_status
from bpsync.watch.summary import watch_status_lines

T0 = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("name", "ignored"),
    [
        ("~$bills.xlsx", True),
        (".~lock.bills.xlsx#", True),
        ("export.TMP", True),
        ("bills.csv.part", True),
        ("bills.csv.crdownload", True),
        (".bills.csv.Xy12ab", True),  # rsync's temporary name
        (".DS_Store", True),
        ("thumbs.db", True),
        ("bills.csv", False),
        ("March ~$ bills.xlsx", False),
        ("partial.csv", False),
        ("bills.tmp.csv", False),
    ],
)
def test_ignored_names(name: str, ignored: bool) -> None:
    assert is_ignored(name) is ignored


def test_extra_ignore_patterns() -> None:
    assert is_ignored("readme.txt", ["*.txt"]) and not is_ignored("readme.txt")


def test_a_file_is_ready_only_after_holding_still() -> None:
    tracker = StabilityTracker(5.0)
    a, b = Path("/d/a.csv"), Path("/d/b.csv")
    tracker.observe(a, Snapshot(10, 1), 0.0)
    tracker.observe(b, Snapshot(5, 1), 1.0)
    assert tracker.ready(4.9) == []
    tracker.observe(a, Snapshot(20, 2), 4.0)  # grew: timed again from 4.0
    assert tracker.ready(6.0) == [(b, Snapshot(5, 1))]
    tracker.observe(a, Snapshot(20, 2), 8.9)  # the same again: still timed from 4.0
    assert tracker.ready(9.0) == [(a, Snapshot(20, 2)), (b, Snapshot(5, 1))]  # arrival order
    tracker.take(b)
    tracker.observe(a, None, 9.5)  # gone
    assert tracker.ready(100.0) == [] and len(tracker) == 0


def test_a_file_given_back_keeps_its_place_until_it_is_gone() -> None:
    tracker = StabilityTracker(0.0)
    a, b = Path("/d/a.csv"), Path("/d/b.csv")
    tracker.observe(a, Snapshot(3, 1), 0.0)
    tracker.observe(b, Snapshot(9, 1), 0.0)
    tracker.take(a)  # handed over too early; the import loop finds it grew
    tracker.observe(a, Snapshot(50, 2), 1.0)
    assert [p for p, _ in tracker.ready(1.0)] == [a, b]
    tracker.take(a)
    tracker.observe(a, None, 2.0)  # settled and moved away
    tracker.observe(a, Snapshot(7, 3), 3.0)  # a new file of that name arrives last
    assert [p for p, _ in tracker.ready(3.0)] == [b, a]


def test_mtime_change_alone_resets_the_timer() -> None:
    tracker = StabilityTracker(2.0)
    p = Path("/d/x.csv")
    tracker.observe(p, Snapshot(10, 1), 0.0)
    tracker.observe(p, Snapshot(10, 2), 1.5)  # rewritten with the same size
    assert tracker.ready(3.0) == [] and tracker.ready(3.5) == [(p, Snapshot(10, 2))]


def test_zero_stability_and_negative_refused() -> None:
    tracker = StabilityTracker(0.0)
    tracker.observe(Path("/d/x"), Snapshot(1, 1), 7.0)
    tracker.observe(Path("/d/empty"), Snapshot(0, 1), 7.0)  # a placeholder: waits for content
    assert [p.name for p, _ in tracker.ready(100.0)] == ["x"]
    with pytest.raises(ValueError):
        StabilityTracker(-1)


def test_backoff_is_equal_jitter_and_capped() -> None:
    assert backoff_delay(0, 2.0, 300.0, lambda: 0.0) == 1.0
    assert backoff_delay(0, 2.0, 300.0, lambda: 1.0) == 2.0
    assert backoff_delay(3, 2.0, 300.0, lambda: 0.5) == 12.0
    assert backoff_delay(50, 2.0, 300.0, lambda: 1.0) == 300.0
    assert backoff_delay(10_000, 2.0, 300.0, lambda: 0.0) == 150.0


@pytest.mark.parametrize(
    ("exc", "action", "code"),
    [
        (E.APIConnectionError("refused"), "pause", "unreachable"),
        (E.APITimeoutError("slow"), "pause", "unreachable"),
        (E.AuthenticationError(401, "invalid_api_key", "bad key"), "pause", "credentials"),
        (E.LoginRequiredError("no key"), "pause", "credentials"),
        (E.PermissionDeniedError(403, "insufficient_scope", "no"), "pause", "permission"),
        (
            E.RateLimitError(429, "rate_limit_exceeded", "slow down", extra={"retry_after": 7}),
            "pause",
            "rate_limited",
        ),
        (E.ServerError(503, "unavailable", "down"), "pause", "service_error"),
        (E.AmbiguousWriteError("POST", "/v1/x", E.APITimeoutError("t")), "pause", "service_error"),
        (ImportInterrupted("stopped"), "pause", "service_error"),
        (ImportBusyError(), "pause", "busy"),
        (ConfigError("bad config"), "pause", "config"),
        (PermissionError(13, "denied"), "pause", "local_io"),
        (IngestError("no template matches", code="no_template"), "fail", "no_template"),
        (IngestError("empty", code="empty_file"), "fail", "empty_file"),
        (E.ValidationError(422, "validation_error", "bad"), "fail", "validation_error"),
        (KeyError("bug"), "fail", "unexpected_error"),
    ],
)
def test_what_an_error_means_for_the_file(exc: BaseException, action: str, code: str) -> None:
    verdict = classify(exc)
    assert (verdict.action, verdict.code) == (action, code)


def test_rate_limit_wait_and_reconnect() -> None:
    limited = classify(E.RateLimitError(429, "rate_limit_exceeded", "x", extra={"retry_after": 7}))
    assert limited.wait == 7.0 and not limited.reconnect
    assert classify(E.AuthenticationError(401, "invalid_api_key", "x")).reconnect


def test_unique_names_never_replace_anything() -> None:
    taken = {"bills.csv", "bills (2).csv.receipt.json", "x.rejects.csv"}
    assert unique_name("other.csv", taken.__contains__) == "other.csv"
    assert unique_name("bills.csv", taken.__contains__) == "bills (3).csv"
    assert unique_name("x.csv", taken.__contains__) == "x (2).csv"  # its report name is taken
    assert reject_report_name("a b.xlsx") == "a b.rejects.xlsx"
    assert reject_report_name("feed.xml") == "feed.rejects.csv"


def test_month_folder_is_local_time() -> None:
    assert month_folder(T0) == T0.astimezone().strftime("%Y-%m")


def test_receipt_document() -> None:
    receipt = make_receipt(
        ReceiptInput(
            status="processed",
            file="a.csv",
            stored_as="/d/processed/2026-11/a.csv",
            sha256="ab" * 32,
            size_bytes=120,
            profile="default",
            environment="sandbox",
            service="http://127.0.0.1:8400",
            finished_at=T0,
            claimed_at=T0 - dt.timedelta(seconds=3),
            accepted=2,
            accepted_ids=["rdg_1", "rdg_2"],
        )
    )
    assert receipt["counts"] == {"accepted": 2, "rejected_rows": 0, "skipped": 0, "warnings": 0}
    assert receipt["finished_at"] == "2026-11-20T09:30:00Z"
    assert receipt["claimed_at"] == "2026-11-20T09:29:57Z"
    assert receipt["accepted_ids"] == ["rdg_1", "rdg_2"] and receipt["receipt_version"] == 1


def test_explanations_say_what_to_do() -> None:
    common = dict(file="n.csv", sha256="c" * 64, when=T0, profile="p", reason="why")
    assert "templates suggest" in explanation_text(code="no_template", **common)
    text = explanation_text(code="empty_file", **common)
    assert "Fix the file" in text and "Nothing from this file was sent" in text


def test_config_paths_and_refusals(tmp_path: Path) -> None:
    config = WatchConfig(folder=tmp_path, profile="default")
    assert config.processed_dir == tmp_path.resolve() / "processed"
    assert config.ledger_path.parent == status_path("default").parent
    outside = WatchConfig(folder=tmp_path, profile="p", failed_dir=tmp_path.parent / "fails")
    assert outside.failed_dir == (tmp_path.parent / "fails").resolve()
    with pytest.raises(ValueError):
        WatchConfig(folder=tmp_path, profile="default", processed_dir=Path("."))
    with pytest.raises(ConfigError):
        WatchConfig(folder=tmp_path, profile="../escape")


@pytest.mark.parametrize(
    ("result", "once", "code"),
    [
        (RunResult(processed=3), True, 0),
        (RunResult(failed=1), True, 13),
        (RunResult(failed=1), False, 0),
        (RunResult(stopped=Verdict("pause", "unreachable", "x")), True, 10),
        (RunResult(stopped=Verdict("pause", "credentials", "x")), True, 3),
        (RunResult(error="boom"), False, 1),
    ],
)
def test_exit_codes(result: RunResult, once: bool, code: int) -> None:
    assert exit_code_of(result, once) == code


def test_status_lines_without_a_watcher_or_with_a_damaged_file() -> None:
    assert watch_status_lines("default") == [
        ("watcher", "never started for this profile (`bpsync watch DIR`)")
    ]
    path = status_path("default")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert watch_status_lines("default")[0][1].startswith("status file unreadable")


def test_status_lines_of_a_paused_watcher() -> None:
    write_status(
        WatchStatus(
            pid=4242,
            profile="default",
            folder="/data/bills",
            started_at=T0,
            heartbeat_at=T0,
            queue_length=3,
            paused_reason="the service is unreachable",
        )
    )
    lines = dict(watch_status_lines("default", now=T0, pid_alive=lambda pid: pid == 4242))
    assert lines["watcher"] == "paused (pid 4242) on /data/bills"
    assert lines["watch queue"] == "3 file(s) waiting"
    assert lines["watch paused"] == "the service is unreachable"
    later = T0 + dt.timedelta(minutes=1)
    stale = dict(watch_status_lines("default", now=later, pid_alive=lambda pid: True))
    assert stale["watcher"].startswith("stopped") and "watch paused" not in stale
