"""Benchmarks over real HTTP: results, recalculation on single/batch/delete with its events,
peer percentiles, history and the portfolio aggregate."""

from __future__ import annotations

import calendar
from typing import Any

import httpx
from sqlalchemy import select

from bpservice.db.models import Event
from bpservice.domain import benchmarks as bm
from tests.conftest import Service

# The FakeClock stands at 2026-11-20: the last full month is October 2026.
LAST_YEAR_MONTHS = [(2025, m) for m in (11, 12)] + [(2026, m) for m in range(1, 11)]


def month_span(year: int, month: int) -> tuple[str, str]:
    last = calendar.monthrange(year, month)[1]
    return f"{year}-{month:02d}-01", f"{year}-{month:02d}-{last:02d}"


def bills(months: list[tuple[int, int]], consumption: float) -> list[dict[str, Any]]:
    return [
        {"start_date": s, "end_date": e, "consumption": consumption}
        for s, e in (month_span(y, m) for y, m in months)
    ]


def make_building(
    api: httpx.Client,
    *,
    country: str = "GB",
    use_type: str = "office",
    gfa_m2: float = 1000,
    name: str = "Main",
) -> tuple[str, str]:
    prop = api.post(
        "/v1/properties",
        json={
            "name": f"{name} property",
            "address": {"street": "1 High Street", "city": "Somewhere", "country": country},
            "type": use_type,
        },
    )
    assert prop.status_code == 201, prop.text
    property_id = prop.json()["data"]["id"]
    b = api.post(
        f"/v1/properties/{property_id}/buildings",
        json={
            "name": name,
            "primary_use_type": use_type,
            "gfa_m2": gfa_m2,
            "year_built": 2001,
            "floors": 3,
        },
    )
    assert b.status_code == 201, b.text
    return property_id, b.json()["data"]["id"]


def add_meter(api: httpx.Client, building_id: str, meter_type: str, unit: str = "kWh") -> str:
    r = api.post(f"/v1/buildings/{building_id}/meters", json={"type": meter_type, "unit": unit})
    assert r.status_code == 201, r.text
    return r.json()["data"]["id"]


def submit(api: httpx.Client, building_id: str, meter_id: str, readings: list[dict]) -> dict:
    r = api.post(
        f"/v1/buildings/{building_id}/meters/{meter_id}/readings/batch",
        json={"readings": readings},
    )
    assert r.status_code == 201, r.text
    assert r.json()["data"]["rejected"] == 0, r.text
    return r.json()["data"]


def benchmarks(api: httpx.Client, building_id: str) -> dict:
    r = api.get(f"/v1/buildings/{building_id}/benchmarks")
    assert r.status_code == 200, r.text
    return r.json()["data"]


def by_standard(result: dict) -> dict[str, dict]:
    return {s["standard"]: s for s in result["scores"]}


def events(service: Service, type_: str) -> list[dict]:
    with service.app.state.db.read() as session:
        rows = session.scalars(select(Event).where(Event.type == type_).order_by(Event.seq))
        return [e.data for e in rows]


