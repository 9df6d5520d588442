"""The authorization server's operations on the database: apps, users' passwords and invitations,
codes, token families, and resolving an access token into a Principal."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from bpservice.auth import Principal
from bpservice.db.models import Organisation, User
from bpservice.db.oauth_models import (
    AccessToken,
    AuthorizationCode,
    InvitationToken,
    OAuthClient,
    RefreshToken,
    TokenFamily,
)
from bpservice.domain.vocab import ENVIRONMENTS, SCOPES
from bpservice.ids import new_id
from bpservice.oauth import rules

ACCESS_TOKEN_LIFETIME = dt.timedelta(hours=1)
REFRESH_TOKEN_LIFETIME = dt.timedelta(days=30)
CODE_LIFETIME = dt.timedelta(minutes=1)
INVITATION_LIFETIME = dt.timedelta(days=7)


class OAuthError(Exception):
    """An RFC 6749 §5.2 error from the token endpoint."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


class StoreError(Exception):
    """A refused administrative operation (bad input), with a message fit for a person."""


# --- apps -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewClient:
    client_id: str
    client_secret: str  # shown once, stored only as a hash
    environment: str
    redirect_uris: list[str]


def create_client(
    session: Session,
    org_id: str,
    *,
    name: str,
    redirect_uris: list[str],
    description: str | None = None,
    environment: str = "test",
    now: dt.datetime,
) -> NewClient:
    if session.get(Organisation, org_id) is None:
        raise StoreError(f"no organisation {org_id}")
    if environment not in ENVIRONMENTS:
        raise StoreError(f"environment must be one of {', '.join(ENVIRONMENTS)}")
    name = name.strip()
    if not name or len(name) > 200:
        raise StoreError("the name must have 1 to 200 characters")
    if description is not None and len(description) > 1000:
        raise StoreError("the description must have at most 1000 characters")
    uris = list(dict.fromkeys(u.strip() for u in redirect_uris))
    if not uris:
        raise StoreError("give at least one redirect URI")
    for uri in uris:
        problem = rules.redirect_uri_problem(uri)
        if problem:
            raise StoreError(f"redirect URI {uri!r} {problem}")
    secret = rules.mint(rules.CLIENT_SECRET_PREFIX)
    client = OAuthClient(
        id=new_id("oauth_client"),
        org_id=org_id,
        environment=environment,
        name=name,
        description=description,
        redirect_uris=uris,
        secret_hash=rules.digest(secret),
        created_at=now,
    )
    session.add(client)
    session.flush()
    return NewClient(client.id, secret, environment, uris)


def find_client(session: Session, client_id: str) -> OAuthClient | None:
    if not client_id or len(client_id) > 64:
        return None
    client = session.get(OAuthClient, client_id)
    if client is None or client.revoked_at is not None:
        return None
    return client


def authenticate_client(session: Session, client_id: str, secret: str) -> OAuthClient:
    client = find_client(session, client_id)
    if client is None or not secret or not rules.same_secret(secret, client.secret_hash):
        raise OAuthError("invalid_client", "Client authentication failed.", status=401)
    return client


# --- users: passwords and invitations -------------------------------------------------------------


def set_password(session: Session, user_id: str, password: str, *, now: dt.datetime) -> User:
    """Set a user's password; an invited user becomes active (an administrator vouches)."""
    user = session.get(User, user_id)
    if user is None:
        raise StoreError(f"no user {user_id}")
    problem = rules.password_problem(password)
    if problem:
        raise StoreError(problem)
    user.password_hash = rules.hash_password(password)
    if user.status == "invited":
        _activate(user, now)
    user.updated_at = now
    return user


def _activate(user: User, now: dt.datetime) -> None:
    user.status = "active"
    user.activated_at = user.activated_at or now
    user.invite_expires_at = None


def create_invitation(session: Session, user_id: str, *, now: dt.datetime) -> str:
    """A single-use invitation token for an invited user (valid while the invitation is)."""
    user = session.get(User, user_id)
    if user is None:
        raise StoreError(f"no user {user_id}")
    if user.status != "invited":
        raise StoreError(f"{user.email} is {user.status}, not invited")
    expires = now + INVITATION_LIFETIME
    if user.invite_expires_at is not None:
        expires = min(expires, user.invite_expires_at)
    if expires <= now:
        raise StoreError(f"the invitation of {user.email} has expired; reinvite them first")
    token = rules.mint("inv_")
    session.add(
        InvitationToken(
            token_hash=rules.digest(token), user_id=user.id, created_at=now, expires_at=expires
        )
    )
    session.flush()
    return token


