"""Endpoints of the authorization server under /oauth: the authorization-code flow with PKCE
(login and consent pages), the token endpoint, and invitation acceptance."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import secrets
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from bpservice.db.models import Organisation, User
from bpservice.db.service_secrets import service_secret
from bpservice.oauth import pages, rules, store
from bpservice.oauth.store import OAuthError
from bpservice.oauth.throttle import SignInThrottle

router = APIRouter(prefix="/oauth", tags=["oauth"])

CSRF_COOKIE = "bp_oauth_csrf"
FORM_TTL = 600  # seconds a login, consent or invitation form stays valid
MAX_FORM_BYTES = 16 * 1024
FORM_KEY_NAME = "oauth_form_signing_key"


def _has_nul(pairs: Any) -> bool:
    """True when a name or value holds NUL: PostgreSQL text cannot hold one and no client id,
    token, address or password contains one, so such a request is refused before any lookup."""
    return any("\x00" in k or "\x00" in v for k, v in pairs)


def _form_key(request: Request) -> bytes:
    """The key signing form tokens: from settings, else one key kept in the database, so a form
    rendered by one instance can be posted to any other."""
    configured = request.app.state.settings.oauth_form_key
    if configured:
        return configured
    return service_secret(request.app.state.db, FORM_KEY_NAME, _now(request))


def _now(request: Request) -> dt.datetime:
    return request.app.state.settings.clock()


def _csrf_cookie(request: Request) -> tuple[str, bool]:
    """The browser's CSRF cookie value and whether it must be (re)set."""
    value = request.cookies.get(CSRF_COOKIE, "")
    if 20 <= len(value) <= 100:
        return value, False
    return secrets.token_urlsafe(24), True


def _set_cookie(response: Response, value: str) -> None:
    # SameSite=Lax: a cross-site POST carries no cookie, so a forged form submission fails.
    response.set_cookie(
        CSRF_COOKIE, value, httponly=True, samesite="lax", path="/oauth", max_age=FORM_TTL * 3
    )


async def _read_form(request: Request) -> dict[str, str] | None:
    """An application/x-www-form-urlencoded body as a dict; None when malformed or repeated."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return None
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return None
    if _has_nul(pairs):
        return None
    form: dict[str, str] = {}
    for key, value in pairs:
        if key in form:
            return None
        form[key] = value
    return form


def _with_params(uri: str, params: dict[str, str]) -> str:
    return uri + ("&" if "?" in uri else "?") + urlencode(params)


def _redirect(uri: str, params: dict[str, str]) -> RedirectResponse:
    # 303 so the browser follows a POST with a GET (RFC 9700 §4.12).
    return RedirectResponse(_with_params(uri, params), status_code=303)


def _form_payload(request: Request, token: str, kind: str) -> dict[str, Any] | None:
    """A form token's payload if it is ours, current, of this kind and bound to this browser."""
    now = _now(request).timestamp()
    payload = rules.read_form(_form_key(request), token, now)
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if payload is None or payload.get("k") != kind or not cookie:
        return None
    if not secrets.compare_digest(str(payload.get("b", "")), rules.cookie_binding(cookie)):
        return None
    return payload


def _throttle(request: Request) -> SignInThrottle:
    return request.app.state.signin_throttle


_EXPIRED = (
    "This form has expired or did not come from this site. Go back to the application and "
    "start again."
)


# --- GET /oauth/authorize -------------------------------------------------------------------------


