"""Readings: single and batch submission, overlap, anomaly flags, list filters, delete, the lock,
latest_reading_date, and two clients racing overlapping batches over HTTP."""

from __future__ import annotations

import datetime as dt
import itertools
import re
import threading

import httpx

from tests.conftest import Service
from tests.service.conftest import Tree, month, monthly, ok, reading

READING_KEYS = {
    "id",
    "meter_id",
    "start_date",
    "end_date",
    "consumption",
    "unit",
    "cost",
    "cost_currency",
    "demand_kw",
    "source",
    "anomaly_flags",
    "created_at",
}


def latest(client: httpx.Client, tree: Tree) -> str | None:
    return ok(client.get(f"/v1/buildings/{tree.bid}/meters/{tree.mid}"))["data"][
        "latest_reading_date"
    ]


def test_submit_single_reading(checked: httpx.Client) -> None:
    tree = Tree(checked)
    body = reading(
        "2025-01-01", "2025-01-31", 1234.5, cost=210.75, cost_currency="gbp", demand_kw=40
    )
    r = checked.post(tree.readings, json=body)
    assert r.status_code == 201 and set(r.json()) == {"data"}
    data = r.json()["data"]
    assert set(data) == READING_KEYS
    assert re.match(r"^rdg_[0-9a-z]{24}$", data["id"])
    assert data["meter_id"] == tree.mid
    assert (data["start_date"], data["end_date"], data["consumption"]) == (
        "2025-01-01",
        "2025-01-31",
        1234.5,
    )
    assert data["unit"] == "kWh" and data["source"] == "api" and data["anomaly_flags"] == []
    assert (data["cost"], data["cost_currency"], data["demand_kw"]) == (210.75, "GBP", 40)
    assert latest(checked, tree) == "2025-01-31"
    listed = ok(checked.get(tree.readings))
    assert listed["data"] == [data] and listed["meta"]["total"] == 1


def test_reading_validation(checked: httpx.Client) -> None:
    tree = Tree(checked)
    good = reading("2025-01-01", "2025-01-31")
    for body, field in [
        ({k: v for k, v in good.items() if k != "start_date"}, "start_date"),
        ({k: v for k, v in good.items() if k != "end_date"}, "end_date"),
        ({k: v for k, v in good.items() if k != "consumption"}, "consumption"),
        ({**good, "consumption": "12"}, "consumption"),
        ({**good, "consumption": None}, "consumption"),
        ({**good, "start_date": "01/01/2025"}, "start_date"),
        ({**good, "start_date": "2025-02-30"}, "start_date"),
        ({**good, "end_date": "2024-12-31"}, "end_date"),
        ({**good, "cost_currency": "XYZ"}, "cost_currency"),
        ({**good, "demand_kw": -1}, "demand_kw"),
        ({**good, "unit": "MWh"}, "unit"),
    ]:
        r = checked.post(tree.readings, json=body)
        assert r.status_code == 422, (field, r.text)
        assert r.json()["error"]["details"][0]["field"] == field
    r = checked.post(tree.readings, json=reading("2026-11-20", "2026-11-22"))
    assert r.status_code == 422 and r.json()["error"]["code"] == "future_date"
    # the service's today (the clock says 2026-11-20) plus one day is still accepted
    ok(checked.post(tree.readings, json=reading("2026-11-20", "2026-11-21")), 201)


def test_overlap_with_stored_reading_is_rejected(checked: httpx.Client) -> None:
    tree = Tree(checked)
    jan = ok(checked.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)["data"]
    # end dates are inclusive: a reading starting on the 31st overlaps January
    for start, end in [
        ("2025-01-31", "2025-02-28"),
        ("2024-12-15", "2025-01-01"),
        ("2025-01-10", "2025-01-12"),
        ("2024-12-01", "2025-02-28"),
    ]:
        r = checked.post(tree.readings, json=reading(start, end))
        assert r.status_code == 409, (start, end)
        error = r.json()["error"]
        assert error["code"] == "reading_overlap"
        assert error["conflicting_reading_id"] == jan["id"]
    ok(checked.post(tree.readings, json=reading("2025-02-01", "2025-02-28")), 201)
    ok(checked.post(tree.readings, json=reading("2024-12-01", "2024-12-31")), 201)
    assert ok(checked.get(tree.readings))["meta"]["total"] == 3


