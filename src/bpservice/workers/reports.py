"""Reports worker: filled in by the service part 2 work."""

from __future__ import annotations

from fastapi import FastAPI


async def run(app: FastAPI) -> None:
    """Runs until cancelled when the app starts with settings.run_workers."""
    return None
