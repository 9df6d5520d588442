"""Webhook subscriptions: create, list, get, update, pause, resume, delete, and delivery history
(docs/decisions.md (webhooks section)). Every operation needs `webhooks:manage`; subscriptions belong to the
caller's organisation and environment. The signing secret is never returned after creation."""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Callable
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Query, Response
from fastapi import Request as HTTPRequest
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from bpservice.api.deps import Clock, Pagination, ReadSession, WriteSession, paginate, require
from bpservice.api.responses import errors
from bpservice.api.schemas import Data, Page, Request, non_nullable
from bpservice.api.types import ShortText
from bpservice.auth import Principal
from bpservice.db.webhook_models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from bpservice.domain.vocab import EVENT_TYPES
from bpservice.errors import APIError, not_found, validation_error
from bpservice.ids import new_id
from bpservice.netguard import DestinationRefused, check_webhook_url
from bpservice.workers.webhooks import current_seq

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


def _manager(write: bool) -> Callable[..., Principal]:
    check = require("webhooks:manage", write=write)

    # A default rather than Annotated: string annotations cannot see the local `check`.
    def dependency(principal: Principal = Depends(check)) -> Principal:
        # A subscription receives every event of its environment, so a user limited to some
        # properties would see the others' events through it.
        if principal.property_access is not None:
            raise APIError(
                403,
                "forbidden",
                "Webhook subscriptions receive events for every property; a user with access "
                "to only some properties cannot manage them.",
            )
        return principal

    return dependency


Read = Annotated[Principal, Depends(_manager(write=False))]
Write = Annotated[Principal, Depends(_manager(write=True))]


# --- request and response models ------------------------------------------------------------------


def _url(value: str) -> str:
    try:
        parts = urlsplit(value)
        _ = parts.port
    except ValueError:
        raise ValueError("is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http or https URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials; verify deliveries with the signature")
    if parts.fragment:
        raise ValueError("must not contain a fragment")
    return value


def _events(value: list[str]) -> list[str]:
    unique = list(dict.fromkeys(value))
    unknown = [e for e in unique if e != "*" and e not in EVENT_TYPES]
    if unknown:
        raise ValueError(
            f"unknown event types: {', '.join(unknown)}; expected * or any of: "
            f"{', '.join(EVENT_TYPES)}"
        )
    if "*" in unique and len(unique) > 1:
        raise ValueError("* means every event type and must be the only entry")
    return unique


WebhookURL = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=2048),
    AfterValidator(_url),
    Field(
        description="Endpoint receiving deliveries: an absolute http or https URL without "
        "credentials or fragment (https in production); its host must resolve to public "
        "addresses",
        # The shape the validator checks; where the host resolves is checked on the network.
        json_schema_extra={"pattern": r"^\s*[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\s]+([/?][^#]*)?$"},
    ),
]
EventList = Annotated[
    list[Annotated[str, StringConstraints(max_length=64)]],
    Field(min_length=1, max_length=len(EVENT_TYPES) + 1),
    AfterValidator(_events),
    Field(description='Event types, or ["*"] for all', examples=[["meter.reading.created"]]),
    WithJsonSchema(
        {
            "description": 'Event types (repeats are dropped), or ["*"] for all',
            "anyOf": [
                {"type": "array", "items": {"const": "*"}, "minItems": 1, "maxItems": 1},
                {
                    "type": "array",
                    "items": {"type": "string", "enum": list(EVENT_TYPES)},
                    "minItems": 1,
                    "maxItems": len(EVENT_TYPES) + 1,
                },
            ],
            "examples": [["meter.reading.created"]],
        }
    ),
]
Secret = Annotated[
    str,
    StringConstraints(min_length=16, max_length=256, pattern=r"^[\x21-\x7e]+$"),
    Field(description="Signing secret (16-256 printable ASCII characters); write-only"),
]


class WebhookCreate(Request):
    url: WebhookURL
    events: EventList
    secret: Secret | None = Field(
        None, description="Omit to have the service generate one (returned once, on creation)"
    )
    description: ShortText | None = None


