"""A watched file with a row the service refuses (a reading in a locked period, decisions D23):
it is settled as docs/watch.md says for rejected rows (`failed/NAME` with its receipt and the
reject report, the accepted readings stored), never as a file that could not be imported."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Service
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


def test_a_row_refused_by_the_service_fails_the_file_with_its_reject_report(
    service: Service, org: Org, tmp_path: Path
) -> None:
    folder, state = tmp_path / "drop", tmp_path / "state"
    folder.mkdir()
    with service.client(org.key) as api:
        r = api.post(f"/v1/buildings/{org.building}/lock", json={"locked_through": "2024-01-31"})
        assert r.status_code == 200, r.text
    good = [(org.meters[0], *month(2024, 2), 20.0), (org.meters[1], *month(2024, 2), 21.0)]
    locked = [(org.meters[0], *month(2024, 1), 10.0)]
    with Harness(folder) as h:
        drop(folder, "feb.csv", bills_text(locked + good))
        wait_for(lambda: len(history(state)) >= 1)
        result = h.stop()
        events = {e["event"] for e in h.events()}
    assert [(n, fate) for n, _, fate, _ in history(state)] == [("feb.csv", "failed")]
    assert (result.processed, result.failed, result.errored) == (0, 1, 0)
    assert "rejected" in events and "failed" not in events and "error" not in events
    assert stored(service, org) == expected(good)
    failed = folder / "failed"
    assert sorted(p.name for p in failed.iterdir()) == [
        "feb.csv",
        "feb.csv.receipt.json",
        "feb.rejects.csv",
    ]
    receipt = json.loads((failed / "feb.csv.receipt.json").read_text())
    assert receipt["status"] == "failed" and receipt["error"] is None
    assert receipt["counts"]["accepted"] == 2 and receipt["counts"]["rejected_rows"] == 1
    assert len(receipt["accepted_ids"]) == 2
    report = (failed / "feb.rejects.csv").read_text(encoding="utf-8-sig").splitlines()
    assert report[1] == (
        f"{org.meters[0]},2024-01-01,2024-01-31,10.0,kWh,row 2: The building's readings are "
        "locked through 2024-01-31; a reading starting 2024-01-01 falls in the locked period."
    )
    assert sorted(p.name for p in folder.iterdir()) == ["failed", "processed"]
