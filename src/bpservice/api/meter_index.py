"""Every meter of the organisation in one list (decisions C2): an importer that knows the meter
ids a file names finds their buildings in a few list calls instead of walking properties →
buildings → meters.

    GET /v1/meters?filter[id]=mtr_a,mtr_b&page=1&per_page=200

The spec lists meters per building only; this list adds nothing a caller could not already read
(the same items, the same scope, the same property access), only fewer requests."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy import select

from bpservice.api.deps import Pagination, ReadSession, json_page, paginate, require
from bpservice.api.responses import read_responses
from bpservice.api.schemas import MeterOut, Page
from bpservice.api.types import ids_pattern
from bpservice.auth import Principal
from bpservice.db.models import Building, Meter
from bpservice.errors import validation_error

router = APIRouter(prefix="/v1/meters", tags=["meters"])

Read = Annotated[Principal, Depends(require("meters:read"))]

MAX_IDS = 200


@router.get("", response_model=Page[MeterOut], responses=read_responses(422))
def list_all_meters(
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    filter_id: Annotated[
        str | None,
        Query(
            alias="filter[id]",
            description=f"Comma-separated meter ids (at most {MAX_IDS}); unknown ids are left out",
            json_schema_extra={"pattern": ids_pattern(MAX_IDS)},
        ),
    ] = None,
    filter_building_id: Annotated[str | None, Query(alias="filter[building_id]")] = None,
) -> Response:
    # Table columns, not ORM objects (as GET /v1/readings): a page of 200 meters is read-only.
    meter = Meter.__table__.c
    query = (
        select(*(meter[name] for name in _METER_COLUMNS))
        .join_from(Meter.__table__, Building.__table__, Building.id == meter.building_id)
        .where(meter.org_id == principal.org_id, meter.environment == principal.environment)
    )
    if principal.property_access is not None:
        query = query.where(Building.property_id.in_(principal.property_access))
    if filter_id is not None:
        ids = [i.strip() for i in filter_id.split(",") if i.strip()]
        if not ids or len(ids) > MAX_IDS:
            raise validation_error(
                f"filter[id] takes 1 to {MAX_IDS} comma-separated meter ids", "filter[id]"
            )
        query = query.where(meter.id.in_(ids))
    if filter_building_id is not None:
        query = query.where(meter.building_id == filter_building_id)
    order = (meter.created_at, meter.id)
    rows, total = paginate(session, query.order_by(*order), pages, rows=True)
    # The same JSON as `meter_view` through MeterOut (tests/service/test_meter_index.py).
    return json_page([dict(zip(_METER_COLUMNS, row, strict=True)) for row in rows], pages, total)


# `meter_view`'s fields, in its order.
_METER_COLUMNS = (
    "id",
    "building_id",
    "type",
    "name",
    "unit",
    "source",
    "provider",
    "status",
    "latest_reading_date",
    "created_at",
)
