"""The Boston BERDO 2.0 assessment of one building for one calendar year."""

from __future__ import annotations

from bpservice.domain import compliance
from bpservice.domain.compliance import SQFT_PER_M2, BerdoResult
from bpservice.reporting.content.blocks import (
    TYPE_TITLES,
    Entry,
    coverage_section,
    json_meta,
    readable,
)
from bpservice.reporting.content.city_law import (
    annualised,
    basis_text,
    building_facts,
    check_compliance_request,
    compliance_meta,
    compliance_year,
    disclaimer,
    emissions_label,
    estimate_warning,
    not_covered_note,
    require_energy,
    source_table,
)
from bpservice.reporting.document import (
    Amount,
    Column,
    Document,
    Facts,
    Note,
    Table,
)


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
            (emissions_label(entry), Amount(r.emissions_tco2e, 2, "tCO2e")),
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
                "use_type": readable(a.use_type),
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
    warning = estimate_warning(entry.get("coverage"))
    if warning:
        sections.append(warning)
    for text in r.notes:
        sections.append(Note("Standards phase-in", text, warning=True))
    if rule is not None and rule.caveat:
        sections.append(Note("Coverage to confirm", rule.caveat, warning=True))
    sections += [
        building_facts(entry, rule),
        coverage_section(entry.get("coverage"), entry["building"].get("data_quality_grade")),
        source_table(r.sources, 2, "BERDO emission factors"),
        standards,
    ]
    note = not_covered_note(r.not_covered, "BERDO")
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
    sections.append(disclaimer("compliance_berdo"))
    title = TYPE_TITLES["compliance_berdo"]
    data = json_meta(report, organisation, title)
    data["annualised"] = annualised(entry.get("coverage"))
    return Document(
        title,
        f"{entry['building']['name']} · {entry['property']['name']}",
        compliance_meta(report, organisation, r.year),
        sections,
        sources=compliance.sources_cited("berdo"),
        data=data,
    )


def compliance_berdo(report: Entry, organisation: Entry, entry: Entry) -> Document:
    b = entry["building"]
    rule = check_compliance_request("compliance_berdo", report, b, entry["property"])
    require_energy(entry)
    areas = compliance.areas_by_use_type(b["gfa_m2"], b["primary_use_type"], b.get("use_types"))
    result = compliance.berdo_assess(
        entry["energy_kwh"],
        areas,
        compliance_year(report),
        gross_sqft=float(b["gfa_m2"]) * SQFT_PER_M2,
    )
    return _berdo_doc(report, organisation, entry, result, rule)
