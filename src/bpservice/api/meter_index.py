"""Every meter of the organisation in one list (decisions C2): an importer that knows the meter
ids a file names finds their buildings in a few list calls instead of walking properties →
buildings → meters.

    GET /v1/meters?filter[id]=mtr_a,mtr_b&page=1&per_page=200

The spec lists meters per building only; this list adds nothing a caller could not already read
(the same items, the same scope, the same property access), only fewer requests."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy import select

from bpservice.api.deps import Pagination, ReadSession, paginate, require
from bpservice.api.responses import read_responses
from bpservice.api.schemas import MeterOut, Page
from bpservice.api.views import meter_view
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
        ),
    ] = None,
    filter_building_id: Annotated[str | None, Query(alias="filter[building_id]")] = None,
) -> dict:
    query = (
        select(Meter)
        .join(Building, Building.id == Meter.building_id)
        .where(Meter.org_id == principal.org_id, Meter.environment == principal.environment)
    )
    if principal.property_access is not None:
        query = query.where(Building.property_id.in_(principal.property_access))
    if filter_id is not None:
        ids = [i.strip() for i in filter_id.split(",") if i.strip()]
        if not ids or len(ids) > MAX_IDS:
            raise validation_error(
                f"filter[id] takes 1 to {MAX_IDS} comma-separated meter ids", "filter[id]"
            )
        query = query.where(Meter.id.in_(ids))
    if filter_building_id is not None:
        query = query.where(Meter.building_id == filter_building_id)
    rows, total = paginate(session, query.order_by(Meter.created_at, Meter.id), pages)
    return {"data": [meter_view(m) for m in rows], "meta": pages.meta(total)}
