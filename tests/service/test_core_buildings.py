"""Buildings: field sets per view, the use_types rule, gfa_sqft, property totals, PATCH, meters."""

from __future__ import annotations

import re

import httpx

from tests.conftest import Service
from tests.service.conftest import BUILDING, create_building, create_meter, create_property, ok

SUMMARY_KEYS = {
    "id",
    "property_id",
    "name",
    "primary_use_type",
    "gfa_m2",
    "gfa_sqft",
    "year_built",
    "floors",
    "occupancy_pct",
    "operating_hours_week",
    "data_quality_grade",
    "status",
    "created_at",
    "updated_at",
}
DETAIL_KEYS = SUMMARY_KEYS | {
    "use_types",
    "nla_m2",
    "renewable_capacity_kw",
    "car_park_area_m2",
    "meters",
}
METER_KEYS = {
    "id",
    "building_id",
    "type",
    "name",
    "unit",
    "source",
    "provider",
    "status",
    "latest_reading_date",
    "created_at",
}
# The spec's list of meter types, verbatim.
METER_TYPES = [
    "electricity",
    "natural_gas",
    "water",
    "district_heating",
    "district_cooling",
    "steam",
    "fuel_oil",
    "diesel",
    "lpg",
    "solar",
    "chp",
    "waste_landfill",
    "waste_recycling",
    "waste_compost",
]
UNIT_FOR = {
    "water": "m3",
    "waste_landfill": "kg",
    "waste_recycling": "kg",
    "waste_compost": "kg",
}


def test_create_get_and_list_views(checked: httpx.Client) -> None:
    prop = create_property(checked)
    body = {
        **BUILDING,
        "occupancy_pct": 85,
        "operating_hours_week": 55,
        "use_types": [{"type": "office", "gfa_m2": 800}, {"type": "retail", "gfa_m2": 200}],
    }
    r = checked.post(f"/v1/properties/{prop['id']}/buildings", json=body)
    assert r.status_code == 201
    created = r.json()["data"]
    assert set(created) == DETAIL_KEYS
    assert re.match(r"^bld_[0-9a-z]{24}$", created["id"])
    assert created["property_id"] == prop["id"]
    assert created["status"] == "active" and created["data_quality_grade"] in "ABCDEF"
    assert created["gfa_sqft"] == 10763.9
    assert created["use_types"] == body["use_types"]
    assert (created["occupancy_pct"], created["operating_hours_week"]) == (85, 55)
    got = ok(checked.get(f"/v1/properties/{prop['id']}/buildings/{created['id']}"))["data"]
    assert set(got) == DETAIL_KEYS and got["use_types"] == body["use_types"]
    listed = ok(checked.get(f"/v1/properties/{prop['id']}/buildings"))
    assert listed["meta"] == {"total": 1, "page": 1, "per_page": 50, "total_pages": 1}
    assert set(listed["data"][0]) == SUMMARY_KEYS


def test_gfa_sqft_is_derived_from_gfa_m2(checked: httpx.Client) -> None:
    prop = create_property(checked)
    building = create_building(checked, prop["id"], gfa_m2=2500.5)
    assert building["gfa_sqft"] == round(2500.5 * 10.7639, 2)
    r = checked.patch(
        f"/v1/properties/{prop['id']}/buildings/{building['id']}", json={"gfa_m2": 100}
    )
    assert ok(r)["data"]["gfa_sqft"] == 1076.39


def test_property_totals_follow_buildings(checked: httpx.Client) -> None:
    prop = create_property(checked)
    a = create_building(checked, prop["id"], gfa_m2=1000)
    create_building(checked, prop["id"], name="Annex", gfa_m2=250.25)
    other = create_property(checked, name="Other")
    create_building(checked, other["id"], gfa_m2=5)
    got = ok(checked.get(f"/v1/properties/{prop['id']}"))["data"]
    assert (got["building_count"], got["total_gfa_m2"]) == (2, 1250.25)
    path = f"/v1/properties/{prop['id']}/buildings/{a['id']}"
    ok(checked.patch(path, json={"gfa_m2": 2000}))
    listed = {p["id"]: p for p in ok(checked.get("/v1/properties"))["data"]}
    assert (listed[prop["id"]]["building_count"], listed[prop["id"]]["total_gfa_m2"]) == (
        2,
        2250.25,
    )
    assert (listed[other["id"]]["building_count"], listed[other["id"]]["total_gfa_m2"]) == (1, 5)


