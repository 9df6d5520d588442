"""`bpservice worker`: webhook delivery and report generation as a process of their own, so API
instances can run with `serve --no-workers`. Several workers may run at once: every claim is a
row lock or a conditional update, so no two share a job."""

from __future__ import annotations

import asyncio
import logging
import signal
from contextlib import suppress
from types import SimpleNamespace
from typing import Any

from bpservice.db import migrate
from bpservice.db.session import Database
from bpservice.settings import Settings
from bpservice.workers import reports as report_worker
from bpservice.workers import webhooks as webhook_worker

log = logging.getLogger("bpservice.worker")


def worker_context(settings: Settings, db: Database) -> Any:
    """What the worker loops read from an app (`app.state.db`, `app.state.settings`)."""
    return SimpleNamespace(state=SimpleNamespace(db=db, settings=settings))


async def run_workers(settings: Settings, stop: asyncio.Event | None = None) -> None:
    db = Database(settings.database_url)
    try:
        if db.is_sqlite:
            migrate.upgrade(db.engine)
        else:
            migrate.check_current(db.engine)
        context = worker_context(settings, db)
        tasks = [asyncio.create_task(w.run(context)) for w in (report_worker, webhook_worker)]
        try:
            await (stop or asyncio.Event()).wait()
        finally:
            for task in tasks:
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
    finally:
        db.dispose()


def run_forever(settings: Settings) -> None:
    """Run until SIGINT or SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        log.info("worker started")
        await run_workers(settings, stop)

    asyncio.run(main())
