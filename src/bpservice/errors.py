"""The service's error type and the handlers that turn every failure into `{error:{code,message,...}}`."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("bpservice")


def _utc_timestamp(value: dt.datetime) -> str:
    # The same spelling as response bodies: ISO 8601 UTC with a Z.
    return value.astimezone(dt.UTC).isoformat().removesuffix("+00:00") + "Z"


class APIError(Exception):
    """An error the API reports to the caller; `extra` fields are merged into the error body."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                **jsonable_encoder(self.extra, custom_encoder={dt.datetime: _utc_timestamp}),
            }
        }


def not_found(kind: str, resource_id: str) -> APIError:
    return APIError(404, "not_found", f"No {kind} with id {resource_id!r}.", resource=kind)


def validation_error(message: str, field: str, code: str = "invalid") -> APIError:
    return APIError(
        422,
        "validation_error",
        message,
        details=[{"field": field, "code": code, "message": message}],
    )


def error_response(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """`("body", "address", "country")` -> `address.country`; list indexes become `[i]`."""
    parts: list[str] = []
    for item in loc:
        if item in ("body", "query", "path", "header"):
            continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif parts:
            parts.append(f".{item}")
        else:
            parts.append(str(item))
    return "".join(parts) or "body"


def pydantic_details(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    details = []
    for err in errors:
        loc = list(err.get("loc", ()))
        # Pydantic names the union/validator branch in loc; keep only real field names.
        loc = [p for p in loc if not (isinstance(p, str) and p.startswith("function-"))]
        message = str(err.get("msg", "invalid value"))
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        details.append(
            {"field": field_path(loc), "code": str(err.get("type", "invalid")), "message": message}
        )
    return details


# FastAPI's message when reading or decoding the body fails for a reason other than JSON syntax.
_FASTAPI_BODY_PARSE_ERROR = "There was an error parsing the body"


def is_json_media_type(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _body_not_parsed(errors: list[dict[str, Any]]) -> bool:
    """True when a body was sent but FastAPI passed it on unparsed (as bytes)."""
    return any(
        tuple(e.get("loc", ())) == ("body",)
        and e.get("type") in ("model_attributes_type", "dict_type")
        and isinstance(e.get("input"), bytes | bytearray)
        for e in errors
    )


def allowed_methods(routes: list[Any], path: str) -> list[str]:
    """The methods of the resource at `path`: of the routes whose template matches it, those with
    the fewest parameters (`/v1/users/invite` is its own resource, not a `/v1/users/{user_id}`)."""
    matches: list[tuple[int, set[str]]] = []

    def walk(routes: list[Any]) -> None:
        for route in routes:
            if hasattr(route, "original_router"):  # FastAPI keeps included routers as one entry
                walk(route.original_router.routes)
            elif getattr(route, "methods", None) and route.path_regex.match(path):
                matches.append((route.path.count("{"), set(route.methods)))

    walk(routes)
    if not matches:
        return []
    fewest = min(params for params, _ in matches)
    return sorted(set().union(*(methods for params, methods in matches if params == fewest)))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "invalid_json", "The request body is not valid JSON.")
        content_type = request.headers.get("content-type") or ""
        if not is_json_media_type(content_type) and _body_not_parsed(errors):
            # FastAPI hands a body without a JSON content type to the model as raw bytes; name
            # the real problem instead of "Input should be a valid dictionary".
            sent = content_type.split(";")[0].strip()[:100] or "no Content-Type"
            return error_response(
                415,
                "unsupported_media_type",
                f"Request bodies must be sent as Content-Type: application/json (got {sent}).",
            )
        details = pydantic_details(errors)
        fields = ", ".join(d["field"] for d in details[:5])
        return error_response(
            422, "validation_error", f"The request is invalid: {fields}.", details=details
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        code = codes.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else "Request failed."
        if exc.status_code == 400 and message == _FASTAPI_BODY_PARSE_ERROR:
            # JSON the decoder refuses beyond syntax, e.g. integers longer than 4,300 digits.
            code, message = "invalid_json", "The request body is not valid JSON."
        if exc.status_code == 404:
            message = f"No route for {request.method} {request.url.path}."
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            # Starlette names only the first matching route's methods; RFC 9110 §15.5.6 wants
            # every method the resource supports (GET and POST /v1/properties are two routes).
            headers["Allow"] = ", ".join(allowed_methods(request.app.routes, request.url.path))
        return JSONResponse(
            {"error": {"code": code, "message": message}},
            status_code=exc.status_code,
            headers=headers or None,
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "The service failed to handle the request.")
