"""`bpsync demo`: the README's main command.

Starts the embedded reference service (`bpservice`, imported here and nowhere else in the tool's
import path) on a free loopback port over a SQLite file in the user data dir, bootstraps a sandbox
organisation once, stores its key for a `demo` profile, imports the sample register and bills from
`sample_data/` through the real import engine, prints the portfolio's benchmarks, and opens the
terminal app. Re-running reuses the same data dir, organisation and key; the imports are no-ops.

Where things are:
- data: `$BPSYNC_DATA_DIR/demo`, else platformdirs' user data dir `bpsync/demo` (`service.db`,
  and `demo.json` holding the organisation id; never a key);
- the key: the secret store (OS keyring), or, on a machine without one (CI), the opt-in file
  store for the demo profile only (the command says so);
- the `demo` profile exists only while the demo runs: it is never written to the config file
  (its port dies with the run) and never becomes the default; one an older version saved is
  removed;
- sample files and templates: `$BPSYNC_SAMPLE_DATA_DIR` / `$BPSYNC_TEMPLATES_DIR`, else the
  package data `bpsync/sample_data/` and `bpsync/templates/` (in a wheel as in the repository)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import platformdirs

from bpsync.client import errors as E
from bpsync.client.auth import keyring_problem
from bpsync.client.service import AsyncServiceClient, api_key_name, secret_store_for
from bpsync.config import DEFAULT_PROFILE, Profile, load_config, save_config
from bpsync.ingest import ImportOptions, IngestError, import_file, import_register, read_register
from bpsync.paths import ensure_private_dir, package_dir

PROFILE = "demo"
REGISTER = "portfolio_register.xlsx"
BILLS = (
    "bills_workbook.xlsx",
    "pm_add_bills.xlsx",
    "wide_monthly_usage.xlsx",
    "utility_read_dates.csv",
    "green_button.xml",
)
# The demo's service is generous with the bulk bucket (as `bpservice demo` is for its seed):
# with the spec's 10 batch calls a minute the demo would take minutes.
DEMO_BULK_LIMIT = 10_000


def demo_dir() -> Path:
    override = os.environ.get("BPSYNC_DATA_DIR")
    base = Path(override) if override else Path(platformdirs.user_data_dir("bpsync"))
    return base / "demo"


def sample_data_dir() -> Path:
    override = os.environ.get("BPSYNC_SAMPLE_DATA_DIR")
    if override:
        return Path(override)
    return package_dir("sample_data")


class EmbeddedServer:
    """uvicorn in a daemon thread on 127.0.0.1 (a free port unless one is given)."""

    def __init__(self, app: Any, port: int = 0) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        from bpservice.settings import KEEP_ALIVE_SECONDS

        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_SECONDS
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> EmbeddedServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the embedded service did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def make_app(db_path: Path) -> Any:
    from bpservice.app import create_app
    from bpservice.settings import RateLimits, Settings

    settings = Settings(
        database_url=f"sqlite:///{db_path}", rate_limits=RateLimits(bulk=DEMO_BULK_LIMIT)
    )
    return create_app(settings)


@dataclass
class DemoOrg:
    org_id: str
    new_key: str | None  # set when a key was minted this run (stored, never printed)


def ensure_org(app: Any, folder: Path) -> DemoOrg:
    """The demo organisation: reused when `demo.json` names one the database holds, else
    bootstrapped (an owner plus sandbox and production keys; the sandbox key is returned)."""
    from bpservice import admin
    from bpservice.db.models import Organisation

    state_file = folder / "demo.json"
    try:
        org_id = json.loads(state_file.read_text(encoding="utf-8")).get("org_id")
    except (FileNotFoundError, ValueError):
        org_id = None
    with app.state.db.write() as session:
        if org_id and session.get(Organisation, org_id) is not None:
            return DemoOrg(org_id, None)
        info = admin.bootstrap(session, org_name="bpsync demo", owner_email="demo@example.com")
    state_file.write_text(json.dumps({"org_id": info["org_id"]}), encoding="utf-8")
    return DemoOrg(info["org_id"], info["test_key"])


def mint_key(app: Any, org_id: str) -> str:
    from bpservice import admin

    with app.state.db.write() as session:
        return admin.create_api_key(session, org_id, environment="test", name="bpsync demo key").key


def forget_saved_demo_profile() -> bool:
    """Remove a `demo` profile an older bpsync saved (it points at a port that died with its
    run, and may have become the default). Returns True when one was removed."""
    config = load_config()
    profiles = dict(config.profiles or {})
    if PROFILE not in profiles:
        return False
    del profiles[PROFILE]
    config.profiles = profiles
    if config.default_profile == PROFILE:
        config.default_profile = DEFAULT_PROFILE
    save_config(config)
    return True


def demo_profile(base_url: str) -> tuple[Profile, str | None]:
    """The run-only `demo` profile pointed at this run's port; the keyring when there is one,
    else the opt-in file store (for this profile only), with a sentence saying so."""
    profile = Profile(name=PROFILE)
    notice = None
    if keyring_problem() is not None:
        notice = (
            f"No OS keyring ({keyring_problem()}): the demo profile's sandbox key is kept in the "
            "opt-in file store (a 0600 file in the state dir), for the demo profile only."
        )
        profile = replace(profile, secret_store="file")
    profile = replace(profile, base_url=base_url, auth_url="", auth_method="api_key")
    return profile, notice


async def _key_works(base_url: str, key: str) -> bool:
    async with AsyncServiceClient(base_url, key, profile=PROFILE, limiter=False) as c:
        try:
            await c.properties.list(per_page=1)
        except E.AuthenticationError:
            return False
    return True


async def populate(client: AsyncServiceClient, samples: Path, target: str) -> list[dict[str, Any]]:
    """Register, then every bills file, through the real engine; returns one line per file."""
    register = read_register(samples / REGISTER)
    if not register.ok:
        raise IngestError(f"{REGISTER}: the sample register has errors: {register.problems[0]}")
    outcome = await import_register(client, register, PROFILE)
    lines = [
        {
            "file": REGISTER,
            "status": "complete" if outcome.ok else "errors",
            "created": sum(outcome.created.values()),
            "updated": sum(outcome.updated.values()),
        }
    ]
    for name in BILLS:
        summary = await import_file(
            client, PROFILE, samples / name, ImportOptions(target=target), note=lambda _m: None
        )
        lines.append(
            {
                "file": name,
                "status": summary.status,
                "accepted": summary.accepted,
                "rejected": summary.rejected,
                "skipped": summary.skipped,
            }
        )
    return lines


async def benchmarks(client: AsyncServiceClient) -> tuple[Any, list[dict[str, Any]]]:
    portfolio = await client.benchmarks.portfolio()
    rows = []
    async for p in client.properties.list(per_page=200):
        async for b in client.buildings.list(p.id, per_page=200):
            result = await client.benchmarks.building(b.id)
            svc = next((s for s in result.scores if s.standard == "svc"), None)
            rating = next((s for s in result.scores if s.standard == "energy_rating"), None)
            rows.append(
                {
                    "building": f"{p.name} / {b.name}",
                    "eui_kwh_m2": result.eui_kwh_m2,
                    "carbon_kgco2e_m2": result.carbon_intensity_kgco2e_m2,
                    "svc_score": svc.score if svc else None,
                    "svc_peers": (svc.peer_group, svc.peer_count) if svc else None,
                    "energy_rating": rating.score if rating else None,
                    "grade": result.data_quality_grade.value if result.data_quality_grade else None,
                }
            )
    return portfolio, rows


@contextmanager
def running_service(port: int = 0) -> Iterator[tuple[EmbeddedServer, Any, Path]]:
    folder = ensure_private_dir(demo_dir())
    app = make_app(folder / "service.db")
    with EmbeddedServer(app, port) as server:
        yield server, app, folder


def run_demo(*, open_tui: bool, port: int = 0, out: Any, err: Any) -> int:
    """The whole demo; returns the exit code."""
    try:
        import uvicorn  # noqa: F401

        import bpservice.app  # noqa: F401
    except ImportError as exc:
        raise IngestError(
            f"the demo runs the reference service, whose dependencies are not installed "
            f"({exc.name or exc}): pip install 'bpsync[service]'"
        ) from None
    samples = sample_data_dir()
    if not (samples / REGISTER).is_file():
        raise IngestError(
            f"sample data not found in {samples}: reinstall bpsync, or set "
            "BPSYNC_SAMPLE_DATA_DIR to a folder holding the sample files"
        )
    with running_service(port) as (server, app, folder):
        org = ensure_org(app, folder)
        profile, notice = demo_profile(server.url)
        if notice:
            err.print(notice, markup=False)
        store = secret_store_for(profile)
        key = org.new_key or store.get(api_key_name(PROFILE))
        if key is None or not asyncio.run(_key_works(server.url, key)):
            key = mint_key(app, org.org_id)  # the stored key is gone or from an older database
        store.set(api_key_name(PROFILE), key)
        if forget_saved_demo_profile():
            err.print(
                f"Removed the '{PROFILE}' profile an older bpsync saved (its port was gone).",
                markup=False,
            )
        err.print(
            f"Demo service at {server.url} (data in {folder}), sandbox; it stops when the demo "
            "ends, and your profiles are left as they were.",
            markup=False,
        )

        async def main() -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]]]:
            async with AsyncServiceClient.from_profile(profile, store=store) as client:
                # The journal files the demo's imports under its data dir and organisation: the
                # port changes between runs, the data does not.
                target = f"demo:{folder}:{org.org_id}|{client.credentials.identity}"
                lines = await populate(client, samples, target)
                portfolio, rows = await benchmarks(client)
                return lines, portfolio, rows

        lines, portfolio, rows = asyncio.run(main())
        _print(out, lines, portfolio, rows)
        if not open_tui:
            out.print(
                "Run `bpsync demo` again to browse this portfolio in the terminal app (it "
                "restarts the demo service); `bpsync login` connects to your own service."
            )
            return 0
        try:
            from bpsync.tui.command import run_tui
        except ImportError:
            err.print("The terminal app is not available in this installation.", markup=False)
            return 0
        return run_tui(PROFILE, pinned=profile)


def _print(out: Any, lines: list[dict[str, Any]], portfolio: Any, rows: list[dict[str, Any]]):
    from rich.table import Table

    t = Table(title="Imports", header_style="bold")
    for col in ("file", "status", "accepted", "rejected", "skipped"):
        t.add_column(col)
    for line in lines:
        t.add_row(
            *(str(line.get(c, "")) for c in ("file", "status", "accepted", "rejected", "skipped"))
        )
    out.print(t)
    b = Table(title="Benchmarks by building", header_style="bold")
    for col in (
        "building",
        "EUI kWh/m²",
        "kgCO2e/m²",
        "svc score",
        "energy rating",
        "data quality",
    ):
        b.add_column(col)
    for r in rows:
        b.add_row(
            r["building"],
            _num(r["eui_kwh_m2"]),
            _num(r["carbon_kgco2e_m2"]),
            _score(r["svc_score"]),
            _score(r["energy_rating"]),
            str(r["grade"] or "-"),
        )
    out.print(b)
    for line in _footnotes(rows):
        out.print(line, markup=False)
    dist = ", ".join(f"{g}: {n}" for g, n in sorted(portfolio.grade_distribution.items()))
    out.print(
        f"Portfolio benchmarks: {portfolio.building_count} buildings, "
        f"{portfolio.total_gfa_m2:,.0f} m², weighted EUI {_num(portfolio.weighted_eui_kwh_m2)} "
        f"kWh/m², weighted carbon {_num(portfolio.weighted_carbon_intensity_kgco2e_m2)} "
        f"kgCO2e/m², weighted svc score {_num(portfolio.weighted_svc_score)}; data quality "
        f"grades {dist}"
    )


# The service gives no svc score to a peer group smaller than this (decision B7).
SVC_MIN_PEERS = 5


def _footnotes(rows: list[dict[str, Any]]) -> list[str]:
    """Why a column holds "-", and what "data quality" means (it is not an EPC band)."""
    notes = []
    small = sorted(
        {r["svc_peers"] for r in rows if r["svc_score"] is None and r.get("svc_peers")},
        key=str,
    )
    if small:
        groups = ", ".join(f"{group}: {count}" for group, count in small)
        notes.append(
            "svc score: a percentile among the organisation's buildings of the same use and "
            f"country; a group of fewer than {SVC_MIN_PEERS} buildings gets none "
            f"(here {groups})."
        )
    if any(r["energy_rating"] is None for r in rows):
        notes.append(
            "energy rating: an ENERGY STAR-style 1-100 model; none where the model does not "
            "cover the building's use or its data is not enough."
        )
    notes.append(
        "data quality: A (meters fully covered, few anomalies) to F (no energy data), a grade "
        "of the readings, not an energy-performance (EPC) band."
    )
    return notes


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _score(value: float | None) -> str:
    """Scores are whole points (1-100)."""
    return "-" if value is None else f"{value:.0f}"
