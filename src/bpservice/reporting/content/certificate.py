"""The benchmark certificate: one building's latest 12 months with data, its scores by standard,
energy by source, data coverage and history."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bpservice.domain import emissions
from bpservice.reporting.content.blocks import (
    TYPE_TITLES,
    Entry,
    NoData,
    address_text,
    building_row,
    coverage_section,
    has_energy,
    json_meta,
    period_text,
    readable,
    timestamp_text,
    to_date,
)
from bpservice.reporting.document import (
    DASH,
    Column,
    Document,
    Facts,
    Note,
    Table,
    Value,
    number,
)


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
    return (readable(standard), str(value), "")


_KWH_M2_PER_KBTU_FT2 = 3.15459  # 1 kBtu/ft² = 3.15459 kWh/m²

_SCHEME_LABELS = {
    "uk_dec": "UK Display Energy Certificate operational rating (CIBSE TM46 benchmark)",
}


def _peer_label(group: Any) -> str:
    """'office:GB' -> 'office buildings in GB' (the API's group id is not for documents)."""
    use, _, country = str(group or "").partition(":")
    return f"{readable(use).lower()} buildings in {country}" if country else str(group or "")


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
        {"source": readable(m), "kwh": kwh, "share": 100 * kwh / total if total else None}
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
    r0, r1 = to_date(requested.get("start")), to_date(requested.get("end"))
    u0, u1 = to_date(used.get("start")), to_date(used.get("end"))
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
        ("Requested period", period_text(report["period"])),
        ("Assessment period used", period_text(bench.get("reporting_period"))),
        ("Issued", timestamp_text(report["generated_at"])),
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
            ("Property", f"{p['name']}, {address_text(p)}"),
            ("Primary use", readable(b["primary_use_type"])),
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
                        "period": period_text(h.get("period")),
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
        emissions.reporting_year(to_date(used["start"]), to_date(used["end"]))  # type: ignore[arg-type]
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
        data=json_meta(report, organisation, TYPE_TITLES["benchmark_certificate"]),
    )
