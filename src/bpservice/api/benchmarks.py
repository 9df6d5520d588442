"""Benchmarks: a building's scores, their history, and the portfolio aggregate
(docs/decisions.md (benchmarks section)). The numbers come from `bpservice.benchmarking.engine`."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from bpservice.api.deps import Clock, ReadSession, load_building, require
from bpservice.api.responses import errors
from bpservice.api.schemas import Data
from bpservice.api.types import Country, UseType
from bpservice.auth import Principal
from bpservice.benchmarking import engine

router = APIRouter(tags=["benchmarks"])

Read = Annotated[Principal, Depends(require("benchmarks:read"))]
Grade = Literal["A", "B", "C", "D", "E", "F"]


class PeriodOut(BaseModel):
    start: dt.date | None
    end: dt.date | None


class SvcScore(BaseModel):
    standard: Literal["svc"]
    score: int | None
    percentile: float | None
    peer_group: str
    peer_count: int
    calculated_at: dt.datetime


class EnergyRatingScore(BaseModel):
    standard: Literal["energy_rating"]
    score: int | None
    eligible: bool
    certification_eligible: bool
    method: str | None = None
    indicative: bool | None = None
    indicative_reason: str | None = None
    # Where this building would score 50: the score model's own reference median (decisions CS5).
    median_source_eui_kwh_m2: float | None = None
    calculated_at: dt.datetime


class EuEpcScore(BaseModel):
    standard: Literal["eu_epc"]
    grade: str | None
    country_methodology: str
    calculated_at: dt.datetime


class PathwayScore(BaseModel):
    standard: Literal["decarbonisation_pathway"]
    stranding_year_1_5c: int | None
    stranding_year_2c: int | None
    current_intensity_kgco2e_m2: float | None
    target_intensity_kgco2e_m2: float | None
    pathway: str
    calculated_at: dt.datetime


class RegionalRating(BaseModel):
    standard: Literal["regional_rating"]
    applicable: Literal[True]
    scheme: str
    score: int | None
    grade: str | None
    calculated_at: dt.datetime


class RegionalNotApplicable(BaseModel):
    standard: Literal["regional_rating"]
    applicable: Literal[False]
    reason: str


Score = (
    SvcScore
    | EnergyRatingScore
    | EuEpcScore
    | PathwayScore
    | RegionalRating
    | RegionalNotApplicable
)


class BenchmarkResult(BaseModel):
    building_id: str
    reporting_period: PeriodOut
    data_quality_grade: Grade
    eui_kwh_m2: float | None
    carbon_intensity_kgco2e_m2: float | None
    source_eui_kwh_m2: float | None = None
    scores: list[Score]


class HistoryEntry(BaseModel):
    period: PeriodOut
    eui_kwh_m2: float | None
    svc_score: int | None
    energy_rating_score: int | None


class History(BaseModel):
    building_id: str
    history: list[HistoryEntry]


class GradeDistribution(BaseModel):
    A: int
    B: int
    C: int
    D: int
    E: int
    F: int


class Portfolio(BaseModel):
    building_count: int
    total_gfa_m2: float
    weighted_eui_kwh_m2: float | None
    weighted_carbon_intensity_kgco2e_m2: float | None
    weighted_svc_score: float | None
    grade_distribution: GradeDistribution


@router.get(
    "/v1/buildings/{building_id}/benchmarks",
    response_model=Data[BenchmarkResult],
    responses=errors(404),
    description="Scores over the reporting period (the latest 12 calendar months with data). "
    "A building without energy data answers 200 with null numbers and null scores.",
)
def get_benchmarks(building_id: str, principal: Read, session: ReadSession, clock: Clock) -> dict:
    building = load_building(session, principal, building_id)
    return {"data": engine.building_result(session, building, clock())}


@router.get(
    "/v1/buildings/{building_id}/benchmarks/history",
    response_model=Data[History],
    responses=errors(404, 422),
    description="12-month periods, newest first, back to the first month with data.",
)
def get_history(
    building_id: str,
    principal: Read,
    session: ReadSession,
    clock: Clock,
    periods: Annotated[
        int, Query(ge=1, le=engine.MAX_HISTORY_PERIODS, description="Periods (max 20)")
    ] = 4,
    standard: Annotated[
        Literal["svc", "energy_rating"] | None,
        Query(description="Only this standard's score (the other score field is null)"),
    ] = None,
) -> dict:
    building = load_building(session, principal, building_id)
    history = engine.building_history(session, building, clock(), periods, standard)
    return {"data": {"building_id": building.id, "history": history}}


@router.get(
    "/v1/benchmarks/portfolio",
    response_model=Data[Portfolio],
    responses=errors(422),
    description="GFA-weighted aggregate over the environment's buildings on active (not "
    "archived) properties; filter[data_quality_grade] is a minimum grade (C keeps A, B, C).",
)
def get_portfolio(
    principal: Read,
    session: ReadSession,
    clock: Clock,
    filter_type: Annotated[UseType | None, Query(alias="filter[type]")] = None,
    filter_country: Annotated[Country | None, Query(alias="filter[country]")] = None,
    filter_grade: Annotated[Grade | None, Query(alias="filter[data_quality_grade]")] = None,
) -> dict:
    data = engine.portfolio_result(
        session,
        principal.org_id,
        principal.environment,
        clock(),
        use_type=filter_type,
        country=filter_country,
        min_grade=filter_grade,
        property_ids=principal.property_access,
    )
    return {"data": data}
