"""`bpservice`: run the reference service, seed a demo, and administer organisations and keys."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from bpservice import admin
from bpservice.db.migrate import SchemaNotCurrent
from bpservice.db.session import Database
from bpservice.faults import FAULT_KINDS, FaultSettings, parse_kinds
from bpservice.settings import KEEP_ALIVE_SECONDS, RateLimits, Settings, database_url

app = typer.Typer(help="The reference Building Performance Data Service.", no_args_is_help=True)
admin_app = typer.Typer(help="Administer organisations, users and API keys.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")

DbOption = Annotated[
    str, typer.Option("--db", help="SQLite file path or SQLAlchemy URL", envvar="BPSERVICE_DB")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON")]
RedisOption = Annotated[
    str | None,
    typer.Option(
        "--redis-url",
        help="Redis URL for rate limits and sign-in throttles shared by every instance",
        envvar="BPSERVICE_REDIS_URL",
    ),
]


def _db(db: str, *, create: bool = False) -> Database:
    """The service's database. Only commands that make a service (`bootstrap`, `create-org`)
    may create a SQLite file; the others refuse a path that does not exist, so a missing --db
    never silently makes an empty ./bpservice.db and then reports unknown ids."""
    from bpservice.app import prepare_schema

    url = database_url(db)
    if not create and url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            _fail(
                f"no database at {path}: pass the service's database with --db (or "
                "BPSERVICE_DB), or create one with `bpservice admin bootstrap --db PATH`"
            )
    database = Database(url)
    try:
        prepare_schema(database, Settings(database_url=database.url))
    except SchemaNotCurrent as exc:
        _fail(str(exc))
    return database


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


AllowPrivateWebhooks = Annotated[
    bool,
    typer.Option(
        "--allow-private-webhooks",
        help="Let webhooks go to loopback, private and link-local addresses (local testing "
        "only; also BPSERVICE_ALLOW_PRIVATE_WEBHOOKS=1)",
    ),
]


def _allow_private(flag: bool) -> bool:
    if flag or os.environ.get("BPSERVICE_ALLOW_PRIVATE_WEBHOOKS", "") in {"1", "true", "yes"}:
        typer.secho(
            "Webhooks may go to private and loopback addresses (--allow-private-webhooks): "
            "for local testing only.",
            fg=typer.colors.YELLOW,
            err=True,
        )
        return True
    return False


def _secrets_key() -> str | None:
    """BPSERVICE_SECRETS_KEY from the environment only (a command-line flag would show in `ps`)."""
    from bpservice.secretbox import parse_keys

    configured = os.environ.get("BPSERVICE_SECRETS_KEY") or None
    try:
        parse_keys(configured)
    except ValueError as exc:
        _fail(str(exc))
    return configured


@admin_app.command("new-secrets-key")
def new_secrets_key() -> None:
    """Print a new key for BPSERVICE_SECRETS_KEY (seals webhook secrets at rest). To rotate, set
    "NEW,OLD": the first key seals, every key opens."""
    from cryptography.fernet import Fernet

    typer.echo(Fernet.generate_key().decode())


@app.command()
def serve(
    db: DbOption = "bpservice.db",
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8400,
    rate_window: Annotated[int, typer.Option(help="Rate-limit window in seconds")] = 60,
    faults: Annotated[
        float, typer.Option(help="Share of /v1 requests that fail on purpose (0-1; tests only)")
    ] = 0.0,
    fault_seed: Annotated[int | None, typer.Option(help="Seed of the fault sequence")] = None,
    fault_kinds: Annotated[
        str | None,
        typer.Option(help="Comma-separated fault kinds (default all): " + ", ".join(FAULT_KINDS)),
    ] = None,
    fault_hang: Annotated[
        float, typer.Option(help="Seconds a 'hang' fault stalls before answering")
    ] = 35.0,
    redis_url: RedisOption = None,
    no_workers: Annotated[
        bool,
        typer.Option(
            "--no-workers", help="Serve the API only; run `bpservice worker` for deliveries"
        ),
    ] = False,
    public_url: Annotated[
        str | None,
        typer.Option(
            help="Public address for absolute links (report downloads), e.g. "
            "https://bp.example.com; default: the address this server listens on"
        ),
    ] = None,
    allow_private_webhooks: AllowPrivateWebhooks = False,
    trusted_proxies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated proxy addresses whose X-Forwarded-For/-Proto headers are "
            "believed; default: none"
        ),
    ] = None,
) -> None:
    """Run the service. On PostgreSQL run `bpservice admin migrate` first; a SQLite file migrates
    itself."""
    import uvicorn

    from bpservice.app import create_app

    try:
        fault_settings = FaultSettings(
            rate=faults, seed=fault_seed, kinds=parse_kinds(fault_kinds), hang_seconds=fault_hang
        )
    except ValueError as exc:
        _fail(str(exc))
    settings = Settings(
        database_url=database_url(db),
        rate_limits=RateLimits(window_seconds=rate_window),
        faults=fault_settings,
        redis_url=redis_url,
        run_workers=not no_workers,
        public_base_url=public_url,
        secrets_key=_secrets_key(),
        allow_private_webhooks=_allow_private(allow_private_webhooks),
    )
    if fault_settings.enabled:
        typer.secho(
            f"FAULT INJECTION ON: {faults:.0%} of /v1 requests fail "
            f"({', '.join(fault_settings.kinds)}; seed {fault_seed}).",
            fg=typer.colors.YELLOW,
            err=True,
        )
    if not settings.database_url.startswith("sqlite") and not redis_url:
        typer.secho(
            "Rate limits and the sign-in throttle are counted in this process only; with more "
            "than one instance, give every instance the same --redis-url (docs/deploy.md).",
            fg=typer.colors.YELLOW,
            err=True,
        )
    try:
        application = create_app(settings)
    except SchemaNotCurrent as exc:
        _fail(str(exc))
    # uvicorn believes X-Forwarded-* from 127.0.0.1 by default; here only from named proxies.
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level="info",
        proxy_headers=bool(trusted_proxies),
        forwarded_allow_ips=trusted_proxies or "",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


@app.command()
def worker(
    db: DbOption = "bpservice.db",
    poll: Annotated[float, typer.Option(help="Seconds between queue polls when idle")] = 0.2,
    allow_private_webhooks: AllowPrivateWebhooks = False,
) -> None:
    """Deliver webhooks and generate reports, without serving the API. Run one or more next to
    `serve --no-workers` instances; claims are row-locked, so workers never share a job."""
    from bpservice.workers import runner

    settings = Settings(
        database_url=database_url(db),
        webhook_poll_seconds=poll,
        secrets_key=_secrets_key(),
        allow_private_webhooks=_allow_private(allow_private_webhooks),
    )
    try:
        runner.run_forever(settings)
    except SchemaNotCurrent as exc:
        _fail(str(exc))


@admin_app.command("migrate")
def migrate_cmd(
    db: DbOption = "bpservice.db",
    as_json: JsonOption = False,
) -> None:
    """Create or upgrade the database schema to this version (run once per deploy)."""
    from bpservice.db import migrate

    database = Database(database_url(db))
    try:
        before, after = migrate.upgrade(database.engine)
    finally:
        database.dispose()
    if as_json:
        typer.echo(json.dumps({"from": before, "to": after}))
    elif before == after:
        typer.echo(f"Schema already at revision {after}.")
    else:
        typer.echo(f"Schema migrated from {before or 'empty'} to revision {after}.")


@app.command()
def demo(
    db: DbOption = "bpservice-demo.db",
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8400,
    exit_after_seed: Annotated[
        bool, typer.Option("--seed-only", help="Seed and print, then exit instead of serving")
    ] = False,
) -> None:
    """Create a demo organisation with a seeded sandbox portfolio, print how to reach it, serve."""
    import uvicorn

    from bpservice.app import create_app
    from bpservice.demo import seed

    settings = Settings(database_url=database_url(db))
    application = create_app(settings)
    with application.state.db.write() as session:
        info = admin.bootstrap(session)
    # Seed through the API (every rule applies) on an instance whose bulk bucket fits the seed.
    seeder = create_app(
        Settings(database_url=settings.database_url, rate_limits=RateLimits(bulk=10_000))
    )
    counts = asyncio.run(seed(seeder, info["test_key"]))
    base = f"http://{host}:{port}"
    typer.echo(f"Demo organisation {info['org_id']} (owner {info['owner_email']}) in {db}")
    typer.echo(
        f"Seeded the sandbox: {counts['properties']} properties, {counts['buildings']} buildings, "
        f"{counts['meters']} meters, {counts['readings']} readings."
    )
    typer.echo(f"Service:  {base}/v1   (OpenAPI: {base}/docs)")
    typer.echo("Sandbox key (shown once; it is stored only as a hash):")
    typer.echo(f"  {info['test_key']}")
    typer.echo(f"Try:  curl -H 'Authorization: Bearer <key>' {base}/v1/properties")
    if exit_after_seed:
        return
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )


@admin_app.command("bootstrap")
def bootstrap_cmd(
    db: DbOption = "bpservice.db",
    org_name: Annotated[str, typer.Option(help="Organisation name")] = "Demo Organisation",
    owner_email: Annotated[str, typer.Option(help="Owner's email")] = "owner@example.com",
    as_json: JsonOption = False,
) -> None:
    """Create an organisation, its owner and a sandbox and a production key with every scope."""
    with _db(db, create=True).write() as session:
        try:
            info = admin.bootstrap(session, org_name=org_name, owner_email=owner_email)
        except admin.AdminError as exc:
            _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    for name, value in info.items():
        typer.echo(f"{name}: {value}")
    typer.echo("The keys are shown once; only their hashes are stored.")


@admin_app.command("create-org")
def create_org(
    name: Annotated[str, typer.Argument(help="Organisation name")],
    owner_email: Annotated[str, typer.Option(help="Email of the first owner")],
    db: DbOption = "bpservice.db",
    as_json: JsonOption = False,
) -> None:
    """Create an organisation with its first owner."""
    with _db(db, create=True).write() as session:
        try:
            org = admin.create_organisation(session, name)
            owner = admin.create_user(session, org.id, owner_email, role="owner")
        except admin.AdminError as exc:
            _fail(str(exc))
    info = {"org_id": org.id, "owner_user_id": owner.id}
    typer.echo(json.dumps(info) if as_json else f"created {org.id} with owner {owner.id}")


@admin_app.command("create-user")
def create_user(
    org_id: Annotated[str, typer.Argument(help="Organisation id")],
    email: Annotated[str, typer.Argument(help="Email")],
    role: Annotated[str, typer.Option(help="owner, admin or viewer")] = "viewer",
    name: Annotated[str | None, typer.Option(help="Display name")] = None,
    db: DbOption = "bpservice.db",
    as_json: JsonOption = False,
) -> None:
    """Create an active user in an organisation."""
    with _db(db).write() as session:
        try:
            user = admin.create_user(session, org_id, email, role=role, name=name)
        except admin.AdminError as exc:
            _fail(str(exc))
    info = {"user_id": user.id, "email": user.email, "role": user.role}
    typer.echo(json.dumps(info) if as_json else f"created {user.id} ({user.email}, {user.role})")


@admin_app.command("create-key")
def create_key(
    org_id: Annotated[str, typer.Argument(help="Organisation id")],
    environment: Annotated[str, typer.Option(help="test (sandbox) or live (production)")] = "test",
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="A scope to grant (repeat); default all")
    ] = None,
    name: Annotated[str, typer.Option(help="A descriptive name")] = "API key",
    user_id: Annotated[str | None, typer.Option(help="Owning user (default: first owner)")] = None,
    db: DbOption = "bpservice.db",
    as_json: JsonOption = False,
) -> None:
    """Create an API key; the key is printed once and stored only as a hash."""
    with _db(db).write() as session:
        try:
            key = admin.create_api_key(
                session, org_id, environment=environment, scopes=scope, name=name, user_id=user_id
            )
        except admin.AdminError as exc:
            _fail(str(exc))
    info = {"key_id": key.id, "key": key.key, "environment": key.environment, "scopes": key.scopes}
    if as_json:
        typer.echo(json.dumps(info))
    else:
        typer.echo(f"{key.id} ({key.environment}): {key.key}")
        typer.echo("Store it now: it is not shown again.")


@admin_app.command("list-keys")
def list_keys(
    org_id: Annotated[str | None, typer.Argument(help="Organisation id (default all)")] = None,
    db: DbOption = "bpservice.db",
    as_json: JsonOption = False,
) -> None:
    """List API keys (never their secrets)."""
    with _db(db).read() as session:
        keys = admin.list_api_keys(session, org_id)
    if as_json:
        typer.echo(json.dumps(keys, indent=2))
        return
    for k in keys:
        state = f"revoked {k['revoked_at']}" if k["revoked_at"] else "active"
        typer.echo(f"{k['id']}  {k['prefix']:<18} {k['environment']:<4}  {state:<10}  {k['name']}")


@admin_app.command("revoke-key")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="The key's id (key_…)")],
    db: DbOption = "bpservice.db",
) -> None:
    """Revoke an API key at once."""
    with _db(db).write() as session:
        try:
            key = admin.revoke_api_key(session, key_id)
        except admin.AdminError as exc:
            _fail(str(exc))
    typer.echo(f"revoked {key.id} at {key.revoked_at.isoformat() if key.revoked_at else ''}")


@admin_app.command("create-oauth-app")
def create_oauth_app(
    org_id: Annotated[str, typer.Argument(help="Organisation id")],
    name: Annotated[str, typer.Option(help="Application name shown on the consent page")],
    redirect_uri: Annotated[
        list[str], typer.Option("--redirect-uri", help="A redirect URI (repeat for several)")
    ],
    description: Annotated[str | None, typer.Option(help="Shown on the consent page")] = None,
    environment: Annotated[
        str, typer.Option(help="test (sandbox) or live (production): where its tokens act")
    ] = "test",
    db: DbOption = "bpservice.db",
    as_json: JsonOption = False,
) -> None:
    """Register an OAuth app; prints client_id and client_secret (the secret only once)."""
    with _db(db).write() as session:
        try:
            client = admin.create_oauth_app(
                session,
                org_id,
                name=name,
                redirect_uris=redirect_uri,
                description=description,
                environment=environment,
            )
        except admin.AdminError as exc:
            _fail(str(exc))
    info = {
        "client_id": client.client_id,
        "client_secret": client.client_secret,
        "environment": client.environment,
        "redirect_uris": client.redirect_uris,
    }
    if as_json:
        typer.echo(json.dumps(info))
        return
    typer.echo(f"client_id:     {client.client_id} ({client.environment})")
    typer.echo(f"client_secret: {client.client_secret}")
    typer.echo("Store the secret now: it is not shown again.")


@admin_app.command("set-password")
def set_password(
    user_id: Annotated[str, typer.Argument(help="The user's id (usr_…)")],
    db: DbOption = "bpservice.db",
    password: Annotated[
        str | None,
        typer.Option(
            help="The new password (default: prompt; avoid passing it on the command line)",
            envvar="BPSERVICE_PASSWORD",
        ),
    ] = None,
) -> None:
    """Set a user's password for the OAuth sign-in page; an invited user becomes active."""
    if password is None:
        password = typer.prompt("New password", hide_input=True, confirmation_prompt=True)
    with _db(db).write() as session:
        try:
            user = admin.set_password(session, user_id, password)
        except admin.AdminError as exc:
            _fail(str(exc))
    typer.echo(f"password set for {user.id} ({user.email}); status {user.status}")


@admin_app.command("invite-link")
def invite_link(
    user_id: Annotated[str, typer.Argument(help="An invited user's id (usr_…)")],
    base_url: Annotated[str, typer.Option(help="The service's public address")] = (
        "http://127.0.0.1:8400"
    ),
    db: DbOption = "bpservice.db",
) -> None:
    """Print a single-use invitation link (standing in for the invitation email)."""
    with _db(db).write() as session:
        try:
            token = admin.create_invitation_link(session, user_id)
        except admin.AdminError as exc:
            _fail(str(exc))
    typer.echo(f"{base_url.rstrip('/')}/oauth/invitations/{token}")


def main() -> None:
    app(prog_name="bpservice")


if __name__ == "__main__":
    sys.exit(main())