def test_building_without_energy_data_answers_nulls(service: Service, api: httpx.Client) -> None:
    _, gb = make_building(api)
    add_meter(api, gb, "electricity")
    result = benchmarks(api, gb)
    assert result["building_id"] == gb
    assert result["reporting_period"] == {"start": None, "end": None}
    assert result["data_quality_grade"] == "F"
    assert result["eui_kwh_m2"] is None and result["carbon_intensity_kgco2e_m2"] is None
    scores = by_standard(result)
    assert list(scores) == [
        "svc",
        "energy_rating",
        "eu_epc",
        "decarbonisation_pathway",
        "regional_rating",
    ]
    assert scores["svc"]["score"] is None and scores["svc"]["peer_group"] == "office:GB"
    assert scores["energy_rating"] == {
        "standard": "energy_rating",
        "score": None,
        "eligible": False,
        "certification_eligible": False,
        "method": None,
        "indicative": False,
        "indicative_reason": None,
        "median_source_eui_kwh_m2": None,
        "calculated_at": scores["energy_rating"]["calculated_at"],
    }
    assert result["source_eui_kwh_m2"] is None
    assert scores["eu_epc"]["grade"] is None and scores["eu_epc"]["country_methodology"] == "GB"
    pathway = scores["decarbonisation_pathway"]
    assert pathway["stranding_year_1_5c"] is None and pathway["current_intensity_kgco2e_m2"] is None
    # This year's (2026) CRREM v2.05 UK office value is published: 29.76.
    assert pathway["target_intensity_kgco2e_m2"] == 29.76
    assert pathway["pathway"] == "crrem-v2.05-1.5c-gb-office"
    assert scores["regional_rating"]["applicable"] is True
    assert scores["regional_rating"]["score"] is None

    _, us = make_building(api, country="US", name="NYC")
    scores = by_standard(benchmarks(api, us))
    assert "eu_epc" not in scores
    regional = scores["regional_rating"]
    assert regional["applicable"] is False and "US" in regional["reason"]
    assert set(regional) == {"standard", "applicable", "reason"}
    assert scores["decarbonisation_pathway"]["pathway"] == "derived-1.5c-us-office"
    assert api.get(f"/v1/buildings/{us}/benchmarks/history").json()["data"]["history"] == []


def test_full_year_gb_office(service: Service, api: httpx.Client) -> None:
    _, b = make_building(api, gfa_m2=1000)
    elec = add_meter(api, b, "electricity")
    gas = add_meter(api, b, "natural_gas", "therms")
    water = add_meter(api, b, "water", "m3")
    submit(api, b, elec, bills(LAST_YEAR_MONTHS, 5000))
    submit(api, b, gas, bills(LAST_YEAR_MONTHS, 100))  # 100 therms = 2,930.71 kWh
    submit(api, b, water, bills(LAST_YEAR_MONTHS, 50))
    result = benchmarks(api, b)
    assert result["reporting_period"] == {"start": "2025-11-01", "end": "2026-10-31"}
    gas_kwh = 12 * 100 * 29.3071
    assert result["eui_kwh_m2"] == round((60_000 + gas_kwh) / 1000, 2)
    # Reporting year 2026 (Nov 2025 - Oct 2026): the latest DESNZ set held, 2025: electricity
    # 0.177; gas 0.1829 (the 2024 figure, the 2025 one not confirmed).
    carbon = (60_000 * 0.177 + gas_kwh * 0.1829) / 1000
    assert result["carbon_intensity_kgco2e_m2"] == round(carbon, 2)
    assert result["data_quality_grade"] == "A"
    scores = by_standard(result)
    rating = scores["energy_rating"]
    assert rating["eligible"] is True
    # Source EUI 60,000 x 2.80 + 35,168 x 1.05 = 205 kWh/m² = 65.0 kBtu/ft². EPA's office model
    # with 10,764 ft² and default hours predicts 143.1 + 0.0006768 x (10,764 - 12,342) = 142.03
    # kBtu/ft²: ratio 0.458, score 87 on EPA's gamma (shape 4.016, scale 0.2328). A GB building
    # is never certification eligible: the score is indicative.
    source = (60_000 * 2.8 + gas_kwh * 1.05) / 1000
    assert result["source_eui_kwh_m2"] == round(source, 2)
    predicted = 143.1 + 0.0006768 * (1000 * 10.7639 - 12_342)
    assert rating["method"] == "energy_star_model"
    assert rating["score"] == bm.score_from_gamma(source / 3.15459 / predicted, 4.016, 0.2328)
    assert rating["score"] == 87 and rating["certification_eligible"] is False
    assert rating["indicative"] is True and "outside the US" in rating["indicative_reason"]
    # The DEC benchmark is priced with TM46's own factors: general office 95 x 0.55 + 120 x 0.19
    # = 75.05 kgCO2/m²; 100 x 17.05/75.05 = 23 -> band A (0-25).
    assert scores["regional_rating"]["score"] == round(100 * carbon / 75.05)
    assert scores["regional_rating"]["grade"] == "A"
    assert scores["eu_epc"]["grade"] == "A"
    pathway = scores["decarbonisation_pathway"]
    assert pathway["current_intensity_kgco2e_m2"] == round(carbon, 2)
    # 17.05 kg/m² is above the 1.5 °C pathway from 2032 (2031: 17.34, 2032: 15.38).
    assert pathway["stranding_year_1_5c"] == 2032
    assert pathway["stranding_year_2c"] > pathway["stranding_year_1_5c"]

    with service.app.state.db.read() as session:
        from bpservice.benchmarking import engine
        from bpservice.db.models import Building

        building = session.get(Building, b)
        by_type = engine.annual_energy_by_meter_type(session, building, service.clock())
        assert by_type == {"electricity": 60_000.0, "natural_gas": gas_kwh}
        assert engine.annual_water_m3(session, building, service.clock()) == 600.0
        direct = engine.building_result(session, building, service.clock())
    assert direct["eui_kwh_m2"] == result["eui_kwh_m2"]
    assert [s["standard"] for s in direct["scores"]] == [s["standard"] for s in result["scores"]]
    assert direct["scores"][1]["score"] == result["scores"][1]["score"]