@router.get(
    "/authorize",
    summary="Start the authorization code flow (PKCE S256): renders the sign-in page",
    response_class=Response,
)
def authorize(request: Request) -> Response:
    q = request.query_params
    params = {k: q.get(k, "") for k in q}
    if any(len(q.getlist(k)) > 1 for k in q):
        return pages.error_page("A parameter of the authorization request is repeated.")
    if _has_nul(q.multi_items()):
        return pages.error_page("A parameter of the authorization request holds a NUL character.")
    with request.app.state.db.read() as session:
        client = store.find_client(session, params.get("client_id", ""))
        if client is None:
            return pages.error_page("The application (client_id) is unknown.")
        redirect_uri = params.get("redirect_uri", "")
        # Never redirect to an unchecked address (RFC 6749 §4.1.2.1): show the error instead.
        if not redirect_uri or not rules.redirect_uri_matches(redirect_uri, client.redirect_uris):
            return pages.error_page(
                "The redirect_uri is missing or is not registered for this application."
            )
        app_name = client.name
        client_id = client.id

    state = params.get("state", "")
    back: dict[str, str] = {"state": state} if state else {}
    if params.get("response_type") != "code":
        return _redirect(
            redirect_uri,
            {"error": "unsupported_response_type", "error_description": "Use response_type=code."}
            | back,
        )
    if not state or len(state) > 500:
        return _redirect(
            redirect_uri,
            {"error": "invalid_request", "error_description": "state is required (1-500 chars)."}
            | back,
        )
    scopes = rules.parse_scopes(params.get("scope"))
    if scopes is None:
        return _redirect(
            redirect_uri,
            {"error": "invalid_scope", "error_description": "scope names unknown scopes or none."}
            | back,
        )
    challenge = params.get("code_challenge", "")
    if params.get("code_challenge_method") != "S256" or not rules.valid_challenge(challenge):
        return _redirect(
            redirect_uri,
            {
                "error": "invalid_request",
                "error_description": "PKCE is required: code_challenge (43 characters) with "
                "code_challenge_method=S256.",
            }
            | back,
        )
    cookie, fresh = _csrf_cookie(request)
    token = rules.sign_form(
        _form_key(request),
        {
            "k": "login",
            "c": client_id,
            "r": redirect_uri,
            "s": scopes,
            "st": state,
            "cc": challenge,
            "b": rules.cookie_binding(cookie),
        },
        FORM_TTL,
        _now(request).timestamp(),
    )
    response = pages.login_page(
        action="/oauth/authorize/login", form_token=token, app_name=app_name
    )
    if fresh:
        _set_cookie(response, cookie)
    return response


# --- POST /oauth/authorize/login ------------------------------------------------------------------


@router.post(
    "/authorize/login", summary="Sign-in form of the authorization flow", response_class=Response
)
async def login(request: Request) -> Response:
    form = await _read_form(request)
    if form is None:
        return pages.error_page("The form could not be read.")
    payload = _form_payload(request, form.get("form_token", ""), "login")
    if payload is None:
        return pages.error_page(_EXPIRED, 403)
    return await run_in_threadpool(_login, request, form, payload)


def _login(request: Request, form: dict[str, str], payload: dict[str, Any]) -> Response:
    now = _now(request)
    email = form.get("email", "")[:320]
    password = form.get("password", "")[: rules.PASSWORD_MAX + 1]
    with request.app.state.db.write() as session:
        client = store.find_client(session, payload["c"])
        if client is None:
            return pages.error_page("The application is no longer registered.")
        throttle = _throttle(request)
        account = email.strip().lower()
        address = request.client.host if request.client else "unknown"
        wait = throttle.wait(client.org_id, account, address, now.timestamp())
        if wait > 0:
            return pages.login_page(
                action="/oauth/authorize/login",
                form_token=form.get("form_token", ""),
                app_name=client.name,
                email=email,
                error=f"Too many failed sign-ins; try again in {math.ceil(wait)} seconds.",
                status=429,
            )
        user = store.check_login(session, client.org_id, email, password)
        if user is None:
            throttle.failed(client.org_id, account, address, now.timestamp())
            return pages.login_page(
                action="/oauth/authorize/login",
                form_token=form.get("form_token", ""),
                app_name=client.name,
                email=email,
                error="The email or password is incorrect, or the account is not active.",
            )
        throttle.succeeded(client.org_id, account)
        user.last_login_at = now
        consent = rules.sign_form(
            _form_key(request),
            {**{k: v for k, v in payload.items() if k != "exp"}, "k": "consent", "u": user.id},
            FORM_TTL,
            now.timestamp(),
        )
        return pages.consent_page(
            action="/oauth/authorize/consent",
            form_token=consent,
            app_name=client.name,
            app_description=client.description,
            user_email=user.email,
            scopes=payload["s"],
            environment=client.environment,
        )


# --- POST /oauth/authorize/consent ----------------------------------------------------------------


