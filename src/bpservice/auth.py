"""Credentials: API key minting and hashing, and turning a bearer token into a Principal."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.orm import Session

from bpservice.db.models import ApiKey, User
from bpservice.db.session import Database
from bpservice.domain.vocab import KEY_PREFIX, SCOPES

_KEY_ALPHABET = string.ascii_letters + string.digits
KEY_RANDOM_LENGTH = 32


def mint_api_key(environment: str) -> str:
    """A new plain key, e.g. `svc_test_` + 32 random letters and digits (190 bits)."""
    body = "".join(secrets.choice(_KEY_ALPHABET) for _ in range(KEY_RANDOM_LENGTH))
    return KEY_PREFIX[environment] + body


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def environment_of_key(key: str) -> str | None:
    for env, prefix in KEY_PREFIX.items():
        if key.startswith(prefix):
            return env
    return None


@dataclass(frozen=True)
class Principal:
    """Who is calling: an API key acting for the organisation, or an OAuth user."""

    kind: str  # "api_key" or "user"
    org_id: str
    environment: str
    scopes: frozenset[str]
    # Rate-limit identity: the key id, or the user id for OAuth tokens (one bucket per user).
    identity: str
    # The acting user: the key's owner, or the token's user.
    user_id: str
    user_role: str
    # None means every property; otherwise the property ids this principal may see.
    property_access: frozenset[str] | None = None
    token_id: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    def can_see_property(self, property_id: str) -> bool:
        return self.property_access is None or property_id in self.property_access


# Built once: the key's lookup runs on every request, and building the statement cost as much as
# running it. Plain columns on a bare connection (no session, no ORM objects): one indexed SELECT.
_KEY_LOOKUP = (
    select(
        ApiKey.id,
        ApiKey.org_id,
        ApiKey.environment,
        ApiKey.scopes,
        ApiKey.revoked_at,
        User.id.label("owner_id"),
        User.role.label("owner_role"),
    )
    .join(User, User.id == ApiKey.user_id)
    .where(ApiKey.secret_hash == bindparam("secret_hash"))
)


def resolve_api_key(connection: Connection, key: str) -> Principal | None:
    """The key's principal, read from the database on every call (never cached), so a key
    revoked on any instance is refused on the very next request everywhere."""
    env = environment_of_key(key)
    if env is None:
        return None
    row = connection.execute(_KEY_LOOKUP, {"secret_hash": hash_secret(key)}).first()
    if row is None:
        return None
    if row.revoked_at is not None or row.environment != env:
        return None
    return Principal(
        kind="api_key",
        org_id=row.org_id,
        environment=env,
        scopes=frozenset(s for s in row.scopes if s in SCOPES),
        identity=row.id,
        user_id=row.owner_id,
        user_role=row.owner_role,
    )


# Resolvers for other bearer tokens (OAuth access tokens) are registered by the authorization server.
TokenResolver = Callable[[Session, str, dt.datetime], "Principal | None"]


def resolve_bearer(
    db: Database, token: str, now: dt.datetime, token_resolvers: list[TokenResolver]
) -> Principal | None:
    """Who sends `token`: an API key (nearly every request: its one query on a bare connection,
    `Database.read_statement`), else whoever a resolver finds (in a read session)."""
    if environment_of_key(token) is not None:
        with db.read_statement() as connection:
            principal = resolve_api_key(connection, token)
        if principal is not None:
            return principal
    if not token_resolvers:
        return None
    with db.read() as session:
        for resolver in token_resolvers:
            principal = resolver(session, token, now)
            if principal is not None:
                return principal
    return None
