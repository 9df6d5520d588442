"""The benchmark engine's public interface: a building's result, its history, the portfolio
aggregate, and the annual figures reports need. Everything here reads; `recalculator.py` writes.

What is stored and what is computed on read (docs/decisions.md (benchmarks section)):
- stored: monthly aggregates per meter, and per building the current period's annualised kWh by
  meter type and data-quality grade (`benchmark_summaries`, used for peers and the portfolio);
- computed on read: a building's own result (from at most 12 x meters monthly rows, so a meter
  added since the last recalculation, or a new floor area or country, shows at once), carbon
  (factors depend on the country), the svc percentile (peers change without this building
  changing), pathways (the target depends on the current year).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bpservice.benchmarking import aggregates as agg
from bpservice.db.benchmark_models import BenchmarkSummary
from bpservice.db.models import Building, Property
from bpservice.domain import benchmarks as bm
from bpservice.domain import emissions, epc, pathways
from bpservice.domain.data_quality import GRADES, at_least
from bpservice.domain.tables import regional_schemes

STANDARDS = ("svc", "energy_rating", "eu_epc", "decarbonisation_pathway", "regional_rating")
HISTORY_STANDARDS = ("svc", "energy_rating")
MAX_HISTORY_PERIODS = 20


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _country(session: Session, building: Building) -> str:
    return session.scalar(select(Property.country).where(Property.id == building.property_id))


def peer_group_name(use_type: str, country: str) -> str:
    return f"{use_type}:{country}"


def _peer_euis(
    session: Session, building: Building, country: str, exclude_self: bool = True
) -> dict[str, float]:
    """Other buildings of the peer group (same use type and country, same organisation and
    environment, property not archived) -> their current EUI, from stored summaries."""
    query = (
        select(Building.id, Building.gfa_m2, BenchmarkSummary.kwh_by_type)
        .join(Property, Property.id == Building.property_id)
        .join(BenchmarkSummary, BenchmarkSummary.building_id == Building.id)
        .where(
            Building.org_id == building.org_id,
            Building.environment == building.environment,
            Building.primary_use_type == building.primary_use_type,
            Property.country == country,
            Property.status != "archived",
        )
    )
    if exclude_self:
        query = query.where(Building.id != building.id)
    return {bid: sum(kwh.values()) / gfa for bid, gfa, kwh in session.execute(query).all() if kwh}


@dataclass(frozen=True)
class Figures:
    """A building's numbers for one period, before they become a response."""

    period: bm.Period | None
    kwh_by_type: dict[str, float] | None
    eui: float | None
    carbon: float | None
    source_eui: float | None
    twelve_full_months: bool


def _figures(energy: bm.EnergyPeriod | None, gfa_m2: float, country: str) -> Figures:
    if energy is None or not energy.has_data:
        return Figures(energy.period if energy else None, None, None, None, None, False)
    kwh = energy.kwh_by_type
    return Figures(
        energy.period,
        kwh,
        energy.site_kwh / gfa_m2,
        emissions.annual_kgco2e(
            kwh, country, emissions.reporting_year(energy.period.start, energy.period.end)
        )
        / gfa_m2,
        emissions.annual_source_kwh(kwh, country) / gfa_m2,
        energy.twelve_full_months,
    )


def use_details(building: Building) -> bm.UseDetails:
    """The Portfolio Manager use details the service holds for a building: floor area and weekly
    operating hours (workers, computers, percent cooled and degree days are not in the spec)."""
    return bm.UseDetails(gfa_m2=building.gfa_m2, weekly_hours=building.operating_hours_week)