@router.post(
    "/authorize/consent",
    summary="Consent form: redirects to the application with a code or an error",
    response_class=Response,
)
async def consent(request: Request) -> Response:
    form = await _read_form(request)
    if form is None:
        return pages.error_page("The form could not be read.")
    payload = _form_payload(request, form.get("form_token", ""), "consent")
    if payload is None:
        return pages.error_page(_EXPIRED, 403)
    return await run_in_threadpool(_consent, request, form.get("decision", ""), payload)


def _consent(request: Request, decision: str, payload: dict[str, Any]) -> Response:
    redirect_uri, state = payload["r"], payload["st"]
    if decision != "allow":
        return _redirect(
            redirect_uri,
            {
                "error": "access_denied",
                "error_description": "The user denied access.",
                "state": state,
            },
        )
    now = _now(request)
    with request.app.state.db.write() as session:
        client = store.find_client(session, payload["c"])
        user = session.get(User, payload["u"])
        if (
            client is None
            or user is None
            or user.status != "active"
            or user.org_id != client.org_id
        ):
            return pages.error_page("The application or the account is no longer available.")
        code = store.issue_code(
            session,
            client=client,
            user=user,
            redirect_uri=redirect_uri,
            scopes=payload["s"],
            code_challenge=payload["cc"],
            now=now,
        )
    return _redirect(redirect_uri, {"code": code, "state": state})


# --- POST /oauth/token ----------------------------------------------------------------------------

_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _token_error(error: OAuthError) -> JSONResponse:
    headers = dict(_NO_STORE)
    if error.status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="bpservice-oauth"'
    return JSONResponse(
        {"error": error.error, "error_description": error.description},
        status_code=error.status,
        headers=headers,
    )


async def _token_params(request: Request) -> dict[str, str]:
    """The body as a dict of strings: JSON (the spec) or form-encoded (RFC 6749 §4.1.3)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json":
        raw = await request.body()
        if len(raw) > MAX_FORM_BYTES:
            raise OAuthError("invalid_request", "The request body is too large.")
        try:
            body = json.loads(raw)
        except ValueError:
            raise OAuthError("invalid_request", "The request body is not valid JSON.") from None
        if not isinstance(body, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in body.items()
        ):
            raise OAuthError("invalid_request", "The body must be a JSON object of strings.")
        if _has_nul(body.items()):
            raise OAuthError("invalid_request", "A parameter holds a NUL character.")
        return body
    if content_type == "application/x-www-form-urlencoded":
        form = await _read_form(request)
        if form is None:
            raise OAuthError(
                "invalid_request",
                "The form body is malformed, repeats a parameter or holds a NUL character.",
            )
        return form
    raise OAuthError(
        "invalid_request", "Send application/json (or application/x-www-form-urlencoded)."
    )


def _client_credentials(request: Request, params: dict[str, str]) -> tuple[str, str]:
    """client_id and secret from HTTP Basic (RFC 6749 §2.3.1) or the body; never both."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "basic":
        if "client_secret" in params:
            raise OAuthError("invalid_request", "Use one client authentication method, not two.")
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise OAuthError("invalid_client", "Malformed Basic credentials.", 401) from None
        client_id, sep, secret = decoded.partition(":")
        if not sep:
            raise OAuthError("invalid_client", "Malformed Basic credentials.", 401)
        client_id, secret = unquote_plus(client_id), unquote_plus(secret)
        if _has_nul([(client_id, secret)]):
            raise OAuthError("invalid_client", "Malformed Basic credentials.", 401)
        if params.get("client_id", client_id) != client_id:
            raise OAuthError("invalid_request", "client_id differs from the authenticated client.")
        return client_id, secret
    client_id, secret = params.get("client_id", ""), params.get("client_secret", "")
    if not client_id or not secret:
        raise OAuthError("invalid_client", "client_id and client_secret are required.", 401)
    return client_id, secret


