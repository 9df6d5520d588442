"""Real `bpsync watch` processes (`python -m bpsync watch`): SIGKILL in the middle of an
import then a restart gives exactly the file's readings on the service, and SIGTERM finishes the
file in flight before a clean exit."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bpsync.watch.status import read_status
from tests.conftest import Service
from tests.watch.conftest import (
    PROFILE,
    bills_text,
    expected,
    history,
    make_org,
    month,
    stored,
)

ROOT = Path(__file__).resolve().parents[2]
TRIALS = 3


def watch(folder: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bpsync",
            "watch",
            str(folder),
            "--stable-seconds",
            "0",
            "--log-json",
            # Kill moments count journaled requests: batches and single calls give many; uploads
            # are killed in tests/importer/test_processes.py.
            "--no-upload",
            *extra,
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def process_env(tmp: Path, service: Service, key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPSYNC_")}
    env.update(
        BPSYNC_CONFIG_DIR=str(tmp / "config"),
        BPSYNC_STATE_DIR=str(tmp / "state"),
        BPSYNC_API_KEY=key,
        BPSYNC_BASE_URL=service.base_url,
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",  # like CI: no keyring
    )
    return env


def journal_requests(state: Path) -> int:
    path = state / "imports.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=0.05) as db:
            return db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
    except sqlite3.Error:
        return 0


def rows_for(meters: list[str]) -> list[tuple[str, dt.date, dt.date, float]]:
    """One reading per meter (single calls) plus six months for two meters (a batch each)."""
    rows = [(m, *month(2024, 1), 100.0 + i) for i, m in enumerate(meters)]
    for m in meters[:2]:
        rows += [(m, *month(2024, k), 50.0 * k) for k in range(2, 8)]
    return rows


@pytest.mark.slow
def test_sigkill_during_an_import_then_restart_gives_the_exact_state(
    service: Service, tmp_path: Path
) -> None:
    rng = random.Random(20261121)
    kills = 0
    for trial in range(TRIALS):
        tmp = tmp_path / f"t{trial}"
        folder = tmp / "drop"
        folder.mkdir(parents=True)
        org = make_org(service, 15)
        rows = rows_for(org.meters)
        (folder / "bills.csv").write_text(bills_text(rows), encoding="utf-8")
        env = process_env(tmp, service, org.key)
        kill_after = rng.randint(2, 12)
        proc = watch(folder, env)
        deadline = time.monotonic() + 30
        while journal_requests(tmp / "state") < kill_after and not history(tmp / "state"):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the import never got going"
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        kills += not history(tmp / "state")
        # A killed client may leave a rate-limit probe that makes the next batch wait (up to
        # 5 s, the client's PROBE_SECONDS); not the subject here.
        shutil.rmtree(tmp / "state" / "ratelimit", ignore_errors=True)
        again = watch(folder, env, "--once")
        _out, err = again.communicate(timeout=60)
        assert again.returncode == 0, err
        assert stored(service, org) == expected(rows), f"trial {trial}"
        assert [(n, fate) for n, _, fate, _ in history(tmp / "state")] == [
            ("bills.csv", "processed")
        ]
        assert not (folder / "bills.csv").exists()
        done = next((folder / "processed").iterdir())
        assert sorted(p.name for p in done.iterdir()) == ["bills.csv", "bills.csv.receipt.json"]
        receipt = json.loads((done / "bills.csv.receipt.json").read_text())
        assert receipt["counts"]["accepted"] == len(rows)
        assert len(set(receipt["accepted_ids"])) == len(rows)
        events = [json.loads(line)["event"] for line in err.splitlines() if line.startswith("{")]
        assert "resume" in events, err
    assert kills >= 2  # the seeded moments fall inside the import, not after it


def test_sigterm_finishes_the_file_in_flight_then_exits_cleanly(
    service: Service, tmp_path: Path
) -> None:
    folder = tmp_path / "drop"
    folder.mkdir()
    org = make_org(service, 20)
    rows = [(m, *month(2024, 2), 10.0 + i) for i, m in enumerate(org.meters)]
    (folder / "bills.csv").write_text(bills_text(rows), encoding="utf-8")
    proc = watch(folder, process_env(tmp_path, service, org.key))
    deadline = time.monotonic() + 30
    while journal_requests(tmp_path / "state") < 3:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the import never got going"
        time.sleep(0.002)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    stopping = [e["message"] for e in lines if e["event"] == "stopping"]
    assert stopping and "finishing bills.csv first" in stopping[0]
    assert lines[-1]["event"] == "stopped" and lines[-1]["processed"] == 1
    assert stored(service, org) == expected(rows)
    assert [(n, fate) for n, _, fate, _ in history(tmp_path / "state")] == [
        ("bills.csv", "processed")
    ]
    status = read_status(PROFILE)  # the autouse fixture points the state dir where it wrote
    assert status is not None and status.pid == proc.pid
    assert status.recent[0].fate == "processed" and status.queue_length == 0
