"""The I/O edge of report generation: read a report's inputs from the database and the benchmark
engine as plain dicts, then hand them to the pure content builders.

Two kinds of figures (docs/decisions.md (reports section)):
- benchmark reports (certificate, portfolio summary, custom) show the engine's current result for
  each building, the same numbers as GET /v1/buildings/{id}/benchmarks, over the engine's current
  12-month assessment period;
- disclosure and compliance reports (ESG, LL97, BERDO) are for the requested period exactly: energy
  per meter type and water over those months (annualised by the engine's aggregates), and emissions
  from the engine's factors.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bpservice.benchmarking import aggregates, engine
from bpservice.db.models import Building, Organisation, Property
from bpservice.db.report_models import Report
from bpservice.domain import emissions
from bpservice.domain.benchmarks import EnergyPeriod, Period
from bpservice.reporting.content.berdo import compliance_berdo
from bpservice.reporting.content.blocks import NoData, has_energy
from bpservice.reporting.content.certificate import benchmark_certificate
from bpservice.reporting.content.city_law import check_compliance_request
from bpservice.reporting.content.custom import custom
from bpservice.reporting.content.esg import compliance_esg
from bpservice.reporting.content.ll97 import compliance_ll97
from bpservice.reporting.content.portfolio import portfolio_summary
from bpservice.reporting.document import Document

# Columns of a custom template that need the engine's benchmark result, or water.
_BENCHMARK_COLUMNS = frozenset(
    {
        "data_quality_grade",
        "reporting_period_start",
        "reporting_period_end",
        "eui_kwh_m2",
        "carbon_intensity_kgco2e_m2",
        "annual_emissions_tco2e",
        "svc_score",
        "svc_percentile",
        "svc_peer_group",
        "energy_rating_score",
        "eu_epc_grade",
        "stranding_year_1_5c",
        "stranding_year_2c",
    }
)
_WATER_COLUMNS = frozenset({"annual_water_m3", "water_intensity_m3_m2"})


def _building_dict(b: Building) -> dict[str, Any]:
    return {
        "id": b.id,
        "name": b.name,
        "primary_use_type": b.primary_use_type,
        "use_types": list(b.use_types or []),
        "gfa_m2": b.gfa_m2,
        "year_built": b.year_built,
        "floors": b.floors,
        "occupancy_pct": b.occupancy_pct,
        "operating_hours_week": b.operating_hours_week,
        "data_quality_grade": b.data_quality_grade,
    }


def _property_dict(p: Property) -> dict[str, Any]:
    return {
        "id": p.id,
        "name": p.name,
        "type": p.type,
        "internal_ref": p.internal_ref,
        "street": p.street,
        "city": p.city,
        "state": p.state,
        "postal_code": p.postal_code,
        "country": p.country,
    }


def report_dict(report: Report, generated_at: dt.datetime) -> dict[str, Any]:
    filters = dict(report.filters or {})
    if report.template and not filters:
        filters = dict(report.template.get("filters") or {})
    return {
        "id": report.id,
        "type": report.type,
        "format": report.format,
        "period": {"start": report.period_start, "end": report.period_end},
        "generated_at": generated_at,
        "filters": {k: v for k, v in filters.items() if v},
    }


def _organisation(session: Session, org_id: str) -> dict[str, Any]:
    org = session.get(Organisation, org_id)
    return {"id": org_id, "name": org.name if org else org_id}


def scoped_buildings(
    session: Session,
    org_id: str,
    environment: str,
    filters: dict[str, Any],
    property_access: Sequence[str] | None,
) -> list[tuple[Building, Property]]:
    """Active buildings on active properties matching `filters` (type = primary use type, country
    = the property's country), limited to the properties the requester could see."""
    query = (
        select(Building, Property)
        .join(Property, Property.id == Building.property_id)
        .where(
            Building.org_id == org_id,
            Building.environment == environment,
            Property.status != "archived",
        )
        .order_by(Property.name, Building.name, Building.id)
    )
    if filters.get("type"):
        query = query.where(Building.primary_use_type == filters["type"])
    if filters.get("country"):
        query = query.where(Property.country == filters["country"])
    if property_access is not None:
        query = query.where(Property.id.in_(list(property_access)))
    return [(b, p) for b, p in session.execute(query).all()]


def coverage(
    energy: EnergyPeriod | None, names: Mapping[str, str | None] | None = None
) -> dict[str, Any]:
    """What the figures of a period rest on: per energy meter (by name), the months with readings,
    the months fully covered and the days covered; months not fully covered are estimated (the
    meter's recorded energy is scaled to the whole period)."""
    if energy is None:
        return {"period": None, "months": 0, "meters": []}
    months = len(energy.period.months)
    meters = [
        {
            "meter_id": m.meter_id,
            "meter_name": (names or {}).get(m.meter_id),
            "meter_type": m.meter_type,
            "complete_months": months - m.incomplete_months,
            "estimated_months": m.incomplete_months,
            "months_with_readings": [f"{d:%Y-%m}" for d in m.months_with_readings],
            "full_months": [f"{d:%Y-%m}" for d in m.full_months],
            "covered_days": m.covered_days,
            "period_days": m.period_days,
            "readings": m.readings,
            "flagged_readings": m.flagged,
        }
        for m in sorted(energy.meters, key=lambda m: (m.meter_type, m.meter_id))
    ]
    return {"period": energy.period.as_dict(), "months": months, "meters": meters}


def _meter_names(session: Session, building_ids: Sequence[str]) -> dict[str, str | None]:
    meters = aggregates.meters_of(session, building_ids)
    return {m.id: m.name for by_id in meters.values() for m in by_id.values()}


def _current_entry(
    session: Session,
    building: Building,
    prop: Property,
    now: dt.datetime,
    *,
    benchmark: bool = True,
    water: bool = True,
) -> dict[str, Any]:
    return {
        "building": _building_dict(building),
        "property": _property_dict(prop),
        "coverage": coverage(
            aggregates.current(session, building.id).energy, _meter_names(session, [building.id])
        ),
        "benchmark": engine.building_result(session, building, now) if benchmark else None,
        "energy_kwh": engine.annual_energy_by_meter_type(session, building, now),
        "water_m3": engine.annual_water_m3(session, building, now) if water else None,
    }


def _period_entries(
    session: Session, pairs: Sequence[tuple[Building, Property]], period: Period
) -> list[dict[str, Any]]:
    """Entries with energy, water and emissions over `period` exactly (one query for energy)."""
    energy = aggregates.energy_in_periods(session, [b.id for b, _ in pairs], [period])
    names = _meter_names(session, [b.id for b, _ in pairs])
    entries = []
    for b, p in pairs:
        e = energy[b.id][0]
        kwh = dict(e.kwh_by_type) if e.has_data else {}
        year = emissions.reporting_year(period.start, period.end)
        kg = {m: v * emissions.emission_factor(p.country, m, year) for m, v in kwh.items()}
        entries.append(
            {
                "building": _building_dict(b),
                "property": _property_dict(p),
                # Only the figures the period defines; no scores (those are the engine's current).
                "benchmark": {
                    "reporting_period": period.as_dict(),
                    "eui_kwh_m2": sum(kwh.values()) / b.gfa_m2 if kwh else None,
                    "carbon_intensity_kgco2e_m2": sum(kg.values()) / b.gfa_m2 if kwh else None,
                    "data_quality_grade": b.data_quality_grade,
                    "scores": [],
                },
                "energy_kwh": kwh,
                "coverage": coverage(e, names),
                "kgco2e_by_type": kg,
                "water_m3": aggregates.annual_water(session, b.id, period),
            }
        )
    return entries


def build_document(session: Session, report: Report, now: dt.datetime) -> Document:
    """Gather the report's inputs and build its Document (raises NoData or
    compliance.ComplianceError when it cannot be made)."""
    info = report_dict(report, now)
    org = _organisation(session, report.org_id)
    period = Period(report.period_start, report.period_end)

    if report.building_id is not None:
        building = session.get(Building, report.building_id)
        if building is None:
            raise NoData(f"Building {report.building_id} no longer exists.")
        prop = session.get(Property, building.property_id)
        assert prop is not None
        if report.type == "benchmark_certificate":
            entry = _current_entry(session, building, prop, now)
            history = engine.building_history(session, building, now, periods=4)
            assessed = (entry["benchmark"] or {}).get("reporting_period") or {}
            _require_overlap(assessed, report)
            return benchmark_certificate(info, org, entry, history)
        if report.type in ("compliance_ll97", "compliance_berdo"):
            # Checked again here (the API checks at request time) so no document ever compares a
            # part year or another city's building with the law (docs/decisions.md CS3, CS4).
            check_compliance_request(
                report.type, info, _building_dict(building), _property_dict(prop)
            )
        entry = _period_entries(session, [(building, prop)], period)[0]
        if not has_energy(entry):
            raise NoData(
                f"The building has no energy data between {report.period_start} and "
                f"{report.period_end}."
            )
        if report.type == "compliance_ll97":
            return compliance_ll97(info, org, entry)
        return compliance_berdo(info, org, entry)

    pairs = scoped_buildings(
        session, report.org_id, report.environment, info["filters"], report.property_access
    )
    if report.type == "compliance_esg":
        return compliance_esg(info, org, _period_entries(session, pairs, period))
    if report.type == "portfolio_summary":
        entries = [_current_entry(session, b, p, now) for b, p in pairs]
        portfolio = None
        if pairs:
            portfolio = engine.portfolio_result(
                session,
                report.org_id,
                report.environment,
                now,
                use_type=info["filters"].get("type"),
                country=info["filters"].get("country"),
                property_ids=report.property_access,
            )
        return portfolio_summary(info, org, entries, portfolio)
    template = report.template or {}
    columns = set(template.get("columns") or [])
    entries = [
        _current_entry(
            session,
            b,
            p,
            now,
            benchmark=bool(columns & _BENCHMARK_COLUMNS),
            water=bool(columns & _WATER_COLUMNS),
        )
        for b, p in pairs
    ]
    return custom(info, org, template, entries)


def _require_overlap(assessed: dict[str, Any], report: Report) -> None:
    start, end = assessed.get("start"), assessed.get("end")
    if not start or not end:
        raise NoData("The building has no energy data.")
    s, e = dt.date.fromisoformat(str(start)), dt.date.fromisoformat(str(end))
    if e < report.period_start or s > report.period_end:
        raise NoData(
            f"The building's current 12-month assessment period ({s} to {e}) does not overlap "
            f"the requested period ({report.period_start} to {report.period_end})."
        )
