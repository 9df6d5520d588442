"""Meters of a building, and their readings: single, batch, list, delete."""

from __future__ import annotations

import datetime as dt
import functools
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import ValidationError
from sqlalchemy import Select, bindparam, insert, select
from sqlalchemy.orm import Session

from bpservice.api.deps import (
    Clock,
    Pagination,
    ReadSession,
    Recalc,
    WriteSession,
    counted_page,
    counted_page_of,
    load_building,
    load_meter,
    paginate,
    require,
)
from bpservice.api.responses import read_responses, write_responses
from bpservice.api.schemas import (
    BatchRequest,
    BatchResult,
    Data,
    MeterCreate,
    MeterOut,
    Page,
    ReadingCreate,
    ReadingOut,
)
from bpservice.api.types import ISODate
from bpservice.api.views import meter_view, reading_view
from bpservice.auth import Principal
from bpservice.db.models import Building, Meter, Reading
from bpservice.db.readings import as_history, latest_end_date, readings_near
from bpservice.domain import readings as rules
from bpservice.domain.vocab import UNITS_BY_METER_TYPE, canonical_unit
from bpservice.errors import APIError, not_found, pydantic_details
from bpservice.events import record_event, record_events
from bpservice.ids import new_id
from bpservice.recalc import ReadingChange

router = APIRouter(prefix="/v1/buildings/{building_id}/meters", tags=["meters", "readings"])

Read = Annotated[Principal, Depends(require("meters:read"))]
Write = Annotated[Principal, Depends(require("meters:write", write=True))]

# A reading may end at most this many days after the service's "today" (time zones ahead of UTC).
FUTURE_GRACE_DAYS = 1


@router.get("", response_model=Page[MeterOut], responses=read_responses(404, 422))
def list_meters(building_id: str, principal: Read, session: ReadSession, pages: Pagination) -> dict:
    load_building(session, principal, building_id)
    query = (
        select(Meter).where(Meter.building_id == building_id).order_by(Meter.created_at, Meter.id)
    )
    rows, total = paginate(session, query, pages)
    return {"data": [meter_view(m) for m in rows], "meta": pages.meta(total)}


@router.get("/{meter_id}", response_model=Data[MeterOut], responses=read_responses(404))
def get_meter(building_id: str, meter_id: str, principal: Read, session: ReadSession) -> dict:
    with session:  # closed here, in the endpoint's thread (deps: no trip to another)
        return {"data": meter_view(load_meter(session, principal, building_id, meter_id))}


