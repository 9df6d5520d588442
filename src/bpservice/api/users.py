"""Users of the organisation: list, get, invite, change role/access, deactivate, reactivate."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bpservice.api.deps import Clock, Pagination, ReadSession, WriteSession, paginate, require
from bpservice.api.responses import read_responses, write_responses
from bpservice.api.schemas import (
    Data,
    Page,
    UserDeactivated,
    UserDetail,
    UserInvite,
    UserInvited,
    UserSummary,
    UserUpdate,
)
from bpservice.api.views import user_detail, user_invited, user_summary
from bpservice.auth import Principal
from bpservice.db.models import Property, User
from bpservice.errors import APIError, not_found
from bpservice.ids import new_id
from bpservice.oauth.store import revoke_user_tokens

router = APIRouter(prefix="/v1/users", tags=["users"])

Read = Annotated[Principal, Depends(require("users:read"))]
Write = Annotated[Principal, Depends(require("users:write", write=True))]

INVITE_LIFETIME = dt.timedelta(days=7)


def _load_user(session: Session, principal: Principal, user_id: str) -> User:
    user = session.get(User, user_id)
    if user is None or user.org_id != principal.org_id:
        raise not_found("user", user_id)
    return user


def _acting_user(session: Session, principal: Principal) -> User:
    user = session.get(User, principal.user_id)
    if user is None:  # the key's owner row is gone: treat as unauthenticated
        raise APIError(401, "unauthorized", "The credentials' user no longer exists.")
    return user


def _active_owner_count(session: Session, org_id: str) -> int:
    return (
        session.scalar(
            select(func.count(User.id)).where(
                User.org_id == org_id, User.role == "owner", User.status == "active"
            )
        )
        or 0
    )


def _own_access(principal: Principal, acting: User) -> frozenset[str] | None:
    """The caller's property access (None = all). An OAuth token carries its user's; an API key
    acts for the whole organisation (D38)."""
    return principal.property_access


def _wider(theirs: list[str] | None, mine: frozenset[str] | None) -> bool:
    if mine is None:
        return False
    return theirs is None or not set(theirs) <= mine


def _check_may_change(principal: Principal, acting: User, user: User) -> None:
    """Privilege edges (docs/decisions.md S5): only owners change, deactivate or reactivate
    owners; nobody changes a user whose property access is wider than their own. A user's own
    record is theirs to change within the other rules."""
    if user.role == "owner" and acting.role != "owner":
        raise APIError(
            403, "owner_required", "Only an owner can change, deactivate or reactivate an owner."
        )
    if user.id != acting.id and _wider(user.property_access, _own_access(principal, acting)):
        raise APIError(
            403,
            "forbidden",
            "You cannot change a user whose property access is wider than your own.",
        )


def _property_access(
    session: Session,
    principal: Principal,
    access: str | list[str],
    limited: frozenset[str] | None = None,
) -> list[str] | None:
    """None for "all"; otherwise the listed ids, each a property of the caller's environment.

    A caller who is limited to some properties (`limited`) cannot grant more than they have:
    "all" or an id outside their own access answers 403 (docs/decisions.md D38)."""
    if access == "all":
        if limited is not None:
            raise APIError(
                403,
                "forbidden",
                "You can only grant access to properties you have access to yourself, not 'all'.",
            )
        return None
    ids = list(dict.fromkeys(access))
    if limited is not None:
        beyond = [pid for pid in ids if pid not in limited]
        if beyond:
            raise APIError(
                403,
                "forbidden",
                f"You cannot grant access to properties outside your own: {', '.join(beyond)}.",
            )
    if ids:
        found = set(
            session.scalars(
                select(Property.id).where(
                    Property.id.in_(ids),
                    Property.org_id == principal.org_id,
                    Property.environment == principal.environment,
                )
            )
        )
        missing = [pid for pid in ids if pid not in found]
        if missing:
            message = f"No such properties: {', '.join(missing)}."
            raise APIError(
                422,
                "validation_error",
                message,
                details=[
                    {"field": "property_access", "code": "unknown_property", "message": message}
                ],
            )
    return ids


@router.get("", response_model=Page[UserSummary], responses=read_responses(422))
def list_users(
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    filter_role: Annotated[
        str | None, Query(alias="filter[role]", pattern="^(owner|admin|viewer)$")
    ] = None,
    filter_status: Annotated[
        str | None, Query(alias="filter[status]", pattern="^(active|invited|deactivated)$")
    ] = None,
) -> dict:
    query = select(User).where(User.org_id == principal.org_id)
    if filter_role:
        query = query.where(User.role == filter_role)
    if filter_status:
        query = query.where(User.status == filter_status)
    rows, total = paginate(session, query.order_by(User.created_at, User.id), pages)
    return {"data": [user_summary(u) for u in rows], "meta": pages.meta(total)}


@router.get("/{user_id}", response_model=Data[UserDetail], responses=read_responses(404))
def get_user(user_id: str, principal: Read, session: ReadSession) -> dict:
    return {"data": user_detail(_load_user(session, principal, user_id))}


@router.post(
    "/invite",
    status_code=201,
    response_model=Data[UserInvited],
    responses=write_responses(201, 400, 409, 422),
)
def invite_user(body: UserInvite, principal: Write, session: WriteSession, clock: Clock) -> dict:
    acting = _acting_user(session, principal)
    if body.role == "owner" and acting.role != "owner":
        raise APIError(403, "owner_required", "Only an owner can invite another owner.")
    existing = session.scalar(
        select(User).where(User.org_id == principal.org_id, User.email == body.email)
    )
    if existing is not None:
        raise APIError(
            409,
            "email_taken",
            f"{body.email} is already a member of the organisation ({existing.status}).",
            user_id=existing.id,
        )
    now = clock()
    user = User(
        id=new_id("user"),
        org_id=principal.org_id,
        email=body.email,
        name=body.name,
        role=body.role,
        status="invited",
        property_access=_property_access(
            session, principal, body.property_access, _own_access(principal, acting)
        ),
        mfa_enabled=False,
        invite_expires_at=now + INVITE_LIFETIME,
        created_at=now,
        updated_at=now,
    )
    session.add(user)
    session.flush()
    return {"data": user_invited(user)}


@router.patch(
    "/{user_id}",
    response_model=Data[UserDetail],
    responses=write_responses(200, 400, 404, 409, 422),
)
def update_user(
    user_id: str, body: UserUpdate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    user = _load_user(session, principal, user_id)
    acting = _acting_user(session, principal)
    _check_may_change(principal, acting, user)
    if body.role is not None and body.role != user.role:
        if acting.role != "owner":
            raise APIError(
                403, "owner_required", "Only a user with the owner role can change roles."
            )
        if (
            user.role == "owner"
            and user.status == "active"
            and _active_owner_count(session, principal.org_id) <= 1
        ):
            raise APIError(
                409,
                "last_owner",
                "The last owner of the organisation cannot be demoted; make another user an "
                "owner first.",
            )
        user.role = body.role
    if body.property_access is not None:
        # An owner can always restore their own access, even from a token an admin narrowed.
        restoring_self = user.id == acting.id and acting.role == "owner"
        limit = None if restoring_self else _own_access(principal, acting)
        user.property_access = _property_access(session, principal, body.property_access, limit)
    user.updated_at = clock()
    return {"data": user_detail(user)}


@router.post(
    "/{user_id}/deactivate",
    response_model=Data[UserDeactivated],
    responses=write_responses(200, 404, 409),
)
def deactivate_user(user_id: str, principal: Write, session: WriteSession, clock: Clock) -> dict:
    user = _load_user(session, principal, user_id)
    if user.status == "deactivated":
        raise APIError(409, "invalid_state", "The user is already deactivated.")
    acting = _acting_user(session, principal)
    _check_may_change(principal, acting, user)
    if (
        user.role == "owner"
        and user.status == "active"
        and _active_owner_count(session, principal.org_id) <= 1
    ):
        raise APIError(409, "last_owner", "The last active owner cannot be deactivated.")
    now = clock()
    user.status = "deactivated"
    user.deactivated_at = now
    user.updated_at = now
    # Access is revoked at once (spec), and for good: a later reactivation must not revive tokens.
    revoke_user_tokens(session, user.id, "user_deactivated", now)
    return {"data": {"id": user.id, "status": "deactivated", "deactivated_at": now}}


@router.post(
    "/{user_id}/reactivate",
    response_model=Data[UserDetail],
    responses=write_responses(200, 404, 409),
    description="Restores a deactivated user: to active if they had accepted their invitation, "
    "otherwise to invited with a fresh invite_expires_at. Answers 200 with the full user.",
)
def reactivate_user(user_id: str, principal: Write, session: WriteSession, clock: Clock) -> dict:
    user = _load_user(session, principal, user_id)
    if user.status != "deactivated":
        raise APIError(409, "invalid_state", f"The user is {user.status}, not deactivated.")
    _check_may_change(principal, _acting_user(session, principal), user)
    now = clock()
    if user.activated_at is not None:
        user.status = "active"
    else:
        user.status = "invited"
        user.invite_expires_at = now + INVITE_LIFETIME
    user.deactivated_at = None
    user.updated_at = now
    return {"data": user_detail(user)}