def invitation_user(session: Session, token: str, now: dt.datetime) -> User | None:
    """The invited user a live invitation token belongs to, else None."""
    if not token.startswith("inv_") or len(token) > 100:
        return None
    row = session.get(InvitationToken, rules.digest(token))
    if row is None or row.used_at is not None or row.expires_at <= now:
        return None
    user = session.get(User, row.user_id)
    if user is None or user.status != "invited":
        return None
    if user.invite_expires_at is not None and user.invite_expires_at <= now:
        return None
    return user


def accept_invitation(
    session: Session, token: str, *, name: str, password: str, now: dt.datetime
) -> User:
    user = invitation_user(session, token, now)
    if user is None:
        raise StoreError("This invitation link is invalid, used or expired.")
    problem = rules.password_problem(password)
    if problem:
        raise StoreError(problem)
    name = name.strip()
    if not name or len(name) > 200:
        raise StoreError("Give your name (1 to 200 characters).")
    row = session.get(InvitationToken, rules.digest(token), with_for_update=True)
    assert row is not None
    if row.used_at is not None:
        raise StoreError("This invitation link is invalid, used or expired.")
    row.used_at = now
    user.name = name
    user.password_hash = rules.hash_password(password)
    _activate(user, now)
    user.updated_at = now
    return user


def check_login(session: Session, org_id: str, email: str, password: str) -> User | None:
    """The active user of `org_id` with this email and password, else None (same time either way)."""
    user = session.scalar(
        select(User).where(User.org_id == org_id, User.email == email.strip().lower())
    )
    ok = rules.verify_password(password, user.password_hash if user else None)
    if not ok or user is None or user.status != "active":
        return None
    return user


# --- codes and tokens -----------------------------------------------------------------------------


def issue_code(
    session: Session,
    *,
    client: OAuthClient,
    user: User,
    redirect_uri: str,
    scopes: list[str],
    code_challenge: str,
    now: dt.datetime,
) -> str:
    code = rules.mint(rules.CODE_PREFIX)
    session.add(
        AuthorizationCode(
            code_hash=rules.digest(code),
            client_id=client.id,
            user_id=user.id,
            redirect_uri=redirect_uri,
            scopes=scopes,
            code_challenge=code_challenge,
            created_at=now,
            expires_at=now + CODE_LIFETIME,
        )
    )
    return code


def _token_response(session: Session, family: TokenFamily, now: dt.datetime) -> dict[str, Any]:
    access = rules.mint(rules.ACCESS_TOKEN_PREFIX)
    refresh = rules.mint(rules.REFRESH_TOKEN_PREFIX)
    session.add(
        AccessToken(
            token_hash=rules.digest(access),
            family_id=family.id,
            created_at=now,
            expires_at=now + ACCESS_TOKEN_LIFETIME,
        )
    )
    session.add(
        RefreshToken(
            token_hash=rules.digest(refresh),
            family_id=family.id,
            created_at=now,
            expires_at=now + REFRESH_TOKEN_LIFETIME,
        )
    )
    return {
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": int(ACCESS_TOKEN_LIFETIME.total_seconds()),
        "refresh_token": refresh,
        "scope": " ".join(family.scopes),
    }


def revoke_family(session: Session, family_id: str, reason: str, now: dt.datetime) -> None:
    session.execute(
        update(TokenFamily)
        .where(TokenFamily.id == family_id, TokenFamily.revoked_at.is_(None))
        .values(revoked_at=now, revoked_reason=reason)
    )


