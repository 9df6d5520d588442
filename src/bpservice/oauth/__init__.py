"""The OAuth 2.0 authorization server (Authorization Code + PKCE), standing in for {auth_url}."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter
from sqlalchemy.orm import Session

from bpservice.auth import Principal

router = APIRouter(prefix="/oauth", tags=["oauth"])


def resolve_access_token(session: Session, token: str, now: dt.datetime) -> Principal | None:
    """The Principal behind an OAuth access token, or None (filled in by the OAuth work)."""
    return None
