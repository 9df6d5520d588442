"""Kill tests for corrected bills (issue 30): a real `bpsync import FILE --update` process is
SIGKILLed at seeded moments of its replacements (before a delete, between a delete and the new
reading, after the new readings), then `--resume --update` runs; the service must end holding
exactly the corrected file's readings: never the old and the new together, never neither.

Trials: 5 by default (CI), 20 with `BPSYNC_PROOF_FULL=1`; the moments come from a fixed seed.
The crash-at-each-step tests of tests/corrections/test_crash.py stop the engine at each request
in-process; these kill the whole process, journal and all, as a power cut would."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Service
from tests.importer.test_processes import base_env, bpsync, journal_requests, make_org
from tests.proof.conftest import FULL
from tests.proof.test_kill import Row, bills, month, stored_rows, wait_for

TRIALS = 20 if FULL else 5
# Real processes timed against each other: on the worker that runs the other kill tests.
pytestmark = pytest.mark.xdist_group("timed")


def replaced(state: Path, status: str) -> int:
    """How many stored readings the journal's trail has in `status` (planned, deleted…)."""
    path = state / "imports.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=0.05) as db:
            return db.execute(
                "SELECT COUNT(*) FROM replaced WHERE status = ?", (status,)
            ).fetchone()[0]
    except sqlite3.Error:
        return 0


def store(service: Service, key: str, building: str, rows: list[Row]) -> None:
    with service.client(key) as api:
        for m, s, e, c in rows:
            r = api.post(
                f"/v1/buildings/{building}/meters/{m}/readings",
                json={"start_date": s.isoformat(), "end_date": e.isoformat(), "consumption": c},
            )
            assert r.status_code == 201, r.text


@pytest.mark.slow
def test_update_killed_at_any_step_then_resumed_holds_exactly_the_new_readings(
    service: Service, tmp_path: Path
) -> None:
    rng = random.Random(30_2026)
    kills = killed_mid_replacement = 0
    for trial in range(TRIALS):
        tmp = tmp_path / f"t{trial}"
        tmp.mkdir()
        key, building, meters = make_org(service, 12)
        jan, feb = month(2024, 1), month(2024, 2)
        # Stored: January for every meter, and January and February apart for two of them.
        old = [(m, *jan, 100.0 + i) for i, m in enumerate(meters)]
        old += [(m, *feb, 90.0 + i) for i, m in enumerate(meters[:2])]
        store(service, key, building, old)
        # The corrected file: every January corrected (a correction), and the two meters'
        # January and February rebilled as one period (a rebill replacing two readings).
        new = [(m, *jan, 500.0 + i + trial) for i, m in enumerate(meters[2:], 2)]
        new += [(m, jan[0], feb[1], 777.0 + i + trial) for i, m in enumerate(meters[:2])]
        path = tmp / "corrected.csv"
        path.write_text(bills(new), encoding="utf-8")
        env = base_env(tmp) | {"BPSYNC_API_KEY": key, "BPSYNC_BASE_URL": service.base_url}
        state = tmp / "state"
        # The moment: a number of old readings deleted (0: as soon as the replacements are
        # journaled, before any delete), or of new readings' requests sent.
        step = rng.choice(["planned", "deleted", "sent"])
        n = rng.randint(1, 12)
        proc = bpsync(["import", str(path), "--update", "--no-upload"], env)
        if step == "planned":
            wait_for(lambda s=state: replaced(s, "planned") > 0, proc)
        elif step == "deleted":
            wait_for(lambda s=state, k=n: replaced(s, "deleted") >= k, proc)
        else:
            wait_for(lambda s=state, k=n: journal_requests(s) >= k, proc)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
            kills += 1
            deleted = replaced(state, "deleted")
            killed_mid_replacement += 0 < deleted < len(old)
        proc.wait(timeout=30)
        resumed = bpsync(
            ["--json", "import", str(path), "--resume", "--update", "--no-upload"], env
        )
        out, err = resumed.communicate(timeout=60)
        assert resumed.returncode == 0, err
        summary = json.loads(out)
        assert summary["status"] in ("complete", "no-op"), summary
        stored = stored_rows(service, key, building, meters)
        assert sorted(stored) == sorted(new), f"trial {trial} ({step} {n}, {killed=})"
    assert kills >= TRIALS * 0.6, kills  # the seeded moments fall inside the import
    assert killed_mid_replacement >= 1  # at least one kill fell between deletes and new readings