def _scores(
    session: Session,
    building: Building,
    country: str,
    figures: Figures,
    calculated_at: dt.datetime,
    now: dt.datetime,
) -> list[dict[str, Any]]:
    stamp = calculated_at
    peers = _peer_euis(session, building, country)
    svc = bm.svc_score(figures.eui, list(peers.values()))
    rating = bm.energy_rating(
        figures.source_eui,
        building.primary_use_type,
        figures.twelve_full_months,
        country,
        use_details(building),
    )
    scores: list[dict[str, Any]] = [
        {
            "standard": "svc",
            "score": svc.score,
            "percentile": svc.percentile,
            "peer_group": peer_group_name(building.primary_use_type, country),
            "peer_count": svc.peer_count,
            "calculated_at": stamp,
        },
        {
            "standard": "energy_rating",
            "score": rating.score,
            "eligible": rating.eligible,
            "certification_eligible": rating.certification_eligible,
            # Extra fields (docs/decisions.md CS5): the method and whether the figure is
            # only indicative, with the reason.
            "method": rating.method,
            "indicative": rating.indicative,
            "indicative_reason": rating.indicative_reason,
            # The source EUI at which this building would score 50 (the median of the score's
            # own reference for a building like it; docs/methods.md).
            "median_source_eui_kwh_m2": None
            if rating.median_source_eui_kwh_m2 is None
            else round(rating.median_source_eui_kwh_m2, 2),
            "calculated_at": stamp,
        },
    ]
    grade = epc.epc_grade(
        country,
        use_type=building.primary_use_type,
        gfa_m2=building.gfa_m2,
        kwh_by_type=figures.kwh_by_type,
        carbon_intensity=figures.carbon,
        period_end=figures.period.end if figures.period else None,
    )
    if grade is not None:
        scores.append(
            {
                "standard": "eu_epc",
                "grade": grade.grade,
                "country_methodology": grade.country_methodology,
                "calculated_at": stamp,
            }
        )
    pathway = pathways.pathway_for(country, building.primary_use_type)
    stranding_15 = stranding_2 = None
    if figures.carbon is not None and figures.period is not None:
        stranding_15 = pathways.stranding_year(figures.carbon, pathway, figures.period.end.year)
        stranding_2 = pathways.stranding_year(
            figures.carbon, pathway, figures.period.end.year, "2c"
        )
    scores.append(
        {
            "standard": "decarbonisation_pathway",
            "stranding_year_1_5c": stranding_15,
            "stranding_year_2c": stranding_2,
            "current_intensity_kgco2e_m2": _r(figures.carbon),
            "target_intensity_kgco2e_m2": _r(pathway.value(now.year)),
            "pathway": pathway.name,
            "calculated_at": stamp,
        }
    )
    scores.append(_regional(building, country, figures, stamp))
    return scores


def _regional(
    building: Building, country: str, figures: Figures, stamp: dt.datetime
) -> dict[str, Any]:
    scheme = regional_schemes().get(country)
    if scheme is None:
        return {
            "standard": "regional_rating",
            "applicable": False,
            "reason": f"No regional rating scheme is modelled for country {country}; "
            "the service rates buildings in GB (UK Display Energy Certificate).",
        }
    rating = (
        None
        if figures.carbon is None
        else epc.operational_rating(figures.carbon, building.primary_use_type, country)
    )
    bands = epc.epc_scales()[country]
    return {
        "standard": "regional_rating",
        "applicable": True,
        "scheme": scheme["scheme"],
        "score": rating,
        "grade": None if rating is None else epc.band_for(rating, bands.bands, bands.strict),
        "calculated_at": stamp,
    }


def _calculated_at(session: Session, building: Building) -> dt.datetime:
    summary = session.get(BenchmarkSummary, building.id)
    return summary.calculated_at if summary is not None else building.created_at


def result_from(
    session: Session,
    building: Building,
    current: agg.Current,
    calculated_at: dt.datetime,
    now: dt.datetime,
) -> dict[str, Any]:
    country = _country(session, building)
    figures = _figures(current.energy, building.gfa_m2, country)
    period = figures.period.as_dict() if figures.period else {"start": None, "end": None}
    return {
        "building_id": building.id,
        "reporting_period": period,
        "data_quality_grade": current.quality.grade,
        "eui_kwh_m2": _r(figures.eui),
        "carbon_intensity_kgco2e_m2": _r(figures.carbon),
        # Not in the spec's example; recorded in docs/decisions.md (CS6).
        "source_eui_kwh_m2": _r(figures.source_eui),
        "scores": _scores(session, building, country, figures, calculated_at, now),
    }


# --- the public interface ------------------------------------------------------------------------


def building_result(session: Session, building: Building, now: dt.datetime) -> dict[str, Any]:
    """Exactly the `data` object of GET /v1/buildings/{id}/benchmarks."""
    return result_from(
        session, building, agg.current(session, building.id), _calculated_at(session, building), now
    )


def building_history(
    session: Session,
    building: Building,
    now: dt.datetime,
    periods: int = 4,
    standard: str | None = None,
) -> list[dict[str, Any]]:
    """12-month periods, newest first: the current reporting period, then each year before it,
    back to the first month with data. The newest entry equals the current result; older
    entries compare the building with its peers over the same months."""
    periods = max(1, min(periods, MAX_HISTORY_PERIODS))
    cur = agg.current(session, building.id)
    first = agg.first_energy_month(session, building.id)
    if cur.energy is None or first is None:
        return []
    result = result_from(session, building, cur, _calculated_at(session, building), now)
    by_standard = {s["standard"]: s for s in result["scores"]}
    windows = bm.history_periods(cur.energy.period, periods, first)
    country = _country(session, building)
    want_svc = standard in (None, "svc")
    want_rating = standard in (None, "energy_rating")
    history = [
        {
            "period": windows[0].as_dict(),
            "eui_kwh_m2": result["eui_kwh_m2"],
            "svc_score": by_standard["svc"]["score"] if want_svc else None,
            "energy_rating_score": by_standard["energy_rating"]["score"] if want_rating else None,
        }
    ]
    older = windows[1:]
    if not older:
        return history
    peer_ids = list(_peer_euis(session, building, country)) if want_svc else []
    energy = agg.energy_in_periods(session, [building.id, *peer_ids], older)
    gfa = dict(
        session.execute(
            select(Building.id, Building.gfa_m2).where(Building.id.in_([building.id, *peer_ids]))
        ).all()
    )
    for i, window in enumerate(older):
        own = _figures(energy[building.id][i], building.gfa_m2, country)
        entry: dict[str, Any] = {
            "period": window.as_dict(),
            "eui_kwh_m2": _r(own.eui),
            "svc_score": None,
            "energy_rating_score": None,
        }
        if want_svc:
            others = [e.site_kwh / gfa[p] for p in peer_ids if (e := energy[p][i]).has_data]
            entry["svc_score"] = bm.svc_score(own.eui, others).score
        if want_rating:
            entry["energy_rating_score"] = bm.energy_rating(
                own.source_eui,
                building.primary_use_type,
                own.twelve_full_months,
                country,
                use_details(building),
            ).score
        history.append(entry)
    return history


