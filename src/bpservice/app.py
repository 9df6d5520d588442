"""The application factory: settings in, a FastAPI app out (tests pass a scaled window and a clock)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from bpservice import __version__, oauth
from bpservice.api import (
    benchmarks,
    buildings,
    meter_index,
    meters,
    properties,
    reports,
    uploads,
    users,
    webhooks,
)
from bpservice.api.deps import busy_error
from bpservice.api.middleware import EdgeMiddleware
from bpservice.auth import TokenResolver
from bpservice.benchmarking import default_recalculator
from bpservice.db import migrate
from bpservice.db.service_secrets import service_secret
from bpservice.db.session import Database, DatabaseBusy
from bpservice.errors import install_error_handlers
from bpservice.faults import FaultInjector, FaultMiddleware
from bpservice.oauth.routes import FORM_KEY_NAME
from bpservice.oauth.throttle import make_throttle
from bpservice.ratelimit import make_limiter, redis_client
from bpservice.recalc import Recalculator
from bpservice.reporting.signing import SECRET_NAME as DOWNLOAD_KEY_NAME
from bpservice.secretbox import secret_box
from bpservice.settings import Settings
from bpservice.workers import reports as report_worker
from bpservice.workers import webhooks as webhook_worker

DESCRIPTION = """Reference implementation of the Building Performance Data Service (v1).

Every request carries `Authorization: Bearer <API key or access token>`. Errors have the shape
`{"error": {"code", "message", ...}}`. Every response carries `X-RateLimit-Limit`,
`X-RateLimit-Remaining`, `X-RateLimit-Reset`, `X-RateLimit-Window` (and `X-RateLimit-Bucket`);
GET responses carry an `ETag` and answer `If-None-Match` with 304."""


def prepare_schema(db: Database, settings: Settings) -> None:
    """Migrate a SQLite file on start (one file, one owner); elsewhere only check that someone
    ran `bpservice admin migrate`, so N instances never race to create the schema."""
    auto = settings.migrate_on_start
    if auto is None:
        auto = db.is_sqlite
    if auto:
        migrate.upgrade(db.engine)
    else:
        migrate.check_current(db.engine)


def create_app(
    settings: Settings | None = None,
    *,
    recalculator: Recalculator | None = None,
    token_resolvers: list[TokenResolver] | None = None,
) -> FastAPI:
    settings = settings or Settings()
    db = Database(settings.database_url, settings.database_limits)
    prepare_schema(db, settings)
    # Made (or read) now, so no request ever creates one inside its own write transaction.
    for name in (FORM_KEY_NAME, DOWNLOAD_KEY_NAME):
        service_secret(db, name, settings.clock())
    secret_box_ = secret_box(db, settings.secrets_key, settings.clock())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks = []
        if settings.run_workers:
            tasks = [asyncio.create_task(w.run(app)) for w in (report_worker, webhook_worker)]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            db.dispose()

    app = FastAPI(
        title="Building Performance Data Service",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.db = db
    app.state.secret_box = secret_box_
    redis = redis_client(settings.redis_url) if settings.redis_url else None
    app.state.limiter = make_limiter(settings, redis)
    app.state.signin_throttle = make_throttle(redis, settings.redis_prefix)
    app.state.recalculator = recalculator or default_recalculator()
    app.state.token_resolvers = (
        list(token_resolvers) if token_resolvers is not None else [oauth.resolve_access_token]
    )

    install_error_handlers(app)

    @app.exception_handler(DatabaseBusy)
    async def _busy(request: Request, exc: DatabaseBusy) -> JSONResponse:
        # A session opened outside the dependencies (the authorization server's pages) that
        # waited too long: overload, 503 with Retry-After like the dependencies answer.
        error = busy_error(exc)
        return JSONResponse(error.body(), status_code=error.status, headers=error.headers)

    for module in (
        properties,
        buildings,
        meters,
        meter_index,
        uploads,
        users,
        benchmarks,
        reports,
        webhooks,
        oauth,
    ):
        app.include_router(module.router)

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    app.add_middleware(EdgeMiddleware, state=app.state)
    app.state.fault_injector = None
    if settings.faults.enabled:
        # Added last, so it wraps EdgeMiddleware: faults hit before and after everything.
        app.state.fault_injector = FaultInjector(settings.faults)
        app.add_middleware(FaultMiddleware, injector=app.state.fault_injector)
    return app
