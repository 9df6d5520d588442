"""One exception tree for everything the client raises.

```
BPSyncError
├── APIStatusError                 the service answered with an error body {error:{code,message,...}}
│   ├── BadRequestError            400 (invalid_json, ...)
│   ├── AuthenticationError        401
│   ├── PermissionDeniedError      403 (insufficient_scope, owner_required, forbidden)
│   ├── LockedError                403 building_locked
│   ├── NotFoundError              404
│   ├── ConflictError              409
│   │   └── OverlapError           409 reading_overlap (conflicting_reading_id)
│   ├── PayloadTooLargeError       413
│   ├── ValidationError            422 (details: [{field, code, message}])
│   ├── RateLimitError             429 (retry_after, bucket)
│   └── ServerError                5xx
├── APIConnectionError             no answer: refused, reset, DNS ...
│   └── APITimeoutError            no answer in time
├── AmbiguousWriteError            a creating POST may or may not have been applied: reconcile
└── CredentialsError               no usable credentials on this machine
    ├── KeyringUnavailableError    no OS keyring (headless, CI)
    └── LoginRequiredError         nothing stored, or the refresh token is no longer valid
```

Messages never contain secrets: only the method, the path (no query string values that could hold
tokens) and the service's own message."""

from __future__ import annotations

from typing import Any


class BPSyncError(Exception):
    """Base of every error raised by bpsync's client."""


class APIStatusError(BPSyncError):
    status: int = 0

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        method: str = "",
        path: str = "",
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.method = method
        self.path = path
        self.extra = dict(extra or {})
        self.headers = {
            k: v for k, v in (headers or {}).items() if k.lower() not in _SECRET_HEADERS
        }
        where = f" ({method} {path})" if method else ""
        super().__init__(f"{status} {code}: {message}{where}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions cross process boundaries (multiprocessing); keep keyword arguments.
        return (
            _rebuild,
            (type(self), self.status, self.code, self.message, self.method, self.path, self.extra),
        )


def _rebuild(cls: type[APIStatusError], *args: Any) -> APIStatusError:
    status, code, message, method, path, extra = args
    return cls(status, code, message, method=method, path=path, extra=extra)


_SECRET_HEADERS = {"authorization", "set-cookie", "cookie"}


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class PermissionDeniedError(APIStatusError):
    @property
    def required_scope(self) -> str | None:
        return self.extra.get("required_scope")


class LockedError(APIStatusError):
    """The building's readings are locked through a date (`building_locked`)."""

    @property
    def locked_through(self) -> str | None:
        return self.extra.get("locked_through")


class NotFoundError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    pass


class OverlapError(ConflictError):
    @property
    def conflicting_reading_id(self) -> str | None:
        return self.extra.get("conflicting_reading_id")


class PayloadTooLargeError(APIStatusError):
    pass


class ValidationError(APIStatusError):
    @property
    def details(self) -> list[dict[str, Any]]:
        return list(self.extra.get("details") or [])


class RateLimitError(APIStatusError):
    @property
    def retry_after(self) -> float | None:
        value = self.extra.get("retry_after")
        return float(value) if isinstance(value, int | float) else None

    @property
    def bucket(self) -> str | None:
        return self.extra.get("bucket")


class ServerError(APIStatusError):
    pass


class APIConnectionError(BPSyncError):
    def __init__(self, message: str, *, method: str = "", path: str = "") -> None:
        self.method = method
        self.path = path
        super().__init__(f"{message} ({method} {path})" if method else message)


class APITimeoutError(APIConnectionError):
    pass


class AmbiguousWriteError(BPSyncError):
    """A POST that creates something failed in a way that leaves its outcome unknown (a timeout
    after sending, a dropped connection, a 5xx). It is never re-sent blindly: the caller looks for
    what it tried to create (the importer reconciles by date range) and decides."""

    def __init__(self, method: str, path: str, cause: BPSyncError) -> None:
        self.method = method
        self.path = path
        self.cause = cause
        super().__init__(
            f"{method} {path}: the outcome is unknown ({cause}); check whether it was applied "
            "before sending it again"
        )


class CredentialsError(BPSyncError):
    pass


class KeyringUnavailableError(CredentialsError):
    pass


class LoginRequiredError(CredentialsError):
    pass


class OAuthError(BPSyncError):
    """The authorization server refused a request (`error` per RFC 6749 §5.2)."""

    def __init__(self, error: str, description: str = "", status: int = 0) -> None:
        self.error = error
        self.description = description
        self.status = status
        super().__init__(f"{error}: {description}" if description else error)


_BY_CODE: dict[str, type[APIStatusError]] = {
    "building_locked": LockedError,
    "reading_overlap": OverlapError,
    "rate_limit_exceeded": RateLimitError,
}
_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
}


def error_class(status: int, code: str) -> type[APIStatusError]:
    """The exception class for a status and error code (the code wins where it is more precise)."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status >= 500:
        return ServerError
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return BadRequestError if 400 <= status < 500 else APIStatusError


def from_response(
    status: int,
    body: Any,
    *,
    method: str = "",
    path: str = "",
    headers: dict[str, str] | None = None,
) -> APIStatusError:
    """Build the exception for an error answer; tolerates bodies that are not the service's shape
    (a proxy's HTML 502, an empty body)."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code") or f"http_{status}")
        message = str(error.get("message") or "")
        extra = {k: v for k, v in error.items() if k not in ("code", "message")}
    else:
        code, message, extra = f"http_{status}", f"HTTP {status}", {}
    if status == 429 and "retry_after" not in extra and headers:
        retry = headers.get("retry-after") or headers.get("Retry-After")
        if retry and retry.isdigit():
            extra["retry_after"] = int(retry)
    cls = error_class(status, code)
    return cls(status, code, message, method=method, path=path, extra=extra, headers=headers)
