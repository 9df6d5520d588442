"""The building blocks every report type shares: titles, the no-data refusal, dates and periods
as text, the document's meta lines, one row of figures per building, sums and area-weighted
means, and the data-coverage table."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from bpservice.domain.compliance import SQFT_PER_M2
from bpservice.reporting.catalogue import TEMPLATE_COLUMNS
from bpservice.reporting.document import (
    DASH,
    Column,
    Table,
    Value,
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


def to_date(value: Any) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def timestamp_text(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def period_text(period: Mapping[str, Any] | None) -> str:
    if not period:
        return DASH
    return f"{to_date(period.get('start'))} to {to_date(period.get('end'))}"


def score_of(benchmark: Mapping[str, Any] | None, standard: str) -> Mapping[str, Any] | None:
    for score in (benchmark or {}).get("scores") or []:
        if score.get("standard") == standard:
            return score
    return None


def readable(name: str) -> str:
    return name.replace("_", " ").capitalize()


def report_meta(report: Entry, organisation: Entry) -> list[tuple[str, str]]:
    return [
        ("Report", str(report["id"])),
        ("Organisation", str(organisation.get("name") or organisation.get("id"))),
        ("Requested period", period_text(report["period"])),
        ("Generated", timestamp_text(report["generated_at"])),
    ]


def address_text(prop: Entry) -> str:
    parts = [prop.get("street"), prop.get("city"), prop.get("state"), prop.get("postal_code")]
    return ", ".join(str(p) for p in parts if p) + f" ({prop.get('country')})"


def json_meta(report: Entry, organisation: Entry, title: str) -> dict[str, Any]:
    period = report["period"]
    return {
        "report_id": report["id"],
        "report_type": report["type"],
        "title": title,
        "organisation": {"id": organisation.get("id"), "name": organisation.get("name")},
        "reporting_period": {
            "start": to_date(period["start"]).isoformat(),  # type: ignore[union-attr]
            "end": to_date(period["end"]).isoformat(),  # type: ignore[union-attr]
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
        "reporting_period_start": to_date(period.get("start")),
        "reporting_period_end": to_date(period.get("end")),
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


def column_sum(rows: Sequence[Mapping[str, Value]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return sum(values) if values else None


def area_weighted(
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


def filters_text(filters: Mapping[str, Any] | None) -> str:
    parts = [f"{k} = {v}" for k, v in (filters or {}).items() if v]
    return ", ".join(parts) if parts else "all buildings"


def require_entries(entries: Sequence[Entry], filters: Mapping[str, Any] | None) -> None:
    if not entries:
        raise NoData(f"No active building matches the filters ({filters_text(filters)}).")


# Row figures that belong to a building's assessment period: blanked when that period does not
# overlap the requested one (portfolio summary and custom reports).
PERIOD_FIGURES = (
    "eui_kwh_m2",
    "carbon_intensity_kgco2e_m2",
    "annual_energy_kwh",
    "annual_emissions_tco2e",
    "svc_score",
    "energy_rating_score",
)


def overlaps(used: Mapping[str, Any] | None, requested: Mapping[str, Any]) -> bool:
    """Whether a building's assessment period shares at least one day with the requested one."""
    if not used or not used.get("start") or not used.get("end"):
        return False
    return not (
        to_date(used["end"]) < to_date(requested["start"])  # type: ignore[operator]
        or to_date(used["start"]) > to_date(requested["end"])  # type: ignore[operator]
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


def month_range(period: Mapping[str, Any] | None) -> str | None:
    if not period or not period.get("start"):
        return None
    start, end = to_date(period["start"]), to_date(period["end"])
    return f"{start:%Y-%m} to {end:%Y-%m}"


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
        f"{m['meter_name']} ({readable(str(m['meter_type'])).lower()})"
        if m.get("meter_name")
        else f"{readable(str(m['meter_type']))} meter"
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
        f"Data coverage ({period_text(coverage.get('period'))})",
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
