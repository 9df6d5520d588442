"""Corrected bills (issue 30) against the real service: a private config/state dir and keyring,
an organisation with one building of electricity meters, and helpers that write bills files and
read back exactly what the service stores."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bpservice.db.models import Event
from tests.conftest import Org, Service, isolate_bpsync, make_org

PROFILE = "test"
# One stored figure set: (start, end, consumption, cost, demand_kw).
Stored = tuple[dt.date, dt.date, float, float | None, float | None]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with isolate_bpsync(tmp_path, monkeypatch):
        yield tmp_path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def org(service: Service) -> Org:
    return make_org(service, meters=2)


def month(year: int, m: int) -> tuple[dt.date, dt.date]:
    start = dt.date(year, m, 1)
    return start, (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)


def bills(path: Path, rows: list[tuple[str, dt.date, dt.date, float, Any, Any]]) -> Path:
    """A long_csv file: meter, start, end, consumption, cost (or None), demand (or None)."""
    lines = ["Meter ID,Start Date,End Date,Consumption,Unit,Cost,Currency,demand_kw"]
    for meter, start, end, value, cost, demand in rows:
        c, cur = ("", "") if cost is None else (cost, "GBP")
        d = "" if demand is None else demand
        lines.append(f"{meter},{start},{end},{value},kWh,{c},{cur},{d}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stored(service: Service, org: Org, meter: str) -> list[Stored]:
    """Everything the service holds for the meter, by start, read through the API."""
    with service.client(org.key) as api:
        r = api.get(
            f"/v1/buildings/{org.building}/meters/{meter}/readings", params={"per_page": 200}
        )
        assert r.status_code == 200, r.text
        return [
            (
                dt.date.fromisoformat(x["start_date"]),
                dt.date.fromisoformat(x["end_date"]),
                x["consumption"],
                x["cost"],
                x["demand_kw"],
            )
            for x in r.json()["data"]
        ]


def events(service: Service, type_: str) -> list[dict]:
    with service.app.state.db.read() as session:
        rows = session.scalars(select(Event).where(Event.type == type_).order_by(Event.seq))
        return [e.data for e in rows]