def test_recalculation_events_on_batch_single_and_delete(
    service: Service, api: httpx.Client
) -> None:
    property_id, b = make_building(api)
    elec = add_meter(api, b, "electricity")
    data = submit(api, b, elec, bills(LAST_YEAR_MONTHS, 5000))
    updated = events(service, "benchmark.updated")
    assert len(updated) == 1, "one recalculation per batch"
    assert updated[0]["building_id"] == b
    assert updated[0]["reporting_period"] == {"start": "2025-11-01", "end": "2026-10-31"}
    assert updated[0]["eui_kwh_m2"] == 60.0 and updated[0]["data_quality_grade"] == "A"
    # 60 kWh/m² x 0.177 = 10.62 kg/m², 14 % of the TM46 office benchmark (75.05) -> A.
    assert updated[0]["scores"]["eu_epc"] == "A"
    assert events(service, "data_quality.changed") == [
        {"building_id": b, "previous_grade": "F", "grade": "A"}
    ]
    building = api.get(f"/v1/properties/{property_id}/buildings/{b}").json()["data"]
    assert building["data_quality_grade"] == "A"

    # Delete March: a gap month -> coverage 334/365 and one incomplete month -> B.
    march = next(r for r in data["readings"] if r["start_date"] == "2026-03-01")
    r = api.delete(f"/v1/buildings/{b}/meters/{elec}/readings/{march['id']}")
    assert r.status_code == 204
    result = benchmarks(api, b)
    assert result["data_quality_grade"] == "B"
    assert by_standard(result)["energy_rating"]["eligible"] is False
    # Annualised over covered days: 55,000 kWh x 365 / 334.
    assert result["eui_kwh_m2"] == round(55_000 * 365 / 334 / 1000, 2)
    assert events(service, "data_quality.changed")[-1] == {
        "building_id": b,
        "previous_grade": "A",
        "grade": "B",
    }

    # A single reading puts it back.
    r = api.post(
        f"/v1/buildings/{b}/meters/{elec}/readings",
        json={"start_date": "2026-03-01", "end_date": "2026-03-31", "consumption": 5000},
    )
    assert r.status_code == 201, r.text
    assert benchmarks(api, b)["data_quality_grade"] == "A"
    assert len(events(service, "benchmark.updated")) == 3
    assert events(service, "data_quality.changed")[-1]["grade"] == "A"


def test_a_new_month_moves_the_reporting_period(service: Service, api: httpx.Client) -> None:
    _, b = make_building(api)
    elec = add_meter(api, b, "electricity")
    submit(api, b, elec, bills(LAST_YEAR_MONTHS[:-1], 1000))
    assert benchmarks(api, b)["reporting_period"]["end"] == "2026-09-30"
    # A part-month reading does not end the period in a month nobody fully covers...
    submit(api, b, elec, [{"start_date": "2026-10-01", "end_date": "2026-10-10", "consumption": 1}])
    assert benchmarks(api, b)["reporting_period"]["end"] == "2026-09-30"
    submit(api, b, elec, [{"start_date": "2026-10-11", "end_date": "2026-10-31", "consumption": 1}])
    assert benchmarks(api, b)["reporting_period"] == {"start": "2025-11-01", "end": "2026-10-31"}