class WebhookUpdate(Request):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra=non_nullable("url", "events", "secret")
    )

    url: WebhookURL | None = None
    events: EventList | None = None
    secret: Secret | None = None
    description: ShortText | None = None

    @model_validator(mode="after")
    def _not_null(self) -> WebhookUpdate:
        for name in ("url", "events", "secret"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class WebhookOut(BaseModel):
    id: str
    url: str
    description: str | None
    events: list[str]
    status: Literal["enabled", "paused", "disabled"]
    created_at: dt.datetime
    updated_at: dt.datetime
    paused_at: dt.datetime | None
    disabled_at: dt.datetime | None
    disabled_reason: str | None
    last_success_at: dt.datetime | None
    failing_since: dt.datetime | None


class WebhookCreated(WebhookOut):
    secret: str | None = Field(
        description="The generated secret when none was sent (shown only here); otherwise null"
    )


class AttemptOut(BaseModel):
    number: int
    attempted_at: dt.datetime
    status_code: int | None
    response_body: str | None = Field(description="First 1 KB of the response body")
    latency_ms: int
    succeeded: bool
    failure_reason: Literal["timeout", "connection_refused", "non_2xx", "connection_error"] | None
    error_message: str | None


class DeliveryOut(BaseModel):
    id: str
    event_id: str
    event_type: str
    event_created_at: dt.datetime
    status: Literal["pending", "succeeded", "failed", "cancelled"]
    attempt_count: int
    next_attempt_at: dt.datetime | None
    completed_at: dt.datetime | None
    created_at: dt.datetime
    attempts: list[AttemptOut]


class DeliveryDetail(DeliveryOut):
    payload: dict[str, Any] = Field(description="The JSON body delivered")


# --- views and loaders ----------------------------------------------------------------------------


def subscription_view(sub: WebhookSubscription) -> dict[str, Any]:
    return {
        "id": sub.id,
        "url": sub.url,
        "description": sub.description,
        "events": sub.events,
        "status": sub.status,
        "created_at": sub.created_at,
        "updated_at": sub.updated_at,
        "paused_at": sub.paused_at,
        "disabled_at": sub.disabled_at,
        "disabled_reason": sub.disabled_reason,
        "last_success_at": sub.last_success_at,
        "failing_since": sub.failing_since,
    }


def _attempt_view(a: WebhookAttempt) -> dict[str, Any]:
    return {
        "number": a.number,
        "attempted_at": a.attempted_at,
        "status_code": a.status_code,
        "response_body": a.response_body,
        "latency_ms": a.latency_ms,
        "succeeded": a.succeeded,
        "failure_reason": a.failure_reason,
        "error_message": a.error_message,
    }


def _delivery_view(d: WebhookDelivery, attempts: list[WebhookAttempt]) -> dict[str, Any]:
    return {
        "id": d.id,
        "event_id": d.event_id,
        "event_type": d.event_type,
        "event_created_at": d.event_created_at,
        "status": d.status,
        "attempt_count": d.attempt_count,
        "next_attempt_at": d.next_attempt_at,
        "completed_at": d.completed_at,
        "created_at": d.created_at,
        "attempts": [_attempt_view(a) for a in attempts],
    }


def _load(session: Session, principal: Principal, webhook_id: str) -> WebhookSubscription:
    sub = session.get(WebhookSubscription, webhook_id)
    if sub is None or sub.org_id != principal.org_id or sub.environment != principal.environment:
        raise not_found("webhook", webhook_id)
    return sub


def _check_url(url: str, environment: str, request: HTTPRequest) -> None:
    if environment == "live" and urlsplit(url).scheme != "https":
        raise validation_error(
            "Production webhooks must use an https URL.", "url", "https_required"
        )
    try:
        check_webhook_url(url, allow_private=request.app.state.settings.allow_private_webhooks)
    except DestinationRefused as exc:
        raise validation_error(f"{exc}.", "url", "destination_not_allowed") from None


def _attempts_of(session: Session, delivery_ids: list[str]) -> dict[str, list[WebhookAttempt]]:
    by_delivery: dict[str, list[WebhookAttempt]] = {d: [] for d in delivery_ids}
    if delivery_ids:
        rows = session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.delivery_id.in_(delivery_ids))
            .order_by(WebhookAttempt.delivery_id, WebhookAttempt.number)
        )
        for attempt in rows:
            by_delivery[attempt.delivery_id].append(attempt)
    return by_delivery


