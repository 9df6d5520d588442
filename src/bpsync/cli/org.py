"""`users` and `webhooks`: the organisation's people and subscriptions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from bpsync.cli.output import (
    EXIT,
    AllOpt,
    JsonOpt,
    PageOpt,
    PerPageOpt,
    _state,
    fail,
    item_command,
    listing,
    run,
    show,
    show_list,
    stderr,
)
from bpsync.cli.root import app

# --- users ---------------------------------------------------------------------------------------

users_app = typer.Typer(help="Users of the organisation.", no_args_is_help=True)
app.add_typer(users_app, name="users")
USER_COLUMNS = [
    ("id", "id"),
    ("email", "email"),
    ("name", "name"),
    ("role", "role"),
    ("status", "status"),
    ("last login", "last_login_at"),
]


def _access(value: str | None) -> Any:
    if value is None:
        return None
    return "all" if value == "all" else [v.strip() for v in value.split(",") if v.strip()]


@users_app.command("list")
def users_list(
    ctx: typer.Context,
    role: Annotated[str | None, typer.Option(help="owner, admin or viewer")] = None,
    status_: Annotated[
        str | None, typer.Option("--status", help="active, invited, deactivated")
    ] = None,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List users."""
    listing(
        ctx,
        as_json,
        fetch_all,
        USER_COLUMNS,
        "Users",
        lambda c: c.users.list(role=role, status=status_, page=page, per_page=per_page),
    )


item_command(users_app, "get", ["user_id"], lambda c, i: c.users.get(i), "Show one user.")
item_command(
    users_app,
    "deactivate",
    ["user_id"],
    lambda c, i: c.users.deactivate(i),
    "Deactivate a user (access is revoked at once).",
)
item_command(
    users_app,
    "reactivate",
    ["user_id"],
    lambda c, i: c.users.reactivate(i),
    "Reactivate a deactivated user.",
)


@users_app.command("invite")
def users_invite(
    ctx: typer.Context,
    email: Annotated[str, typer.Option()],
    role: Annotated[str, typer.Option(help="owner, admin or viewer")],
    access: Annotated[str, typer.Option(help="all, or property ids separated by commas")] = "all",
    as_json: JsonOpt = False,
) -> None:
    """Invite a user."""
    state = _state(ctx, None, as_json)
    show(
        state,
        run(ctx, lambda c: c.users.invite(email=email, role=role, property_access=_access(access))),
    )


@users_app.command("update")
def users_update(
    ctx: typer.Context,
    user_id: str,
    role: Annotated[str | None, typer.Option()] = None,
    access: Annotated[str | None, typer.Option(help="all, or property ids")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a user's role or property access."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v for k, v in {"role": role, "property_access": _access(access)}.items() if v is not None
    }
    if not fields:
        fail("nothing to change: give --role or --access", EXIT.USAGE)
    show(state, run(ctx, lambda c: c.users.update(user_id, **fields)))


# --- webhooks ------------------------------------------------------------------------------------

webhooks_app = typer.Typer(help="Webhook subscriptions.", no_args_is_help=True)
app.add_typer(webhooks_app, name="webhooks")
WEBHOOK_COLUMNS = [
    ("id", "id"),
    ("url", "url"),
    ("events", "events"),
    ("status", "status"),
    ("last success", "last_success_at"),
]


@webhooks_app.command("list")
def webhooks_list(
    ctx: typer.Context,
    status_: Annotated[
        str | None, typer.Option("--status", help="enabled, paused, disabled")
    ] = None,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List subscriptions."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state, c.webhooks.list(status=status_), fetch_all, WEBHOOK_COLUMNS, "Webhooks"
        ),
    )


item_command(
    webhooks_app, "get", ["webhook_id"], lambda c, i: c.webhooks.get(i), "Show one subscription."
)
item_command(
    webhooks_app, "pause", ["webhook_id"], lambda c, i: c.webhooks.pause(i), "Pause deliveries."
)
item_command(
    webhooks_app,
    "resume",
    ["webhook_id"],
    lambda c, i: c.webhooks.resume(i),
    "Resume deliveries.",
)


@webhooks_app.command("create")
def webhooks_create(
    ctx: typer.Context,
    url: Annotated[str, typer.Option(help="Endpoint receiving deliveries")],
    event: Annotated[list[str], typer.Option("--event", help="Event type, or * (repeatable)")],
    secret_file: Annotated[
        Path | None,
        typer.Option(help="File holding the signing secret (else you are prompted; never echoed)"),
    ] = None,
    description: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Subscribe URL to events. The signing secret is read from a file or prompted without echo,
    so it never lands in shell history or output."""
    state = _state(ctx, None, as_json)
    if secret_file is not None:
        secret = secret_file.read_text(encoding="utf-8").strip()
    else:
        secret = typer.prompt("Signing secret", hide_input=True, err=True).strip()
    show(
        state,
        run(
            ctx,
            lambda c: c.webhooks.create(
                url=url, events=event, secret=secret, description=description
            ),
        ),
    )


@webhooks_app.command("update")
def webhooks_update(
    ctx: typer.Context,
    webhook_id: str,
    url: Annotated[str | None, typer.Option()] = None,
    event: Annotated[list[str] | None, typer.Option("--event")] = None,
    description: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a subscription's URL, events or description."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v for k, v in {"url": url, "events": event, "description": description}.items() if v
    }
    if not fields:
        fail("nothing to change", EXIT.USAGE)
    show(state, run(ctx, lambda c: c.webhooks.update(webhook_id, **fields)))


@webhooks_app.command("delete")
def webhooks_delete(ctx: typer.Context, webhook_id: str) -> None:
    """Delete a subscription and its delivery history."""
    run(ctx, lambda c: c.webhooks.delete(webhook_id))
    stderr().print(f"deleted {webhook_id}")


@webhooks_app.command("deliveries")
def webhooks_deliveries(
    ctx: typer.Context,
    webhook_id: str,
    status_: Annotated[str | None, typer.Option("--status")] = None,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delivery history of a subscription."""
    state = _state(ctx, None, as_json)
    run(
        ctx,
        lambda c: show_list(
            state,
            c.webhooks.deliveries(webhook_id, status=status_),
            fetch_all,
            [
                ("id", "id"),
                ("event", "event_type"),
                ("status", "status"),
                ("attempts", "attempt_count"),
                ("created", "created_at"),
            ],
            "Deliveries",
        ),
    )
