"""The bpsync API client: `AsyncServiceClient` (async core) and `ServiceClient` (sync facade).

Names are loaded on first use (PEP 562): `from bpsync.client import errors` must not pull in
httpx and the pydantic models, which every command's start-up would otherwise pay for (issue 28
item 7)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bpsync.client.auth import ApiKeyAuth, OAuthAuth, Secret, key_environment
    from bpsync.client.base import RetryPolicy
    from bpsync.client.errors import (
        AmbiguousWriteError,
        APIConnectionError,
        APIStatusError,
        APITimeoutError,
        AuthenticationError,
        BadRequestError,
        BPSyncError,
        ConflictError,
        CredentialsError,
        KeyringUnavailableError,
        LockedError,
        LoginRequiredError,
        NotFoundError,
        OAuthError,
        OverlapError,
        PayloadTooLargeError,
        PermissionDeniedError,
        RateLimitError,
        ServerError,
        ValidationError,
    )
    from bpsync.client.pagination import AsyncPaginator, Page
    from bpsync.client.service import AsyncServiceClient, ServiceClient

_WHERE = {
    "APIConnectionError": "bpsync.client.errors",
    "APIStatusError": "bpsync.client.errors",
    "APITimeoutError": "bpsync.client.errors",
    "AmbiguousWriteError": "bpsync.client.errors",
    "ApiKeyAuth": "bpsync.client.auth",
    "AsyncPaginator": "bpsync.client.pagination",
    "AsyncServiceClient": "bpsync.client.service",
    "AuthenticationError": "bpsync.client.errors",
    "BPSyncError": "bpsync.client.errors",
    "BadRequestError": "bpsync.client.errors",
    "ConflictError": "bpsync.client.errors",
    "CredentialsError": "bpsync.client.errors",
    "KeyringUnavailableError": "bpsync.client.errors",
    "LockedError": "bpsync.client.errors",
    "LoginRequiredError": "bpsync.client.errors",
    "NotFoundError": "bpsync.client.errors",
    "OAuthAuth": "bpsync.client.auth",
    "OAuthError": "bpsync.client.errors",
    "OverlapError": "bpsync.client.errors",
    "Page": "bpsync.client.pagination",
    "PayloadTooLargeError": "bpsync.client.errors",
    "PermissionDeniedError": "bpsync.client.errors",
    "RateLimitError": "bpsync.client.errors",
    "RetryPolicy": "bpsync.client.base",
    "Secret": "bpsync.client.auth",
    "ServerError": "bpsync.client.errors",
    "ServiceClient": "bpsync.client.service",
    "ValidationError": "bpsync.client.errors",
    "key_environment": "bpsync.client.auth",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'bpsync.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AmbiguousWriteError",
    "ApiKeyAuth",
    "AsyncPaginator",
    "AsyncServiceClient",
    "AuthenticationError",
    "BPSyncError",
    "BadRequestError",
    "ConflictError",
    "CredentialsError",
    "KeyringUnavailableError",
    "LockedError",
    "LoginRequiredError",
    "NotFoundError",
    "OAuthAuth",
    "OAuthError",
    "OverlapError",
    "Page",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "RetryPolicy",
    "Secret",
    "ServerError",
    "ServiceClient",
    "ValidationError",
    "key_environment",
]