# --- routes ---------------------------------------------------------------------------------------


@router.post(
    "",
    status_code=201,
    response_model=Data[WebhookCreated],
    responses=errors(400, 422),
    description="Creates an enabled subscription. It receives events of the caller's environment "
    "created after this moment. The secret signs deliveries and is never returned again.",
)
def create_webhook(
    body: WebhookCreate, principal: Write, session: WriteSession, clock: Clock, request: HTTPRequest
) -> dict:
    _check_url(body.url, principal.environment, request)
    now = clock()
    generated = None if body.secret is not None else "whk_sec_" + secrets.token_urlsafe(32)
    sub = WebhookSubscription(
        id=new_id("webhook"),
        org_id=principal.org_id,
        environment=principal.environment,
        url=body.url,
        description=body.description,
        events=body.events,
        secret=request.app.state.secret_box.seal(body.secret or generated),
        status="enabled",
        owner_user_id=principal.user_id,
        created_by=principal.identity,
        # Write transactions are serialised, so no event can commit between this read and ours.
        cursor_seq=current_seq(session),
        created_at=now,
        updated_at=now,
    )
    session.add(sub)
    session.flush()
    return {"data": {**subscription_view(sub), "secret": generated}}


@router.get("", response_model=Page[WebhookOut], responses=errors(422))
def list_webhooks(
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    filter_status: Annotated[
        str | None, Query(alias="filter[status]", pattern="^(enabled|paused|disabled)$")
    ] = None,
) -> dict:
    query = select(WebhookSubscription).where(
        WebhookSubscription.org_id == principal.org_id,
        WebhookSubscription.environment == principal.environment,
    )
    if filter_status:
        query = query.where(WebhookSubscription.status == filter_status)
    rows, total = paginate(
        session, query.order_by(WebhookSubscription.created_at, WebhookSubscription.id), pages
    )
    return {"data": [subscription_view(s) for s in rows], "meta": pages.meta(total)}


@router.get("/{webhook_id}", response_model=Data[WebhookOut], responses=errors(404))
def get_webhook(webhook_id: str, principal: Read, session: ReadSession) -> dict:
    return {"data": subscription_view(_load(session, principal, webhook_id))}


@router.patch(
    "/{webhook_id}",
    response_model=Data[WebhookOut],
    responses=errors(400, 404, 422),
    description="Changes url, events, secret (write-only) or description. A new url or secret "
    "applies to every later attempt, retries of earlier events included.",
)
def update_webhook(
    webhook_id: str,
    body: WebhookUpdate,
    principal: Write,
    session: WriteSession,
    clock: Clock,
    request: HTTPRequest,
) -> dict:
    sub = _load(session, principal, webhook_id)
    if body.url is not None:
        _check_url(body.url, principal.environment, request)
    changed = False
    box = request.app.state.secret_box
    for name in ("url", "events", "description"):
        if name in body.model_fields_set and getattr(sub, name) != getattr(body, name):
            setattr(sub, name, getattr(body, name))
            changed = True
    secret = body.secret if "secret" in body.model_fields_set else None
    if secret is not None and box.open(sub.secret) != secret:
        sub.secret = box.seal(secret)
        changed = True
    if changed:
        sub.updated_at = clock()
    return {"data": subscription_view(sub)}