def test_svc_percentile_and_small_peer_groups(service: Service, api: httpx.Client) -> None:
    buildings = []
    for i, monthly in enumerate([1000, 2000, 3000, 4000]):
        _, b = make_building(api, name=f"B{i}")
        submit(api, b, add_meter(api, b, "electricity"), bills(LAST_YEAR_MONTHS, monthly))
        buildings.append(b)
    svc = by_standard(benchmarks(api, buildings[0]))["svc"]
    assert (svc["score"], svc["percentile"], svc["peer_count"]) == (None, None, 4)

    _, fifth = make_building(api, name="B4")
    submit(api, fifth, add_meter(api, fifth, "electricity"), bills(LAST_YEAR_MONTHS, 2500))
    # EUIs 12, 24, 36, 48 and 30: the fifth sits above two of the other four.
    svc = by_standard(benchmarks(api, fifth))["svc"]
    assert svc == {**svc, "score": 50, "percentile": 50.0, "peer_count": 5}
    best = by_standard(benchmarks(api, buildings[0]))["svc"]
    assert (best["score"], best["percentile"]) == (100, 0.0)
    worst = by_standard(benchmarks(api, buildings[3]))["svc"]
    assert (worst["score"], worst["percentile"]) == (1, 100.0)
    # Another country is another peer group.
    _, de = make_building(api, country="DE", name="Berlin")
    submit(api, de, add_meter(api, de, "electricity"), bills(LAST_YEAR_MONTHS, 1000))
    svc = by_standard(benchmarks(api, de))["svc"]
    assert (svc["peer_group"], svc["peer_count"], svc["score"]) == ("office:DE", 1, None)


def test_history(service: Service, api: httpx.Client) -> None:
    _, b = make_building(api)
    elec = add_meter(api, b, "electricity")
    earlier = [(2024, m) for m in (11, 12)] + [(2025, m) for m in range(1, 11)]
    submit(api, b, elec, bills(earlier, 20_000))
    submit(api, b, elec, bills(LAST_YEAR_MONTHS, 10_000))
    r = api.get(f"/v1/buildings/{b}/benchmarks/history")
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["building_id"] == b
    history = data["history"]
    assert [h["period"] for h in history] == [
        {"start": "2025-11-01", "end": "2026-10-31"},
        {"start": "2024-11-01", "end": "2025-10-31"},
    ]
    assert [h["eui_kwh_m2"] for h in history] == [120.0, 240.0]
    current = by_standard(benchmarks(api, b))
    assert history[0]["energy_rating_score"] == current["energy_rating"]["score"]
    assert history[0]["svc_score"] is None  # a peer group of one
    assert history[1]["energy_rating_score"] < history[0]["energy_rating_score"]

    one = api.get(f"/v1/buildings/{b}/benchmarks/history", params={"periods": 1})
    assert len(one.json()["data"]["history"]) == 1
    only = api.get(
        f"/v1/buildings/{b}/benchmarks/history", params={"standard": "svc", "periods": 20}
    )
    assert all(h["energy_rating_score"] is None for h in only.json()["data"]["history"])
    for bad in ({"periods": 21}, {"periods": 0}, {"standard": "nope"}, {"periods": "x"}):
        r = api.get(f"/v1/buildings/{b}/benchmarks/history", params=bad)
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["error"]["code"] == "validation_error"