def test_readings_of_other_meters_do_not_overlap(checked: httpx.Client) -> None:
    tree = Tree(checked)
    other = ok(
        checked.post(f"/v1/buildings/{tree.bid}/meters", json={"type": "water", "unit": "m3"}),
        201,
    )["data"]
    ok(checked.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)
    url = f"/v1/buildings/{tree.bid}/meters/{other['id']}/readings"
    ok(checked.post(url, json=reading("2025-01-01", "2025-01-31")), 201)


def test_batch_counts_order_and_error_detail(checked: httpx.Client) -> None:
    tree = Tree(checked)
    stored = ok(checked.post(tree.readings, json=reading("2025-06-01", "2025-06-30")), 201)
    batch = [
        reading(*month(2025, 1)),  # 0 accepted
        reading(*month(2025, 2)),  # 1 accepted
        reading("2025-02-15", "2025-03-10"),  # 2 overlaps [1] of this batch
        reading("2025-06-10", "2025-06-12"),  # 3 overlaps the stored June reading
        {"start_date": "2025-03-01", "end_date": "2025-03-31"},  # 4 no consumption
        reading("2025-04-01", "2025-03-01"),  # 5 ends before it starts
        reading(*month(2025, 3), cost_currency="???"),  # 6 bad currency
        reading(*month(2025, 4), colour="red"),  # 7 unknown field
        reading("2027-01-01", "2027-01-31"),  # 8 in the future
        reading(*month(2025, 3)),  # 9 accepted
    ]
    r = checked.post(tree.batch, json={"readings": batch})
    assert r.status_code == 201
    data = r.json()["data"]
    assert (data["accepted"], data["rejected"]) == (3, 7)
    assert [x["start_date"] for x in data["readings"]] == ["2025-01-01", "2025-02-01", "2025-03-01"]
    assert all(set(x) == READING_KEYS for x in data["readings"])
    errors = {e["index"]: e for e in data["errors"]}
    assert sorted(errors) == [2, 3, 4, 5, 6, 7, 8]
    assert errors[2]["code"] == "reading_overlap" and errors[2]["conflicting_index"] == 1
    assert errors[3]["code"] == "reading_overlap"
    assert errors[3]["conflicting_reading_id"] == stored["data"]["id"]
    assert (errors[4]["code"], errors[4]["field"]) == ("validation_error", "consumption")
    assert (errors[5]["code"], errors[5]["field"]) == ("validation_error", "end_date")
    assert errors[6]["field"] == "cost_currency" and errors[7]["field"] == "colour"
    assert errors[8]["code"] == "future_date"
    assert all(e["message"] for e in data["errors"])
    assert ok(checked.get(tree.readings))["meta"]["total"] == 4


def test_batch_size_limits(checked: httpx.Client) -> None:
    tree = Tree(checked)
    for readings, status in [([], 422), ([reading("2020-01-01", "2020-01-01")] * 501, 422)]:
        r = checked.post(tree.batch, json={"readings": readings})
        assert r.status_code == status
        assert r.json()["error"]["details"][0]["field"] == "readings"
    assert checked.post(tree.batch, json={}).status_code == 422
    assert checked.post(tree.batch, json={"readings": [1, 2]}).status_code == 422
    assert ok(checked.get(tree.readings))["meta"]["total"] == 0
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(500)]
    full = [reading(d.isoformat(), d.isoformat(), 10) for d in days]
    data = ok(checked.post(tree.batch, json={"readings": full}), 201)["data"]
    assert (data["accepted"], data["rejected"], data["errors"]) == (500, 0, [])
    assert latest(checked, tree) == days[-1].isoformat()