def test_use_types_must_sum_to_gfa(checked: httpx.Client) -> None:
    prop = create_property(checked)
    bad = {
        **BUILDING,
        "use_types": [{"type": "office", "gfa_m2": 600}, {"type": "retail", "gfa_m2": 300}],
    }
    r = checked.post(f"/v1/properties/{prop['id']}/buildings", json=bad)
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "use_types_gfa_mismatch"
    assert error["details"][0]["field"] == "use_types"
    # decimal areas that add up within a hundredth of a square metre are accepted
    fine = {
        **BUILDING,
        "gfa_m2": 0.3,
        "use_types": [{"type": "office", "gfa_m2": 0.1}, {"type": "retail", "gfa_m2": 0.2}],
    }
    building = ok(checked.post(f"/v1/properties/{prop['id']}/buildings", json=fine), 201)["data"]
    path = f"/v1/properties/{prop['id']}/buildings/{building['id']}"
    # changing gfa_m2 alone must keep the stored breakdown consistent
    r = checked.patch(path, json={"gfa_m2": 1.0})
    assert r.status_code == 422 and r.json()["error"]["code"] == "use_types_gfa_mismatch"
    r = checked.patch(path, json={"gfa_m2": 1.0, "use_types": [{"type": "office", "gfa_m2": 1.0}]})
    assert ok(r)["data"]["use_types"] == [{"type": "office", "gfa_m2": 1.0}]
    dup = [{"type": "office", "gfa_m2": 0.5}, {"type": "office", "gfa_m2": 0.5}]
    assert checked.patch(path, json={"use_types": dup}).status_code == 422
    unknown = [{"type": "spaceport", "gfa_m2": 1.0}]
    r = checked.patch(path, json={"use_types": unknown})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["field"] == "use_types[0].type"


def test_create_validation(checked: httpx.Client) -> None:
    prop = create_property(checked)
    url = f"/v1/properties/{prop['id']}/buildings"
    for missing in ("name", "primary_use_type", "gfa_m2", "year_built", "floors"):
        body = {k: v for k, v in BUILDING.items() if k != missing}
        r = checked.post(url, json=body)
        assert r.status_code == 422, missing
        assert r.json()["error"]["details"][0]["field"] == missing
    for field, value in [
        ("gfa_m2", "1000"),
        ("gfa_m2", 0),
        ("gfa_m2", -5),
        ("year_built", 1999.5),
        ("year_built", "1999"),
        ("floors", 0),
        ("occupancy_pct", 101),
        ("operating_hours_week", 169),
        ("primary_use_type", "spaceport"),
    ]:
        r = checked.post(url, json={**BUILDING, field: value})
        assert r.status_code == 422, (field, value)
        assert r.json()["error"]["details"][0]["field"] == field
    assert ok(checked.get(url))["meta"]["total"] == 0


def test_patch_building(service: Service, checked: httpx.Client) -> None:
    prop = create_property(checked)
    building = create_building(checked, prop["id"])
    path = f"/v1/properties/{prop['id']}/buildings/{building['id']}"
    service.clock.advance(5)
    r = checked.patch(path, json={"occupancy_pct": 70.5, "operating_hours_week": 60, "nla_m2": 800})
    updated = ok(r)["data"]
    assert set(updated) == DETAIL_KEYS
    assert (updated["occupancy_pct"], updated["operating_hours_week"], updated["nla_m2"]) == (
        70.5,
        60,
        800,
    )
    assert updated["updated_at"] > building["updated_at"]
    assert ok(checked.patch(path, json={"occupancy_pct": None}))["data"]["occupancy_pct"] is None
    r = checked.patch(path, json={"floors": None})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["field"] == "floors"


