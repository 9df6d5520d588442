"""The real public exports of ../shared/real-inputs, imported with the plain documented commands
against the real service (loopback HTTP, SQLite), and the stored readings read back.

Each test copies its file into a private folder (reject reports are written next to the input);
the files are never copied into the repository. Where ../shared is absent the tests skip."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from bpsync.cli.entry import app
from tests.conftest import (
    Service,
    isolate_bpsync,
)
from tests.pm_export import conftest as pm_export

# One live service a module, each test its own organisation (the PM export tests' fixture).
module_service = pm_export.module_service

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "real-inputs"


def real_path(name: str) -> Path:
    """`set1/x.csv` under ../shared/real-inputs, or skip the test with the reason."""
    path = REAL / name
    if not path.exists():
        pytest.skip(f"{path} is absent: the real exports live in ../shared, never in the repo")
    return path


@dataclass
class Org:
    """A fresh organisation of the live service with one property and building, and the
    environment a user's `bpsync` runs in (key, base URL, private config and keyring)."""

    service: Service
    key: str
    property_id: str
    building_id: str
    workdir: Path
    meters: dict[str, str] = field(default_factory=dict)

    def api(self) -> httpx.Client:
        return self.service.client(self.key)

    def meter(self, type_: str, unit: str, name: str, *, ref: str | None = None) -> str:
        """Create a meter in the building; `ref` links an external reference (the utility's
        meter number, PM's meter id) to it, as `bpsync meters link REF ID` does."""
        with self.api() as api:
            r = api.post(
                f"/v1/buildings/{self.building_id}/meters",
                json={"type": type_, "unit": unit, "name": name},
            )
        assert r.status_code == 201, r.text
        meter_id = r.json()["data"]["id"]
        self.meters[name] = meter_id
        if ref is not None:
            linked = self.bpsync("meters", "link", ref, meter_id)
            assert linked.exit_code == 0, linked.output
        return meter_id

    def copy(self, name: str) -> Path:
        """A private copy of a real export (the import writes reject reports beside it)."""
        source = real_path(name)
        target = self.workdir / "in" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        return target

    def bpsync(self, *args: str) -> Result:
        env = {"BPSYNC_API_KEY": self.key, "BPSYNC_BASE_URL": self.service.base_url}
        return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)

    def import_json(self, *args: str, exit_code: int = 0) -> dict[str, Any]:
        """`bpsync --json import ARGS…`: the parsed summary, asserting the exit code."""
        result = self.bpsync("--json", "import", *args)
        assert result.exit_code == exit_code, result.output
        body = json.loads(result.stdout)
        a = body.get("accounting")
        if a:  # every row read is accounted for (issue 27 item 6), on every real file
            told = a["with_readings"] + a["refused"] + sum(a["skipped"].values())
            assert (a["rows_read"], a["nothing_to_import"]) == (told, 0), a
        return body

    def stored(self, meter_id: str, building_id: str | None = None) -> list[tuple]:
        """[(start, end, consumption, cost)] of every reading stored on the meter, by start."""
        out: list[tuple] = []
        with self.api() as api:
            url = f"/v1/buildings/{building_id or self.building_id}/meters/{meter_id}/readings"
            page = 1
            while True:
                r = api.get(url, params={"per_page": 200, "page": page})
                assert r.status_code == 200, r.text
                body = r.json()
                out += [
                    (
                        dt.date.fromisoformat(x["start_date"]),
                        dt.date.fromisoformat(x["end_date"]),
                        x["consumption"],
                        x["cost"],
                    )
                    for x in body["data"]
                ]
                if page >= body["meta"]["total_pages"]:
                    break
                page += 1
        return sorted(out)


@pytest.fixture
def org(module_service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Org]:
    with isolate_bpsync(tmp_path, monkeypatch):
        key = module_service.bootstrap(owner_email=f"o{time.monotonic_ns()}@example.com")[
            "test_key"
        ]
        with module_service.client(key) as api:
            prop = api.post(
                "/v1/properties",
                json={
                    "name": "Real exports",
                    "address": {"street": "1 Main St", "city": "Boston", "country": "US"},
                    "type": "office",
                },
            ).json()["data"]
            bld = api.post(
                f"/v1/properties/{prop['id']}/buildings",
                json={
                    "name": "Main",
                    "primary_use_type": "office",
                    "gfa_m2": 5000,
                    "year_built": 1970,
                    "floors": 2,
                },
            ).json()["data"]
        yield Org(module_service, key, prop["id"], bld["id"], tmp_path)


def daily_sums(intervals: Iterator[tuple[dt.date, float]]) -> dict[dt.date, float]:
    """Interval values summed by the local day they start on (the README's rule for feeds)."""
    days: dict[dt.date, float] = {}
    for day, value in intervals:
        days[day] = days.get(day, 0.0) + value
    return days


def by_day(stored: list[tuple]) -> dict[dt.date, float]:
    """Stored readings spread back to days only where each covers one day; a reading covering
    several days is returned under its start with its total (compare with `period_sums`)."""
    return {start: consumption for start, _end, consumption, _cost in stored}


def period_sums(
    stored: list[tuple], days: dict[dt.date, float]
) -> list[tuple[dt.date, dt.date, float, float]]:
    """Each stored reading beside the sum of the expected days it covers: (start, end, stored,
    expected). A feed may be stored as days, months or bills (README: merge_days)."""
    out = []
    for start, end, consumption, _cost in stored:
        expected = sum(v for d, v in days.items() if start <= d <= end)
        out.append((start, end, consumption, expected))
    return out
