"""Kill tests: real `bpsync` processes SIGKILLed at seeded random moments, then restarted; the
service must hold exactly the input every time (nothing lost, nothing twice).

- `bpsync import FILE`, killed, then `bpsync import FILE --resume`.
- `bpsync watch DIR`, killed while importing the files dropped in DIR, then `bpsync watch DIR
  --once`: every file's readings once, every file moved to processed/.

Trials: 5 of each by default (CI), 20 of each with `BPSYNC_PROOF_FULL=1`; the moments come from
fixed seeds, so a failing trial can be rerun. The rate-limit state a killed process leaves behind is
NOT cleaned up between runs: a probe it left names its process id, and the next process ignores a
probe whose process is gone (`bpsync.client.ratelimit`), which is tested here too."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bpsync.client.ratelimit import (
    PROBE_SECONDS,
    FileStore,
    RateLimiter,
    plan,
    process_alive,
)
from tests.conftest import Service
from tests.importer.test_processes import base_env, bpsync, journal_requests, make_org
from tests.proof.conftest import FULL

TRIALS = 20 if FULL else 5
Row = tuple[str, dt.date, dt.date, float]


def month(year: int, m: int) -> tuple[dt.date, dt.date]:
    start = dt.date(year, m, 1)
    return start, (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)


def bills(rows: list[Row]) -> str:
    return "Meter ID,Start Date,End Date,Consumption,Unit\n" + "".join(
        f"{m},{s},{e},{c},kWh\n" for m, s, e, c in rows
    )


def stored_rows(service: Service, key: str, building: str, meters: list[str]) -> list[Row]:
    """Everything the service holds for these meters, read through the API."""
    out: list[Row] = []
    with service.client(key) as api:
        for m in meters:
            page = 1
            while True:
                r = api.get(
                    f"/v1/buildings/{building}/meters/{m}/readings",
                    params={"per_page": 200, "page": page},
                )
                assert r.status_code == 200, r.text
                body = r.json()
                out += [
                    (
                        m,
                        dt.date.fromisoformat(x["start_date"]),
                        dt.date.fromisoformat(x["end_date"]),
                        x["consumption"],
                    )
                    for x in body["data"]
                ]
                if page >= body["meta"]["total_pages"]:
                    break
                page += 1
    return out


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def wait_for(condition, proc: subprocess.Popen, seconds: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while proc.poll() is None and not condition():
        assert time.monotonic() < deadline, "the process never got there"
        time.sleep(0.002)


def probes_left(state: Path, pid: int) -> list[tuple[str, dict]]:
    """(kind, whole state) for each probe of an unknown bucket that process `pid` left behind."""
    found = []
    for path in (state / "ratelimit").glob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        found += [(k, data) for k, v in data.items() if v.get("pid") == pid]
    return found


# --- the rate-limit probe of a dead process ------------------------------------------------------


def test_a_probe_whose_process_is_gone_is_ignored() -> None:
    wait, state = plan({}, ["bulk"], now=100.0, owner=12345, alive=lambda pid: True)
    assert wait == 0 and state["bulk"] == {"probe_until": 100.0 + PROBE_SECONDS, "pid": 12345}
    # Its process is alive: others wait for its answer (briefly, then ask again).
    wait, _ = plan(state, ["bulk"], now=100.5, owner=999, alive=lambda pid: True)
    assert 0 < wait <= 0.05
    # Its process is gone: the next request probes at once, and records itself.
    wait, after = plan(state, ["bulk"], now=100.5, owner=999, alive=lambda pid: pid != 12345)
    assert wait == 0 and after["bulk"]["pid"] == 999
    # A probe without a pid (written by an older bpsync) keeps the time limit.
    wait, _ = plan({"bulk": {"probe_until": 105.0}}, ["bulk"], 100.5, alive=lambda pid: False)
    assert wait > 0


def test_process_alive_tells_a_dead_process_from_a_live_one() -> None:
    assert process_alive(os.getpid())
    assert not process_alive(dead_pid())


def test_a_file_store_probe_left_by_a_dead_process_does_not_hold_others(tmp_path: Path) -> None:
    path = tmp_path / "ratelimit" / "p.json"
    path.parent.mkdir()
    now = time.time()
    path.write_text(json.dumps({"bulk": {"probe_until": now + PROBE_SECONDS, "pid": dead_pid()}}))
    limiter = RateLimiter(FileStore(path), clock=time.time, rand=lambda: 0.0)
    assert limiter.try_acquire(["key", "bulk"]) == 0
    mine = json.loads(path.read_text())
    assert mine["bulk"]["pid"] == mine["key"]["pid"] != 0
    # ...while a live process's probe still holds the next request back.
    other = RateLimiter(FileStore(path), clock=time.time, rand=lambda: 0.0)
    assert other.try_acquire(["bulk"]) > 0


# --- bpsync import --------------------------------------------------------------------------------


def import_rows(meters: list[str], trial: int) -> list[Row]:
    """Single calls (one bill for most meters) and batches (a year of bills on a few meters);
    values differ per trial so a trial cannot pass on another's data."""
    rows: list[Row] = [(m, *month(2024, 1), 100.0 + i + trial / 10) for i, m in enumerate(meters)]
    for j, m in enumerate(meters[:4]):
        rows += [(m, *month(2023, k), 40.0 * k + j) for k in range(1, 13)]
    return rows


