"""Shared helpers: exact server state, generated files, transports that lose answers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx

from bpsync.client import AsyncServiceClient


async def server_readings(client: AsyncServiceClient) -> dict[str, list[tuple]]:
    """meter id → [(start, end, consumption, cost)] of every stored reading, by start."""
    out: dict[str, list[tuple]] = {}
    async for p in client.properties.list(per_page=200):
        async for b in client.buildings.list(p.id, per_page=200):
            async for m in client.meters.list(b.id, per_page=200):
                rows = await client.readings.list(b.id, m.id, per_page=200).to_list()
                out[m.id] = [(r.start_date, r.end_date, r.consumption, r.cost) for r in rows]
    return out


def monthly_csv(
    path: Path,
    meters: dict[str, int],
    first: dt.date = dt.date(2022, 1, 1),
    units: dict[str, str] | None = None,
) -> Path:
    """A long_csv file: `count` monthly readings for each meter id (in its unit, default kWh)."""
    lines = ["Meter ID,Start Date,End Date,Consumption,Unit"]
    for meter, count in meters.items():
        start = first
        for i in range(count):
            nxt = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
            unit = (units or {}).get(meter, "kWh")
            lines.append(f"{meter},{start},{nxt - dt.timedelta(days=1)},{1000 + 7 * i},{unit}")
            start = nxt
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Crash(BaseException):
    """Stands in for the process dying: nothing in the client or importer catches it."""


class LoseAnswer(httpx.AsyncBaseTransport):
    """Forwards to the real service; on the n-th readings POST (1-based) the service commits
    and answers, and the answer is lost: `error` is raised instead of returning it."""

    def __init__(self, fail_on: set[int], error: type[BaseException] | BaseException) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.fail_on = fail_on
        self.error = error
        self.posts = 0
        self.lost = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and "/readings" in request.url.path:
            self.posts += 1
            if self.posts in self.fail_on:
                await response.aread()
                await response.aclose()
                self.lost += 1
                error = self.error
                if isinstance(error, type) and issubclass(error, httpx.TransportError):
                    raise error("connection dropped after the request was sent", request=request)
                raise error if isinstance(error, BaseException) else error()
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
