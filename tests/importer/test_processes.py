"""Real processes: `bpsync import` killed with SIGKILL at seeded moments and resumed, and
`bpsync demo --no-tui` run twice."""

from __future__ import annotations

import datetime as dt
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

from tests.conftest import Service, make_org

ROOT = Path(__file__).resolve().parents[2]
TRIALS = 3


def bpsync(args: list[str], env: dict[str, str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bpsync", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def base_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BPSYNC_")}
    env.update(
        BPSYNC_CONFIG_DIR=str(tmp / "config"),
        BPSYNC_STATE_DIR=str(tmp / "state"),
        BPSYNC_DATA_DIR=str(tmp / "data"),
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


def _bills(tmp: Path, meters: list[str]) -> tuple[Path, list[tuple]]:
    """One reading per meter (single calls) plus six more for two meters (batches)."""
    rows = [(m, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 100.0 + i) for i, m in enumerate(meters)]
    for m in meters[:2]:
        for month in range(2, 8):
            start = dt.date(2024, month, 1)
            end = dt.date(2024, month + 1, 1) - dt.timedelta(days=1)
            rows.append((m, start, end, 50.0 * month))
    path = tmp / "bills.csv"
    tmp.mkdir()
    path.write_text(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        + "".join(f"{m},{s},{e},{c},kWh\n" for m, s, e, c in rows),
        encoding="utf-8",
    )
    return path, rows


def _stored(service: Service, key: str, building: str, meters: list[str]) -> list[tuple]:
    stored = []
    with service.client(key) as api:
        for m in meters:
            page = api.get(
                f"/v1/buildings/{building}/meters/{m}/readings", params={"per_page": 200}
            ).json()["data"]
            stored += [
                (
                    m,
                    dt.date.fromisoformat(r["start_date"]),
                    dt.date.fromisoformat(r["end_date"]),
                    r["consumption"],
                )
                for r in page
            ]
    return stored


def _kill_and_resume(
    service: Service,
    tmp: Path,
    meters: list[str],
    key: str,
    building: str,
    extra: list[str],
    kill_after: int,
    delay: float,
) -> tuple[bool, list[tuple], list[tuple]]:
    path, rows = _bills(tmp, meters)
    env = base_env(tmp) | {"BPSYNC_API_KEY": key, "BPSYNC_BASE_URL": service.base_url}
    proc = bpsync(["import", str(path), *extra], env)
    deadline = time.monotonic() + 30
    while proc.poll() is None and journal_requests(tmp / "state") < kill_after:
        assert time.monotonic() < deadline, "the import never got going"
        time.sleep(0.002)
    time.sleep(delay)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    # The killed process may have left a rate-limit probe for the bulk bucket, which makes
    # the client wait up to 5 s (its PROBE_SECONDS) before the next bulk call; not the subject.
    shutil.rmtree(tmp / "state" / "ratelimit", ignore_errors=True)
    resumed = bpsync(["--json", "import", str(path), "--resume", *extra], env)
    _out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    return killed, rows, _stored(service, key, building, meters)


@pytest.mark.slow
def test_sigkill_then_resume_gives_the_exact_state(service: Service, tmp_path: Path):
    """Batches and single calls (--no-upload): killed after a seeded number of requests."""
    rng = random.Random(20261121)
    kills = 0
    for trial in range(TRIALS):
        key, building, meters = make_org(service, 60)
        killed, rows, stored = _kill_and_resume(
            service,
            tmp_path / f"t{trial}",
            meters,
            key,
            building,
            ["--no-upload"],
            rng.randint(2, 40),
            0.0,
        )
        assert sorted(stored) == sorted(rows), f"trial {trial} (killed={killed})"
        kills += killed
    assert kills >= 2  # the seeded moments fall inside the import (not after it ended)


@pytest.mark.slow
def test_sigkill_during_an_upload_then_resume(service: Service, tmp_path: Path):
    """The same file as one CSV upload: killed a seeded moment after the upload was journaled
    (before the service answered, or after it committed and before the answer was journaled);
    the resumed import reconciles it meter by meter and the service holds each row once."""
    rng = random.Random(20261126)
    kills = 0
    for trial in range(TRIALS):
        key, building, meters = make_org(service, 60)
        killed, rows, stored = _kill_and_resume(
            service, tmp_path / f"u{trial}", meters, key, building, [], 1, rng.uniform(0, 0.03)
        )
        assert sorted(stored) == sorted(rows), f"trial {trial} (killed={killed})"
        kills += killed
    assert kills >= 2


@pytest.mark.slow
def test_demo_runs_twice_and_reuses(tmp_path: Path):
    env = base_env(tmp_path)
    # What an older bpsync left behind: a saved `demo` profile, the default, on a dead port.
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(
        'default_profile = "demo"\n\n[profiles."demo"]\nbase_url = "http://127.0.0.1:9"\n'
        '\n[profiles."mine"]\nbase_url = "https://svc.example.com"\n'
    )
    first = bpsync(["demo", "--no-tui"], env)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert "Portfolio benchmarks: 3 buildings, 32,500 m²" in out
    assert "opt-in file store" in err  # no keyring here: said so
    assert out.count("complete") == 6  # the register and five bills files
    for line in ("bills_workbook.xlsx", "green_button.xml"):
        assert line in out
    assert "Removed the 'demo' profile an older bpsync saved" in err
    # The demo leaves the user's profiles alone: no demo profile, no new default, no key.
    config = (tmp_path / "config" / "config.toml").read_text()
    assert "demo" not in config and '[profiles."mine"]' in config
    assert 'default_profile = "default"' in config and "svc_test_" not in config
    # The closing hint is a command that works.
    assert "Run `bpsync demo` again" in out
    # Every "-" is explained, and the grade is labelled as a data-quality grade, not an EPC band
    assert "a group of fewer than 5 buildings gets none (here office:GB: 1" in out
    assert "data quality" in out and "not an energy-performance (EPC) band" in out
    second = bpsync(["demo", "--no-tui"], env)
    out2, err2 = second.communicate(timeout=120)
    assert second.returncode == 0, err2
    assert out2.count("no-op") == 5 and "Portfolio benchmarks: 3 buildings" in out2
    assert "Removed" not in err2
    status = bpsync(["status"], env)
    status_out, _ = status.communicate(timeout=60)
    assert status_out.split()[:2] == ["profile", "default"], status_out
    assert len(list((tmp_path / "data" / "demo").glob("*.db"))) == 1


@pytest.mark.slow
def test_ctrl_c_stops_after_the_requests_in_flight_and_resume_finishes(
    service: Service, tmp_path: Path
):
    """Ctrl-C is the entry point's signal: `bpsync import` hands it to the engine, which stops
    sending after the requests in flight (exit 130, journaled); --resume sends the rest, once."""
    key, _building, meters = make_org(service, 80)
    rows = [(m, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 10.0 + i) for i, m in enumerate(meters)]
    path = tmp_path / "bills.csv"
    path.write_text(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        + "".join(f"{m},{s},{e},{c},kWh\n" for m, s, e, c in rows),
        encoding="utf-8",
    )
    env = base_env(tmp_path) | {"BPSYNC_API_KEY": key, "BPSYNC_BASE_URL": service.base_url}
    proc = bpsync(["--json", "import", str(path)], env)
    deadline = time.monotonic() + 30
    while proc.poll() is None and journal_requests(tmp_path / "state") < 5:
        assert time.monotonic() < deadline, "the import never got going"
        time.sleep(0.002)
    assert proc.poll() is None, "finished before 5 of 80 requests were journaled"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    assert proc.returncode == 130 and '"status": "interrupted"' in out, (out, err)
    resumed = bpsync(["--json", "import", str(path), "--resume"], env)
    _out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    with service.client(key) as api:
        building = _building
        stored = [
            (m, r["consumption"])
            for m in meters
            for r in api.get(f"/v1/buildings/{building}/meters/{m}/readings").json()["data"]
        ]
    assert sorted(stored) == sorted((m, c) for m, _s, _e, c in rows)