@pytest.mark.slow
def test_import_killed_at_random_moments_then_resumed_gives_the_exact_state(
    service: Service, tmp_path: Path
) -> None:
    rng = random.Random(8_2026)
    kills = in_flight_kills = dead_probes = 0
    for trial in range(TRIALS):
        tmp = tmp_path / f"t{trial}"
        tmp.mkdir()
        key, building, meters = make_org(service, 40)
        rows = import_rows(meters, trial)
        path = tmp / "bills.csv"
        path.write_text(bills(rows), encoding="utf-8")
        env = base_env(tmp) | {"BPSYNC_API_KEY": key, "BPSYNC_BASE_URL": service.base_url}
        state = tmp / "state"
        # The moment: a number of requests journaled (0: as soon as the journal exists, while
        # the file is still being read and checked), possibly past the end of the import.
        kill_at = rng.randint(0, 50)
        # Batches and single calls, numbered (uploads: tests/importer/test_processes.py).
        proc = bpsync(["import", str(path), "--no-upload"], env)
        if kill_at == 0:
            wait_for(lambda s=state: (s / "imports.sqlite").exists(), proc)
        else:
            wait_for(lambda s=state, n=kill_at: journal_requests(s) >= n, proc)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if killed:
            kills += 1
            in_flight_kills += in_flight(state) > 0
            for kind, left in probes_left(state, proc.pid):
                # What the next process will decide (pure, so nothing is taken here): go now.
                assert plan(left, [kind], time.time())[0] == 0
                dead_probes += 1
        # No cleaning of the rate-limit state: the next process must cope with what was left.
        resumed = bpsync(["--json", "import", str(path), "--resume", "--no-upload"], env)
        out, err = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, err
        summary = json.loads(out)
        assert summary["status"] in ("complete", "no-op"), summary
        assert summary["accepted"] == len(rows) and summary["rejected"] == 0, summary
        stored = stored_rows(service, key, building, meters)
        assert sorted(stored) == sorted(rows), f"trial {trial} (kill at {kill_at}, {killed=})"
    assert kills >= TRIALS * 0.6, kills  # the seeded moments fall inside the import
    assert in_flight_kills >= 1  # at least one kill left a request unanswered in the journal
    print(f"{kills} kills, {in_flight_kills} with a request in flight, {dead_probes} dead probes")


def in_flight(state: Path) -> int:
    """Requests the journal shows as sent without an answer."""
    try:
        with sqlite3.connect(f"file:{state / 'imports.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            return db.execute(
                "SELECT COUNT(*) FROM requests WHERE status = 'in_flight'"
            ).fetchone()[0]
    except sqlite3.Error:
        return 0


