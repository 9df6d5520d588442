"""Report content as pure functions: plain dicts in (gathered by gather.py from the benchmark engine),
a format-neutral Document out. Nothing here touches the database or the clock.

Shapes of the inputs:
- `report`: {id, type, format, period: {start, end} (dates), generated_at (datetime), filters?}
- `organisation`: {id, name}
- a building entry: {building: {id, name, primary_use_type, use_types, gfa_m2, year_built, floors,
  occupancy_pct, operating_hours_week}, property: {id, name, type, internal_ref, street, city,
  state, postal_code, country}, benchmark: the engine's building result (or None), energy_kwh:
  {meter type: annualised kWh}, water_m3: float | None}
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from bpservice.domain import compliance, emissions
from bpservice.domain.compliance import SQFT_PER_M2, BerdoResult, LL97Result
from bpservice.reporting.catalogue import TEMPLATE_COLUMNS
from bpservice.reporting.document import (
    DASH,
    Amount,
    Column,
    Document,
    Facts,
    FactValue,
    Note,
    Section,
    Table,
    Value,
    number,
)

Entry = Mapping[str, Any]

TYPE_TITLES = {
    "benchmark_certificate": "Building Performance Certificate",
    "portfolio_summary": "Portfolio Summary",
    "compliance_esg": "ESG Disclosure: Energy, GHG and Water",
    "compliance_ll97": "NYC Local Law 97 Emissions Assessment",
    "compliance_berdo": "Boston BERDO 2.0 Emissions Assessment",
    "custom": "Custom Report",
}


class NoData(Exception):
    """The report has nothing to show (the worker marks it failed with code `no_data`)."""


# --- helpers -------------------------------------------------------------------------------------


def _date(value: Any) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _timestamp(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _period_text(period: Mapping[str, Any] | None) -> str:
    if not period:
        return DASH
    return f"{_date(period.get('start'))} to {_date(period.get('end'))}"


def score_of(benchmark: Mapping[str, Any] | None, standard: str) -> Mapping[str, Any] | None:
    for score in (benchmark or {}).get("scores") or []:
        if score.get("standard") == standard:
            return score
    return None


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _meta(report: Entry, organisation: Entry) -> list[tuple[str, str]]:
    return [
        ("Report", str(report["id"])),
        ("Organisation", str(organisation.get("name") or organisation.get("id"))),
        ("Requested period", _period_text(report["period"])),
        ("Generated", _timestamp(report["generated_at"])),
    ]


def _address(prop: Entry) -> str:
    parts = [prop.get("street"), prop.get("city"), prop.get("state"), prop.get("postal_code")]
    return ", ".join(str(p) for p in parts if p) + f" ({prop.get('country')})"


def _json_meta(report: Entry, organisation: Entry, title: str) -> dict[str, Any]:
    period = report["period"]
    return {
        "report_id": report["id"],
        "report_type": report["type"],
        "title": title,
        "organisation": {"id": organisation.get("id"), "name": organisation.get("name")},
        "reporting_period": {
            "start": _date(period["start"]).isoformat(),  # type: ignore[union-attr]
            "end": _date(period["end"]).isoformat(),  # type: ignore[union-attr]
        },
        "filters": report.get("filters") or {},
        "generated_at": report["generated_at"]
        .astimezone(dt.UTC)
        .isoformat()
        .replace("+00:00", "Z"),
    }


def has_energy(entry: Entry) -> bool:
    return any(v for v in (entry.get("energy_kwh") or {}).values())


# --- one row per building (portfolio summary and custom templates) -------------------------------


def building_row(entry: Entry) -> dict[str, Value]:
    """Every template column for one building; missing figures are None (printed as a dash)."""
    b, p = entry["building"], entry["property"]
    bench = entry.get("benchmark") or {}
    energy = entry.get("energy_kwh") or {}
    gfa = float(b["gfa_m2"])
    eui = bench.get("eui_kwh_m2")
    carbon = bench.get("carbon_intensity_kgco2e_m2")
    water = entry.get("water_m3")
    svc = score_of(bench, "svc") or {}
    rating = score_of(bench, "energy_rating") or {}
    epc = score_of(bench, "eu_epc") or {}
    pathway = score_of(bench, "decarbonisation_pathway") or {}
    period = bench.get("reporting_period") or {}
    row: dict[str, Value] = {
        "property_id": p["id"],
        "property_name": p["name"],
        "property_type": p.get("type"),
        "internal_ref": p.get("internal_ref"),
        "city": p.get("city"),
        "country": p.get("country"),
        "building_id": b["id"],
        "building_name": b["name"],
        "primary_use_type": b["primary_use_type"],
        "gfa_m2": gfa,
        "gfa_sqft": round(gfa * SQFT_PER_M2, 2),
        "year_built": b.get("year_built"),
        "floors": b.get("floors"),
        "occupancy_pct": b.get("occupancy_pct"),
        "operating_hours_week": b.get("operating_hours_week"),
        "data_quality_grade": bench.get("data_quality_grade") or b.get("data_quality_grade"),
        "reporting_period_start": _date(period.get("start")),
        "reporting_period_end": _date(period.get("end")),
        "eui_kwh_m2": eui,
        "carbon_intensity_kgco2e_m2": carbon,
        "annual_energy_kwh": sum(energy.values()) if energy else None,
        "annual_emissions_tco2e": carbon * gfa / 1000 if carbon is not None else None,
        "annual_water_m3": water,
        "water_intensity_m3_m2": water / gfa if water is not None and gfa else None,
        "svc_score": svc.get("score"),
        "svc_percentile": svc.get("percentile"),
        "svc_peer_group": svc.get("peer_group"),
        "energy_rating_score": rating.get("score"),
        "eu_epc_grade": epc.get("grade"),
        "stranding_year_1_5c": pathway.get("stranding_year_1_5c"),
        "stranding_year_2c": pathway.get("stranding_year_2c"),
    }
    for key in TEMPLATE_COLUMNS:
        if key.endswith("_kwh") and key not in row:
            row[key] = energy.get(key.removesuffix("_kwh"))
    return row


def _sum(rows: Sequence[Mapping[str, Value]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return sum(values) if values else None


def _weighted(
    rows: Sequence[Mapping[str, Value]], key: str, weight: str = "gfa_m2"
) -> float | None:
    """Area-weighted mean of `key` over the rows that have it."""
    pairs = [
        (float(r[key]), float(r[weight]))  # type: ignore[arg-type]
        for r in rows
        if isinstance(r.get(key), int | float) and isinstance(r.get(weight), int | float)
    ]
    area = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / area if area else None


def _filters_text(filters: Mapping[str, Any] | None) -> str:
    parts = [f"{k} = {v}" for k, v in (filters or {}).items() if v]
    return ", ".join(parts) if parts else "all buildings"


# --- benchmark certificate -----------------------------------------------------------------------


def _out_of_100(value: Any) -> str:
    return "Not scored" if value is None else f"{value} / 100"


def _score_line(score: Mapping[str, Any]) -> tuple[str, str, str]:
    standard = str(score.get("standard"))
    if standard == "svc":
        peers = (
            f"{score.get('peer_count')} peer building(s): {_peer_label(score.get('peer_group'))}"
        )
        if score.get("score") is None:
            return ("svc benchmark", "Not scored", f"too few peers to score: {peers}")
        return (
            "svc benchmark",
            _out_of_100(score["score"]),
            f"percentile {score.get('percentile')}; {peers}",
        )
    if standard == "energy_rating":
        if score.get("score") is None:
            return ("Energy rating", "Not scored", "not eligible for a rating")
        if score.get("indicative"):
            detail = f"indicative: {score.get('indicative_reason')}"
        else:
            eligible = "eligible" if score.get("certification_eligible") else "not eligible"
            detail = f"certification {eligible}"
        median = score.get("median_source_eui_kwh_m2")
        if median is not None:
            # Where 50 lies for this building, so nobody reads the national table's median as
            # the score's (issue: an office at the table's office median scored 66).
            detail += (
                f"; scores 50 at a source EUI of {number(median, 1)} kWh/m²/yr "
                f"({number(median / _KWH_M2_PER_KBTU_FT2, 1)} kBtu/ft²), the median of the "
                "score's own reference for this building"
            )
        return ("Energy rating", _out_of_100(score["score"]), detail)
    if standard == "eu_epc":
        return (
            "EU energy performance certificate",
            f"Grade {score.get('grade')}",
            f"{score.get('country_methodology')} methodology",
        )
    if standard == "decarbonisation_pathway":

        def year(value: Any) -> str:
            return "none by 2050" if value is None else str(value)

        current = score.get("current_intensity_kgco2e_m2")
        target = score.get("target_intensity_kgco2e_m2")
        return (
            "Decarbonisation pathway",
            f"Stranding {year(score.get('stranding_year_1_5c'))} (1.5 °C)",
            f"{year(score.get('stranding_year_2c'))} under 2 °C; current {current} vs target "
            f"{target} kgCO2e/m² ({_pathway_label(score.get('pathway'))})",
        )
    if standard == "regional_rating":
        if not score.get("applicable"):
            return ("Regional rating", "Not applicable", str(score.get("reason") or ""))
        value = score.get("score")
        grade = score.get("grade")
        result = (
            "Not rated" if value is None else f"{value}" + (f" (band {grade})" if grade else "")
        )
        return ("Regional rating", result, _SCHEME_LABELS.get(str(score.get("scheme")), ""))
    value = score.get("score", score.get("grade", ""))
    return (_label(standard), str(value), "")


_KWH_M2_PER_KBTU_FT2 = 3.15459  # 1 kBtu/ft² = 3.15459 kWh/m²

_SCHEME_LABELS = {
    "uk_dec": "UK Display Energy Certificate operational rating (CIBSE TM46 benchmark)",
}


def _peer_label(group: Any) -> str:
    """'office:GB' -> 'office buildings in GB' (the API's group id is not for documents)."""
    use, _, country = str(group or "").partition(":")
    return f"{_label(use).lower()} buildings in {country}" if country else str(group or "")


def _pathway_label(name: Any) -> str:
    """'crrem-v2.05-1.5c-gb-office' -> 'CRREM v2.05 1.5 °C pathway, GB office'; derived
    pathways say so."""
    parts = str(name or "").split("-")
    if len(parts) == 5 and parts[0] == "crrem":
        return f"CRREM {parts[1]} 1.5 °C pathway, {parts[3].upper()} {parts[4]}"
    if len(parts) >= 4 and parts[0] == "derived":
        use = " ".join(parts[3:]).replace("_", " ")
        return f"derived from the CRREM UK office 1.5 °C pathway for {parts[2].upper()} {use}"
    return str(name or "")


def _energy_table(energy: Mapping[str, float]) -> Table:
    total = sum(energy.values())
    rows: list[dict[str, Value]] = [
        {"source": _label(m), "kwh": kwh, "share": 100 * kwh / total if total else None}
        for m, kwh in sorted(energy.items(), key=lambda kv: -kv[1])
        if kwh
    ]
    return Table(
        "Energy",
        "Annual energy by source",
        [
            Column("source", "Source"),
            Column("kwh", "Energy", "number", 0, "kWh/yr"),
            Column("share", "Share", "percent", 1),
        ],
        rows,
        totals={"source": "Total", "kwh": total, "share": 100.0 if total else None},
    )


def _period_mismatch(requested: Entry, used: Entry | None) -> str | None:
    """A warning when the figures are not for the requested dates (a certificate always shows the
    building's latest 12 months with data, docs/decisions.md CS9)."""
    if not used or not used.get("start"):
        return None
    r0, r1 = _date(requested.get("start")), _date(requested.get("end"))
    u0, u1 = _date(used.get("start")), _date(used.get("end"))
    if (r0, r1) == (u0, u1):
        return None
    return (
        f"The figures below are for the building's latest 12 months with data, {u0} to {u1}, "
        f"not for the requested period {r0} to {r1}. No figures for the requested dates are "
        "shown."
    )


def certificate_method(country: Any, year: int | None) -> str:
    """What a benchmark certificate's figures rest on: the factor sets and methods, with years."""
    return (
        "Energy use intensity = annual site energy / gross floor area. Carbon intensity = energy "
        f"by carrier x emission factors for {country}"
        + (f" (factor sets for reporting year {year})" if year else "")
        + f": {emissions.factor_set_text(country, year)}. "
        "Source energy = site energy x ENERGY STAR source-site ratios (US ratios; Canadian for "
        "CA). Energy rating: offices use EPA's ENERGY STAR office model (Technical Reference, "
        "August 2018: regression of source EUI on floor area, weekly hours, workers and "
        "computers per 1,000 ft² and percent cooled x ln CDD, gamma shape 4.016, scale 0.2328), "
        "with EPA's reference means for the details the service does not hold; an office scores "
        "50 at EPA's prediction for it x 0.8586, the median ratio of the model's reference "
        "(CBECS 2012 offices), not at the national median table's office figure (116.4 "
        "kBtu/ft², the median of all US offices, unadjusted for size or use); other use types "
        "use the ratio to a national median source EUI on a gamma curve of shape 6. A rating is "
        "indicative whenever a detail was assumed, the median is unconfirmed or the building is "
        "outside the US, and certification eligibility is then never claimed. svc score: the "
        "building's percentile among the service's own peers of the same use type and country."
    )


def benchmark_certificate(
    report: Entry, organisation: Entry, entry: Entry, history: Sequence[Entry]
) -> Document:
    bench = entry.get("benchmark") or {}
    if bench.get("eui_kwh_m2") is None or not has_energy(entry):
        raise NoData("The building has no energy data for the reporting period.")
    b, p = entry["building"], entry["property"]
    row = building_row(entry)
    meta = [
        ("Certificate no.", str(report["id"])),
        ("Organisation", str(organisation.get("name"))),
        ("Requested period", _period_text(report["period"])),
        ("Assessment period used", _period_text(bench.get("reporting_period"))),
        ("Issued", _timestamp(report["generated_at"])),
    ]
    headline = Facts(
        "Performance",
        [
            ("Energy use intensity", f"{number(bench['eui_kwh_m2'], 1)} kWh/m²/yr"),
            (
                "Carbon intensity",
                f"{number(bench.get('carbon_intensity_kgco2e_m2') or 0, 1)} kgCO2e/m²/yr",
            ),
            (
                "Source energy use intensity",
                f"{number(bench['source_eui_kwh_m2'], 1)} kWh/m²/yr"
                if bench.get("source_eui_kwh_m2") is not None
                else DASH,
            ),
            ("Data quality grade", str(bench.get("data_quality_grade"))),
            ("Annual energy", f"{number(row['annual_energy_kwh'] or 0)} kWh"),  # type: ignore[arg-type]
            (
                "Annual emissions",
                f"{number(row['annual_emissions_tco2e'] or 0, 1)} tCO2e",  # type: ignore[arg-type]
            ),
        ],
        emphasis=True,
    )
    building = Facts(
        "Building",
        [
            ("Property", f"{p['name']}, {_address(p)}"),
            ("Primary use", _label(b["primary_use_type"])),
            ("Gross floor area", f"{number(b['gfa_m2'])} m² ({number(row['gfa_sqft'] or 0)} ft²)"),  # type: ignore[arg-type]
            ("Year built / floors", f"{b.get('year_built')} / {b.get('floors')}"),
        ],
    )
    scores = [_score_line(s) for s in bench.get("scores") or []]
    score_table = Table(
        "Scores",
        "Scores by standard",
        [Column("standard", "Standard"), Column("result", "Result"), Column("detail", "Detail")],
        [{"standard": s, "result": r, "detail": d} for s, r, d in scores],
    )
    sections: list[Facts | Table | Note] = []
    mismatch = _period_mismatch(report["period"], bench.get("reporting_period"))
    if mismatch:
        sections.append(Note("Assessment period", mismatch, warning=True))
    sections += [headline, building, score_table]
    sections.append(_energy_table(entry.get("energy_kwh") or {}))
    sections.append(coverage_section(entry.get("coverage"), bench.get("data_quality_grade")))
    if history:
        sections.append(
            Table(
                "History",
                "History by reporting period (newest first)",
                [
                    Column("period", "Period"),
                    Column("eui", "EUI", "number", 1, "kWh/m²"),
                    Column("svc", "svc score", "integer"),
                    Column("rating", "Energy rating", "integer"),
                ],
                [
                    {
                        "period": _period_text(h.get("period")),
                        "eui": h.get("eui_kwh_m2"),
                        "svc": h.get("svc_score"),
                        "rating": h.get("energy_rating_score"),
                    }
                    for h in history
                ],
            )
        )
    used = bench.get("reporting_period") or {}
    year = (
        emissions.reporting_year(_date(used["start"]), _date(used["end"]))  # type: ignore[arg-type]
        if used.get("start") and used.get("end")
        else None
    )
    sections.append(Note("Method and factors", certificate_method(p.get("country"), year)))
    sections.append(
        Note(
            "Important",
            "An estimate prepared from the meter readings held by the service over the assessment "
            "period shown; scores are the service's benchmark results at the time of issue. It is "
            "not an ENERGY STAR certification, a Display Energy Certificate or an energy "
            "performance certificate lodged by an accredited assessor, and no deductions, "
            "renewable energy credits or adjustments have been applied.",
        )
    )
    return Document(
        TYPE_TITLES["benchmark_certificate"],
        f"{b['name']} · {p['name']}",
        meta,
        sections,
        data=_json_meta(report, organisation, TYPE_TITLES["benchmark_certificate"]),
    )


# --- portfolio summary ---------------------------------------------------------------------------

_PORTFOLIO_COLUMNS = [
    "property_name",
    "building_name",
    "country",
    "primary_use_type",
    "gfa_m2",
    "data_quality_grade",
    "eui_kwh_m2",
    "carbon_intensity_kgco2e_m2",
    "annual_energy_kwh",
    "annual_emissions_tco2e",
    "svc_score",
    "energy_rating_score",
]


def _require_entries(entries: Sequence[Entry], filters: Mapping[str, Any] | None) -> None:
    if not entries:
        raise NoData(f"No active building matches the filters ({_filters_text(filters)}).")


def portfolio_totals(rows: Sequence[Mapping[str, Value]]) -> dict[str, Value]:
    """The totals row: sums of quantities, area-weighted means of intensities and scores."""
    svc = _weighted(rows, "svc_score")
    # The energy rating is a US model: its average is over US buildings only (CS11).
    rating = _weighted([r for r in rows if r.get("country") == "US"], "energy_rating_score")
    return {
        "property_name": "Total",
        "building_name": f"{len(rows)} buildings",
        "gfa_m2": _sum(rows, "gfa_m2"),
        "eui_kwh_m2": _weighted(rows, "eui_kwh_m2"),
        "carbon_intensity_kgco2e_m2": _weighted(rows, "carbon_intensity_kgco2e_m2"),
        "annual_energy_kwh": _sum(rows, "annual_energy_kwh"),
        "annual_emissions_tco2e": _sum(rows, "annual_emissions_tco2e"),
        "svc_score": round(svc) if svc is not None else None,
        "energy_rating_score": round(rating) if rating is not None else None,
    }


def portfolio_summary(
    report: Entry, organisation: Entry, entries: Sequence[Entry], portfolio: Entry | None
) -> Document:
    filters = report.get("filters")
    _require_entries(entries, filters)
    ordered = sorted_entries(entries)
    rows = [building_row(e) for e in ordered]
    elsewhere: list[dict[str, Value]] = []  # latest figures of buildings with none in the period
    for row, entry in zip(rows, ordered, strict=True):
        period = (entry.get("benchmark") or {}).get("reporting_period")
        row["assessment_period"] = _months_text(period)
        if row["eui_kwh_m2"] is not None and not _overlaps(period, report["period"]):
            # Figures of other dates never stand under the requested dates (issue: a 2023
            # summary printed 2024's EUIs): they move to their own table with their own dates.
            elsewhere.append({k: row.get(k) for k in _OTHER_PERIOD_KEYS})
            for key in _PERIOD_FIGURES:
                row[key] = None
            row["assessment_period"] = "no data in requested period"
    columns = [TEMPLATE_COLUMNS[k].column for k in _PORTFOLIO_COLUMNS]
    grade_at = _PORTFOLIO_COLUMNS.index("data_quality_grade") + 1
    columns.insert(grade_at, Column("assessment_period", "Assessment period"))
    totals = portfolio_totals(rows)
    with_data = sum(1 for r in rows if r["eui_kwh_m2"] is not None)
    facts: list[tuple[str, FactValue]] = [
        ("Buildings", f"{len(rows)} ({with_data} with energy data)"),
        ("Total floor area", Amount(float(totals["gfa_m2"] or 0), 0, "m²")),  # type: ignore[arg-type]
    ]
    if totals["eui_kwh_m2"] is not None:
        facts.append(("Area-weighted EUI", Amount(float(totals["eui_kwh_m2"]), 1, "kWh/m²/yr")))  # type: ignore[arg-type]
    if totals["carbon_intensity_kgco2e_m2"] is not None:
        facts.append(
            (
                "Area-weighted carbon intensity",
                Amount(float(totals["carbon_intensity_kgco2e_m2"]), 1, "kgCO2e/m²/yr"),  # type: ignore[arg-type]
            )
        )
    facts.append(
        ("Annual emissions", Amount(float(totals["annual_emissions_tco2e"] or 0), 1, "tCO2e"))  # type: ignore[arg-type]
    )
    if portfolio:
        # The engine's weighted svc covers every building's current period; with buildings left
        # out for having no data in the requested period, it is recomputed over the rows shown.
        svc = _weighted(rows, "svc_score") if elsewhere else portfolio.get("weighted_svc_score")
        if svc is not None:
            facts.append(("Weighted svc score", Amount(float(svc), 0)))
        grades = portfolio.get("grade_distribution") or {}
        if grades:
            facts.append(
                ("Data quality grades", " · ".join(f"{g} {grades.get(g, 0)}" for g in "ABCDEF"))
            )
    title = TYPE_TITLES["portfolio_summary"]
    # A table of dashes must not read as a report with results: say first that nothing was found.
    missing: list[Section] = []
    other_text = (
        f" The latest figures held for {len(elsewhere)} of them are for other dates: they are "
        "listed under 'Figures for other periods', each with its own dates, and are not in the "
        "totals."
        if elsewhere
        else ""
    )
    if not with_data:
        missing.append(
            Note(
                "No energy data for this period",
                f"None of the {len(rows)} buildings has energy data for the requested period "
                f"({_period_text(report['period'])}). They are listed below without figures."
                + other_text
                + " Import the readings for this period, or request a period that has them.",
                warning=True,
            )
        )
    elif elsewhere:
        missing.append(
            Note(
                "Buildings without data for this period",
                f"{len(elsewhere)} of the {len(rows)} buildings have no energy data for the "
                f"requested period ({_period_text(report['period'])}) and are listed without "
                "figures." + other_text,
                warning=True,
            )
        )
    extra: list[Section] = []
    if elsewhere:
        extra.append(
            Table(
                "Other periods",
                "Figures for other periods (not the requested period; not in the totals)",
                [
                    Column("property_name", "Property"),
                    Column("building_name", "Building"),
                    Column("reporting_period_start", "From", "date"),
                    Column("reporting_period_end", "To", "date"),
                    *[TEMPLATE_COLUMNS[k].column for k in _OTHER_PERIOD_KEYS[4:]],
                ],
                elsewhere,
                note="Each building's latest 12 months with data, which do not overlap the "
                "requested period.",
            )
        )
    data = _json_meta(report, organisation, title)
    data["buildings_with_energy_data"] = with_data
    data["buildings_with_data_for_other_periods_only"] = len(elsewhere)
    return Document(
        title,
        f"{organisation.get('name')} · {_filters_text(filters)}",
        _meta(report, organisation),
        [
            *missing,
            Facts("Portfolio", facts, emphasis=True),
            Table(
                "Buildings",
                "Buildings",
                columns,
                rows,
                totals=totals,
                note="Totals: sums of floor area, energy and emissions; EUI, carbon intensity and "
                "the svc score are floor-area-weighted means over the buildings that have them; "
                "the energy rating total is over US buildings only.",
            ),
            *extra,
            Note("Method and factors", portfolio_method(rows)),
        ],
        data=data,
    )


# Row figures that belong to a building's assessment period (blanked when that period is not the
# requested one), and the columns of the table that shows them with their own dates instead.
_PERIOD_FIGURES = (
    "eui_kwh_m2",
    "carbon_intensity_kgco2e_m2",
    "annual_energy_kwh",
    "annual_emissions_tco2e",
    "svc_score",
    "energy_rating_score",
)
_OTHER_PERIOD_KEYS = (
    "property_name",
    "building_name",
    "reporting_period_start",
    "reporting_period_end",
    "eui_kwh_m2",
    "carbon_intensity_kgco2e_m2",
    "annual_energy_kwh",
    "annual_emissions_tco2e",
)


# A custom template's columns that belong to the building's assessment period (with the
# per-meter-type energy columns).
_CUSTOM_PERIOD_FIGURES = (
    *_PERIOD_FIGURES,
    "svc_percentile",
    "eu_epc_grade",
    "stranding_year_1_5c",
    "stranding_year_2c",
)


def _overlaps(used: Mapping[str, Any] | None, requested: Mapping[str, Any]) -> bool:
    """Whether a building's assessment period shares at least one day with the requested one."""
    if not used or not used.get("start") or not used.get("end"):
        return False
    return not (
        _date(used["end"]) < _date(requested["start"])  # type: ignore[operator]
        or _date(used["start"]) > _date(requested["end"])  # type: ignore[operator]
    )


def sorted_entries(entries: Sequence[Entry]) -> list[Entry]:
    """Entries in the order of their rows: property name, building name, building id."""
    return sorted(
        entries,
        key=lambda e: (
            str(e["property"]["name"]),
            str(e["building"]["name"]),
            str(e["building"]["id"]),
        ),
    )


def _months_text(period: Mapping[str, Any] | None) -> str | None:
    if not period or not period.get("start"):
        return None
    start, end = _date(period["start"]), _date(period["end"])
    return f"{start:%Y-%m} to {end:%Y-%m}"


def portfolio_method(rows: Sequence[Mapping[str, Value]]) -> str:
    """The method and factor sets behind a portfolio summary, per country present."""
    countries = sorted({str(r["country"]) for r in rows if r.get("country")})
    sets = []
    for country in countries:
        years = sorted(
            {
                emissions.reporting_year(r["reporting_period_start"], r["reporting_period_end"])  # type: ignore[arg-type]
                for r in rows
                if r.get("country") == country and r.get("reporting_period_start")
            }
        )
        for year in years or [None]:
            label = f"{country} {year}" if year else country
            sets.append(f"{label}: {emissions.factor_set_text(country, year)}")
    return (
        "Each row is the building's latest 12 months with data (its assessment period, shown per "
        "row); energy in months without full readings is estimated by scaling. Carbon intensity "
        "uses location-based emission factors of the building's country, from the factor set of "
        "the reporting year (the calendar year holding most of the period): "
        + "; ".join(sets)
        + ". The energy rating is indicative: offices are scored with EPA's office model, other "
        "use types against US national medians (see each certificate); the svc score is a "
        "percentile among the service's own peers. "
        "These carbon figures differ from an LL97 or BERDO assessment of the same building, "
        "which uses the law's own coefficients (e.g. LL97 0.000288962 tCO2e/kWh for grid "
        "electricity, BERDO's yearly grid factor less the RPS share) over a calendar year."
    )


# --- ESG workbook --------------------------------------------------------------------------------

_HEAT = ("district_heating", "district_cooling", "steam")
# Fuels burnt on site (Scope 1); everything else is purchased energy (Scope 2). A CHP meter records
# the gas burnt in the on-site unit.
_SCOPE_1 = frozenset({"natural_gas", "fuel_oil", "diesel", "lpg", "chp"})
_FUELS = ("fuel_oil", "diesel", "lpg", "chp")


def _per_property(entries: Sequence[Entry]) -> list[tuple[Entry, list[Entry]]]:
    groups: dict[str, tuple[Entry, list[Entry]]] = {}
    for e in entries:
        prop = e["property"]
        groups.setdefault(prop["id"], (prop, []))[1].append(e)
    return sorted(groups.values(), key=lambda g: (str(g[0]["name"]), str(g[0]["id"])))


def compliance_esg(report: Entry, organisation: Entry, entries: Sequence[Entry]) -> Document:
    filters = report.get("filters")
    _require_entries(entries, filters)
    energy_rows: list[dict[str, Value]] = []
    ghg_rows: list[dict[str, Value]] = []
    water_rows: list[dict[str, Value]] = []
    for prop, members in _per_property(entries):
        gfa = sum(float(e["building"]["gfa_m2"]) for e in members)
        base = {"property": prop["name"], "country": prop.get("country"), "buildings": len(members)}
        by_type: dict[str, float] = {}
        for e in members:
            for m, kwh in (e.get("energy_kwh") or {}).items():
                by_type[m] = by_type.get(m, 0.0) + kwh
        energy_covered = [e for e in members if has_energy(e)]
        covered_gfa = sum(float(e["building"]["gfa_m2"]) for e in energy_covered)
        total = sum(by_type.values())
        energy_rows.append(
            {
                **base,
                "gfa_m2": gfa,
                "covered": len(energy_covered),
                "electricity": by_type.get("electricity", 0.0),
                "gas": by_type.get("natural_gas", 0.0),
                "heat": sum(by_type.get(m, 0.0) for m in _HEAT),
                "fuels": sum(by_type.get(m, 0.0) for m in _FUELS),
                "solar": by_type.get("solar", 0.0),
                "total": total,
                "intensity": total / covered_gfa if covered_gfa else None,
            }
        )
        carbon = [
            (float(e["benchmark"]["carbon_intensity_kgco2e_m2"]), float(e["building"]["gfa_m2"]))
            for e in members
            if (e.get("benchmark") or {}).get("carbon_intensity_kgco2e_m2") is not None
        ]
        emissions_t = sum(c * a for c, a in carbon) / 1000
        carbon_gfa = sum(a for _, a in carbon)
        scope1 = scope2 = 0.0
        for e in members:
            for m, kg in (e.get("kgco2e_by_type") or {}).items():
                if m in _SCOPE_1:
                    scope1 += kg / 1000
                else:
                    scope2 += kg / 1000
        ghg_rows.append(
            {
                **base,
                "gfa_m2": gfa,
                "covered": len(carbon),
                "scope1": scope1 if carbon else None,
                "scope2": scope2 if carbon else None,
                "emissions": emissions_t if carbon else None,
                "intensity": 1000 * emissions_t / carbon_gfa if carbon_gfa else None,
            }
        )
        water = [
            (float(e["water_m3"]), float(e["building"]["gfa_m2"]))
            for e in members
            if e.get("water_m3") is not None
        ]
        water_gfa = sum(a for _, a in water)
        water_rows.append(
            {
                **base,
                "gfa_m2": gfa,
                "covered": len(water),
                "water": sum(w for w, _ in water) if water else None,
                "intensity": sum(w for w, _ in water) / water_gfa if water_gfa else None,
            }
        )

    lead = [
        Column("property", "Property"),
        Column("country", "Country"),
        Column("buildings", "Buildings", "integer"),
        Column("gfa_m2", "GFA", "number", 0, "m²"),
        Column("covered", "Buildings with data", "integer"),
    ]

    def totals(rows: list[dict[str, Value]], keys: Sequence[str]) -> dict[str, Value]:
        out: dict[str, Value] = {"property": "Total"}
        for key in ("buildings", "gfa_m2", "covered", *keys):
            out[key] = _sum(rows, key)
        return out

    energy_totals = totals(energy_rows, ("electricity", "gas", "heat", "fuels", "solar", "total"))
    covered_gfa_all = sum(float(e["building"]["gfa_m2"]) for e in entries if has_energy(e))
    energy_totals["intensity"] = (
        float(energy_totals["total"] or 0) / covered_gfa_all if covered_gfa_all else None
    )
    ghg_totals = totals(ghg_rows, ("scope1", "scope2", "emissions"))
    carbon_gfa_all = sum(
        float(e["building"]["gfa_m2"])
        for e in entries
        if (e.get("benchmark") or {}).get("carbon_intensity_kgco2e_m2") is not None
    )
    ghg_totals["intensity"] = (
        1000 * float(ghg_totals["emissions"] or 0) / carbon_gfa_all if carbon_gfa_all else None
    )
    water_totals = totals(water_rows, ("water",))
    water_gfa_all = sum(
        float(e["building"]["gfa_m2"]) for e in entries if e.get("water_m3") is not None
    )
    water_totals["intensity"] = (
        float(water_totals["water"] or 0) / water_gfa_all if water_gfa_all else None
    )

    title = TYPE_TITLES["compliance_esg"]
    period = report["period"]
    start, end = _date(period["start"]), _date(period["end"])
    year = emissions.reporting_year(start, end)  # type: ignore[arg-type]
    countries = sorted({str(e["property"].get("country")) for e in entries})
    meta = [
        *_meta(report, organisation)[:3],
        ("Assessment period used", f"{_period_text(period)} (the requested months exactly)"),
        *_meta(report, organisation)[3:],
    ]
    return Document(
        title,
        f"{organisation.get('name')} · {_filters_text(filters)}",
        meta,
        [
            Facts(
                "Scope",
                [
                    ("Properties", Amount(len(energy_rows))),
                    ("Buildings", Amount(len(entries))),
                    ("Filters", _filters_text(filters)),
                ],
            ),
            Table(
                "Energy",
                "Energy consumption by property (annualised, kWh)",
                [
                    *lead,
                    Column("electricity", "Electricity", "number", 0, "kWh"),
                    Column("gas", "Natural gas", "number", 0, "kWh"),
                    Column("heat", "District heat, cooling and steam", "number", 0, "kWh"),
                    Column("fuels", "Fuel oil, diesel, LPG, CHP", "number", 0, "kWh"),
                    Column("solar", "Onsite solar", "number", 0, "kWh"),
                    Column("total", "Total energy", "number", 0, "kWh"),
                    Column("intensity", "Energy intensity", "number", 1, "kWh/m²"),
                ],
                energy_rows,
                totals=energy_totals,
                note="Intensity divides energy by the floor area of the buildings with energy data.",
            ),
            Table(
                "GHG",
                "Greenhouse-gas emissions by property (annual, location-based)",
                [
                    *lead,
                    Column("scope1", "Scope 1 (fuels burnt on site)", "number", 1, "tCO2e"),
                    Column("scope2", "Scope 2 (purchased energy)", "number", 1, "tCO2e"),
                    Column("emissions", "Total emissions", "number", 1, "tCO2e"),
                    Column("intensity", "Carbon intensity", "number", 1, "kgCO2e/m²"),
                ],
                ghg_rows,
                totals=ghg_totals,
                note="Location-based: energy by carrier times the service's emission factors for "
                "the property's country. Intensity divides by the floor area of the buildings "
                "with energy data.",
            ),
            Table(
                "Water",
                "Water consumption by property (annualised)",
                [
                    *lead,
                    Column("water", "Water", "number", 0, "m³"),
                    Column("intensity", "Water intensity", "number", 3, "m³/m²"),
                ],
                water_rows,
                totals=water_totals,
                note="Intensity divides water by the floor area of the buildings with water data.",
            ),
            _esg_coverage(entries),
            Note(
                "Method",
                "Energy per carrier over the requested months, months without full readings "
                "estimated by scaling each meter's readings to the period. Location-based "
                f"emissions with the factor set of reporting year {year} for each country: "
                + "; ".join(f"{c}: {emissions.factor_set_text(c, year)}" for c in countries)
                + ".",
            ),
            Note(
                "Important",
                "An estimate prepared from the meter readings held by the service, not an "
                "audited disclosure; no market-based instruments, renewable energy credits, "
                "offsets or adjustments have been applied.",
            ),
        ],
        data=_json_meta(report, organisation, title),
    )


def _esg_coverage(entries: Sequence[Entry]) -> Table:
    """Per building: energy meters, and the fewest fully metered / most estimated months."""
    rows: list[dict[str, Value]] = []
    for e in sorted_entries(entries):
        meters = (e.get("coverage") or {}).get("meters") or []
        rows.append(
            {
                "property": e["property"]["name"],
                "building": e["building"]["name"],
                "meters": len(meters),
                "complete": min((m["complete_months"] for m in meters), default=None),
                "estimated": max((m["estimated_months"] for m in meters), default=None),
                "grade": e["building"].get("data_quality_grade"),
            }
        )
    return Table(
        "Coverage",
        "Data coverage by building",
        [
            Column("property", "Property"),
            Column("building", "Building"),
            Column("meters", "Energy meters", "integer"),
            Column("complete", "Months fully metered (least)", "integer"),
            Column("estimated", "Months estimated (most)", "integer"),
            Column("grade", "Data-quality grade"),
        ],
        rows,
        note="A building without energy meters or readings shows dashes and adds nothing.",
    )


# --- LL97 and BERDO ------------------------------------------------------------------------------

_AUTHORITY = {
    "compliance_ll97": "the NYC Department of Buildings",
    "compliance_berdo": "the City of Boston",
}


def compliance_year(report: Entry) -> int:
    """The calendar year assessed (the requested period is exactly that year: CS3)."""
    return _date(report["period"]["end"]).year  # type: ignore[union-attr]


def _scheme(report_type: str) -> str:
    return compliance.LL97 if report_type == "compliance_ll97" else compliance.BERDO


def _applicability(report_type: str, building: Entry, prop: Entry) -> compliance.Applicability:
    areas = compliance.areas_by_use_type(
        building["gfa_m2"], building["primary_use_type"], building.get("use_types")
    )
    return compliance.applicability(
        _scheme(report_type),
        country=prop.get("country"),
        state=prop.get("state"),
        city=prop.get("city"),
        gfa_m2=float(building["gfa_m2"]),
        use_types=[u for u, _ in areas],
    )


def check_compliance_request(
    report_type: str, report: Entry, building: Entry, prop: Entry
) -> compliance.Applicability:
    """The rules every LL97/BERDO document rests on (raises ComplianceError): a calendar year the
    tables cover, and a building the law covers."""
    period = report["period"]
    year = compliance.require_calendar_year(_date(period["start"]), _date(period["end"]))  # type: ignore[arg-type]
    if report_type == "compliance_ll97":
        compliance.ll97_period(year)
    else:
        compliance.berdo_period_index(year)
        compliance.berdo_electricity(year)
    result = _applicability(report_type, building, prop)
    if not result.applicable:
        raise compliance.ComplianceError("not_applicable", f"Not applicable: {result.reason}")
    return result


def _require_energy(entry: Entry) -> None:
    if not has_energy(entry):
        raise NoData("The building has no energy data for the reporting period.")


def _building_facts(entry: Entry, coverage_rule: compliance.Applicability | None = None) -> Facts:
    b, p = entry["building"], entry["property"]
    items: list[tuple[str, FactValue]] = [
        ("Building", f"{b['name']} ({b['id']})"),
        ("Property", f"{p['name']}, {_address(p)}"),
        (
            "Gross floor area",
            f"{number(b['gfa_m2'])} m² ({number(b['gfa_m2'] * SQFT_PER_M2)} ft²)",
        ),
    ]
    if coverage_rule is not None:
        items.append(("Coverage rule", coverage_rule.threshold))
        items.append(("This building", coverage_rule.reason))
    return Facts("Building", items)


def months_text(months: Sequence[str]) -> str:
    """'YYYY-MM' months as words, consecutive months as one run: ['2025-01', ..., '2025-06',
    '2025-09'] -> 'January to June 2025, September 2025'."""
    dates = sorted(dt.date(int(m[:4]), int(m[5:7]), 1) for m in months)
    runs: list[list[dt.date]] = []
    for d in dates:
        if runs and (d.year * 12 + d.month) - (runs[-1][-1].year * 12 + runs[-1][-1].month) == 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    parts = []
    for run in runs:
        first, last = run[0], run[-1]
        if first == last:
            parts.append(f"{first:%B %Y}")
        elif first.year == last.year:
            parts.append(f"{first:%B} to {last:%B %Y}")
        else:
            parts.append(f"{first:%B %Y} to {last:%B %Y}")
    return ", ".join(parts)


def meter_labels(meters: Sequence[Entry]) -> list[str]:
    """Each meter by name with its type ('Main supply (electricity)'); a meter without a name, or
    whose name another meter of the building shares, also carries its id so each is told apart."""
    base = [
        f"{m['meter_name']} ({_label(str(m['meter_type'])).lower()})"
        if m.get("meter_name")
        else f"{_label(str(m['meter_type']))} meter"
        for m in meters
    ]
    return [
        f"{label} {m['meter_id']}" if base.count(label) > 1 or not m.get("meter_name") else label
        for label, m in zip(base, meters, strict=True)
    ]


def coverage_section(coverage: Entry | None, grade: Any) -> Table:
    """Which months the figures rest on, per energy meter by name (months not fully covered by
    readings are estimated by scaling the meter's recorded energy to the whole period)."""
    coverage = coverage or {}
    months = coverage.get("months") or 0
    meters = coverage.get("meters") or []
    rows: list[dict[str, Value]] = [
        {
            "meter": label,
            "months": months_text(m.get("months_with_readings") or []) or "none",
            "complete": m["complete_months"],
            "estimated": m["estimated_months"],
            "days": f"{m['covered_days']} of {m['period_days']}",
            "readings": m["readings"],
            "flagged": m["flagged_readings"],
        }
        for label, m in zip(meter_labels(meters), meters, strict=True)
    ]
    estimated = any(m["estimated_months"] for m in meters)
    note = f"Data-quality grade {grade or DASH}. " + (
        "Months not fully covered by readings are estimated: each meter's recorded energy is "
        "annualised, scaled up to the whole period by its days with readings."
        if estimated
        else f"Every energy meter has readings for all {months} months."
    )
    return Table(
        "Coverage",
        f"Data coverage ({_period_text(coverage.get('period'))})",
        [
            Column("meter", "Energy meter"),
            Column("months", "Months with readings"),
            Column("complete", "Months fully metered", "integer"),
            Column("estimated", "Months estimated", "integer"),
            Column("days", "Days with readings"),
            Column("readings", "Readings", "integer"),
            Column("flagged", "Flagged readings", "integer"),
        ],
        rows,
        note=note,
    )


def _part_year_meters(coverage: Entry | None) -> list[str]:
    """Per meter not covering the whole period: its name, months with readings and days."""
    coverage = coverage or {}
    meters = coverage.get("meters") or []
    out = []
    for label, m in zip(meter_labels(meters), meters, strict=True):
        if not m["estimated_months"]:
            continue
        with_readings = m.get("months_with_readings") or []
        out.append(
            f"{label}: readings in {len(with_readings)} of {coverage.get('months')} months"
            + (f" ({months_text(with_readings)})" if with_readings else "")
            + f", {m['covered_days']} of {m['period_days']} days"
        )
    return out


def annualised(coverage: Entry | None) -> bool:
    """True when any figure is estimated from part of the period."""
    return any(m["estimated_months"] for m in (coverage or {}).get("meters") or [])


def basis_text(coverage: Entry | None) -> str:
    """How the annual figures were obtained: metered, or annualised from which months and how."""
    parts = _part_year_meters(coverage)
    if not parts:
        return "Metered: every energy meter has readings for the whole year."
    return (
        "Annualised from part of the year (" + "; ".join(parts) + "): each meter's recorded "
        "energy x days in the year / its days with readings. An estimate, not the metered total."
    )


def _emissions_label(entry: Entry) -> str:
    """'Annual emissions', marked when the year is annualised from part of it."""
    if annualised(entry.get("coverage")):
        return "Annual emissions (annualised from part of the year)"
    return "Annual emissions"


def _estimate_warning(coverage: Entry | None) -> Note | None:
    """A warning on the first page when any figure rests on part of the year, naming each meter
    and the months it has readings for."""
    parts = _part_year_meters(coverage)
    if not parts:
        return None
    return Note(
        "Estimated from part of the year",
        "The figures are estimated from part of the year, not measured over all of it. "
        + "; ".join(parts)
        + ". Each meter's recorded energy is annualised (scaled by the days of the year over its "
        "days with readings), so the result is an estimate until the year's readings are "
        "complete.",
        warning=True,
    )


def _disclaimer(report_type: str) -> Note:
    return Note(
        "Important",
        "This is an estimate prepared from the meter readings held by the service, not a filing "
        f"with {_AUTHORITY[report_type]} and not a report certified by a registered design "
        "professional. No deductions, renewable energy credits, offsets, adjustments or "
        "exemptions have been applied.",
    )


def _not_covered_note(not_covered: Sequence[str], scheme: str) -> Note | None:
    if not not_covered:
        return None
    names = ", ".join(_label(m) for m in not_covered)
    return Note(
        "Energy sources not covered",
        f"{scheme} publishes no emissions factor in the cited table for: {names}. Their energy "
        "is listed but adds no emissions, so total emissions are a lower bound.",
        warning=True,
    )


def _source_table(sources: Sequence[compliance.SourceLine], decimals: int, scheme: str) -> Table:
    rows: list[dict[str, Value]] = [
        {
            "source": _label(s.meter_type),
            "factor_source": _label(s.source) if s.source else "not covered",
            "kwh": s.kwh,
            "quantity": s.quantity,
            "unit": s.unit,
            "factor": s.factor,
            "factor_unit": s.factor_unit,
            "tco2e": s.tco2e,
        }
        for s in sources
    ]
    columns = [
        Column("source", "Meter type"),
        Column("factor_source", "Counted as"),
        Column("kwh", "Energy", "number", 0, "kWh"),
        Column("quantity", "Quantity", "number", 1),
        Column("unit", "Unit"),
        Column("factor", "Factor", "number", decimals),
        Column("factor_unit", "Factor unit"),
        Column("tco2e", "Emissions", "number", 2, "tCO2e"),
    ]
    details = [f"{_label(s.meter_type)}: {s.factor_detail}" for s in sources if s.factor_detail]
    return Table(
        "Emissions",
        f"Emissions by energy source ({scheme})",
        columns,
        rows,
        totals={
            "source": "Total",
            "kwh": sum(s.kwh for s in sources),
            "tco2e": sum(s.tco2e or 0 for s in sources),
        },
        note="; ".join(details) or None,
    )


def _compliance_meta(report: Entry, organisation: Entry, year: int) -> list[tuple[str, str]]:
    return [
        ("Report", str(report["id"])),
        ("Organisation", str(organisation.get("name") or organisation.get("id"))),
        ("Requested period", _period_text(report["period"])),
        ("Assessment period used", f"calendar year {year} ({year}-01-01 to {year}-12-31)"),
        ("Generated", _timestamp(report["generated_at"])),
    ]


def _ll97_limit_table(name: str, title: str, r: LL97Result, heading: str) -> Table:
    return Table(
        name,
        title,
        [
            Column("use_type", "Use type"),
            Column("category", heading),
            Column("area_m2", "Area", "number", 0, "m²"),
            Column("area_sqft", "Area", "number", 0, "ft²"),
            Column("limit", "Limit", "number", 9, "tCO2e/ft²"),
            Column("allowed", "Limit", "number", 2, "tCO2e"),
        ],
        [
            {
                "use_type": _label(a.use_type),
                "category": a.category_label,
                "area_m2": a.area_m2,
                "area_sqft": a.area_sqft,
                "limit": a.limit_per_sqft,
                "allowed": a.allowed_tco2e,
            }
            for a in r.areas
        ],
        totals={
            "use_type": "Total",
            "area_m2": sum(a.area_m2 for a in r.areas),
            "area_sqft": r.area_sqft,
            "allowed": r.limit_tco2e,
        },
    )


def _ll97_figures(r: LL97Result) -> list[tuple[str, FactValue]]:
    return [
        ("Emissions limit", Amount(r.limit_tco2e, 2, "tCO2e")),
        ("Excess emissions", Amount(r.excess_tco2e, 2, "tCO2e")),
        (
            "Estimated annual penalty",
            Amount(
                r.penalty_usd, 2, usd=True, detail=f"(${r.penalty_usd_per_tco2e:,.0f} per tCO2e)"
            ),
        ),
        ("Status", "Within the limit" if r.compliant else "Over the limit"),
    ]


def _ll97_doc(
    report: Entry,
    organisation: Entry,
    entry: Entry,
    r: LL97Result,
    rule: compliance.Applicability | None = None,
) -> Document:
    result = Facts(
        f"Result for calendar year {r.year} (compliance period {r.period})",
        [
            (_emissions_label(entry), Amount(r.emissions_tco2e, 2, "tCO2e")),
            ("Basis", basis_text(entry.get("coverage"))),
            *_ll97_figures(r),
            ("Limits", "by Portfolio Manager property type (1 RCNY §103-14)"),
        ],
        emphasis=True,
    )
    sections: list[Facts | Table | Note] = [result]
    warning = _estimate_warning(entry.get("coverage"))
    if warning:
        sections.append(warning)
    if r.alternative is not None:
        alt = r.alternative
        sections.append(
            Facts(
                f"Option for {r.year}: limits by occupancy group",
                [
                    *_ll97_figures(alt),
                    (
                        "Note",
                        "For calendar years 2024 and 2025 an owner may compute the limit from the "
                        "statute's occupancy groups (§28-320.3.1) instead of Portfolio Manager "
                        "property types; from 2026 only property types may be used.",
                    ),
                ],
            )
        )
    sections += [
        _building_facts(entry, rule),
        coverage_section(entry.get("coverage"), entry["building"].get("data_quality_grade")),
        _source_table(r.sources, 9, "LL97 carbon coefficients"),
        _ll97_limit_table(
            "Limit",
            "Emissions limit by Portfolio Manager property type (1 RCNY §103-14)",
            r,
            "Property type",
        ),
    ]
    if r.alternative is not None:
        sections.append(
            _ll97_limit_table(
                "Limit (occupancy group)",
                "Emissions limit by occupancy group (2024-2025 option, §28-320.3.1)",
                r.alternative,
                "Occupancy group",
            )
        )
    note = _not_covered_note(r.not_covered, "LL97")
    if note:
        sections.append(note)
    type_map = ", ".join(sorted({f"{_label(a.use_type).lower()} as {a.category}" for a in r.areas}))
    sections.append(
        Note(
            "Method",
            f"Calendar year {r.year}, compliance period {r.period}. Emissions = grid electricity "
            "(kWh) x its coefficient + natural gas, fuel oil and district steam (kBtu) x their "
            f"coefficients; {r.factor_set}. Limit = sum over the building's uses of gross floor "
            f"area (ft²) x the limit of its Portfolio Manager property type for {r.period} "
            f"(1 RCNY §103-14), this building's uses counted {type_map}. Excess = emissions above the limit; penalty = excess x $268 per tCO2e "
            "(§28-320.6). Energy is the metered energy of the calendar year; months without full "
            "readings are estimated as shown under Data coverage.",
        )
    )
    sections.append(_disclaimer("compliance_ll97"))
    title = TYPE_TITLES["compliance_ll97"]
    data = _json_meta(report, organisation, title)
    data["annualised"] = annualised(entry.get("coverage"))
    return Document(
        title,
        f"{entry['building']['name']} · {entry['property']['name']}",
        _compliance_meta(report, organisation, r.year),
        sections,
        sources=compliance.sources_cited("ll97"),
        data=data,
    )


def compliance_ll97(report: Entry, organisation: Entry, entry: Entry) -> Document:
    b = entry["building"]
    rule = check_compliance_request("compliance_ll97", report, b, entry["property"])
    _require_energy(entry)
    areas = compliance.areas_by_use_type(b["gfa_m2"], b["primary_use_type"], b.get("use_types"))
    result = compliance.ll97_assess(entry["energy_kwh"], areas, compliance_year(report))
    return _ll97_doc(report, organisation, entry, result, rule)


def _berdo_doc(
    report: Entry,
    organisation: Entry,
    entry: Entry,
    r: BerdoResult,
    rule: compliance.Applicability | None = None,
) -> Document:
    if not r.standards_in_force:
        verdict = "Standards not yet in force for this building (reporting only)"
    else:
        verdict = "Meets the standard" if r.compliant else "Exceeds the standard"
    result = Facts(
        f"Result for calendar year {r.year} (compliance period {r.period})",
        [
            ("Emissions intensity", Amount(r.intensity_kgco2e_per_sqft, 2, "kgCO2e/ft²")),
            ("Emissions standard", Amount(r.standard_kgco2e_per_sqft, 2, "kgCO2e/ft²")),
            (_emissions_label(entry), Amount(r.emissions_tco2e, 2, "tCO2e")),
            ("Basis", basis_text(entry.get("coverage"))),
            ("Allowed emissions", Amount(r.allowed_tco2e, 2, "tCO2e")),
            ("Excess emissions", Amount(r.excess_tco2e, 2, "tCO2e")),
            (
                "Alternative compliance payment",
                Amount(r.acp_usd, 2, usd=True, detail=f"(${r.acp_usd_per_tco2e:,.0f} per tCO2e)"),
            ),
            ("Status", verdict),
        ],
        emphasis=True,
    )
    standards = Table(
        "Standard",
        "Emissions standard by building type",
        [
            Column("use_type", "Use type"),
            Column("building_type", "BERDO building type"),
            Column("area_m2", "Area", "number", 0, "m²"),
            Column("area_sqft", "Area", "number", 0, "ft²"),
            Column("standard", "Standard", "number", 2, "kgCO2e/ft²"),
            Column("allowed", "Allowed", "number", 2, "tCO2e"),
        ],
        [
            {
                "use_type": _label(a.use_type),
                "building_type": a.category,
                "area_m2": a.area_m2,
                "area_sqft": a.area_sqft,
                "standard": a.limit_per_sqft,
                "allowed": a.allowed_tco2e,
            }
            for a in r.areas
        ],
        totals={
            "use_type": "Total",
            "area_m2": sum(a.area_m2 for a in r.areas),
            "area_sqft": r.area_sqft,
            "standard": r.standard_kgco2e_per_sqft,
            "allowed": r.allowed_tco2e,
        },
    )
    sections: list[Facts | Table | Note] = [result]
    warning = _estimate_warning(entry.get("coverage"))
    if warning:
        sections.append(warning)
    for text in r.notes:
        sections.append(Note("Standards phase-in", text, warning=True))
    if rule is not None and rule.caveat:
        sections.append(Note("Coverage to confirm", rule.caveat, warning=True))
    sections += [
        _building_facts(entry, rule),
        coverage_section(entry.get("coverage"), entry["building"].get("data_quality_grade")),
        _source_table(r.sources, 2, "BERDO emission factors"),
        standards,
    ]
    note = _not_covered_note(r.not_covered, "BERDO")
    if note:
        sections.append(note)
    sections.append(
        Note(
            "Method",
            f"Calendar year {r.year}, compliance period {r.period}. Grid electricity emissions = "
            "usage (MWh) x (1 - R) x E, where E is BERDO's grid emissions factor for the year and R "
            f"the Massachusetts RPS Class I share for the year (for {r.year}: E = "
            f"{r.grid_kgco2e_per_mwh:.1f} kgCO2e/MWh, R = {r.rps_class_i:.0%}); other energy = "
            f"usage (MMBtu) x the BERDO factor for the fuel. Factor set: {r.factor_set}. Intensity "
            "= emissions / gross floor area (ft²); a building with several uses is held to the "
            "floor-area-weighted blend of its building types' standards (ordinance Table 1). "
            "Energy is the metered energy of the calendar year; months without full readings are "
            "estimated as shown under Data coverage.",
        )
    )
    sections.append(_disclaimer("compliance_berdo"))
    title = TYPE_TITLES["compliance_berdo"]
    data = _json_meta(report, organisation, title)
    data["annualised"] = annualised(entry.get("coverage"))
    return Document(
        title,
        f"{entry['building']['name']} · {entry['property']['name']}",
        _compliance_meta(report, organisation, r.year),
        sections,
        sources=compliance.sources_cited("berdo"),
        data=data,
    )


def compliance_berdo(report: Entry, organisation: Entry, entry: Entry) -> Document:
    b = entry["building"]
    rule = check_compliance_request("compliance_berdo", report, b, entry["property"])
    _require_energy(entry)
    areas = compliance.areas_by_use_type(b["gfa_m2"], b["primary_use_type"], b.get("use_types"))
    result = compliance.berdo_assess(
        entry["energy_kwh"],
        areas,
        compliance_year(report),
        gross_sqft=float(b["gfa_m2"]) * SQFT_PER_M2,
    )
    return _berdo_doc(report, organisation, entry, result, rule)


# --- custom --------------------------------------------------------------------------------------


def _sort_key(key: str) -> Any:
    def sort(row: Mapping[str, Value]) -> tuple[int, Any]:
        value = row.get(key)
        # None last, whatever the direction; numbers and text never compared with each other.
        if value is None:
            return (2, "")
        if isinstance(value, int | float):
            return (0, value)
        return (1, str(value))

    return sort


def custom(
    report: Entry, organisation: Entry, template: Entry, entries: Sequence[Entry]
) -> Document:
    filters = report.get("filters")
    _require_entries(entries, filters)
    keys = list(template["columns"])
    rows = [building_row(e) for e in entries]
    # As in the portfolio summary: a building whose latest 12 months with data do not overlap
    # the requested period shows no figures under the requested dates; a note gives its dates.
    elsewhere = []
    for row, entry in zip(rows, entries, strict=True):
        period = (entry.get("benchmark") or {}).get("reporting_period")
        if row["eui_kwh_m2"] is not None and not _overlaps(period, report["period"]):
            elsewhere.append(f"{row['building_name']} ({_months_text(period)})")
            for key in _CUSTOM_PERIOD_FIGURES:
                row[key] = None
            for key in TEMPLATE_COLUMNS:
                if key.endswith("_kwh"):
                    row[key] = None
    rows.sort(
        key=lambda r: (str(r["property_name"]), str(r["building_name"]), str(r["building_id"]))
    )
    sort = template.get("sort")
    if sort:
        key = sort.lstrip("-")
        if sort.startswith("-"):
            # Descending with None still last: sort present values, then append the rest.
            present = [r for r in rows if r.get(key) is not None]
            present.sort(key=_sort_key(key), reverse=True)
            rows = present + [r for r in rows if r.get(key) is None]
        else:
            rows.sort(key=_sort_key(key))
    selected = [{k: r.get(k) for k in keys} for r in rows]
    columns = [TEMPLATE_COLUMNS[k].column for k in keys]
    totals: dict[str, Value] | None = None
    summable = [k for k in keys if TEMPLATE_COLUMNS[k].summable]
    if summable:
        totals = {k: _sum(selected, k) for k in summable}
        first = keys[0]
        if first not in totals:
            totals[first] = "Total"
    title = str(template.get("title") or template.get("name") or TYPE_TITLES["custom"])
    data = _json_meta(report, organisation, title)
    data["template"] = {"id": template.get("id"), "name": template.get("name")}
    sections: list[Section] = []
    if elsewhere:
        sections.append(
            Note(
                "Buildings without data for this period",
                f"{len(elsewhere)} of the {len(rows)} buildings have no energy data for the "
                f"requested period ({_period_text(report['period'])}); their figures are left "
                "blank. Their latest data is for other dates: " + "; ".join(elsewhere) + ".",
                warning=True,
            )
        )
    data["buildings_with_data_for_other_periods_only"] = len(elsewhere)
    return Document(
        title,
        f"{organisation.get('name')} · {_filters_text(filters)}",
        _meta(report, organisation),
        [*sections, Table("Report", title, columns, selected, totals=totals)],
        data=data,
    )
