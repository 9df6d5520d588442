"""The OAuth 2.0 authorization server (Authorization Code + PKCE), standing in for {auth_url}.

Routes live under /oauth (`routes.py`); the rules are pure (`rules.py`); database work is in
`store.py`. `resolve_access_token` is the token resolver the app registers for bearer tokens."""

from __future__ import annotations

from bpservice.oauth.routes import router
from bpservice.oauth.store import resolve_access_token

__all__ = ["resolve_access_token", "router"]
