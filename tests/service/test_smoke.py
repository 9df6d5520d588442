"""End-to-end walk through the core resources over real HTTP."""

from __future__ import annotations

import httpx

from tests.conftest import Service

PROPERTY = {
    "name": "Riverside House",
    "address": {"street": "12 Riverside Walk", "city": "London", "country": "GB"},
    "type": "office",
}
BUILDING = {
    "name": "Main",
    "primary_use_type": "office",
    "gfa_m2": 1000,
    "year_built": 1999,
    "floors": 4,
}


def test_property_building_meter_readings_walk(service: Service, api: httpx.Client) -> None:
    r = api.post("/v1/properties", json=PROPERTY)
    assert r.status_code == 201, r.text
    prop = r.json()["data"]
    assert prop["id"].startswith("prp_")
    assert prop["status"] == "active" and prop["building_count"] == 0
    assert prop["total_gfa_m2"] == 0
    assert "latitude" in prop["address"] and "buildings" not in prop
    assert r.headers["X-RateLimit-Window"] == "60"

    r = api.post(f"/v1/properties/{prop['id']}/buildings", json=BUILDING)
    assert r.status_code == 201, r.text
    building = r.json()["data"]
    assert building["gfa_sqft"] == 10763.9
    assert building["use_types"] == [] and building["meters"] == []

    r = api.get(f"/v1/properties/{prop['id']}")
    assert r.json()["data"]["building_count"] == 1
    assert r.json()["data"]["total_gfa_m2"] == 1000
    assert r.json()["data"]["buildings"] == [{"id": building["id"], "name": "Main"}]

    r = api.post(
        f"/v1/buildings/{building['id']}/meters", json={"type": "electricity", "unit": "kwh"}
    )
    assert r.status_code == 201, r.text
    meter = r.json()["data"]
    assert meter["unit"] == "kWh" and meter["latest_reading_date"] is None

    base = f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings"
    months = [
        ("2025-01-01", "2025-01-31"),
        ("2025-02-01", "2025-02-28"),
        ("2025-03-01", "2025-03-31"),
    ]
    batch = [{"start_date": s, "end_date": e, "consumption": 1000} for s, e in months]
    batch.append({"start_date": "2025-04-01", "end_date": "2025-04-30", "consumption": 3000})
    batch.append({"start_date": "2025-03-15", "end_date": "2025-03-20", "consumption": 5})
    r = api.post(f"{base}/batch", json={"readings": batch})
    assert r.status_code == 201, r.text
    result = r.json()["data"]
    assert (result["accepted"], result["rejected"]) == (4, 1)
    assert result["errors"][0]["index"] == 4
    assert result["errors"][0]["code"] == "reading_overlap"
    assert result["readings"][3]["anomaly_flags"] == ["spike"]

    r = api.get(base, params={"start_date": "2025-02-01"})
    assert r.json()["meta"]["total"] == 3
    r = api.get(f"/v1/buildings/{building['id']}/meters")
    assert r.json()["data"][0]["latest_reading_date"] == "2025-04-30"

    reading_id = result["readings"][3]["id"]
    r = api.delete(f"{base}/{reading_id}")
    assert r.status_code == 204 and r.content == b""
    r = api.get(f"/v1/buildings/{building['id']}/meters")
    assert r.json()["data"][0]["latest_reading_date"] == "2025-03-31"


def test_etag_304_does_not_count(service: Service, api: httpx.Client) -> None:
    r = api.get("/v1/properties")
    etag = r.headers["ETag"]
    remaining = int(r.headers["X-RateLimit-Remaining"])
    r2 = api.get("/v1/properties", headers={"If-None-Match": etag})
    assert r2.status_code == 304 and r2.content == b""
    assert int(r2.headers["X-RateLimit-Remaining"]) == remaining


def test_errors_have_the_error_shape(service: Service, api: httpx.Client) -> None:
    r = api.post(
        "/v1/properties", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    r = api.post(
        "/v1/properties", json={**PROPERTY, "address": {**PROPERTY["address"], "country": "UK"}}
    )
    assert r.status_code == 422
    assert r.json()["error"]["details"][0]["field"] == "address.country"
    with service.client("") as anon:
        r = anon.get("/v1/properties")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    assert "X-RateLimit-Limit" in r.headers
