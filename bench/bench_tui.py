"""The portfolio's table of buildings at scale (issue 28): how long a 200-building portfolio takes
to appear, to fill its scores and compliance columns, to sort by each column and to filter as a
word is typed, in the real app (headless, 120x36) against the real service over loopback HTTP.

The portfolio is tests/tui/scale.py's: 50 properties of 4 buildings cycling New York, Boston,
Paris and London, two meters each with two years of monthly bills. Seeding goes in process
through an app with the limits raised; then `bpservice serve` runs on that database in its own
process, on real time, with the spec's default rate limits (1,000 requests a minute per key), and
each run starts in a fresh rate-limit window (so a run may first wait up to a minute).

    .venv/bin/python bench/bench_tui.py                 # 200 buildings, 3 runs
    .venv/bin/python bench/bench_tui.py --buildings 400 --runs 1
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOW = dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.UTC)


async def one_run(config_dir: Path, buildings: int) -> dict[str, float]:
    from bpsync.building_table import KEYS
    from bpsync.tui.app import BPSyncApp

    app = BPSyncApp(clock=lambda: NOW, download_dir=config_dir)
    figures: dict[str, float] = {}
    async with app.run_test(size=(120, 36)) as pilot:
        while type(app.screen).__name__ != "PortfolioScreen":
            await pilot.pause(0.01)
        await asyncio.sleep(1)  # the property list has loaded
        started = time.perf_counter()
        # What f8 does, without the pilot's wait for the app to go idle after a key press (that
        # wait would be counted here as if it were loading time).
        app.action_section("buildings")
        # Plain sleeps while waiting: a pilot pause forces a redraw, which a user does not.
        while type(app.screen).__name__ != "BuildingsScreen":
            await asyncio.sleep(0.005)
        screen = app.screen
        while not (screen.query("#buildings") and screen.table.row_count):
            await asyncio.sleep(0.005)
        figures["first rows shown (s)"] = time.perf_counter() - started
        while screen.phase == "":
            await asyncio.sleep(0.005)
        figures["all 200 rows listed (s)"] = time.perf_counter() - started
        while screen.phase != "done":
            await asyncio.sleep(0.005)
        figures["scores + compliance filled (s)"] = time.perf_counter() - started
        table = screen.table
        assert table.row_count == buildings, table.row_count
        sorts = []
        for key in KEYS:
            t0 = time.perf_counter()
            table.sort_by(key)
            sorts.append(time.perf_counter() - t0)
        figures["sort, mean of 14 columns (ms)"] = 1000 * statistics.mean(sorts)
        figures["sort, slowest column (ms)"] = 1000 * max(sorts)
        keystrokes = []
        for n in range(1, len("boston office") + 1):
            t0 = time.perf_counter()
            table.set_view(term="boston office"[:n])
            keystrokes.append(time.perf_counter() - t0)
        figures["filter, mean per keystroke (ms)"] = 1000 * statistics.mean(keystrokes)
        figures["filter, slowest keystroke (ms)"] = 1000 * max(keystrokes)
        t0 = time.perf_counter()
        table.set_view(term="")
        await pilot.pause()
        figures["clear filter, 200 rows back (ms)"] = 1000 * (time.perf_counter() - t0)
        t0 = time.perf_counter()
        await pilot.press("u")
        await pilot.pause()
        figures["units switch (ms)"] = 1000 * (time.perf_counter() - t0)
    return figures


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(base_url: str) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base_url}/openapi.json", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("the service did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--buildings", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import os

    import keyring

    from bpsync.client.service import api_key_name
    from bpsync.config import Profile, save_profile
    from tests.client.conftest import MemoryKeyring
    from tests.conftest import FakeClock, _bootstrap, make_service_app
    from tests.tui.scale import seed_scale

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["BPSYNC_CONFIG_DIR"] = str(folder / "config")
        os.environ["BPSYNC_STATE_DIR"] = str(folder / "state")
        os.environ["BPSYNC_CACHE_DIR"] = str(folder / "cache")
        keyring.set_keyring(MemoryKeyring())
        clock = FakeClock(NOW)
        # Seeding goes through an app on the same database with limits raised (through the
        # default ones it would wait minutes); the app under test is served with the defaults.
        unlimited = 10**9
        seeder = make_service_app(
            folder / "svc.db", clock, per_key=unlimited, per_user=unlimited, bulk=unlimited
        )
        t0 = time.perf_counter()
        key = _bootstrap(seeder, clock, "http://seed").test_key
        asyncio.run(seed_scale(seeder, key, buildings=args.buildings, today=NOW.date()))
        seeded = time.perf_counter() - t0
        # The service under test runs in its own process (as it would for a user: its work does
        # not share this process's interpreter with the app), on real time, with the spec's
        # default limits. Each run starts in a fresh rate-limit window.
        port = free_port()
        server = subprocess.Popen(
            [str(ROOT / ".venv/bin/bpservice"), "serve", "--db", str(folder / "svc.db"),
             "--host", "127.0.0.1", "--port", str(port), "--no-workers"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_until_up(base_url)
            save_profile(Profile(name="default", base_url=base_url), make_default=True)
            keyring.set_password("bpsync", api_key_name("default"), key)
            runs = []
            for _ in range(args.runs):
                time.sleep(61 - time.time() % 60)  # the next minute: a fresh window
                runs.append(asyncio.run(one_run(folder, args.buildings)))
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"{args.buildings} buildings seeded in {seeded:.1f} s; {args.runs} run(s), 120x36")
    print(f"{'figure':40} {'median':>9} {'min':>9} {'max':>9}")
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"{name:40} {statistics.median(values):9.3f} {min(values):9.3f} {max(values):9.3f}")


if __name__ == "__main__":
    main()
