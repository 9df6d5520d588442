"""What the LL97 and BERDO assessments share: the request's checks (a calendar year, a covered
building), the building's facts, how annual figures were obtained, the emissions-by-source
table, the meta lines and the disclaimer."""

from __future__ import annotations

from collections.abc import Sequence

from bpservice.domain import compliance
from bpservice.domain.compliance import SQFT_PER_M2
from bpservice.reporting.content.blocks import (
    Entry,
    NoData,
    address_text,
    has_energy,
    meter_labels,
    months_text,
    period_text,
    readable,
    timestamp_text,
    to_date,
)
from bpservice.reporting.document import (
    Column,
    Facts,
    FactValue,
    Note,
    Table,
    Value,
    number,
)

_AUTHORITY = {
    "compliance_ll97": "the NYC Department of Buildings",
    "compliance_berdo": "the City of Boston",
}


def compliance_year(report: Entry) -> int:
    """The calendar year assessed (the requested period is exactly that year: CS3)."""
    return to_date(report["period"]["end"]).year  # type: ignore[union-attr]


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
    year = compliance.require_calendar_year(to_date(period["start"]), to_date(period["end"]))  # type: ignore[arg-type]
    if report_type == "compliance_ll97":
        compliance.ll97_period(year)
    else:
        compliance.berdo_period_index(year)
        compliance.berdo_electricity(year)
    result = _applicability(report_type, building, prop)
    if not result.applicable:
        raise compliance.ComplianceError("not_applicable", f"Not applicable: {result.reason}")
    return result


def require_energy(entry: Entry) -> None:
    if not has_energy(entry):
        raise NoData("The building has no energy data for the reporting period.")


def building_facts(entry: Entry, coverage_rule: compliance.Applicability | None = None) -> Facts:
    b, p = entry["building"], entry["property"]
    items: list[tuple[str, FactValue]] = [
        ("Building", f"{b['name']} ({b['id']})"),
        ("Property", f"{p['name']}, {address_text(p)}"),
        (
            "Gross floor area",
            f"{number(b['gfa_m2'])} m² ({number(b['gfa_m2'] * SQFT_PER_M2)} ft²)",
        ),
    ]
    if coverage_rule is not None:
        items.append(("Coverage rule", coverage_rule.threshold))
        items.append(("This building", coverage_rule.reason))
    return Facts("Building", items)


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


def emissions_label(entry: Entry) -> str:
    """'Annual emissions', marked when the year is annualised from part of it."""
    if annualised(entry.get("coverage")):
        return "Annual emissions (annualised from part of the year)"
    return "Annual emissions"


def estimate_warning(coverage: Entry | None) -> Note | None:
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


def disclaimer(report_type: str) -> Note:
    return Note(
        "Important",
        "This is an estimate prepared from the meter readings held by the service, not a filing "
        f"with {_AUTHORITY[report_type]} and not a report certified by a registered design "
        "professional. No deductions, renewable energy credits, offsets, adjustments or "
        "exemptions have been applied.",
    )


def not_covered_note(not_covered: Sequence[str], scheme: str) -> Note | None:
    if not not_covered:
        return None
    names = ", ".join(readable(m) for m in not_covered)
    return Note(
        "Energy sources not covered",
        f"{scheme} publishes no emissions factor in the cited table for: {names}. Their energy "
        "is listed but adds no emissions, so total emissions are a lower bound.",
        warning=True,
    )


def source_table(sources: Sequence[compliance.SourceLine], decimals: int, scheme: str) -> Table:
    rows: list[dict[str, Value]] = [
        {
            "source": readable(s.meter_type),
            "factor_source": readable(s.source) if s.source else "not covered",
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
    details = [f"{readable(s.meter_type)}: {s.factor_detail}" for s in sources if s.factor_detail]
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


def compliance_meta(report: Entry, organisation: Entry, year: int) -> list[tuple[str, str]]:
    return [
        ("Report", str(report["id"])),
        ("Organisation", str(organisation.get("name") or organisation.get("id"))),
        ("Requested period", period_text(report["period"])),
        ("Assessment period used", f"calendar year {year} ({year}-01-01 to {year}-12-31)"),
        ("Generated", timestamp_text(report["generated_at"])),
    ]