@router.post(
    "",
    status_code=201,
    response_model=Data[MeterOut],
    responses=write_responses(201, 400, 404, 422),
)
def create_meter(
    building_id: str, body: MeterCreate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    building = load_building(session, principal, building_id)
    unit = canonical_unit(body.type, body.unit)
    if unit is None:
        allowed = ", ".join(UNITS_BY_METER_TYPE[body.type])
        message = f"{body.unit!r} is not a unit for a {body.type} meter; use one of: {allowed}."
        raise APIError(
            422,
            "invalid_unit",
            message,
            details=[{"field": "unit", "code": "invalid_unit", "message": message}],
            allowed_units=list(UNITS_BY_METER_TYPE[body.type]),
        )
    meter = Meter(
        id=new_id("meter"),
        org_id=principal.org_id,
        environment=principal.environment,
        building_id=building.id,
        type=body.type,
        name=body.name,
        unit=unit,
        source=body.source,
        provider=body.provider,
        status="active",
        created_at=clock(),
    )
    session.add(meter)
    session.flush()
    return {"data": meter_view(meter)}


def _writable_meter(
    session: Session, principal: Principal, building_id: str, meter_id: str
) -> tuple[Meter, Building]:
    building = load_building(session, principal, building_id)
    # Row lock on PostgreSQL; SQLite write transactions are already serialised (BEGIN IMMEDIATE).
    meter = session.scalars(
        select(Meter).where(Meter.id == meter_id).with_for_update()
    ).one_or_none()
    if meter is None or meter.building_id != building.id:
        raise not_found("meter", meter_id)
    return meter, building


def _store(
    session: Session,
    principal: Principal,
    meter: Meter,
    building: Building,
    accepted: list[tuple[int, ReadingCreate]],
    nearby: list[tuple[str, dt.date, dt.date, float]],
    now: dt.datetime,
    recalc: Recalc,
) -> list[dict[str, Any]]:
    """Insert accepted readings with their anomaly flags, events and the meter's latest date."""
    history = rules.History(
        as_history(nearby)
        + [rules.PastReading(r.start_date, r.end_date, r.consumption) for _, r in accepted]
    )
    rows = []
    for _, r in accepted:
        flags = history.flags(r.consumption, rules.Period(r.start_date, r.end_date))
        rows.append(
            {
                "id": new_id("reading"),
                "meter_id": meter.id,
                "building_id": building.id,
                "org_id": principal.org_id,
                "environment": principal.environment,
                "start_date": r.start_date,
                "end_date": r.end_date,
                "consumption": r.consumption,
                "unit": meter.unit,
                "cost": r.cost,
                "cost_currency": r.cost_currency,
                "demand_kw": r.demand_kw,
                "source": "api",
                "anomaly_flags": flags,
                "created_at": now,
            }
        )
    if not rows:
        return []
    session.execute(insert(Reading), rows)
    record_events(
        session,
        org_id=principal.org_id,
        environment=principal.environment,
        type="meter.reading.created",
        datas=[
            {
                "building_id": building.id,
                "meter_id": meter.id,
                "reading": {
                    "id": row["id"],
                    "start_date": row["start_date"].isoformat(),
                    "end_date": row["end_date"].isoformat(),
                    "consumption": row["consumption"],
                    "unit": row["unit"],
                },
            }
            for row in rows
        ],
        now=now,
    )
    newest = max(row["end_date"] for row in rows)
    if meter.latest_reading_date is None or newest > meter.latest_reading_date:
        meter.latest_reading_date = newest
    recalc.readings_changed(
        session,
        [
            ReadingChange(
                principal.org_id,
                principal.environment,
                building.id,
                meter.id,
                min(row["start_date"] for row in rows),
                newest,
            )
        ],
        now,
    )
    return [{**row, "anomaly_flags": list(row["anomaly_flags"])} for row in rows]


def _reading_out(row: dict[str, Any]) -> dict[str, Any]:
    keys = ReadingOut.model_fields
    return {k: row[k] for k in keys}


@router.post(
    "/{meter_id}/readings",
    status_code=201,
    response_model=Data[ReadingOut],
    responses=write_responses(201, 400, 404, 409, 422),
)
def submit_reading(
    building_id: str,
    meter_id: str,
    body: ReadingCreate,
    principal: Write,
    session: WriteSession,
    clock: Clock,
    recalc: Recalc,
) -> dict:
    meter, building = _writable_meter(session, principal, building_id, meter_id)
    now = clock()
    nearby = readings_near(session, meter.id, body.start_date, body.end_date)
    rejected = rules.check_periods(
        [(0, rules.Period(body.start_date, body.end_date))],
        [rules.StoredReading(rid, rules.Period(s, e)) for rid, s, e, _ in nearby],
        locked_through=building.locked_through,
        last_allowed_end=now.date() + dt.timedelta(days=FUTURE_GRACE_DAYS),
    )
    if 0 in rejected:
        r = rejected[0]
        details = [{"field": r.field or "body", "code": r.code, "message": r.message}]
        raise APIError(r.status, r.code, r.message, details=details, **dict(r.extra))
    rows = _store(session, principal, meter, building, [(0, body)], nearby, now, recalc)
    return {"data": _reading_out(rows[0])}


@router.post(
    "/{meter_id}/readings/batch",
    status_code=201,
    response_model=Data[BatchResult],
    responses=write_responses(201, 400, 404, 413, 422),
    description="Stores every valid reading and rejects the rest; the answer is 201 whenever the "
    "batch itself was well formed, with `accepted`/`rejected` counts, the stored `readings`, and "
    "one entry in `errors` for each rejected reading naming its `index` in the batch.",
)
def submit_batch(
    building_id: str,
    meter_id: str,
    body: BatchRequest,
    principal: Write,
    session: WriteSession,
    clock: Clock,
    recalc: Recalc,
) -> dict:
    meter, building = _writable_meter(session, principal, building_id, meter_id)
    now = clock()
    errors_out: list[dict[str, Any]] = []
    valid: list[tuple[int, ReadingCreate]] = []
    for index, item in enumerate(body.readings):
        try:
            valid.append((index, ReadingCreate.model_validate(item)))
        except ValidationError as exc:
            detail = pydantic_details(exc.errors())[0]
            errors_out.append(
                {
                    "index": index,
                    "code": "validation_error",
                    "message": f"{detail['field']}: {detail['message']}",
                    "field": detail["field"],
                }
            )
    accepted: list[tuple[int, ReadingCreate]] = []
    nearby: list[tuple[str, dt.date, dt.date, float]] = []
    if valid:
        nearby = readings_near(
            session,
            meter.id,
            min(r.start_date for _, r in valid),
            max(r.end_date for _, r in valid),
        )
        rejected = rules.check_periods(
            [(i, rules.Period(r.start_date, r.end_date)) for i, r in valid],
            [rules.StoredReading(rid, rules.Period(s, e)) for rid, s, e, _ in nearby],
            locked_through=building.locked_through,
            last_allowed_end=now.date() + dt.timedelta(days=FUTURE_GRACE_DAYS),
        )
        for index, reading in valid:
            if index in rejected:
                r = rejected[index]
                errors_out.append(
                    {
                        "index": index,
                        "code": r.code,
                        "message": r.message,
                        "field": r.field,
                        **dict(r.extra),
                    }
                )
            else:
                accepted.append((index, reading))
    rows = _store(session, principal, meter, building, accepted, nearby, now, recalc)
    errors_out.sort(key=lambda e: e["index"])
    return {
        "data": {
            "accepted": len(rows),
            "rejected": len(errors_out),
            "readings": [_reading_out(row) for row in rows],
            "errors": errors_out,
        }
    }


@router.get(
    "/{meter_id}/readings",
    response_model=Page[ReadingOut],
    responses=read_responses(404, 422),
)
def list_readings(
    building_id: str,
    meter_id: str,
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    start_date: Annotated[
        ISODate | None, Query(description="Readings starting on or after this date")
    ] = None,
    end_date: Annotated[
        ISODate | None, Query(description="Readings ending on or before this date")
    ] = None,
    sort: Annotated[
        str, Query(pattern="^-?start_date$", description="start_date (default) or -start_date")
    ] = "start_date",
) -> dict:
    with session:  # closed here, in the endpoint's thread (deps: no trip to another)
        load_meter(session, principal, building_id, meter_id)
        statement = _readings_page(start_date is not None, end_date is not None, sort)
        binds = {"meter_id": meter_id, "since": start_date, "until": end_date}
        rows, total = counted_page(session, statement, binds, pages)
    return {"data": [reading_view(r) for r in rows], "meta": pages.meta(total)}


_READING_COLUMNS = (
    Reading.id,
    Reading.meter_id,
    Reading.start_date,
    Reading.end_date,
    Reading.consumption,
    Reading.unit,
    Reading.cost,
    Reading.cost_currency,
    Reading.demand_kw,
    Reading.source,
    Reading.anomaly_flags,
    Reading.created_at,
)


@functools.cache
def _readings_page(since: bool, until: bool, sort: str) -> Select[Any]:
    """A meter's readings page and their total (deps.counted_page), built once per shape."""
    ids = select(Reading.id).where(Reading.meter_id == bindparam("meter_id"))
    if since:
        ids = ids.where(Reading.start_date >= bindparam("since"))
    if until:
        ids = ids.where(Reading.end_date <= bindparam("until"))
    order = Reading.start_date.desc() if sort.startswith("-") else Reading.start_date
    return counted_page_of(ids, [order], *_READING_COLUMNS)


@router.delete(
    "/{meter_id}/readings/{reading_id}",
    status_code=204,
    response_class=Response,
    responses=write_responses(204, 404),
)
def delete_reading(
    building_id: str,
    meter_id: str,
    reading_id: str,
    principal: Write,
    session: WriteSession,
    clock: Clock,
    recalc: Recalc,
    defer_recalculation: Annotated[
        bool,
        Query(
            description="Leave the building's benchmark recalculation (summary, grade, "
            "`benchmark.updated`) to its next readings write: a client replacing readings "
            "(delete, then submit the corrected ones) recalculates once, at the submit. The "
            "stored months change at once, so the building's own benchmark reads are current."
        ),
    ] = False,
) -> Response:
    meter, building = _writable_meter(session, principal, building_id, meter_id)
    reading = session.get(Reading, reading_id)
    if reading is None or reading.meter_id != meter.id:
        raise not_found("reading", reading_id)
    if building.locked_through is not None and reading.end_date <= building.locked_through:
        raise APIError(
            403,
            "building_locked",
            f"The reading is locked: the building's readings are locked through "
            f"{building.locked_through}.",
            locked_through=building.locked_through,
        )
    now = clock()
    snapshot = {
        "id": reading.id,
        "start_date": reading.start_date.isoformat(),
        "end_date": reading.end_date.isoformat(),
        "consumption": reading.consumption,
        "unit": reading.unit,
    }
    session.delete(reading)
    session.flush()
    meter.latest_reading_date = latest_end_date(session, meter.id)
    record_event(
        session,
        org_id=principal.org_id,
        environment=principal.environment,
        type="meter.reading.deleted",
        data={"building_id": building.id, "meter_id": meter.id, "reading": snapshot},
        now=now,
    )
    change = ReadingChange(
        principal.org_id,
        principal.environment,
        building.id,
        meter.id,
        reading.start_date,
        reading.end_date,
    )
    if defer_recalculation:
        recalc.months_changed(session, [change])
    else:
        recalc.readings_changed(session, [change], now)
    return Response(status_code=204)