def revoke_user_tokens(session: Session, user_id: str, reason: str, now: dt.datetime) -> int:
    """Revoke every token family of a user (for deactivation, so a later reactivation does not
    revive old tokens). Returns how many families were revoked."""
    result = session.execute(
        update(TokenFamily)
        .where(TokenFamily.user_id == user_id, TokenFamily.revoked_at.is_(None))
        .values(revoked_at=now, revoked_reason=reason)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def _active_user(session: Session, user_id: str, client: OAuthClient) -> User | None:
    user = session.get(User, user_id)
    if user is None or user.status != "active" or user.org_id != client.org_id:
        return None
    return user


def exchange_code(
    session: Session,
    client: OAuthClient,
    *,
    code: str,
    redirect_uri: str | None,
    code_verifier: str | None,
    now: dt.datetime,
) -> dict[str, Any]:
    # Locked until commit: of concurrent exchanges of one code (on any instance) the second waits,
    # then reads used_at set, so exactly one succeeds (SQLite has one writer anyway).
    row = session.get(AuthorizationCode, rules.digest(code), with_for_update=True) if code else None
    if row is None or row.client_id != client.id:
        raise OAuthError("invalid_grant", "The authorization code is invalid.")
    if row.used_at is not None:
        # RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
        if row.family_id:
            revoke_family(session, row.family_id, "code_reuse", now)
        raise OAuthError("invalid_grant", "The authorization code has already been used.")
    if row.expires_at <= now:
        raise OAuthError("invalid_grant", "The authorization code has expired.")
    if redirect_uri != row.redirect_uri:
        raise OAuthError(
            "invalid_grant", "redirect_uri does not match the one of the authorization request."
        )
    if not code_verifier or not rules.verifier_matches(code_verifier, row.code_challenge):
        raise OAuthError("invalid_grant", "The PKCE code_verifier does not match the challenge.")
    if _active_user(session, row.user_id, client) is None:
        raise OAuthError("invalid_grant", "The user is no longer active.")
    family = TokenFamily(
        id="tfm_" + secrets.token_hex(12),
        client_id=client.id,
        user_id=row.user_id,
        scopes=row.scopes,
        created_at=now,
    )
    session.add(family)
    row.used_at = now
    row.family_id = family.id
    session.flush()
    return _token_response(session, family, now)


def refresh_tokens(
    session: Session,
    client: OAuthClient,
    *,
    refresh_token: str,
    scope: str | None,
    now: dt.datetime,
) -> dict[str, Any]:
    row = (
        session.get(RefreshToken, rules.digest(refresh_token), with_for_update=True)
        if refresh_token
        else None
    )  # locked: one refresh token is spent by exactly one request, whichever instance serves it
    family = session.get(TokenFamily, row.family_id) if row is not None else None
    if row is None or family is None or family.client_id != client.id:
        raise OAuthError("invalid_grant", "The refresh token is invalid.")
    if row.used_at is not None:
        # A spent refresh token presented again means two parties hold the family: end it.
        revoke_family(session, family.id, "refresh_token_reuse", now)
        raise OAuthError(
            "invalid_grant", "The refresh token has already been used; the grant is revoked."
        )
    if family.revoked_at is not None:
        raise OAuthError("invalid_grant", "The grant has been revoked.")
    if row.expires_at <= now:
        raise OAuthError("invalid_grant", "The refresh token has expired.")
    if _active_user(session, family.user_id, client) is None:
        raise OAuthError("invalid_grant", "The user is no longer active.")
    if scope is not None:
        wanted = rules.parse_scopes(scope)
        if wanted is None or not set(wanted) <= set(family.scopes):
            raise OAuthError(
                "invalid_scope", "A refresh may only keep or narrow the granted scopes."
            )
        # Narrowing applies to this family from now on (RFC 6749 §6).
        family.scopes = [s for s in family.scopes if s in wanted]
    row.used_at = now
    return _token_response(session, family, now)


def resolve_access_token(session: Session, token: str, now: dt.datetime) -> Principal | None:
    """The user behind a live access token; the user's status, role and property access are read
    on every request, so a deactivation or role change applies to the very next request."""
    if not token.startswith(rules.ACCESS_TOKEN_PREFIX):
        return None
    row = session.execute(
        select(AccessToken, TokenFamily, OAuthClient, User)
        .join(TokenFamily, TokenFamily.id == AccessToken.family_id)
        .join(OAuthClient, OAuthClient.id == TokenFamily.client_id)
        .join(User, User.id == TokenFamily.user_id)
        .where(AccessToken.token_hash == rules.digest(token))
    ).first()
    if row is None:
        return None
    access, family, client, user = row
    if (
        access.expires_at <= now
        or family.revoked_at is not None
        or client.revoked_at is not None
        or user.status != "active"
        or user.org_id != client.org_id
    ):
        return None
    return Principal(
        kind="user",
        org_id=client.org_id,
        environment=client.environment,
        scopes=frozenset(s for s in family.scopes if s in SCOPES),
        identity=user.id,
        user_id=user.id,
        user_role=user.role,
        property_access=None if user.property_access is None else frozenset(user.property_access),
        token_id=family.id,
        extra={"client_id": client.id},
    )