def portfolio_result(
    session: Session,
    org_id: str,
    environment: str,
    now: dt.datetime,
    *,
    use_type: str | None = None,
    country: str | None = None,
    min_grade: str | None = None,
    property_ids: Collection[str] | None = None,
) -> dict[str, Any]:
    """The GFA-weighted aggregate over the environment's buildings on active properties.
    `property_ids` restricts it to the properties a caller may see (None: all)."""
    rows = session.execute(
        select(
            Building,
            Property.country,
            BenchmarkSummary.kwh_by_type,
            BenchmarkSummary.period_start,
            BenchmarkSummary.period_end,
        )
        .join(Property, Property.id == Building.property_id)
        .outerjoin(BenchmarkSummary, BenchmarkSummary.building_id == Building.id)
        .where(
            Building.org_id == org_id,
            Building.environment == environment,
            Property.status != "archived",
        )
        .order_by(Building.id)
    ).all()
    groups: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    site: dict[str, tuple[float, float]] = {}  # building -> (site kWh, kgCO2e), annual
    for building, ctry, kwh, start, end in rows:
        if kwh:
            # Each building's own reporting year picks its factor set, as in its own result.
            year = emissions.reporting_year(start, end) if start and end else None
            site[building.id] = (sum(kwh.values()), emissions.annual_kgco2e(kwh, ctry, year))
            groups[(building.primary_use_type, ctry)][building.id] = (
                site[building.id][0] / building.gfa_m2
            )
    selected = [
        (b, ctry)
        for b, ctry, *_ in rows
        if (use_type is None or b.primary_use_type == use_type)
        and (country is None or ctry == country)
        and (min_grade is None or at_least(b.data_quality_grade, min_grade))
        and (property_ids is None or b.property_id in property_ids)
    ]
    total_gfa = sum(b.gfa_m2 for b, _ in selected)
    with_data = [(b, ctry) for b, ctry in selected if b.id in site]
    gfa_with_data = sum(b.gfa_m2 for b, _ in with_data)
    svc_weighted, svc_gfa = 0.0, 0.0
    for b, ctry in with_data:
        group = groups[(b.primary_use_type, ctry)]
        others = [e for bid, e in group.items() if bid != b.id]
        score = bm.svc_score(group[b.id], others).score
        if score is not None:
            svc_weighted += score * b.gfa_m2
            svc_gfa += b.gfa_m2
    distribution = dict.fromkeys(GRADES, 0)
    for b, _ in selected:
        distribution[b.data_quality_grade] = distribution.get(b.data_quality_grade, 0) + 1
    return {
        "building_count": len(selected),
        "total_gfa_m2": _r(total_gfa),
        "weighted_eui_kwh_m2": _r(sum(site[b.id][0] for b, _ in with_data) / gfa_with_data)
        if gfa_with_data
        else None,
        "weighted_carbon_intensity_kgco2e_m2": _r(
            sum(site[b.id][1] for b, _ in with_data) / gfa_with_data
        )
        if gfa_with_data
        else None,
        "weighted_svc_score": _r(svc_weighted / svc_gfa, 1) if svc_gfa else None,
        "grade_distribution": distribution,
    }


def annual_energy_by_meter_type(
    session: Session, building: Building, now: dt.datetime
) -> dict[str, float]:
    """Annualised site kWh per meter type over the current reporting period ({} without data)."""
    energy = agg.current(session, building.id).energy
    return dict(energy.kwh_by_type) if energy is not None else {}


def annual_water_m3(session: Session, building: Building, now: dt.datetime) -> float | None:
    """Annualised water in m³ over the reporting period (the water meters' own latest 12 months
    when the building has no energy data); None without water data."""
    energy = agg.current(session, building.id).energy
    return agg.annual_water(session, building.id, energy.period if energy else None)