def test_anomaly_flags(checked: httpx.Client) -> None:
    tree = Tree(checked)
    history = monthly(2024, range(1, 13), 1000)
    ok(checked.post(tree.batch, json={"readings": history}), 201)
    cases = [
        (3000, ["spike"]),  # 3 times the 12-month average: "3 times or more"
        (2999, []),
        (250, []),  # exactly 25 %: not "less than"
        (249, ["drop"]),
        (-5, ["negative"]),
        (0, ["drop"]),
    ]
    for i, (consumption, flags) in enumerate(cases):
        # each case goes to its own meter so earlier cases do not move the average
        meter = ok(
            checked.post(
                f"/v1/buildings/{tree.bid}/meters", json={"type": "electricity", "unit": "kWh"}
            ),
            201,
        )["data"]
        url = f"/v1/buildings/{tree.bid}/meters/{meter['id']}/readings"
        ok(checked.post(f"{url}/batch", json={"readings": history}), 201)
        r = checked.post(url, json=reading(*month(2025, 1), consumption))
        assert ok(r, 201)["data"]["anomaly_flags"] == flags, (i, consumption)
    # the first reading of a meter has no history and no flag (unless negative)
    first = ok(checked.post(tree.readings, json=reading(*month(2023, 1), 10**6)), 201)["data"]
    assert first["anomaly_flags"] == []


def test_anomaly_flags_within_a_batch_use_earlier_members(checked: httpx.Client) -> None:
    tree = Tree(checked)
    batch = [*monthly(2024, range(1, 4), 100), reading(*month(2024, 4), 900)]
    data = ok(checked.post(tree.batch, json={"readings": batch}), 201)["data"]
    assert [x["anomaly_flags"] for x in data["readings"]] == [[], [], [], ["spike"]]


def test_list_filters_and_pagination(checked: httpx.Client) -> None:
    tree = Tree(checked)
    ok(checked.post(tree.batch, json={"readings": monthly(2025, range(1, 7))}), 201)

    def starts(**params: object) -> list[str]:
        data = ok(checked.get(tree.readings, params=params))
        return [x["start_date"] for x in data["data"]]

    assert starts() == [month(2025, m)[0] for m in range(1, 7)]
    # start_date: readings starting on or after; end_date: readings ending on or before
    assert starts(start_date="2025-03-01") == [
        "2025-03-01",
        "2025-04-01",
        "2025-05-01",
        "2025-06-01",
    ]
    assert starts(start_date="2025-03-02") == ["2025-04-01", "2025-05-01", "2025-06-01"]
    assert starts(end_date="2025-02-28") == ["2025-01-01", "2025-02-01"]
    assert starts(end_date="2025-02-27") == ["2025-01-01"]
    assert starts(start_date="2025-02-01", end_date="2025-04-30") == [
        "2025-02-01",
        "2025-03-01",
        "2025-04-01",
    ]
    page = ok(checked.get(tree.readings, params={"per_page": 4, "page": 2}))
    assert page["meta"] == {"total": 6, "page": 2, "per_page": 4, "total_pages": 2}
    assert [x["start_date"] for x in page["data"]] == ["2025-05-01", "2025-06-01"]
    for params in ({"start_date": "March"}, {"end_date": "2025-13-01"}, {"per_page": 201}):
        assert checked.get(tree.readings, params=params).status_code == 422


