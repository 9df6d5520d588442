"""Report documents built from plain dicts (reporting/content/ is pure): what every compliance and
certificate document states, refusals for the wrong period or place, no internal tags, and the
portfolio summary's per-row periods and US-only rating total."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from bpservice.domain.compliance import ComplianceError
from bpservice.reporting.content.berdo import compliance_berdo
from bpservice.reporting.content.blocks import meter_labels, months_text
from bpservice.reporting.content.certificate import benchmark_certificate
from bpservice.reporting.content.custom import custom
from bpservice.reporting.content.ll97 import compliance_ll97
from bpservice.reporting.content.portfolio import portfolio_summary
from bpservice.reporting.document import Document, Facts, Note, Table, fact_text
from bpservice.reporting.pdf import render_pdf

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)
ORG = {"id": "org_1", "name": "Demo"}
FULL_YEAR = {"start": dt.date(2025, 1, 1), "end": dt.date(2025, 12, 31)}


def report(kind: str, period: dict[str, dt.date] = FULL_YEAR) -> dict[str, Any]:
    return {"id": "rpt_1", "type": kind, "format": "pdf", "period": period, "generated_at": NOW}


def meter(
    name: str | None, months: int, days: int, meter_id: str = "mtr_1", kind: str = "electricity"
) -> dict[str, Any]:
    """A meter of 2025 with readings for its first `months` months (`days` days)."""
    with_readings = [f"2025-{m:02d}" for m in range(1, months + 1)]
    return {
        "meter_id": meter_id,
        "meter_name": name,
        "meter_type": kind,
        "complete_months": months,
        "estimated_months": 12 - months,
        "months_with_readings": with_readings,
        "full_months": with_readings,
        "covered_days": days,
        "period_days": 365,
        "readings": months,
        "flagged_readings": 0,
    }


def coverage(estimated: int = 0, meters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "period": {"start": "2025-01-01", "end": "2025-12-31"},
        "months": 12,
        "meters": meters or [meter("Main supply", 12 - estimated, 365 - 30 * estimated)],
    }


def entry(
    *,
    city: str,
    state: str | None,
    country: str = "US",
    gfa: float = 3000,
    use: str = "office",
    kwh: float = 1_000_000,
    estimated: int = 0,
    bench: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "building": {
            "id": "bld_1",
            "name": "Tower",
            "primary_use_type": use,
            "use_types": [],
            "gfa_m2": gfa,
            "year_built": 1990,
            "floors": 10,
            "data_quality_grade": "A",
        },
        "property": {
            "id": "prp_1",
            "name": "Plaza",
            "type": use,
            "street": "1 Main St",
            "city": city,
            "state": state,
            "postal_code": None,
            "country": country,
        },
        "benchmark": bench,
        "energy_kwh": {"electricity": kwh},
        "coverage": coverage(estimated),
        "water_m3": None,
    }


def text_of(doc: Document) -> str:
    parts = [doc.title, doc.subtitle, *(f"{k} {v}" for k, v in doc.meta), *doc.sources]
    for s in doc.sections:
        if isinstance(s, Facts):
            parts += [s.title, *(f"{k} {fact_text(v)}" for k, v in s.items)]
        elif isinstance(s, Note):
            parts += [s.title or "", s.text]
        elif isinstance(s, Table):
            parts += [s.title, s.note or ""]
            parts += [str(v) for row in s.rows for v in row.values()]
    return "\n".join(parts)


INTERNAL = ("[verified]", "[secondary", "shared/", "benchmark-figures", "uk_dec", "office:GB")


def assert_honest(text: str) -> None:
    for tag in INTERNAL:
        assert tag not in text, tag
    assert "Assessment period used" in text and "Requested period" in text
    assert "Data coverage" in text and "Method" in text
    assert "not a filing" in text or "not an ENERGY STAR certification" in text
    assert "No deductions" in text or "no deductions" in text


def test_ll97_document_states_period_coverage_method_and_disclaimer() -> None:
    doc = compliance_ll97(
        report("compliance_ll97"), ORG, entry(city="New York", state="NY", estimated=2)
    )
    text = text_of(doc)
    assert_honest(text)
    assert "calendar year 2025" in text and "103-14" in text
    assert "Estimated from part of the year" in text
    assert "Main supply (electricity): readings in 10 of 12 months" in text
    assert "Option for 2025: limits by occupancy group" in text
    assert "Coverage rule" in text and "25,000" in text
    render_pdf(doc)  # renders


def test_berdo_document_states_rps_and_phase_in() -> None:
    doc = compliance_berdo(
        report("compliance_berdo"), ORG, entry(city="Boston", state="MA", gfa=2500)
    )
    text = text_of(doc)
    assert_honest(text)
    assert "R = 27%" in text and "E = 249" in text
    assert "Standards not yet in force" in text  # 26,910 ft² before 2030


def test_small_boston_residential_building_is_assessed_with_a_caveat() -> None:
    doc = compliance_berdo(
        report("compliance_berdo"),
        ORG,
        entry(city="Boston", state="MA", gfa=1200, use="residential"),
    )
    assert "15 or more residential units" in text_of(doc)


@pytest.mark.parametrize(
    ("kind", "place", "period", "code"),
    [
        ("compliance_ll97", ("London", None, "GB"), FULL_YEAR, "not_applicable"),
        ("compliance_berdo", ("London", None, "GB"), FULL_YEAR, "not_applicable"),
        ("compliance_ll97", ("Boston", "MA", "US"), FULL_YEAR, "not_applicable"),
        (
            "compliance_ll97",
            ("New York", "NY", "US"),
            {"start": dt.date(2025, 1, 1), "end": dt.date(2025, 6, 30)},
            "calendar_year_required",
        ),
    ],
)
def test_no_verdict_for_the_wrong_place_or_period(
    kind: str, place: tuple[str, str | None, str], period: dict[str, dt.date], code: str
) -> None:
    city, state, country = place
    build = compliance_ll97 if kind == "compliance_ll97" else compliance_berdo
    with pytest.raises(ComplianceError) as info:
        build(report(kind, period), ORG, entry(city=city, state=state, country=country))
    assert info.value.code == code


def _bench(period: dict[str, str], rating: int | None, country: str) -> dict[str, Any]:
    return {
        "reporting_period": period,
        "data_quality_grade": "A",
        "eui_kwh_m2": 150.0,
        "carbon_intensity_kgco2e_m2": 30.0,
        "source_eui_kwh_m2": 300.0,
        "scores": [
            {
                "standard": "svc",
                "score": None,
                "percentile": None,
                "peer_group": f"office:{country}",
                "peer_count": 2,
            },
            {
                "standard": "energy_rating",
                "score": rating,
                "eligible": True,
                "certification_eligible": False,
                "indicative": True,
                "indicative_reason": "outside the US: indicative only",
            },
            {
                "standard": "decarbonisation_pathway",
                "stranding_year_1_5c": 2030,
                "stranding_year_2c": 2036,
                "current_intensity_kgco2e_m2": 30.0,
                "target_intensity_kgco2e_m2": 29.76,
                "pathway": "crrem-v2.05-1.5c-gb-office",
            },
            {
                "standard": "regional_rating",
                "applicable": True,
                "scheme": "uk_dec",
                "score": 45,
                "grade": "B",
            },
        ],
    }


def test_certificate_says_when_the_period_used_is_not_the_one_requested() -> None:
    used = {"start": "2025-07-01", "end": "2026-06-30"}
    e = entry(city="London", state=None, country="GB", bench=_bench(used, 60, "GB"))
    doc = benchmark_certificate(report("benchmark_certificate"), ORG, e, [])
    text = text_of(doc)
    assert_honest(text)
    assert "not for the requested period 2025-01-01 to 2025-12-31" in text
    assert "Source energy use intensity 300.0 kWh/m²/yr" in text
    assert "indicative: outside the US" in text
    assert "CRREM v2.05 1.5 °C pathway, GB office" in text
    assert "UK Display Energy Certificate operational rating" in text
    assert "office buildings in GB" in text
    same = entry(
        city="London",
        state=None,
        country="GB",
        bench=_bench({"start": "2025-01-01", "end": "2025-12-31"}, 60, "GB"),
    )
    doc = benchmark_certificate(report("benchmark_certificate"), ORG, same, [])
    assert "not for the requested period" not in text_of(doc)


def test_portfolio_rows_carry_their_period_and_the_rating_total_is_us_only() -> None:
    gb = entry(city="London", state=None, country="GB", gfa=1000)
    gb["benchmark"] = _bench({"start": "2025-01-01", "end": "2025-12-31"}, 90, "GB")
    us = entry(city="New York", state="NY", gfa=1000)
    us["building"] = {**us["building"], "id": "bld_2", "name": "US tower"}
    us["property"] = {**us["property"], "id": "prp_2", "name": "US plaza"}
    us["benchmark"] = _bench({"start": "2024-07-01", "end": "2025-06-30"}, 40, "US")
    doc = portfolio_summary(report("portfolio_summary"), ORG, [gb, us], None)
    table = doc.tables()[0]
    assert "assessment_period" in [c.key for c in table.columns]
    periods = {r["building_name"]: r["assessment_period"] for r in table.rows}
    assert periods == {"Tower": "2025-01 to 2025-12", "US tower": "2024-07 to 2025-06"}
    assert table.totals is not None and table.totals["energy_rating_score"] == 40
    text = text_of(doc)
    assert "UK DESNZ conversion factors 2025" in text and "LL97" in text


def test_a_portfolio_summary_without_any_energy_data_says_so_first() -> None:
    """Buildings, but no readings in the requested period: the document opens by saying so
    (a table of dashes must not read as results); with data, no such note."""
    empty = entry(city="London", state=None, country="GB")  # no benchmark: no data
    doc = portfolio_summary(report("portfolio_summary"), ORG, [empty], None)
    first = doc.sections[0]
    assert isinstance(first, Note) and first.title == "No energy data for this period"
    assert "None of the 1 buildings has energy data" in first.text and "2025" in first.text
    assert doc.data["buildings_with_energy_data"] == 0
    with_data = entry(city="London", state=None, country="GB")
    with_data["benchmark"] = _bench({"start": "2025-01-01", "end": "2025-12-31"}, 90, "GB")
    doc = portfolio_summary(report("portfolio_summary"), ORG, [with_data], None)
    assert "No energy data" not in text_of(doc) and doc.data["buildings_with_energy_data"] == 1


def test_coverage_names_each_meter_and_the_months_it_has_readings_for() -> None:
    """Issue item 2: two electricity meters printed as 'electricity 1 of 12 months; electricity
    1 of 12 months'. Each meter is named, with the months of the period that have readings,
    and the document says plainly that the figures are estimated from part of the year."""
    e = entry(city="New York", state="NY")
    e["coverage"] = coverage(
        meters=[
            meter("Main supply", 11, 334, "mtr_a"),
            meter("Car park", 11, 334, "mtr_b"),
            meter(None, 3, 90, "mtr_c", "natural_gas"),
        ]
    )
    doc = compliance_ll97(report("compliance_ll97"), ORG, e)
    text = text_of(doc)
    assert "electricity 1 of 12 months" not in text
    assert (
        "Main supply (electricity): readings in 11 of 12 months (January to November 2025)" in text
    )
    assert "Car park (electricity): readings in 11 of 12 months" in text
    assert "Natural gas meter mtr_c: readings in 3 of 12 months (January to March 2025)" in text
    assert "estimated from part of the year" in text
    table = next(t for t in doc.tables() if t.name == "Coverage")
    assert [r["meter"] for r in table.rows] == [
        "Main supply (electricity)",
        "Car park (electricity)",
        "Natural gas meter mtr_c",
    ]
    assert table.rows[0]["months"] == "January to November 2025"
    # Two meters sharing a name carry their ids.
    assert meter_labels([meter("M", 1, 31, "mtr_1"), meter("M", 1, 31, "mtr_2")]) == [
        "M (electricity) mtr_1",
        "M (electricity) mtr_2",
    ]
    assert months_text(["2025-01", "2025-02", "2025-05", "2024-12"]) == (
        "December 2024 to February 2025, May 2025"
    )


def test_a_part_year_ll97_report_says_it_is_annualised_and_how() -> None:
    """Issue item 3: a calendar-year LL97 report for a building with readings for January-June
    only is scaled to a full year (the issue's 544.14 t) without saying so. The result states
    'annualised', the method and the months covered."""
    e = entry(city="New York", state="NY", kwh=1_883_149)
    e["coverage"] = coverage(meters=[meter("Main supply", 6, 181)])
    doc = compliance_ll97(report("compliance_ll97"), ORG, e)
    result = doc.sections[0]
    assert isinstance(result, Facts)
    assert "Annual emissions (annualised from part of the year)" in dict(result.items)
    basis = dict(result.items)["Basis"]
    assert basis == (
        "Annualised from part of the year (Main supply (electricity): readings in 6 of 12 "
        "months (January to June 2025), 181 of 365 days): each meter's recorded energy x days "
        "in the year / its days with readings. An estimate, not the metered total."
    )
    assert doc.data["annualised"] is True
    full = compliance_ll97(report("compliance_ll97"), ORG, entry(city="New York", state="NY"))
    assert dict(full.sections[0].items)["Basis"].startswith("Metered")  # type: ignore[union-attr]
    assert full.data["annualised"] is False


def test_a_portfolio_summary_for_a_year_without_data_borrows_no_other_year() -> None:
    """Issue item 4: a portfolio summary for 2023, a year with no data, printed the EUIs of
    2024 under the 2023 dates. Now it says there is no data for 2023 and shows the 2024 figures
    only in their own table, with their own dates, outside the totals."""
    asked = {"start": dt.date(2023, 1, 1), "end": dt.date(2023, 12, 31)}
    later = entry(city="London", state=None, country="GB")
    later["benchmark"] = _bench({"start": "2024-01-01", "end": "2024-12-31"}, 90, "GB")
    doc = portfolio_summary(report("portfolio_summary", asked), ORG, [later], None)
    first = doc.sections[0]
    assert isinstance(first, Note) and first.title == "No energy data for this period"
    assert "None of the 1 buildings has energy data for the requested period" in first.text
    assert "2023-01-01 to 2023-12-31" in first.text and "other dates" in first.text
    buildings, other = doc.tables()
    assert buildings.rows[0]["eui_kwh_m2"] is None
    assert buildings.rows[0]["assessment_period"] == "no data in requested period"
    assert buildings.totals is not None and buildings.totals["eui_kwh_m2"] is None
    assert other.name == "Other periods"
    assert other.rows == [
        {
            "property_name": "Plaza",
            "building_name": "Tower",
            "reporting_period_start": dt.date(2024, 1, 1),
            "reporting_period_end": dt.date(2024, 12, 31),
            "eui_kwh_m2": 150.0,
            "carbon_intensity_kgco2e_m2": 30.0,
            "annual_energy_kwh": 1_000_000,
            "annual_emissions_tco2e": 90.0,
        }
    ]
    facts = next(s for s in doc.sections if isinstance(s, Facts))
    assert "Area-weighted EUI" not in dict(facts.items)
    assert doc.data["buildings_with_energy_data"] == 0
    assert doc.data["buildings_with_data_for_other_periods_only"] == 1
    render_pdf(doc)  # the extra table renders
    # One building in the period, one not: only the first is in the figures and the totals.
    now = entry(city="London", state=None, country="GB", gfa=1000)
    now["building"] = {**now["building"], "id": "bld_2", "name": "Annex"}
    now["benchmark"] = _bench({"start": "2023-01-01", "end": "2023-12-31"}, 90, "GB")
    doc = portfolio_summary(report("portfolio_summary", asked), ORG, [later, now], None)
    note = doc.sections[0]
    assert isinstance(note, Note) and note.title == "Buildings without data for this period"
    assert "1 of the 2 buildings have no energy data" in note.text
    buildings = doc.tables()[0]
    assert buildings.totals is not None and buildings.totals["annual_energy_kwh"] == 1_000_000
    assert [r["building_name"] for r in doc.tables()[1].rows] == ["Tower"]


def test_a_custom_report_for_a_year_without_data_borrows_no_other_year() -> None:
    """Issue item 4, custom templates too: a 2023 custom report of a building whose data is for
    2024 leaves its figures blank and gives the 2024 dates in a note."""
    asked = {"start": dt.date(2023, 1, 1), "end": dt.date(2023, 12, 31)}
    later = entry(city="London", state=None, country="GB")
    later["benchmark"] = _bench({"start": "2024-01-01", "end": "2024-12-31"}, 90, "GB")
    template = {"id": "rtp_1", "name": "T", "columns": ["building_name", "eui_kwh_m2"]}
    doc = custom(report("custom", asked), ORG, template, [later])
    assert doc.tables()[0].rows == [{"building_name": "Tower", "eui_kwh_m2": None}]
    note = doc.sections[0]
    assert isinstance(note, Note) and "Tower (2024-01 to 2024-12)" in note.text
    assert doc.data["buildings_with_data_for_other_periods_only"] == 1
