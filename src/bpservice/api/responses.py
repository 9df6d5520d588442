"""Responses documented on every operation, so the OpenAPI document states each status, body and
header the service can answer with (the middleware's 304, 413, 415, 429 and 503 included)."""

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
    415: "The body was not sent as Content-Type: application/json (unsupported_media_type)",
    422: "The request failed validation (validation_error and rule-specific codes)",
    429: "Rate limit exceeded (rate_limit_exceeded); see Retry-After",
    503: "The service is busy or cannot check rate limits now (service_unavailable); nothing was "
    "done, retry after Retry-After",
}


def _integer_header(description: str) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "integer"}}


# Every response carries these (spec, Limits 3); X-RateLimit-Bucket names the bucket described.
RATE_LIMIT_HEADERS: dict[str, dict[str, Any]] = {
    "X-RateLimit-Limit": _integer_header("Requests allowed per window"),
    "X-RateLimit-Remaining": _integer_header("Requests left in the current window"),
    "X-RateLimit-Reset": _integer_header("Unix time at which the current window ends"),
    "X-RateLimit-Window": _integer_header("Window length in seconds (60)"),
    "X-RateLimit-Bucket": {
        "description": "The bucket the other headers describe: key, user, bulk, reports or "
        "anonymous",
        "schema": {"type": "string"},
    },
}
_ETAG = {"ETag": {"description": "Entity tag of the body", "schema": {"type": "string"}}}
_RETRY_AFTER = {
    "Retry-After": _integer_header("Seconds to wait before retrying (429: until the bucket resets)")
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Documented error responses: the common ones plus the given statuses.

    422 is always listed (with the service's error body) so FastAPI does not add its own
    HTTPValidationError shape, which this service never returns. Listing 400 marks an operation
    that takes a JSON body, which can also answer 413 and 415."""
    wanted = {401, 403, 422, 429, 503} | set(statuses)
    if 400 in wanted:
        wanted |= {413, 415}
    return {
        status: {
            "model": ErrorBody,
            "description": _DESCRIPTIONS[status],
            "headers": {**RATE_LIMIT_HEADERS, **(_RETRY_AFTER if status in (429, 503) else {})},
        }
        for status in sorted(wanted)
    }


def success(status: int = 200, *, conditional: bool = False) -> dict[int | str, dict[str, Any]]:
    """Headers of the success response; `conditional` (GET) adds the ETag and the 304 answer."""
    documented: dict[int | str, dict[str, Any]] = {
        status: {"headers": {**RATE_LIMIT_HEADERS, **(_ETAG if conditional else {})}}
    }
    if conditional:
        documented[304] = {
            "description": "Not Modified: If-None-Match held the current ETag (no body; not "
            "counted against the rate limit)",
            "headers": {**RATE_LIMIT_HEADERS, **_ETAG},
        }
    return documented


def read_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A GET: 200 with ETag, 304, and the given error statuses."""
    return {**errors(*statuses), **success(conditional=True)}


def write_responses(status: int, *statuses: int) -> dict[int | str, dict[str, Any]]:
    """A write answering `status` on success, and the given error statuses."""
    return {**errors(*statuses), **success(status)}
