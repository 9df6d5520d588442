"""Readings of many meters at once: the CSV upload among the spec's bulk endpoints ("not shown"
there; docs/decisions.md C1), with the batch's rules and the batch's answer; and a list of the
readings of up to 200 named meters (C3).

    POST /v1/readings/upload            Content-Type: text/csv
    meter_id,start_date,end_date,consumption,cost,cost_currency,demand_kw
    mtr_…,2025-01-01,2025-01-31,1234.5,210.75,GBP,
    …

At most 5,000 data rows. Each row is validated as a single reading is; rows naming a meter the
caller cannot see are refused row by row; then each meter's rows go through the batch's period
checks (overlaps with stored readings and within the upload, the lock, future ends) and are stored
with the same anomaly flags, events and recalculation. The answer is the batch's shape: accepted
and rejected counts, the stored readings, and one error per refused row naming its `index` (from 0)
and `row` (the CSV line, the header being line 1)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from pydantic import ValidationError
from sqlalchemy import Row, String, cast, select
from sqlalchemy.orm import Session

from bpservice.api.deps import (
    BulkPagination,
    Clock,
    ReadSession,
    Recalc,
    WriteSession,
    json_page,
    paginate,
    require,
)
from bpservice.api.meters import FUTURE_GRACE_DAYS, _reading_out, _store
from bpservice.api.responses import read_responses, write_responses
from bpservice.api.schemas import Data, Page, ReadingCreate, ReadingOut, UploadResult
from bpservice.api.types import ISODate, ids_pattern
from bpservice.auth import Principal
from bpservice.db.models import Building, Meter, Reading
from bpservice.db.readings import readings_near
from bpservice.domain import readings as rules
from bpservice.errors import APIError, pydantic_details, validation_error

router = APIRouter(prefix="/v1/readings", tags=["readings"])

Read = Annotated[Principal, Depends(require("meters:read"))]
Write = Annotated[Principal, Depends(require("meters:write", write=True))]

MAX_UPLOAD_ROWS = 5000
REQUIRED = ("meter_id", "start_date", "end_date", "consumption")
OPTIONAL = ("cost", "cost_currency", "demand_kw")
CSV_TYPES = ("text/csv", "application/csv")
NUMBERS = ("consumption", "cost", "demand_kw")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _refuse(status: int, code: str, message: str, **extra: Any) -> APIError:
    return APIError(status, code, message, **extra)


def parse_upload(body: bytes) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(columns, [(CSV line, fields)]) of an upload; raises APIError for the file as a whole."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _refuse(
            400, "invalid_csv", f"The upload is not UTF-8 text (byte {exc.start})."
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        records = [(reader.line_num, fields) for fields in reader if any(f.strip() for f in fields)]
    except csv.Error as exc:
        raise _refuse(400, "invalid_csv", f"The upload is not valid CSV ({exc}).") from None
    if header is None:
        raise _refuse(422, "empty_upload", "The upload is empty: a header row is required.")
    columns = [h.strip().lower() for h in header]
    missing = [c for c in REQUIRED if c not in columns]
    unknown = [h for h in columns if h not in REQUIRED + OPTIONAL]
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if missing or unknown or repeated:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if unknown:
            parts.append("unknown " + ", ".join(repr(u) for u in unknown))
        if repeated:
            parts.append("repeated " + ", ".join(repeated))
        raise _refuse(
            422,
            "invalid_columns",
            "The header row must name the columns "
            + ", ".join(REQUIRED + OPTIONAL)
            + " (the last three optional): "
            + "; ".join(parts)
            + ".",
            allowed_columns=list(REQUIRED + OPTIONAL),
        )
    if not records:
        raise _refuse(422, "empty_upload", "The upload has a header row but no readings.")
    if len(records) > MAX_UPLOAD_ROWS:
        raise _refuse(
            413,
            "too_many_rows",
            f"An upload holds at most {MAX_UPLOAD_ROWS} readings; this one has {len(records)}.",
            max_rows=MAX_UPLOAD_ROWS,
        )
    return columns, records


# What the document states of an upload: UTF-8 CSV text whose header row names the columns (the
# pattern gives the documented order; any order and letter case are accepted) and that holds at
# least one row with a value. Rows themselves are judged one by one, in the 201 answer.
_CSV_SCHEMA: dict[str, Any] = {
    "type": "string",
    "contentMediaType": "text/csv",
    "description": "CSV, UTF-8 (a BOM is allowed): a header row naming meter_id, start_date, "
    "end_date, consumption and optionally cost, cost_currency, demand_kw, then 1 to "
    f"{MAX_UPLOAD_ROWS} rows",
    "minLength": 1,
    "pattern": "^\ufeff?meter_id,start_date,end_date,consumption(,cost)?(,cost_currency)?"
    '(,demand_kw)?\r?\n[\\s\\S]*[^\\s,"]',
    "examples": [
        "meter_id,start_date,end_date,consumption\r\nmtr_…,2025-01-01,2025-01-31,1234.5\r\n"
    ],
}


def _row_error(index: int, line: int, meter: str | None, code: str, message: str, **kw: Any):
    return {"index": index, "row": line, "meter_id": meter, "code": code, "message": message, **kw}


@router.post(
    "/upload",
    status_code=201,
    response_model=Data[UploadResult],
    responses=write_responses(201, 400, 413, 415, 422),
    description="Readings of many meters as CSV (Content-Type: text/csv; columns meter_id, "
    "start_date, end_date, consumption, and optionally cost, cost_currency, demand_kw; at most "
    "5,000 rows). Each row gets the checks of a single reading and each meter's rows the checks "
    "of a batch; the answer is 201 whenever the upload itself was readable, with accepted and "
    "rejected counts, the stored readings, and one entry in `errors` per refused row naming its "
    "`index` (from 0) and `row` (its CSV line; the header is line 1). Counts against the bulk "
    "rate limit.",
    openapi_extra={
        "requestBody": {"required": True, "content": {"text/csv": {"schema": _CSV_SCHEMA}}}
    },
)
def upload_readings(
    request: Request,
    principal: Write,
    session: WriteSession,
    clock: Clock,
    recalc: Recalc,
    body: Annotated[bytes, Body(media_type="text/csv", default_factory=bytes)],
) -> dict:
    sent = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    if sent not in CSV_TYPES or not isinstance(body, bytes):
        raise _refuse(
            415,
            "unsupported_media_type",
            f"Uploads must be sent as Content-Type: text/csv (got {sent[:100] or 'none'}).",
        )
    columns, records = parse_upload(body)
    now = clock()
    errors: list[dict[str, Any]] = []
    by_meter: dict[str, list[tuple[int, int, ReadingCreate]]] = {}
    for index, (line, fields) in enumerate(records):
        values = dict(zip(columns, fields, strict=False))
        meter_id = (values.pop("meter_id", "") or "").strip()
        if len(fields) > len(columns):
            errors.append(
                _row_error(
                    index,
                    line,
                    meter_id or None,
                    "validation_error",
                    f"row has {len(fields)} fields; the header names {len(columns)}",
                )
            )
            continue
        nul = next((c for c, f in zip(columns, fields, strict=False) if "\x00" in f), None)
        if nul is not None:
            # PostgreSQL text cannot hold NUL, and no meter id or value contains one.
            errors.append(
                _row_error(
                    index,
                    line,
                    None if "\x00" in meter_id else meter_id,
                    "validation_error",
                    f"{nul}: must not contain NUL characters",
                    field=nul,
                )
            )
            continue
        if not meter_id:
            errors.append(
                _row_error(
                    index, line, None, "validation_error", "meter_id: required", field="meter_id"
                )
            )
            continue
        given: dict[str, Any] = {k: v.strip() for k, v in values.items() if v.strip()}
        for name in NUMBERS:
            # CSV has only text: a plain decimal number becomes a number, anything else stays
            # text and is refused by the same rule as a JSON string would be.
            if name in given and _NUMBER.fullmatch(given[name]):
                given[name] = float(given[name])
        try:
            reading = ReadingCreate.model_validate(given)
        except ValidationError as exc:
            detail = pydantic_details(exc.errors())[0]
            errors.append(
                _row_error(
                    index,
                    line,
                    meter_id,
                    "validation_error",
                    f"{detail['field']}: {detail['message']}",
                    field=detail["field"],
                )
            )
            continue
        by_meter.setdefault(meter_id, []).append((index, line, reading))
    meters = _visible_meters(session, principal, sorted(by_meter))
    stored: list[tuple[int, dict[str, Any]]] = []
    for meter_id in sorted(by_meter):  # one lock order for every upload: no deadlocks
        rows = by_meter[meter_id]
        found = meters.get(meter_id)
        if found is None:
            for index, line, _ in rows:
                errors.append(
                    _row_error(
                        index,
                        line,
                        meter_id,
                        "not_found",
                        f"No meter {meter_id} is visible to this caller.",
                        field="meter_id",
                    )
                )
            continue
        meter, building = found
        nearby = readings_near(
            session,
            meter.id,
            min(r.start_date for _, _, r in rows),
            max(r.end_date for _, _, r in rows),
        )
        rejected = rules.check_periods(
            [(i, rules.Period(r.start_date, r.end_date)) for i, _, r in rows],
            [rules.StoredReading(rid, rules.Period(s, e)) for rid, s, e, _ in nearby],
            locked_through=building.locked_through,
            last_allowed_end=now.date() + dt.timedelta(days=FUTURE_GRACE_DAYS),
        )
        accepted = []
        for index, line, reading in rows:
            if index in rejected:
                r = rejected[index]
                errors.append(
                    _row_error(
                        index, line, meter_id, r.code, r.message, field=r.field, **dict(r.extra)
                    )
                )
            else:
                accepted.append((index, reading))
        out = _store(session, principal, meter, building, accepted, nearby, now, recalc)
        stored.extend(zip((i for i, _ in accepted), out, strict=True))
    errors.sort(key=lambda e: e["index"])
    stored.sort(key=lambda pair: pair[0])
    return {
        "data": {
            "accepted": len(stored),
            "rejected": len(errors),
            "readings": [_reading_out(row) for _, row in stored],
            "errors": errors,
        }
    }


MAX_METER_IDS = 200


@router.get("", response_model=Page[ReadingOut], responses=read_responses(422))
def list_readings_of_meters(
    principal: Read,
    session: ReadSession,
    pages: BulkPagination,
    filter_meter_id: Annotated[
        str,
        Query(
            alias="filter[meter_id]",
            json_schema_extra={"pattern": ids_pattern(MAX_METER_IDS)},
            description=f"Comma-separated meter ids (1 to {MAX_METER_IDS}); meters the caller "
            "cannot see are left out",
        ),
    ],
    start_date: Annotated[
        ISODate | None, Query(description="Readings starting on or after this date")
    ] = None,
    end_date: Annotated[
        ISODate | None, Query(description="Readings ending on or before this date")
    ] = None,
) -> Response:
    ids = sorted({i.strip() for i in filter_meter_id.split(",") if i.strip()})
    if not ids or len(ids) > MAX_METER_IDS:
        raise validation_error(
            f"filter[meter_id] takes 1 to {MAX_METER_IDS} comma-separated meter ids",
            "filter[meter_id]",
        )
    # Table columns, not ORM objects: a page of 1,000 readings is read-only, and SQLAlchemy Core
    # builds its rows several times faster.
    reading, building = Reading.__table__.c, Building.__table__.c
    query = select(
        *(reading[name] for name in _READING_COLUMNS[:-2]),
        # As stored text: nearly every reading's flags are "[]", read without a JSON parse.
        cast(reading.anomaly_flags, String),
        reading.created_at,
    ).where(
        reading.meter_id.in_(ids),
        reading.org_id == principal.org_id,
        reading.environment == principal.environment,
    )
    if principal.property_access is not None:  # the building says which property
        query = query.join_from(
            Reading.__table__, Building.__table__, building.id == reading.building_id
        ).where(building.property_id.in_(principal.property_access))
    if start_date is not None:
        query = query.where(reading.start_date >= start_date)
    if end_date is not None:
        query = query.where(reading.end_date <= end_date)
    order = (reading.meter_id, reading.start_date)
    rows, total = paginate(session, query.order_by(*order), pages, rows=True)
    return json_page([_reading_item(row) for row in rows], pages, total)


_READING_COLUMNS = (
    "id",
    "meter_id",
    "start_date",
    "end_date",
    "consumption",
    "unit",
    "cost",
    "cost_currency",
    "demand_kw",
    "source",
    "anomaly_flags",
    "created_at",
)


def _reading_item(row: Row[Any]) -> dict[str, Any]:
    """`reading_view` of a row selecting `_READING_COLUMNS`."""
    item = dict(zip(_READING_COLUMNS, row, strict=True))
    flags = item["anomaly_flags"]
    item["anomaly_flags"] = [] if flags in (None, "[]", "null") else json.loads(flags)
    return item


def _visible_meters(
    session: Session, principal: Principal, meter_ids: list[str]
) -> dict[str, tuple[Meter, Building]]:
    """The named meters this caller may write, locked (row locks on PostgreSQL, in id order)."""
    if not meter_ids:
        return {}
    found = session.execute(
        select(Meter, Building)
        .join(Building, Building.id == Meter.building_id)
        .where(
            Meter.id.in_(meter_ids),
            Meter.org_id == principal.org_id,
            Meter.environment == principal.environment,
        )
        .order_by(Meter.id)
        .with_for_update(of=Meter)
    ).all()
    return {
        m.id: (m, b)
        for m, b in found
        if b.org_id == principal.org_id and principal.can_see_property(b.property_id)
    }
