"""Error responses documented on every operation, so the OpenAPI document states them."""

from __future__ import annotations

from typing import Any

from bpservice.api.schemas import ErrorBody

_DESCRIPTIONS = {
    400: "Malformed JSON (invalid_json)",
    401: "Missing, invalid or revoked credentials (unauthorized)",
    403: "The credentials lack the scope or role (insufficient_scope, forbidden)",
    404: "No such resource in the caller's organisation and environment (not_found)",
    409: "The request conflicts with the resource's state",
    413: "Request body too large (payload_too_large)",
    422: "The request failed validation (validation_error and rule-specific codes)",
    429: "Rate limit exceeded (rate_limit_exceeded); see Retry-After",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Documented error responses: the common ones plus the given statuses."""
    common = {401, 403, 429}
    return {
        status: {"model": ErrorBody, "description": _DESCRIPTIONS[status]}
        for status in sorted(common | set(statuses))
    }
