"""The event outbox: each change writes its event in the same transaction as the change itself, so
an event exists exactly when its change was committed. Webhook delivery reads from here.

Every event row is written by `record_event` or `record_events` (readings in bulk), nowhere else:
both leave `fanned_out` false, which is what the webhook fan-out looks for (decisions IN2)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi.encoders import jsonable_encoder
from sqlalchemy import insert
from sqlalchemy.orm import Session

from bpservice.db.models import Event
from bpservice.domain.vocab import EVENT_TYPES
from bpservice.ids import new_id

# Types the service emits. meter.reading.updated has no operation behind it (the API has no
# reading update) and dividend.statement.available has no source in this domain: subscriptions may
# name them, nothing emits them (docs/decisions.md).
NEVER_EMITTED = frozenset({"meter.reading.updated", "dividend.statement.available"})


def utc_timestamp(value: dt.datetime) -> str:
    """ISO 8601 in UTC with a `Z`, the way the API writes every timestamp."""
    text = value.astimezone(dt.UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def encode(data: Any) -> Any:
    """JSON-ready data whose timestamps read exactly as in API responses."""
    return jsonable_encoder(data, custom_encoder={dt.datetime: utc_timestamp})


def _check_type(type: str) -> None:
    if type not in EVENT_TYPES or type in NEVER_EMITTED:
        raise ValueError(f"not an emitted event type: {type}")


def record_event(
    session: Session,
    *,
    org_id: str,
    environment: str,
    type: str,
    data: dict[str, Any],
    now: dt.datetime,
) -> Event:
    _check_type(type)
    event = Event(
        id=new_id("event"),
        org_id=org_id,
        environment=environment,
        type=type,
        created_at=now,
        data=encode(data),
        fanned_out=False,
    )
    session.add(event)
    return event


def record_events(
    session: Session,
    *,
    org_id: str,
    environment: str,
    type: str,
    datas: list[dict[str, Any]],
    now: dt.datetime,
) -> list[str]:
    """Many events of one type in one INSERT (a 500-reading batch); returns their ids in order."""
    _check_type(type)
    rows = [
        {
            "id": new_id("event"),
            "org_id": org_id,
            "environment": environment,
            "type": type,
            "created_at": now,
            "data": encode(data),
            "fanned_out": False,
        }
        for data in datas
    ]
    if rows:
        session.execute(insert(Event), rows)
    return [row["id"] for row in rows]


def event_body(event: Event) -> dict[str, Any]:
    """The delivered payload: `{id, type, created_at, data}`."""
    return {
        "id": event.id,
        "type": event.type,
        "created_at": utc_timestamp(event.created_at),
        "data": event.data,
    }
