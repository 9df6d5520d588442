"""Administrative operations behind `bpservice admin …` (and the test fixtures): organisations,
users and API keys. A plain key exists only in the return value of `create_api_key`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bpservice.auth import hash_secret, mint_api_key
from bpservice.db.models import ApiKey, Organisation, User
from bpservice.domain.vocab import ENVIRONMENTS, ROLES, SCOPES
from bpservice.ids import new_id
from bpservice.settings import system_clock


class AdminError(Exception):
    """A refused admin operation, with a message fit for the terminal."""


@dataclass(frozen=True)
class NewKey:
    id: str
    key: str  # the plain key: shown once, never stored
    environment: str
    scopes: list[str]


def create_organisation(
    session: Session, name: str, now: dt.datetime | None = None
) -> Organisation:
    org = Organisation(id=new_id("organisation"), name=name, created_at=now or system_clock())
    session.add(org)
    session.flush()
    return org


def create_user(
    session: Session,
    org_id: str,
    email: str,
    *,
    role: str = "owner",
    name: str | None = None,
    status: str = "active",
    now: dt.datetime | None = None,
) -> User:
    if role not in ROLES:
        raise AdminError(f"role must be one of {', '.join(ROLES)}")
    if session.get(Organisation, org_id) is None:
        raise AdminError(f"no organisation {org_id}")
    email = email.strip().lower()
    if session.scalar(select(User).where(User.org_id == org_id, User.email == email)):
        raise AdminError(f"{email} is already a user of {org_id}")
    now = now or system_clock()
    user = User(
        id=new_id("user"),
        org_id=org_id,
        email=email,
        name=name,
        role=role,
        status=status,
        property_access=None,
        mfa_enabled=False,
        activated_at=now if status == "active" else None,
        created_at=now,
        updated_at=now,
    )
    session.add(user)
    session.flush()
    return user


def create_api_key(
    session: Session,
    org_id: str,
    *,
    environment: str,
    scopes: Iterable[str] | None = None,
    name: str = "API key",
    user_id: str | None = None,
    now: dt.datetime | None = None,
) -> NewKey:
    if environment not in ENVIRONMENTS:
        raise AdminError(f"environment must be one of {', '.join(ENVIRONMENTS)}")
    if session.get(Organisation, org_id) is None:
        raise AdminError(f"no organisation {org_id} (bpservice admin list-keys shows the ids)")
    chosen = list(SCOPES) if scopes is None else list(dict.fromkeys(scopes))
    unknown = [s for s in chosen if s not in SCOPES]
    if unknown:
        raise AdminError(f"unknown scopes: {', '.join(unknown)}; known: {', '.join(SCOPES)}")
    if user_id is None:
        owner = session.scalar(
            select(User)
            .where(User.org_id == org_id, User.role == "owner")
            .order_by(User.created_at)
        )
        if owner is None:
            raise AdminError(f"organisation {org_id} has no owner to own the key")
        user_id = owner.id
    user = session.get(User, user_id)
    if user is None or user.org_id != org_id:
        raise AdminError(f"no user {user_id} in {org_id}")
    key = mint_api_key(environment)
    row = ApiKey(
        id=new_id("api_key"),
        org_id=org_id,
        user_id=user_id,
        name=name,
        environment=environment,
        display_prefix=key[:13],
        secret_hash=hash_secret(key),
        scopes=chosen,
        created_at=now or system_clock(),
    )
    session.add(row)
    session.flush()
    return NewKey(row.id, key, environment, chosen)


def list_api_keys(session: Session, org_id: str | None = None) -> list[dict[str, Any]]:
    query = select(ApiKey).order_by(ApiKey.created_at)
    if org_id:
        query = query.where(ApiKey.org_id == org_id)
    return [
        {
            "id": k.id,
            "org_id": k.org_id,
            "name": k.name,
            "environment": k.environment,
            "prefix": k.display_prefix + "…",
            "scopes": k.scopes,
            "owner_user_id": k.user_id,
            "created_at": k.created_at.isoformat(),
            "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
        }
        for k in session.scalars(query)
    ]


def revoke_api_key(session: Session, key_id: str, now: dt.datetime | None = None) -> ApiKey:
    key = session.get(ApiKey, key_id)
    if key is None:
        raise AdminError(f"no API key {key_id}")
    if key.revoked_at is None:
        key.revoked_at = now or system_clock()
    return key


def bootstrap(
    session: Session,
    *,
    org_name: str = "Demo Organisation",
    owner_email: str = "owner@example.com",
    owner_name: str = "Demo Owner",
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """An organisation, its owner, and a sandbox and a production key with every scope."""
    org = create_organisation(session, org_name, now)
    owner = create_user(session, org.id, owner_email, role="owner", name=owner_name, now=now)
    test = create_api_key(
        session, org.id, environment="test", name="bootstrap sandbox key", user_id=owner.id, now=now
    )
    live = create_api_key(
        session,
        org.id,
        environment="live",
        name="bootstrap production key",
        user_id=owner.id,
        now=now,
    )
    return {
        "org_id": org.id,
        "owner_user_id": owner.id,
        "owner_email": owner.email,
        "test_key": test.key,
        "test_key_id": test.id,
        "live_key": live.key,
        "live_key_id": live.id,
    }


# --- OAuth apps, passwords and invitations (the authorization server under /oauth) ---------------


def create_oauth_app(
    session: Session,
    org_id: str,
    *,
    name: str,
    redirect_uris: list[str],
    description: str | None = None,
    environment: str = "test",
    now: dt.datetime | None = None,
) -> Any:
    """Register an OAuth app; returns its client_id and the client_secret (shown once)."""
    from bpservice.oauth import store

    if session.get(Organisation, org_id) is None:
        raise AdminError(f"no organisation {org_id}")

    try:
        return store.create_client(
            session,
            org_id,
            name=name,
            redirect_uris=redirect_uris,
            description=description,
            environment=environment,
            now=now or system_clock(),
        )
    except store.StoreError as exc:
        raise AdminError(str(exc)) from None


def set_password(
    session: Session, user_id: str, password: str, now: dt.datetime | None = None
) -> User:
    """Set a user's password (scrypt); an invited user becomes active."""
    from bpservice.oauth import store

    try:
        return store.set_password(session, user_id, password, now=now or system_clock())
    except store.StoreError as exc:
        raise AdminError(str(exc)) from None


def create_invitation_link(session: Session, user_id: str, now: dt.datetime | None = None) -> str:
    """A single-use invitation token for an invited user; the page is /oauth/invitations/{token}."""
    from bpservice.oauth import store

    try:
        return store.create_invitation(session, user_id, now=now or system_clock())
    except store.StoreError as exc:
        raise AdminError(str(exc)) from None
