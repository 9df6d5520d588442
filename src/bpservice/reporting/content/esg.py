"""The ESG disclosure: energy, greenhouse-gas emissions (Scope 1 and 2) and water by property
over the requested months exactly."""

from __future__ import annotations

from collections.abc import Sequence

from bpservice.domain import emissions
from bpservice.reporting.content.blocks import (
    TYPE_TITLES,
    Entry,
    column_sum,
    filters_text,
    has_energy,
    json_meta,
    period_text,
    report_meta,
    require_entries,
    sorted_entries,
    to_date,
)
from bpservice.reporting.document import (
    Amount,
    Column,
    Document,
    Facts,
    Note,
    Table,
    Value,
)

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
    require_entries(entries, filters)
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
            out[key] = column_sum(rows, key)
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
    start, end = to_date(period["start"]), to_date(period["end"])
    year = emissions.reporting_year(start, end)  # type: ignore[arg-type]
    countries = sorted({str(e["property"].get("country")) for e in entries})
    meta = [
        *report_meta(report, organisation)[:3],
        ("Assessment period used", f"{period_text(period)} (the requested months exactly)"),
        *report_meta(report, organisation)[3:],
    ]
    return Document(
        title,
        f"{organisation.get('name')} · {filters_text(filters)}",
        meta,
        [
            Facts(
                "Scope",
                [
                    ("Properties", Amount(len(energy_rows))),
                    ("Buildings", Amount(len(entries))),
                    ("Filters", filters_text(filters)),
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
        data=json_meta(report, organisation, title),
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
