"""Issue 14 item 8: the meters a file names are looked up at the service only when they have the
shape of the service's meter ids (decisions D2: `mtr_` and 24 of [0-9a-z]). A file of garbage
makes no lookups and puts none of its content into a URL, in a dry run and a real import alike;
real `mtr_…` ids and references the meter map links are still found. Against the real service
over loopback HTTP, the requests counted at the transport."""

from __future__ import annotations

import random
import string
from pathlib import Path

import httpx
import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest.lookup.fetch import fetch_portfolio
from bpsync.ingest.lookup.meter_map import link_meter
from bpsync.ingest.run.import_file import ImportOptions, import_file
from tests.conftest import Service
from tests.importer.conftest import PROFILE
from tests.importer.helpers import monthly_csv

pytestmark = pytest.mark.anyio

ROWS = 2_000  # distinct references: the old code made one GET /v1/meters per 200 of them


class Counting(httpx.AsyncBaseTransport):
    """Forwards to the real service and keeps every request's method and URL."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.seen: list[tuple[str, httpx.URL]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.method, request.url))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def meter_lookups(self) -> list[httpx.URL]:
        return [u for m, u in self.seen if m == "GET" and u.path.rstrip("/") == "/v1/meters"]


def garbage(path: Path, header: str, seed: int = 14) -> tuple[Path, list[str]]:
    """ROWS rows whose meter cell is a distinct random token; the other cells are sound."""
    rng = random.Random(seed)
    tokens = ["".join(rng.choices(string.ascii_letters + string.digits, k=12)) for _ in range(ROWS)]
    lines = [header] + [f"{t},2022-01-01,2022-01-31,{100 + i},kWh" for i, t in enumerate(tokens)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, tokens


async def _import(service: Service, path: Path, options: ImportOptions):
    transport = Counting()
    async with AsyncServiceClient(
        service.base_url, service.test_key, profile=PROFILE, transport=transport
    ) as counted:
        summary = await import_file(counted, PROFILE, path, options)
    return summary, transport


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize(
    "header",
    [
        "Meter ID,Start Date,End Date,Consumption,Unit",  # long_csv: meters by id
        "Meter Number,Service Start,Service End,Usage,Usage Unit",  # by external reference
    ],
)
async def test_garbage_references_are_refused_without_a_lookup(
    service: Service, registered, tmp_path: Path, header: str, dry_run: bool
) -> None:
    path, tokens = garbage(tmp_path / "garbage.csv", header)
    summary, transport = await _import(service, path, ImportOptions(dry_run=dry_run))
    assert transport.meter_lookups() == []
    urls = " ".join(str(u) for _, u in transport.seen)
    assert not any(t in urls for t in tokens)  # no file content in any URL
    assert summary.rejected == ROWS and summary.accepted == 0
    reasons = {p["reason"] for p in summary.problems if p.get("code") == "unknown_meter"}
    assert reasons, summary.problems[:3]


@pytest.mark.timeout(120)
async def test_real_meter_ids_and_mapped_references_are_still_looked_up(
    service: Service, client: AsyncServiceClient, registered, tmp_path: Path
) -> None:
    portfolio = await fetch_portfolio(client, {})
    ids = sorted(portfolio.building_of)
    units = {m.id: m.unit for m in portfolio.catalog.meters.values()}
    by_id = monthly_csv(tmp_path / "ids.csv", {ids[0]: 3, ids[1]: 3}, units=units)
    summary, transport = await _import(service, by_id, ImportOptions(dry_run=True))
    assert summary.rejected == 0 and summary.pending == 6, summary.problems[:3]
    (lookup,) = transport.meter_lookups()
    assert set(lookup.params["filter[id]"].split(",")) == {ids[0], ids[1]}

    # A reference the meter map links is looked up by the id it links to, and a reference that
    # is neither linked nor an id is refused beside it without a lookup of its own.
    link_meter(PROFILE, "ACCT 0042", ids[2])
    lines = ["Meter Number,Service Start,Service End,Usage,Usage Unit"]
    lines += [f"ACCT 0042,2022-0{m}-01,2022-0{m}-28,{10 * m},{units[ids[2]]}" for m in (1, 2)]
    lines += ["no such meter,2022-01-01,2022-01-28,5,kWh"]
    mapped = tmp_path / "mapped.csv"
    mapped.write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary, transport = await _import(service, mapped, ImportOptions(dry_run=True))
    assert summary.rejected == 1 and summary.pending == 2, summary.problems[:3]
    (lookup,) = transport.meter_lookups()
    assert lookup.params["filter[id]"] == ids[2]