# --- bpsync watch ---------------------------------------------------------------------------------


def watch_files(meters: list[str], trial: int) -> dict[str, list[Row]]:
    """Four bill files over separate months: single calls and batches, nothing overlapping."""
    bump = trial / 10
    return {
        "jan.csv": [(m, *month(2024, 1), 200.0 + i + bump) for i, m in enumerate(meters)],
        "year.csv": [
            (m, *month(2023, k), 60.0 * k + j + bump)
            for j, m in enumerate(meters[:3])
            for k in range(1, 13)
        ],
        "feb.csv": [(m, *month(2024, 2), 210.0 + i + bump) for i, m in enumerate(meters)],
        "mar.csv": [(m, *month(2024, 3), 220.0 + i + bump) for i, m in enumerate(meters)],
    }


def processed(state: Path) -> int:
    """Files the watcher's ledger records as processed."""
    path = state / "watch" / "default.ledger.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM files WHERE fate = 'processed'").fetchone()[0]
    except sqlite3.Error:
        return 0


def drop_file(folder: Path, name: str, text: str) -> None:
    """As exporters do: written under a dotfile name (ignored), then renamed into place."""
    tmp = folder / f".{name}.incoming"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(folder / name)


def watch_process(folder: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    # Moments count journaled requests: batches and single calls (uploads are killed in
    # tests/importer/test_processes.py).
    return bpsync(
        ["watch", str(folder), "--stable-seconds", "0", "--log-json", "--no-upload", *extra], env
    )


@pytest.mark.slow
def test_watch_killed_at_random_moments_then_restarted_imports_every_file_once(
    service: Service, tmp_path: Path
) -> None:
    rng = random.Random(8_2027)
    kills = 0
    for trial in range(TRIALS):
        tmp = tmp_path / f"w{trial}"
        folder = tmp / "drop"
        folder.mkdir(parents=True)
        key, building, meters = make_org(service, 12)
        files = watch_files(meters, trial)
        names = list(files)
        for name in names[:3]:
            drop_file(folder, name, bills(files[name]))
        env = base_env(tmp) | {"BPSYNC_API_KEY": key, "BPSYNC_BASE_URL": service.base_url}
        state = tmp / "state"
        kill_at = rng.randint(0, 45)  # all four files take about 40 requests
        proc = watch_process(folder, env)
        # One more file arrives while the watcher runs.
        wait_for(lambda s=state: (s / "imports.sqlite").exists(), proc)
        drop_file(folder, names[3], bills(files[names[3]]))
        wait_for(
            lambda s=state, n=kill_at, k=len(names): journal_requests(s) >= n or processed(s) == k,
            proc,
        )
        assert proc.poll() is None, proc.communicate()[1]  # a long-running watch never exits
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        kills += processed(state) < len(names)  # killed with work left
        again = watch_process(folder, env, "--once")
        _out, err = again.communicate(timeout=90)
        assert again.returncode == 0, err
        rows = [r for name in names for r in files[name]]
        stored = stored_rows(service, key, building, meters)
        assert sorted(stored) == sorted(rows), f"trial {trial} (kill at {kill_at})"
        # Every file was moved to processed/ with its receipt; nothing failed or was left.
        left = [p for p in folder.rglob("*") if p.is_file() and "processed" not in p.parts]
        assert not left, (left, err)  # nothing in failed/, nothing left in the folder
        done = {p.name: p for p in (folder / "processed").rglob("*") if p.is_file()}
        assert set(done) == set(names) | {f"{n}.receipt.json" for n in names}, err
        for name in names:
            receipt = json.loads(done[f"{name}.receipt.json"].read_text(encoding="utf-8"))
            assert receipt["counts"]["accepted"] + receipt["counts"].get("skipped", 0) == len(
                files[name]
            ), receipt["counts"]
    assert kills >= TRIALS * 0.6, kills
