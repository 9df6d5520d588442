"""The NYC Local Law 97 assessment of one building for one calendar year."""

from __future__ import annotations

from bpservice.domain import compliance
from bpservice.domain.compliance import LL97Result
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
    FactValue,
    Note,
    Table,
)


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
                "use_type": readable(a.use_type),
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
            (emissions_label(entry), Amount(r.emissions_tco2e, 2, "tCO2e")),
            ("Basis", basis_text(entry.get("coverage"))),
            *_ll97_figures(r),
            ("Limits", "by Portfolio Manager property type (1 RCNY §103-14)"),
        ],
        emphasis=True,
    )
    sections: list[Facts | Table | Note] = [result]
    warning = estimate_warning(entry.get("coverage"))
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
        building_facts(entry, rule),
        coverage_section(entry.get("coverage"), entry["building"].get("data_quality_grade")),
        source_table(r.sources, 9, "LL97 carbon coefficients"),
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
    note = not_covered_note(r.not_covered, "LL97")
    if note:
        sections.append(note)
    type_map = ", ".join(
        sorted({f"{readable(a.use_type).lower()} as {a.category}" for a in r.areas})
    )
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
    sections.append(disclaimer("compliance_ll97"))
    title = TYPE_TITLES["compliance_ll97"]
    data = json_meta(report, organisation, title)
    data["annualised"] = annualised(entry.get("coverage"))
    return Document(
        title,
        f"{entry['building']['name']} · {entry['property']['name']}",
        compliance_meta(report, organisation, r.year),
        sections,
        sources=compliance.sources_cited("ll97"),
        data=data,
    )


def compliance_ll97(report: Entry, organisation: Entry, entry: Entry) -> Document:
    b = entry["building"]
    rule = check_compliance_request("compliance_ll97", report, b, entry["property"])
    require_energy(entry)
    areas = compliance.areas_by_use_type(b["gfa_m2"], b["primary_use_type"], b.get("use_types"))
    result = compliance.ll97_assess(entry["energy_kwh"], areas, compliance_year(report))
    return _ll97_doc(report, organisation, entry, result, rule)
