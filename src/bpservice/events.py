"""The event outbox: each change writes its event in the same transaction as the change itself, so
an event exists exactly when its change was committed. Webhook delivery reads from here."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi.encoders import jsonable_encoder
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


def record_event(
    session: Session,
    *,
    org_id: str,
    environment: str,
    type: str,
    data: dict[str, Any],
    now: dt.datetime,
) -> Event:
    if type not in EVENT_TYPES or type in NEVER_EMITTED:
        raise ValueError(f"not an emitted event type: {type}")
    event = Event(
        id=new_id("event"),
        org_id=org_id,
        environment=environment,
        type=type,
        created_at=now,
        data=encode(data),
    )
    session.add(event)
    return event


def event_body(event: Event) -> dict[str, Any]:
    """The delivered payload: `{id, type, created_at, data}`."""
    return {
        "id": event.id,
        "type": event.type,
        "created_at": utc_timestamp(event.created_at),
        "data": event.data,
    }
