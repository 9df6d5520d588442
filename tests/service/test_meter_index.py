"""GET /v1/meters (decisions C2): the organisation's meters in one list, filtered by ids or
building, within the caller's organisation, environment and property access; checked against
the OpenAPI document."""

from __future__ import annotations

import httpx

from tests.conftest import Service
from tests.service.conftest import Tree, create_building, create_meter, ok


def test_list_filter_by_ids_and_building(checked: httpx.Client) -> None:
    tree = Tree(checked)
    annex = create_building(checked, tree.pid, name="Annex")
    gas = create_meter(checked, annex["id"], type="natural_gas", unit="kWh")
    water = create_meter(checked, annex["id"], type="water", unit="m3")
    every = ok(checked.get("/v1/meters"))
    order = [m["id"] for m in every["data"]]  # by creation time, then id
    assert set(order) == {tree.mid, gas["id"], water["id"]} and every["meta"]["total"] == 3
    picked = ok(checked.get("/v1/meters", params={"filter[id]": f"{water['id']},mtr_unknown"}))
    assert [(m["id"], m["building_id"], m["unit"]) for m in picked["data"]] == [
        (water["id"], annex["id"], "m3")
    ]
    in_annex = ok(checked.get("/v1/meters", params={"filter[building_id]": annex["id"]}))
    assert {m["id"] for m in in_annex["data"]} == {gas["id"], water["id"]}
    paged = ok(checked.get("/v1/meters", params={"per_page": 2, "page": 2}))
    assert [m["id"] for m in paged["data"]] == order[2:]
    too_many = ",".join(f"mtr_{i}" for i in range(201))
    r = checked.get("/v1/meters", params={"filter[id]": too_many})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["field"] == "filter[id]"
    assert checked.get("/v1/meters", params={"filter[id]": ","}).status_code == 422


def test_only_the_callers_meters(service: Service) -> None:
    with service.client() as mine:
        tree = Tree(mine)
    other = service.bootstrap(org_name="Other", owner_email="boss@other.example")
    with service.client(other["test_key"]) as theirs:
        assert ok(theirs.get("/v1/meters", params={"filter[id]": tree.mid}))["data"] == []
        assert ok(theirs.get("/v1/readings", params={"filter[meter_id]": tree.mid}))["data"] == []
        upload = theirs.post(
            "/v1/readings/upload",
            content=f"meter_id,start_date,end_date,consumption\n{tree.mid},2025-01-01,2025-01-31,1\n",
            headers={"Content-Type": "text/csv"},
        )
        assert upload.status_code == 201
        assert [e["code"] for e in upload.json()["data"]["errors"]] == ["not_found"]
    with service.client() as mine:
        assert ok(mine.get(f"/v1/buildings/{tree.bid}/meters/{tree.mid}/readings"))["data"] == []
    with service.client(service.live_key) as live:
        assert ok(live.get("/v1/meters"))["meta"]["total"] == 0


def test_readings_of_many_meters_in_one_list(checked: httpx.Client) -> None:
    """GET /v1/readings (C3): the readings of up to 200 named meters, by meter then start, with
    the per-meter list's date filters; unknown meters are left out."""
    tree = Tree(checked)
    other = create_meter(checked, tree.bid, name="Sub")
    for meter, value in ((tree.mid, 10.0), (other["id"], 20.0)):
        base = f"/v1/buildings/{tree.bid}/meters/{meter}/readings"
        for month in (1, 2, 3):
            start, end = f"2025-0{month}-01", f"2025-0{month}-2{month}"
            body = {"start_date": start, "end_date": end, "consumption": value + month}
            ok(checked.post(base, json=body), 201)
    ids = sorted([tree.mid, other["id"]])
    both = ok(checked.get("/v1/readings", params={"filter[meter_id]": ",".join(ids)}))
    got = [(r["meter_id"], r["start_date"]) for r in both["data"]]
    assert got == [(m, f"2025-0{k}-01") for m in ids for k in (1, 2, 3)]
    window = ok(
        checked.get(
            "/v1/readings",
            params={
                "filter[meter_id]": f"{other['id']},mtr_unknown",
                "start_date": "2025-02-01",
                "end_date": "2025-02-28",
            },
        )
    )
    assert [(r["meter_id"], r["consumption"]) for r in window["data"]] == [(other["id"], 22.0)]
    assert checked.get("/v1/readings").status_code == 422  # the filter is required
    too_many = ",".join(f"mtr_{i}" for i in range(201))
    assert checked.get("/v1/readings", params={"filter[meter_id]": too_many}).status_code == 422


def test_readings_of_many_meters_read_exactly_as_each_meters_list(checked: httpx.Client) -> None:
    """The many-meter list is built from table rows, not ORM objects (C3): every field of every
    reading, anomaly flags and cost included, is what the per-meter list says; pages take up to
    1,000 readings."""
    tree = Tree(checked)
    base = f"/v1/buildings/{tree.bid}/meters/{tree.mid}/readings"
    for month, value in enumerate((10.0, 11.0, 12.0, 100.0, 1.0), start=1):
        body = {
            "start_date": f"2025-0{month}-01",
            "end_date": f"2025-0{month}-28",
            "consumption": value,
            "cost": value / 4,
            "cost_currency": "GBP",
            "demand_kw": 2.5,
        }
        ok(checked.post(base, json=body), 201)
    one = ok(checked.get(base))["data"]
    assert [r["anomaly_flags"] for r in one] == [[], [], [], ["spike"], ["drop"]]
    many = ok(checked.get("/v1/readings", params={"filter[meter_id]": tree.mid}))
    assert many["data"] == one
    big = {"filter[meter_id]": tree.mid, "per_page": 1000}
    assert ok(checked.get("/v1/readings", params=big))["meta"]["per_page"] == 1000
    assert checked.get("/v1/readings", params={**big, "per_page": 1001}).status_code == 422


def test_meters_list_reads_exactly_as_each_buildings_list(checked: httpx.Client) -> None:
    """The organisation's meter list is built from table rows, not ORM objects (C2): every field
    of every meter (a name or provider left out, a latest reading date set) is what the
    building's own meter list says."""
    tree = Tree(checked)
    create_meter(checked, tree.bid, type="natural_gas", unit="therms", name="Boiler", provider="BG")
    base = f"/v1/buildings/{tree.bid}/meters/{tree.mid}/readings"
    body = {"start_date": "2025-01-01", "end_date": "2025-01-31", "consumption": 5.0}
    ok(checked.post(base, json=body), 201)
    per_building = ok(checked.get(f"/v1/buildings/{tree.bid}/meters"))["data"]
    assert {m["latest_reading_date"] for m in per_building} == {"2025-01-31", None}
    listed = ok(checked.get("/v1/meters"))["data"]
    assert sorted(listed, key=lambda m: m["id"]) == sorted(per_building, key=lambda m: m["id"])
    ids = ",".join(m["id"] for m in per_building)
    assert ok(checked.get("/v1/meters", params={"filter[id]": ids}))["data"] == listed
