"""Properties: list with filters and sort, get, create, update, archive."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from sqlalchemy import Select, bindparam, func, select

from bpservice.api.deps import (
    Clock,
    Pagination,
    ReadSession,
    WriteSession,
    counted_page,
    counted_page_of,
    load_property,
    require,
)
from bpservice.api.responses import read_responses, write_responses
from bpservice.api.schemas import (
    Data,
    Page,
    PropertyArchived,
    PropertyCreate,
    PropertyCreated,
    PropertyDetail,
    PropertySummary,
    PropertyUpdate,
)
from bpservice.api.types import Country, PropertyType
from bpservice.api.views import property_created, property_detail, property_summary
from bpservice.auth import Principal
from bpservice.db.models import Building, Property, User
from bpservice.errors import APIError, validation_error
from bpservice.events import record_event
from bpservice.ids import new_id

router = APIRouter(prefix="/v1/properties", tags=["properties"])

SORTABLE = {
    "name": Property.name,
    "created_at": Property.created_at,
    "updated_at": Property.updated_at,
}

Read = Annotated[Principal, Depends(require("properties:read"))]
Write = Annotated[Principal, Depends(require("properties:write", write=True))]


@router.get("", response_model=Page[PropertySummary], responses=read_responses(422))
def list_properties(
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    filter_type: Annotated[PropertyType | None, Query(alias="filter[type]")] = None,
    filter_country: Annotated[Country | None, Query(alias="filter[country]")] = None,
    filter_status: Annotated[
        str | None, Query(alias="filter[status]", pattern="^(active|archived)$")
    ] = None,
    sort: Annotated[
        str,
        Query(
            pattern="^-?(name|created_at|updated_at)$",
            description="name, created_at or updated_at; a leading - sorts descending",
        ),
    ] = "created_at",
) -> dict:
    if sort.removeprefix("-") not in SORTABLE:
        raise validation_error(
            f"sort must be one of {', '.join(SORTABLE)} (optionally with a leading -)", "sort"
        )
    filters = {"type": filter_type, "country": filter_country, "status": filter_status}
    binds = {name: value for name, value in filters.items() if value}
    statement = _list_page(sort, tuple(binds), principal.property_access is not None)
    binds |= {"org_id": principal.org_id, "environment": principal.environment}
    if principal.property_access is not None:
        binds["access"] = sorted(principal.property_access)
    with session:  # closed here, in the endpoint's thread (deps: no trip to another)
        rows, total = counted_page(session, statement, binds, pages)
    return {
        "data": [property_summary(p, (p.building_count, float(p.total_gfa or 0))) for p in rows],
        "meta": pages.meta(total),
    }


_SUMMARY_COLUMNS = (
    Property.id,
    Property.name,
    Property.street,
    Property.city,
    Property.state,
    Property.postal_code,
    Property.country,
    Property.type,
    Property.internal_ref,
    Property.status,
    Property.created_at,
    Property.updated_at,
    # building_count and total_gfa_m2, from the buildings themselves (views.building_totals)
    select(func.count(Building.id))
    .where(Building.property_id == Property.id)
    .scalar_subquery()
    .label("building_count"),
    select(func.sum(Building.gfa_m2))
    .where(Building.property_id == Property.id)
    .scalar_subquery()
    .label("total_gfa"),
)


@functools.cache
def _list_page(sort: str, filters: tuple[str, ...], restricted: bool) -> Select[Any]:
    """The list's page, its total and its buildings' totals in one query (deps.counted_page),
    built once per shape: the sort, which filters are given, whether access is restricted."""
    ids = select(Property.id).where(
        Property.org_id == bindparam("org_id"),
        Property.environment == bindparam("environment"),
    )
    if restricted:
        ids = ids.where(Property.id.in_(bindparam("access", expanding=True)))
    for name in filters:
        ids = ids.where(getattr(Property, name) == bindparam(name))
    column = SORTABLE[sort.removeprefix("-")]
    order = [column.desc(), Property.id.desc()] if sort.startswith("-") else [column, Property.id]
    return counted_page_of(ids, order, *_SUMMARY_COLUMNS)


@router.get("/{property_id}", response_model=Data[PropertyDetail], responses=read_responses(404))
def get_property(property_id: str, principal: Read, session: ReadSession) -> dict:
    return {"data": property_detail(session, load_property(session, principal, property_id))}


@router.post(
    "",
    status_code=201,
    response_model=Data[PropertyCreated],
    responses=write_responses(201, 400, 422),
)
def create_property(
    body: PropertyCreate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    now = clock()
    prop = Property(
        id=new_id("property"),
        org_id=principal.org_id,
        environment=principal.environment,
        name=body.name,
        street=body.address.street,
        city=body.address.city,
        state=body.address.state,
        postal_code=body.address.postal_code,
        country=body.address.country,
        latitude=body.address.latitude,
        longitude=body.address.longitude,
        type=body.type,
        internal_ref=body.internal_ref,
        status="active",
        created_at=now,
        updated_at=now,
    )
    session.add(prop)
    session.flush()
    if principal.property_access is not None:
        # A user limited to some properties keeps seeing what they create (docs/decisions.md D38).
        creator = session.get(User, principal.user_id)
        if creator is not None and creator.property_access is not None:
            creator.property_access = [*creator.property_access, prop.id]
    view = property_created(session, prop)
    record_event(
        session,
        org_id=principal.org_id,
        environment=principal.environment,
        type="property.created",
        data={"property": view},
        now=now,
    )
    return {"data": view}


@router.patch(
    "/{property_id}",
    response_model=Data[PropertyDetail],
    responses=write_responses(200, 400, 404, 409, 422),
)
def update_property(
    property_id: str, body: PropertyUpdate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    prop = load_property(session, principal, property_id)
    if prop.status == "archived":
        raise APIError(409, "property_archived", "An archived property cannot be changed.")
    changed: list[str] = []
    for name in ("name", "type", "internal_ref"):
        if name in body.model_fields_set and getattr(prop, name) != getattr(body, name):
            setattr(prop, name, getattr(body, name))
            changed.append(name)
    if body.address is not None:
        for name in body.address.model_fields_set:
            value = getattr(body.address, name)
            if getattr(prop, name) != value:
                setattr(prop, name, value)
                changed.append(f"address.{name}")
    now = clock()
    if changed:
        prop.updated_at = now
        session.flush()
    view = property_detail(session, prop)
    if changed:
        record_event(
            session,
            org_id=principal.org_id,
            environment=principal.environment,
            type="property.updated",
            data={"property": view, "changed_fields": changed},
            now=now,
        )
    return {"data": view}


@router.post(
    "/{property_id}/archive",
    response_model=Data[PropertyArchived],
    responses=write_responses(200, 404, 409),
)
def archive_property(
    property_id: str, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    prop = load_property(session, principal, property_id)
    if prop.status == "archived":
        raise APIError(
            409,
            "property_archived",
            "The property is already archived.",
            archived_at=prop.archived_at,
        )
    now = clock()
    prop.status = "archived"
    prop.archived_at = now
    prop.updated_at = now
    view = {"id": prop.id, "status": "archived", "archived_at": now}
    record_event(
        session,
        org_id=principal.org_id,
        environment=principal.environment,
        type="property.archived",
        data=view,
        now=now,
    )
    return {"data": view}
