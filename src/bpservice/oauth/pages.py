"""Server-rendered pages of the authorization server. Every value placed in a page goes through
`html.escape`; pages forbid framing and scripts through their headers."""

from __future__ import annotations

from html import escape

from fastapi.responses import HTMLResponse

# What each scope lets an application do, in the words of the spec's scope table.
SCOPE_TEXT = {
    "properties:read": "Read property and building data",
    "properties:write": "Create, update and archive properties and buildings",
    "meters:read": "Read meter data",
    "meters:write": "Create meters, submit and delete readings",
    "benchmarks:read": "Read benchmark scores",
    "reports:read": "Read reports (list types, list, status, download)",
    "reports:write": "Generate reports and create report templates",
    "users:read": "Read user and team data",
    "users:write": "Manage users and roles",
    "webhooks:manage": "Create and manage webhook subscriptions",
}

_HEADERS = {
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;"
    "color:#222}label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password],"
    "input[type=text]{width:100%;padding:.4rem;box-sizing:border-box}button{margin:1rem .5rem 0 0;"
    "padding:.5rem 1rem}.error{color:#a00;background:#fee;padding:.5rem}.muted{color:#666}"
)


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """`body` must already be escaped HTML."""
    document = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def _error(message: str | None) -> str:
    return f"<p class=error role=alert>{escape(message)}</p>" if message else ""


def error_page(message: str, status: int = 400) -> HTMLResponse:
    return page("Cannot continue", f"<p>{escape(message)}</p>", status)


def login_page(
    *,
    action: str,
    form_token: str,
    app_name: str,
    email: str = "",
    error: str | None = None,
    status: int | None = None,
) -> HTMLResponse:
    body = (
        f"<p><strong>{escape(app_name)}</strong> wants to access your account.</p>"
        f"{_error(error)}"
        f'<form method=post action="{escape(action)}">'
        f'<input type=hidden name=form_token value="{escape(form_token)}">'
        "<label for=email>Email</label>"
        f'<input id=email name=email type=email required autocomplete=username value="{escape(email)}">'
        "<label for=password>Password</label>"
        "<input id=password name=password type=password required autocomplete=current-password>"
        "<button type=submit>Sign in</button></form>"
    )
    return page("Sign in", body, status or (401 if error else 200))


def consent_page(
    *,
    action: str,
    form_token: str,
    app_name: str,
    app_description: str | None,
    user_email: str,
    scopes: list[str],
    environment: str,
) -> HTMLResponse:
    items = "".join(
        f"<li><code>{escape(s)}</code>: {escape(SCOPE_TEXT.get(s, s))}</li>" for s in scopes
    )
    where = "production" if environment == "live" else "sandbox"
    description = f"<p class=muted>{escape(app_description)}</p>" if app_description else ""
    body = (
        f"<p>Signed in as <strong>{escape(user_email)}</strong>.</p>"
        f"<p><strong>{escape(app_name)}</strong> asks to act for you in the {where} "
        f"environment, with your role and property access, and to:</p>{description}"
        f"<ul>{items}</ul>"
        f'<form method=post action="{escape(action)}">'
        f'<input type=hidden name=form_token value="{escape(form_token)}">'
        "<button type=submit name=decision value=allow>Allow</button>"
        "<button type=submit name=decision value=deny>Deny</button></form>"
    )
    return page("Allow access?", body)


def invitation_page(
    *,
    action: str,
    form_token: str,
    email: str,
    org_name: str,
    name: str = "",
    error: str | None = None,
) -> HTMLResponse:
    body = (
        f"<p>You were invited to <strong>{escape(org_name)}</strong> as "
        f"<strong>{escape(email)}</strong>. Choose your name and a password "
        "(at least 12 characters) to activate your account.</p>"
        f"{_error(error)}"
        f'<form method=post action="{escape(action)}">'
        f'<input type=hidden name=form_token value="{escape(form_token)}">'
        "<label for=name>Name</label>"
        f'<input id=name name=name type=text required maxlength=200 value="{escape(name)}">'
        "<label for=password>Password</label>"
        "<input id=password name=password type=password required autocomplete=new-password>"
        "<label for=confirm>Repeat the password</label>"
        "<input id=confirm name=confirm type=password required autocomplete=new-password>"
        "<button type=submit>Activate my account</button></form>"
    )
    return page("Accept invitation", body, 400 if error else 200)


def invitation_done(email: str) -> HTMLResponse:
    return page(
        "Account active",
        f"<p>{escape(email)} is now active. You can sign in to applications that use this "
        "service.</p>",
    )
