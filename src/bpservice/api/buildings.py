"""Buildings of a property: list, get, create, update; and the lock on their readings."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bpservice.api.deps import (
    Clock,
    Pagination,
    ReadSession,
    WriteSession,
    load_building,
    load_property,
    paginate,
    require,
)
from bpservice.api.responses import read_responses, write_responses
from bpservice.api.schemas import (
    BuildingCreate,
    BuildingDetail,
    BuildingSummary,
    BuildingUpdate,
    Data,
    LockOut,
    LockRequest,
    Page,
)
from bpservice.api.views import building_detail, building_summary
from bpservice.auth import Principal
from bpservice.db.models import Building, Property, Reading
from bpservice.domain.buildings import use_types_problem
from bpservice.errors import APIError
from bpservice.events import record_event
from bpservice.ids import new_id

router = APIRouter(tags=["buildings"])

Read = Annotated[Principal, Depends(require("properties:read"))]
Write = Annotated[Principal, Depends(require("properties:write", write=True))]
LockWrite = Annotated[Principal, Depends(require("meters:write", write=True))]
MeterRead = Annotated[Principal, Depends(require("meters:read"))]


def _check_use_types(gfa_m2: float, use_types: list[dict] | None) -> None:
    problem = use_types_problem(gfa_m2, use_types)
    if problem:
        raise APIError(
            422,
            "use_types_gfa_mismatch",
            f"{problem}; the sum of use_types[].gfa_m2 must equal gfa_m2.",
            details=[{"field": "use_types", "code": "use_types_gfa_mismatch", "message": problem}],
        )


def _writable_property(session: Session, principal: Principal, property_id: str) -> Property:
    prop = load_property(session, principal, property_id)
    if prop.status == "archived":
        raise APIError(
            409, "property_archived", "The property is archived; its buildings cannot change."
        )
    return prop


@router.get(
    "/v1/properties/{property_id}/buildings",
    response_model=Page[BuildingSummary],
    responses=read_responses(404, 422),
)
def list_buildings(
    property_id: str, principal: Read, session: ReadSession, pages: Pagination
) -> dict:
    load_property(session, principal, property_id)
    query = (
        select(Building)
        .where(Building.property_id == property_id)
        .order_by(Building.created_at, Building.id)
    )
    rows, total = paginate(session, query, pages)
    return {"data": [building_summary(b) for b in rows], "meta": pages.meta(total)}


@router.get(
    "/v1/properties/{property_id}/buildings/{building_id}",
    response_model=Data[BuildingDetail],
    responses=read_responses(404),
)
def get_building(property_id: str, building_id: str, principal: Read, session: ReadSession) -> dict:
    load_property(session, principal, property_id)
    building = load_building(session, principal, building_id, property_id)
    return {"data": building_detail(session, building)}


@router.post(
    "/v1/properties/{property_id}/buildings",
    status_code=201,
    response_model=Data[BuildingDetail],
    responses=write_responses(201, 400, 404, 409, 422),
)
def create_building(
    property_id: str, body: BuildingCreate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    prop = _writable_property(session, principal, property_id)
    use_types = [u.model_dump() for u in body.use_types] if body.use_types is not None else None
    _check_use_types(body.gfa_m2, use_types)
    now = clock()
    building = Building(
        id=new_id("building"),
        org_id=principal.org_id,
        environment=principal.environment,
        property_id=prop.id,
        name=body.name,
        primary_use_type=body.primary_use_type,
        use_types=use_types,
        gfa_m2=body.gfa_m2,
        nla_m2=body.nla_m2,
        year_built=body.year_built,
        floors=body.floors,
        occupancy_pct=body.occupancy_pct,
        operating_hours_week=body.operating_hours_week,
        renewable_capacity_kw=body.renewable_capacity_kw,
        car_park_area_m2=body.car_park_area_m2,
        data_quality_grade="F",
        status="active",
        created_at=now,
        updated_at=now,
    )
    session.add(building)
    prop.updated_at = now
    session.flush()
    view = building_detail(session, building)
    record_event(
        session,
        org_id=principal.org_id,
        environment=principal.environment,
        type="building.created",
        data={"property_id": prop.id, "building": view},
        now=now,
    )
    return {"data": view}


@router.patch(
    "/v1/properties/{property_id}/buildings/{building_id}",
    response_model=Data[BuildingDetail],
    responses=write_responses(200, 400, 404, 409, 422),
)
def update_building(
    property_id: str,
    building_id: str,
    body: BuildingUpdate,
    principal: Write,
    session: WriteSession,
    clock: Clock,
) -> dict:
    _writable_property(session, principal, property_id)
    building = load_building(session, principal, building_id, property_id)
    fields = body.model_dump(exclude_unset=True)
    gfa = fields.get("gfa_m2", building.gfa_m2)
    use_types = fields.get("use_types", building.use_types)
    _check_use_types(gfa, use_types)
    changed = [name for name, value in fields.items() if getattr(building, name) != value]
    now = clock()
    for name in changed:
        setattr(building, name, fields[name])
    if changed:
        building.updated_at = now
        session.flush()
    view = building_detail(session, building)
    if changed:
        record_event(
            session,
            org_id=principal.org_id,
            environment=principal.environment,
            type="building.updated",
            data={"property_id": property_id, "building": view, "changed_fields": changed},
            now=now,
        )
    return {"data": view}


def _lock_view(session: Session, building: Building) -> dict:
    locked = 0
    if building.locked_through is not None:
        locked = (
            session.scalar(
                select(func.count(Reading.id)).where(
                    Reading.building_id == building.id, Reading.end_date <= building.locked_through
                )
            )
            or 0
        )
    return {
        "building_id": building.id,
        "locked_through": building.locked_through,
        "locked_at": building.locked_at,
        "locked_reading_count": locked,
    }


@router.get(
    "/v1/buildings/{building_id}/lock",
    response_model=Data[LockOut],
    responses=read_responses(404),
    tags=["readings"],
)
def get_lock(building_id: str, principal: MeterRead, session: ReadSession) -> dict:
    return {"data": _lock_view(session, load_building(session, principal, building_id))}


@router.post(
    "/v1/buildings/{building_id}/lock",
    response_model=Data[LockOut],
    responses=write_responses(200, 400, 404, 409, 422),
    tags=["readings"],
    summary="Lock the building's readings through a date",
    description="Readings that end on or before `locked_through` can no longer be deleted, and no "
    "reading can be submitted into the locked period (403 building_locked). A lock only moves "
    "forward: an earlier date than the current lock is refused with 409 lock_regression.",
)
def lock_readings(
    building_id: str, body: LockRequest, principal: LockWrite, session: WriteSession, clock: Clock
) -> dict:
    building = load_building(session, principal, building_id)
    if building.locked_through is not None and body.locked_through < building.locked_through:
        raise APIError(
            409,
            "lock_regression",
            f"Readings are already locked through {building.locked_through}; a lock cannot move back.",
            locked_through=building.locked_through,
        )
    building.locked_through = body.locked_through
    building.locked_at = clock()
    session.flush()
    return {"data": _lock_view(session, building)}