@router.post(
    "/token",
    summary="Exchange an authorization code or a refresh token for tokens",
    description="JSON body (form-encoded is accepted too). Errors follow RFC 6749 §5.2: "
    '`{"error": "invalid_grant", "error_description": "..."}`.',
)
async def token(request: Request) -> JSONResponse:
    try:
        params = await _token_params(request)
        client_id, secret = _client_credentials(request, params)
        grant_type = params.get("grant_type", "")
        if grant_type not in ("authorization_code", "refresh_token"):
            raise OAuthError(
                "unsupported_grant_type", "grant_type must be authorization_code or refresh_token."
            )
    except OAuthError as error:
        return _token_error(error)
    outcome = await run_in_threadpool(_grant, request, client_id, secret, grant_type, params)
    if isinstance(outcome, OAuthError):
        return _token_error(outcome)
    return JSONResponse(outcome, headers=_NO_STORE)


def _grant(
    request: Request, client_id: str, secret: str, grant_type: str, params: dict[str, str]
) -> dict[str, Any] | OAuthError:
    now = _now(request)
    # The error is returned, not raised, so revocations made while refusing (code or refresh
    # token reuse) are committed with the transaction.
    with request.app.state.db.write() as session:
        try:
            client = store.authenticate_client(session, client_id, secret)
            if grant_type == "authorization_code":
                return store.exchange_code(
                    session,
                    client,
                    code=params.get("code", ""),
                    redirect_uri=params.get("redirect_uri"),
                    code_verifier=params.get("code_verifier"),
                    now=now,
                )
            return store.refresh_tokens(
                session,
                client,
                refresh_token=params.get("refresh_token", ""),
                scope=params.get("scope"),
                now=now,
            )
        except OAuthError as error:
            return error


# --- invitations ----------------------------------------------------------------------------------


def _invitation_view(request: Request, token: str) -> tuple[str, str, str] | None:
    with request.app.state.db.read() as session:
        user = store.invitation_user(session, token, _now(request))
        if user is None:
            return None
        org = session.get(Organisation, user.org_id)
        return user.email, org.name if org else "", user.name or ""


def _invitation_form(
    request: Request, token: str, cookie: str, email: str, org: str, name: str, error: str | None
) -> Response:
    form_token = rules.sign_form(
        _form_key(request),
        {"k": "invite", "t": rules.digest(token)[:32], "b": rules.cookie_binding(cookie)},
        FORM_TTL,
        _now(request).timestamp(),
    )
    return pages.invitation_page(
        action=f"/oauth/invitations/{token}",
        form_token=form_token,
        email=email,
        org_name=org,
        name=name,
        error=error,
    )


_BAD_INVITATION = "This invitation link is invalid, has been used, or has expired."


@router.get(
    "/invitations/{token}",
    summary="Invitation page: an invited user sets a name and password and becomes active",
    response_class=Response,
)
def invitation(request: Request, token: str) -> Response:
    view = _invitation_view(request, token)
    if view is None:
        return pages.error_page(_BAD_INVITATION, 404)
    cookie, fresh = _csrf_cookie(request)
    response = _invitation_form(request, token, cookie, *view, error=None)
    if fresh:
        _set_cookie(response, cookie)
    return response


@router.post("/invitations/{token}", summary="Accept an invitation", response_class=Response)
async def accept_invitation(request: Request, token: str) -> Response:
    form = await _read_form(request)
    if form is None:
        return pages.error_page("The form could not be read.")
    payload = _form_payload(request, form.get("form_token", ""), "invite")
    if payload is None or payload.get("t") != rules.digest(token)[:32]:
        return pages.error_page(_EXPIRED, 403)
    return await run_in_threadpool(_accept, request, token, form)


def _accept(request: Request, token: str, form: dict[str, str]) -> Response:
    view = _invitation_view(request, token)
    if view is None:
        return pages.error_page(_BAD_INVITATION, 404)
    email, org, _ = view
    name = form.get("name", "")[:300]
    password = form.get("password", "")[: rules.PASSWORD_MAX + 1]
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if password != form.get("confirm", ""):
        return _invitation_form(
            request, token, cookie, email, org, name, "The two passwords differ."
        )
    try:
        with request.app.state.db.write() as session:
            store.accept_invitation(session, token, name=name, password=password, now=_now(request))
    except store.StoreError as exc:
        return _invitation_form(request, token, cookie, email, org, name, str(exc))
    return pages.invitation_done(email)
