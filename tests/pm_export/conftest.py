"""Portfolio Manager export tests: the real service over loopback HTTP (one per module where the
round trip needs many meters), private config and state dirs, commands run through typer."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bpsync.cli.entry import app
from tests.conftest import (
    FakeClock,
    LiveServer,
    Service,
    _bootstrap,
    isolate_bpsync,
    make_service_app,
)

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "real-inputs"


def invoke(*args: str, key: str | None = None, url: str | None = None):  # type: ignore[no-untyped-def]
    env = {}
    if key:
        env["BPSYNC_API_KEY"] = key
    if url:
        env["BPSYNC_BASE_URL"] = url
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@dataclass
class Org:
    """An organisation of the service: its key, one property and one building."""

    key: str
    property_id: str
    building_id: str

    def meter(self, api: httpx.Client, type_: str, unit: str, name: str) -> str:
        body = {"type": type_, "unit": unit, "name": name}
        r = api.post(f"/v1/buildings/{self.building_id}/meters", json=body)
        assert r.status_code == 201, r.text
        return r.json()["data"]["id"]


def new_org(
    service: Service, *, pm_property_id: str | None = "5227", name: str = "King Elementary"
) -> Org:
    key = service.bootstrap(owner_email=f"o{time.monotonic_ns()}@example.com")["test_key"]
    with service.client(key) as api:
        body = {
            "name": name,
            "address": {"street": "1 School St", "city": "Ann Arbor", "country": "US"},
            "type": "office",
        }
        if pm_property_id:
            body["internal_ref"] = pm_property_id
        prop = api.post("/v1/properties", json=body).json()["data"]
        bld = api.post(
            f"/v1/properties/{prop['id']}/buildings",
            json={
                "name": "Main",
                "primary_use_type": "education",
                "gfa_m2": 5000,
                "year_built": 1970,
                "floors": 2,
            },
        ).json()["data"]
    return Org(key, prop["id"], bld["id"])


def monthly(api: httpx.Client, org: Org, meter: str, readings: list[dict]) -> None:
    r = api.post(
        f"/v1/buildings/{org.building_id}/meters/{meter}/readings/batch",
        json={"readings": readings},
    )
    assert r.status_code in (200, 201) and r.json()["data"]["rejected"] == 0, r.text


def stored(api: httpx.Client, org: Org, meter: str) -> list[tuple]:
    r = api.get(
        f"/v1/buildings/{org.building_id}/meters/{meter}/readings", params={"per_page": 200}
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


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with isolate_bpsync(tmp_path, monkeypatch):
        yield tmp_path


@pytest.fixture(scope="module")
def module_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One live service for a module (the round trip seeds dozens of meters once)."""
    root = tmp_path_factory.mktemp("svc")
    clock = FakeClock()
    application = make_service_app(
        root / "svc.db", clock, per_key=100_000, bulk=100_000, reports=100_000, per_user=100_000
    )
    with LiveServer(application) as server:
        yield _bootstrap(application, clock, server.url)