def test_building_paths_check_the_property(checked: httpx.Client) -> None:
    prop = create_property(checked)
    other = create_property(checked, name="Other")
    building = create_building(checked, prop["id"])
    wrong = f"/v1/properties/{other['id']}/buildings/{building['id']}"
    assert checked.get(wrong).status_code == 404
    assert checked.patch(wrong, json={"floors": 2}).status_code == 404
    assert checked.get("/v1/properties/prp_nothing/buildings").status_code == 404
    r = checked.post("/v1/properties/prp_nothing/buildings", json=BUILDING)
    assert r.status_code == 404


def test_archived_property_keeps_buildings_but_refuses_changes(checked: httpx.Client) -> None:
    prop = create_property(checked)
    building = create_building(checked, prop["id"])
    ok(checked.post(f"/v1/properties/{prop['id']}/archive"))
    r = checked.post(f"/v1/properties/{prop['id']}/buildings", json=BUILDING)
    assert r.status_code == 409 and r.json()["error"]["code"] == "property_archived"
    path = f"/v1/properties/{prop['id']}/buildings/{building['id']}"
    assert checked.patch(path, json={"floors": 9}).status_code == 409
    assert ok(checked.get(path))["data"]["id"] == building["id"]
    got = ok(checked.get(f"/v1/properties/{prop['id']}"))["data"]
    assert got["building_count"] == 1


def test_meters_create_list_get(checked: httpx.Client) -> None:
    prop = create_property(checked)
    building = create_building(checked, prop["id"])
    bid = building["id"]
    r = checked.post(
        f"/v1/buildings/{bid}/meters",
        json={"type": "natural_gas", "unit": "therms", "name": "Boiler", "provider": "GasCo"},
    )
    assert r.status_code == 201
    meter = r.json()["data"]
    assert set(meter) == METER_KEYS
    assert re.match(r"^mtr_[0-9a-z]{24}$", meter["id"])
    assert meter["building_id"] == bid and meter["status"] == "active"
    assert (meter["unit"], meter["name"], meter["provider"]) == ("therms", "Boiler", "GasCo")
    assert meter["source"] == "manual" and meter["latest_reading_date"] is None
    for meter_type in METER_TYPES:
        created = create_meter(checked, bid, type=meter_type, unit=UNIT_FOR.get(meter_type, "kWh"))
        assert created["type"] == meter_type
    listed = ok(checked.get(f"/v1/buildings/{bid}/meters", params={"per_page": 5}))
    assert listed["meta"] == {"total": 15, "page": 1, "per_page": 5, "total_pages": 3}
    assert set(listed["data"][0]) == METER_KEYS
    assert ok(checked.get(f"/v1/buildings/{bid}/meters/{meter['id']}"))["data"] == meter
    detail = ok(checked.get(f"/v1/properties/{prop['id']}/buildings/{bid}"))["data"]
    assert {"id": meter["id"], "type": "natural_gas", "status": "active"} in detail["meters"]
    assert len(detail["meters"]) == 15


def test_meter_validation(checked: httpx.Client) -> None:
    prop = create_property(checked)
    bid = create_building(checked, prop["id"])["id"]
    url = f"/v1/buildings/{bid}/meters"
    for body, field in [
        ({"unit": "kWh"}, "type"),
        ({"type": "electricity"}, "unit"),
        ({"type": "nuclear", "unit": "kWh"}, "type"),
        ({"type": "electricity", "unit": "kWh", "source": "guess"}, "source"),
    ]:
        r = checked.post(url, json=body)
        assert r.status_code == 422, body
        assert r.json()["error"]["details"][0]["field"] == field
    r = checked.post(url, json={"type": "water", "unit": "kWh"})
    assert r.status_code == 422
    assert (
        r.json()["error"]["code"] == "invalid_unit" and "m3" in r.json()["error"]["allowed_units"]
    )
    assert (
        checked.post(
            "/v1/buildings/bld_nothing/meters", json={"type": "electricity", "unit": "kWh"}
        ).status_code
        == 404
    )
    assert checked.get(f"{url}/mtr_nothing").status_code == 404