def test_portfolio(service: Service, api: httpx.Client) -> None:
    empty = api.get("/v1/benchmarks/portfolio").json()["data"]
    assert empty == {
        "building_count": 0,
        "total_gfa_m2": 0,
        "weighted_eui_kwh_m2": None,
        "weighted_carbon_intensity_kgco2e_m2": None,
        "weighted_svc_score": None,
        "grade_distribution": dict.fromkeys("ABCDEF", 0),
    }
    _, a = make_building(api, gfa_m2=1000, name="A")
    submit(api, a, add_meter(api, a, "electricity"), bills(LAST_YEAR_MONTHS, 1000))
    _, b = make_building(api, gfa_m2=3000, name="B")
    submit(api, b, add_meter(api, b, "electricity"), bills(LAST_YEAR_MONTHS[6:], 1000))
    make_building(api, gfa_m2=500, name="C", country="FR", use_type="retail")
    archived_property, d = make_building(api, gfa_m2=700, name="D")
    submit(api, d, add_meter(api, d, "electricity"), bills(LAST_YEAR_MONTHS, 1000))
    assert api.post(f"/v1/properties/{archived_property}/archive").status_code == 200

    data = api.get("/v1/benchmarks/portfolio").json()["data"]
    assert data["building_count"] == 3 and data["total_gfa_m2"] == 4500
    # A: 12,000 kWh / 1000 m²; B: May-October (184 days) annualised, over 3000 m².
    site = 12_000 + 6000 * 365 / 184
    assert data["weighted_eui_kwh_m2"] == round(site / 4000, 2)
    assert data["weighted_carbon_intensity_kgco2e_m2"] == round(site * 0.177 / 4000, 2)
    assert data["weighted_svc_score"] is None
    grades = data["grade_distribution"]
    assert grades["A"] == 1 and grades["F"] == 1 and sum(grades.values()) == 3

    def portfolio(**params: str) -> dict:
        r = api.get("/v1/benchmarks/portfolio", params=params)
        assert r.status_code == 200, r.text
        return r.json()["data"]

    assert portfolio(**{"filter[type]": "retail"})["building_count"] == 1
    assert portfolio(**{"filter[country]": "fr"})["total_gfa_m2"] == 500
    assert portfolio(**{"filter[data_quality_grade]": "A"})["building_count"] == 1
    assert portfolio(**{"filter[data_quality_grade]": "E"})["building_count"] == 2
    assert portfolio(**{"filter[data_quality_grade]": "F"})["building_count"] == 3
    for bad in (
        {"filter[type]": "castle"},
        {"filter[country]": "UK"},
        {"filter[data_quality_grade]": "G"},
    ):
        r = api.get("/v1/benchmarks/portfolio", params=bad)
        assert r.status_code == 422, (bad, r.text)

    # Live and sandbox are separate data spaces.
    with service.client(service.live_key) as live:
        assert live.get("/v1/benchmarks/portfolio").json()["data"]["building_count"] == 0


def test_eu_epc_by_country(service: Service, api: httpx.Client) -> None:
    _, fr = make_building(api, country="FR", name="Paris")
    submit(api, fr, add_meter(api, fr, "electricity"), bills(LAST_YEAR_MONTHS, 5000))
    # FR: 60 kWh/m² site; Cep = 60 x 2.3 (electricity in 2026: 1.9) -> 114 -> C; EGES 3.84 -> A.
    epc = by_standard(benchmarks(api, fr))["eu_epc"]
    assert (epc["grade"], epc["country_methodology"]) == ("C", "FR")
    _, de = make_building(api, country="DE", name="Berlin")
    submit(api, de, add_meter(api, de, "natural_gas"), bills(LAST_YEAR_MONTHS, 2500))
    # DE: 30 kWh/m² final energy -> A+ (<= 30).
    assert by_standard(benchmarks(api, de))["eu_epc"]["grade"] == "A+"


def test_access(service: Service, api: httpx.Client) -> None:
    _, b = make_building(api)
    other = service.bootstrap(org_name="Other")
    with service.client(other["test_key"]) as stranger:
        r = stranger.get(f"/v1/buildings/{b}/benchmarks")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert stranger.get(f"/v1/buildings/{b}/benchmarks/history").status_code == 404
    with service.client(service.new_key(["properties:read"])) as narrow:
        r = narrow.get(f"/v1/buildings/{b}/benchmarks")
        assert r.status_code == 403 and r.json()["error"]["code"] == "insufficient_scope"
        assert narrow.get("/v1/benchmarks/portfolio").status_code == 403
    etag = api.get(f"/v1/buildings/{b}/benchmarks").headers["ETag"]
    r = api.get(f"/v1/buildings/{b}/benchmarks", headers={"If-None-Match": etag})
    assert r.status_code == 304
