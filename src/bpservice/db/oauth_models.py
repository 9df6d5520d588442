"""Tables of the authorization server: registered OAuth apps, authorization codes, token families
(one per user consent) with their access and refresh tokens, and invitation links.

Every secret (client secret, code, token, invitation token) is stored as its SHA-256: each carries
256 random bits, so a slow hash would add nothing (docs/decisions.md (oauth section))."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from bpservice.db.models import Base
from bpservice.db.types import UTCDateTime


class OAuthClient(Base):
    __tablename__ = "oauth_clients"

    # The client_id itself (cli_…): public, so it doubles as the primary key.
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("organisations.id"), index=True)
    # Tokens issued to this app act in this environment (live or test).
    environment: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(String(1000))
    redirect_uris: Mapped[list[str]] = mapped_column(JSON)
    secret_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class TokenFamily(Base):
    """One consent: the code, and every access and refresh token descended from it."""

    __tablename__ = "oauth_token_families"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_reason: Mapped[str | None] = mapped_column(String(64))


class AuthorizationCode(Base):
    __tablename__ = "oauth_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    redirect_uri: Mapped[str] = mapped_column(String(2048))
    scopes: Mapped[list[str]] = mapped_column(JSON)
    code_challenge: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # The family created when the code was exchanged; revoked if the code is presented again.
    family_id: Mapped[str | None] = mapped_column(String(32))


class AccessToken(Base):
    __tablename__ = "oauth_access_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    family_id: Mapped[str] = mapped_column(ForeignKey("oauth_token_families.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())


class RefreshToken(Base):
    __tablename__ = "oauth_refresh_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    family_id: Mapped[str] = mapped_column(ForeignKey("oauth_token_families.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class InvitationToken(Base):
    """A single-use link that lets an invited user set a password and become active."""

    __tablename__ = "oauth_invitations"
    __table_args__ = (Index("ix_invitations_user", "user_id"),)

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