@router.post(
    "/{webhook_id}/pause",
    response_model=Data[WebhookOut],
    responses=errors(404, 409),
    description="Stops deliveries. Events that occur while paused are queued and delivered on "
    "resume.",
)
def pause_webhook(webhook_id: str, principal: Write, session: WriteSession, clock: Clock) -> dict:
    sub = _load(session, principal, webhook_id)
    if sub.status != "enabled":
        raise APIError(409, "invalid_state", f"The subscription is {sub.status}, not enabled.")
    now = clock()
    sub.status = "paused"
    sub.paused_at = now
    sub.updated_at = now
    return {"data": subscription_view(sub)}


@router.post(
    "/{webhook_id}/resume",
    response_model=Data[WebhookOut],
    responses=errors(404, 409),
    description="Re-enables a paused or disabled subscription. From paused, queued deliveries "
    "are due at once; from disabled, delivery starts with events created after the resume.",
)
def resume_webhook(webhook_id: str, principal: Write, session: WriteSession, clock: Clock) -> dict:
    sub = _load(session, principal, webhook_id)
    if sub.status == "enabled":
        raise APIError(409, "invalid_state", "The subscription is already enabled.")
    now = clock()
    if sub.status == "paused":
        session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.subscription_id == sub.id, WebhookDelivery.status == "pending")
            .values(next_attempt_at=now)
        )
    else:
        sub.cursor_seq = current_seq(session)
        sub.disabled_at = None
        sub.disabled_reason = None
    sub.status = "enabled"
    sub.paused_at = None
    sub.failing_since = None
    sub.updated_at = now
    return {"data": subscription_view(sub)}


@router.delete(
    "/{webhook_id}",
    status_code=204,
    response_class=Response,
    responses=errors(404),
    description="Deletes the subscription and its delivery history permanently.",
)
def delete_webhook(webhook_id: str, principal: Write, session: WriteSession) -> Response:
    sub = _load(session, principal, webhook_id)
    deliveries = select(WebhookDelivery.id).where(WebhookDelivery.subscription_id == sub.id)
    session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(deliveries)))
    session.execute(delete(WebhookDelivery).where(WebhookDelivery.subscription_id == sub.id))
    session.execute(delete(WebhookSubscription).where(WebhookSubscription.id == sub.id))
    return Response(status_code=204)


@router.get(
    "/{webhook_id}/deliveries",
    response_model=Page[DeliveryOut],
    responses=errors(404, 422),
    description="Delivery history, newest first: each delivery with its attempts (HTTP status, "
    "first 1 KB of the response body, latency, failure reason).",
)
def list_deliveries(
    webhook_id: str,
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    filter_status: Annotated[
        str | None,
        Query(alias="filter[status]", pattern="^(pending|succeeded|failed|cancelled)$"),
    ] = None,
    filter_event_id: Annotated[str | None, Query(alias="filter[event_id]", max_length=64)] = None,
) -> dict:
    sub = _load(session, principal, webhook_id)
    query = select(WebhookDelivery).where(WebhookDelivery.subscription_id == sub.id)
    if filter_status:
        query = query.where(WebhookDelivery.status == filter_status)
    if filter_event_id:
        query = query.where(WebhookDelivery.event_id == filter_event_id)
    rows, total = paginate(session, query.order_by(WebhookDelivery.event_seq.desc()), pages)
    attempts = _attempts_of(session, [d.id for d in rows])
    return {
        "data": [_delivery_view(d, attempts[d.id]) for d in rows],
        "meta": pages.meta(total),
    }


@router.get(
    "/{webhook_id}/deliveries/{delivery_id}",
    response_model=Data[DeliveryDetail],
    responses=errors(404),
)
def get_delivery(webhook_id: str, delivery_id: str, principal: Read, session: ReadSession) -> dict:
    sub = _load(session, principal, webhook_id)
    delivery = session.get(WebhookDelivery, delivery_id)
    if delivery is None or delivery.subscription_id != sub.id:
        raise not_found("delivery", delivery_id)
    view = _delivery_view(delivery, _attempts_of(session, [delivery.id])[delivery.id])
    return {"data": {**view, "payload": json.loads(delivery.body)}}
