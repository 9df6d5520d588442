"""The CSV upload (POST /v1/readings/upload, decisions C1): many meters in one request, the
batch's rules row by row and meter by meter, the batch's answer with each refused row's index and
CSV line, its limits, and the bulk rate limit. Every response is checked against the OpenAPI
document (the `checked` client)."""

from __future__ import annotations

import httpx

from tests.service.conftest import (
    ServiceFactory,
    Tree,
    create_building,
    create_meter,
    month,
    ok,
    reading,
)

UPLOAD = "/v1/readings/upload"
CSV = {"Content-Type": "text/csv"}


def upload(client: httpx.Client, text: str, **headers: str) -> httpx.Response:
    return client.post(UPLOAD, content=text.encode(), headers={**CSV, **headers})


def listed(client: httpx.Client, building: str, meter: str) -> list[dict]:
    return ok(client.get(f"/v1/buildings/{building}/meters/{meter}/readings?per_page=200"))["data"]


def test_an_upload_of_three_meters_with_every_kind_of_refusal(checked: httpx.Client) -> None:
    tree = Tree(checked)
    other = create_building(checked, tree.pid, name="Annex")
    gas = create_meter(checked, other["id"], type="natural_gas", unit="kWh")
    stored = ok(checked.post(tree.readings, json=reading("2025-06-01", "2025-06-30")), 201)
    e, g = tree.mid, gas["id"]
    text = "\n".join(
        [
            "meter_id,start_date,end_date,consumption,cost,cost_currency,demand_kw",
            f"{e},2025-01-01,2025-01-31,1000,150.5,GBP,",  # 0 accepted
            f"{g},2025-01-01,2025-01-31,5000,,,",  # 1 accepted (other building)
            f"{e},2025-02-01,2025-02-28,1000,,,",  # 2 accepted
            f"{e},2025-02-15,2025-03-10,900,,,",  # 3 overlaps row 2 of the upload
            f"{e},2025-06-10,2025-06-12,10,,,",  # 4 overlaps the stored June reading
            f"{g},2025-03-01,2025-03-31,,,,",  # 5 no consumption
            "mtr_nosuchmeter0000000000,2025-01-01,2025-01-31,1,,,",  # 6 unknown meter
            f"{g},2025-04-01,2025-03-01,1,,,",  # 7 ends before it starts
            f"{e},2027-01-01,2027-01-31,1,,,",  # 8 in the future
            "",  # a blank line is not a row
            f"{g},2025-02-01,2025-02-28,20000,,,",  # 9 accepted, flagged spike (4x January)
            f"{e},2025-03-01,2025-03-31,abc,,,",  # 10 consumption not a number
            ",2025-03-01,2025-03-31,1,,,",  # 11 no meter
        ]
    )
    r = upload(checked, text)
    assert r.status_code == 201, r.text
    data = r.json()["data"]
    assert (data["accepted"], data["rejected"]) == (4, 8)
    got = [(x["meter_id"], x["start_date"], x["consumption"]) for x in data["readings"]]
    assert got == [
        (e, "2025-01-01", 1000.0),
        (g, "2025-01-01", 5000.0),
        (e, "2025-02-01", 1000.0),
        (g, "2025-02-01", 20000.0),
    ]
    assert data["readings"][0]["cost"] == 150.5 and data["readings"][0]["cost_currency"] == "GBP"
    assert data["readings"][3]["anomaly_flags"] == ["spike"]
    errors = {x["index"]: x for x in data["errors"]}
    assert sorted(errors) == [3, 4, 5, 6, 7, 8, 10, 11]
    assert (errors[3]["code"], errors[3]["row"], errors[3]["meter_id"]) == ("reading_overlap", 5, e)
    assert errors[3]["conflicting_index"] == 2
    assert errors[4]["conflicting_reading_id"] == stored["data"]["id"]
    assert (errors[5]["code"], errors[5]["field"]) == ("validation_error", "consumption")
    assert (errors[6]["code"], errors[6]["field"]) == ("not_found", "meter_id")
    assert errors[7]["field"] == "end_date" and errors[8]["code"] == "future_date"
    assert (errors[10]["field"], errors[10]["row"]) == ("consumption", 13)
    assert (errors[11]["field"], errors[11]["meter_id"]) == ("meter_id", None)
    assert [x["start_date"] for x in listed(checked, tree.bid, e)] == [
        "2025-01-01",
        "2025-02-01",
        "2025-06-01",
    ]
    assert len(listed(checked, other["id"], g)) == 2
    meter = ok(checked.get(f"/v1/buildings/{other['id']}/meters/{g}"))["data"]
    assert meter["latest_reading_date"] == "2025-02-28"