def test_delete_and_latest_reading_date(checked: httpx.Client) -> None:
    tree = Tree(checked)
    data = ok(checked.post(tree.batch, json={"readings": monthly(2025, range(2, 5))}), 201)["data"]
    assert latest(checked, tree) == "2025-04-30"
    # a backfill does not move latest_reading_date back
    ok(checked.post(tree.readings, json=reading(*month(2025, 1))), 201)
    assert latest(checked, tree) == "2025-04-30"
    last = data["readings"][-1]["id"]
    r = checked.delete(f"{tree.readings}/{last}")
    assert r.status_code == 204 and r.content == b""
    assert latest(checked, tree) == "2025-03-31"
    again = checked.delete(f"{tree.readings}/{last}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
    # the freed period can be submitted again
    ok(checked.post(tree.readings, json=reading(*month(2025, 4))), 201)
    for rid in [x["id"] for x in ok(checked.get(tree.readings))["data"]]:
        assert checked.delete(f"{tree.readings}/{rid}").status_code == 204
    assert latest(checked, tree) is None


def test_delete_checks_the_meter_path(checked: httpx.Client) -> None:
    tree = Tree(checked)
    other = Tree(checked)
    rid = ok(checked.post(tree.readings, json=reading(*month(2025, 1))), 201)["data"]["id"]
    assert checked.delete(f"{other.readings}/{rid}").status_code == 404
    wrong_building = f"/v1/buildings/{other.bid}/meters/{tree.mid}/readings/{rid}"
    assert checked.delete(wrong_building).status_code == 404
    assert ok(checked.get(tree.readings))["meta"]["total"] == 1


def test_locked_readings(checked: httpx.Client) -> None:
    tree = Tree(checked)
    data = ok(checked.post(tree.batch, json={"readings": monthly(2025, range(1, 5))}), 201)["data"]
    lock_url = f"/v1/buildings/{tree.bid}/lock"
    assert ok(checked.get(lock_url))["data"]["locked_through"] is None
    lock = ok(checked.post(lock_url, json={"locked_through": "2025-02-28"}))["data"]
    assert lock["locked_through"] == "2025-02-28" and lock["locked_reading_count"] == 2
    r = checked.delete(f"{tree.readings}/{data['readings'][0]['id']}")
    assert r.status_code == 403 and r.json()["error"]["code"] == "building_locked"
    assert checked.delete(f"{tree.readings}/{data['readings'][2]['id']}").status_code == 204
    r = checked.post(tree.readings, json=reading("2025-02-20", "2025-02-20"))
    assert r.status_code == 403 and r.json()["error"]["code"] == "building_locked"
    batch = ok(
        checked.post(tree.batch, json={"readings": [reading("2024-12-01", "2024-12-31")]}), 201
    )["data"]
    assert batch["rejected"] == 1 and batch["errors"][0]["code"] == "building_locked"
    r = checked.post(lock_url, json={"locked_through": "2025-01-31"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "lock_regression"
    assert checked.post(lock_url, json={"locked_through": "soon"}).status_code == 422
    assert ok(checked.get(tree.readings))["meta"]["total"] == 3


def test_concurrent_overlapping_batches_one_wins_each_range(service: Service) -> None:
    """Two clients race batches over the same months; every month is stored exactly once."""
    with service.client() as setup:
        tree = Tree(setup)
    rounds = 6
    results: dict[str, list[dict]] = {"a": [], "b": []}
    barrier = threading.Barrier(2)

    def submit(name: str, shift: int) -> None:
        with service.client() as client:
            for r in range(rounds):
                year = 2000 + r
                # the two batches cover the same year; b's months are shifted by a few days
                batch = [
                    reading(f"{year}-{m:02d}-{1 + shift:02d}", f"{year}-{m:02d}-{20 + shift:02d}")
                    for m in range(1, 13)
                ]
                barrier.wait(timeout=10)
                resp = client.post(tree.batch, json={"readings": batch})
                assert resp.status_code == 201, resp.text
                results[name].append(resp.json()["data"])

    threads = [
        threading.Thread(target=submit, args=("a", 0)),
        threading.Thread(target=submit, args=("b", 3)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(len(v) == rounds for v in results.values())
    for a, b in zip(results["a"], results["b"], strict=True):
        assert a["accepted"] + b["accepted"] == 12
        assert a["rejected"] + b["rejected"] == 12
        assert {a["accepted"], b["accepted"]} <= {0, 12}
    with service.client() as client:
        stored = ok(client.get(tree.readings, params={"per_page": 200}))["data"]
    assert len(stored) == 12 * rounds
    periods = sorted((x["start_date"], x["end_date"]) for x in stored)
    for (_, end), (start, _) in itertools.pairwise(periods):
        assert end < start
