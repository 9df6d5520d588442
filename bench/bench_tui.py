"""The portfolio's table of buildings at scale (issue 28): how long a 200-building portfolio takes
to appear, to fill its scores and compliance columns, to sort by each column and to filter as a
word is typed, in the real app (headless, 120x36) against the real service over loopback HTTP.

The portfolio is tests/tui/scale.py's: 50 properties of 4 buildings cycling New York, Boston,
Paris and London, two meters each with two years of monthly bills. The service runs with the
spec's default rate limits (1,000 requests a minute per key) on real time; seeding goes in process
first through a second app on the same database with the limits raised, and each run starts in a
fresh rate-limit window.

    .venv/bin/python bench/bench_tui.py                 # 200 buildings, 3 runs
    .venv/bin/python bench/bench_tui.py --buildings 400 --runs 1
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
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
        started = time.perf_counter()
        await pilot.press("f8")
        # Plain sleeps while waiting: a pilot pause forces a redraw, which a user does not.
        while type(app.screen).__name__ != "BuildingsScreen":
            await asyncio.sleep(0.005)
        screen = app.screen
        while not screen.table.row_count:
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


class ShiftedClock:
    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.shift)


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
    from tests.conftest import FakeClock, LiveServer, _bootstrap, make_service_app
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
        # The served app keeps real time (shifted a window on per run): the client paces itself
        # by the service's X-RateLimit-Reset, and a reset a week in the past (a fake clock) would
        # make it probe one request at a time.
        served = ShiftedClock()
        service_app = make_service_app(folder / "svc.db", served)  # type: ignore[arg-type]
        with LiveServer(service_app) as server:
            save_profile(Profile(name="default", base_url=server.url), make_default=True)
            keyring.set_password("bpsync", api_key_name("default"), key)
            runs = []
            for _ in range(args.runs):
                served.shift += 120  # a fresh rate-limit window for each run
                runs.append(asyncio.run(one_run(folder, args.buildings)))
    print(f"{args.buildings} buildings seeded in {seeded:.1f} s; {args.runs} run(s), 120x36")
    print(f"{'figure':40} {'median':>9} {'min':>9} {'max':>9}")
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"{name:40} {statistics.median(values):9.3f} {min(values):9.3f} {max(values):9.3f}")


if __name__ == "__main__":
    main()