def test_the_same_readings_as_a_batch_store_the_same(checked: httpx.Client) -> None:
    """Twelve months with a spike and a drop: uploaded for one meter and sent as a batch for
    another, the stored values and flags are identical."""
    tree = Tree(checked)
    twin = create_meter(checked, tree.bid, name="Twin")
    values = [100, 110, 95, 400, 105, 20, 100, 98, 102, 99, 101, 100]
    months = [month(2024, m) for m in range(1, 13)]
    batch = [reading(s, e, v) for (s, e), v in zip(months, values, strict=True)]
    ok(checked.post(tree.batch, json={"readings": batch}), 201)
    rows = [f"{twin['id']},{s},{e},{v}" for (s, e), v in zip(months, values, strict=True)]
    ok(upload(checked, "meter_id,start_date,end_date,consumption\n" + "\n".join(rows)), 201)

    def shape(items: list[dict]) -> list[tuple]:
        return [(x["start_date"], x["consumption"], x["anomaly_flags"]) for x in items]

    assert shape(listed(checked, tree.bid, tree.mid)) == shape(
        listed(checked, tree.bid, twin["id"])
    )
    assert any(x["anomaly_flags"] == ["spike"] for x in listed(checked, tree.bid, twin["id"]))


def test_what_is_refused_as_a_whole(checked: httpx.Client) -> None:
    tree = Tree(checked)
    m = tree.mid
    header = "meter_id,start_date,end_date,consumption"

    def refused(text: str | bytes, status: int, code: str, **headers: str) -> dict:
        body = text if isinstance(text, bytes) else text.encode()
        r = checked.post(UPLOAD, content=body, headers={**CSV, **headers})
        assert r.status_code == status, r.text
        assert r.json()["error"]["code"] == code
        return r.json()["error"]

    too_many = header + "\n" + "\n".join(f"{m},2020-01-01,2020-01-01,1" for _ in range(5001))
    assert refused(too_many, 413, "too_many_rows")["max_rows"] == 5000
    assert (
        "missing consumption"
        in refused("meter_id,start_date,end_date\n", 422, "invalid_columns")["message"]
    )
    assert "unknown 'colour'" in refused(header + ",colour\n", 422, "invalid_columns")["message"]
    refused("", 422, "empty_upload")
    refused(header + "\n", 422, "empty_upload")
    refused(b"meter_id,start_date,end_date,consumption\n\xff\xfe,1,2,3\n", 400, "invalid_csv")
    refused(header + "\n", 415, "unsupported_media_type", **{"Content-Type": "text/plain"})
    refused('"a"', 415, "unsupported_media_type", **{"Content-Type": "application/json"})
    assert listed(checked, tree.bid, m) == []
    # A byte-order mark, upper-case column names in another order, CRLF line ends: all fine.
    body = "\ufeffSTART_DATE,Meter_ID,consumption,end_date\r\n2025-01-01," + m + ",7,2025-01-31\r\n"
    assert ok(upload(checked, body), 201)["data"]["accepted"] == 1


def test_an_upload_spends_the_bulk_bucket(scaled_service: ServiceFactory) -> None:
    service = scaled_service(per_key=50, bulk=1)
    with service.client() as api:
        tree = Tree(api)
        text = "meter_id,start_date,end_date,consumption\n"
        first = upload(api, text + f"{tree.mid},2025-01-01,2025-01-31,1\n")
        assert first.status_code == 201 and first.headers["X-RateLimit-Bucket"] == "bulk"
        second = upload(api, text + f"{tree.mid},2025-02-01,2025-02-28,1\n")
        assert second.status_code == 429 and second.json()["error"]["bucket"] == "bulk"
        # and a batch shares that bucket
        r = api.post(tree.batch, json={"readings": [reading("2025-03-01", "2025-03-31")]})
        assert r.status_code == 429
