"""How long each screen of the terminal app takes to open against the demo service (issue 28 item
7): from the key press to the screen shown (it mounted and the next refresh painted it), the first
time in a fresh interpreter, so the screen's own imports count. Data arrives in workers after
that; the time until a screen's first rows are in is given beside it where the screen has rows.

    .venv/bin/python bench/bench_screens.py [--runs 3] [--size 120x36] [--json]

The demo service (the sample portfolio imported through the real engine, as `bpsync demo` does)
runs in this process; the app runs headless (`run_test`) in a child interpreter, signed in with
the demo's sandbox key from the environment. Each figure is the median over --runs children.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The child: open every section and screen in turn, timing each.
PROBE = r"""
import asyncio, json, sys, time
from bpsync.tui.app import BPSyncApp

width, height = (int(x) for x in sys.argv[1].split("x"))
times, rows, settled = {}, {}, {}

def name(app):
    return type(app.screen).__name__

async def until(pilot, condition, timeout=30.0):
    end = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > end:
            raise SystemExit(f"timed out in {name(pilot.app)}")
        await pilot.pause(0.001)

async def open_screen(pilot, key, screen, label=None, has_rows=None):
    # Open: the screen is current and mounted (a task polls every millisecond while the press
    # is processed). Settled: the app is idle again (its mount handlers ran and the first
    # answers of its workers were shown).
    app = pilot.app
    label = label or screen
    start = time.perf_counter()
    opened = []

    async def watch():
        while not opened:
            if name(app) == screen and app.screen.is_mounted:
                opened.append(time.perf_counter() - start)
            await asyncio.sleep(0.001)

    watcher = asyncio.create_task(watch())
    await pilot.press(key)
    await until(pilot, lambda: bool(opened))
    watcher.cancel()
    times[label] = opened[0]
    settled[label] = time.perf_counter() - start
    if has_rows is not None:
        await until(pilot, lambda: has_rows(app.screen))
        rows[label] = time.perf_counter() - start


def table_rows(selector):
    def ready(screen):
        found = screen.query(selector)
        return bool(found) and found.first().row_count > 0
    return ready

async def main():
    app = BPSyncApp()
    async with app.run_test(size=(width, height)) as pilot:
        await until(pilot, lambda: name(app) == "PortfolioScreen")
        await until(pilot, lambda: len(app.screen.rows) > 0)
        # The buildings table last: its workers fill every score and compliance cell (hundreds
        # of requests over seconds), which would slow every screen opened after it.
        await open_screen(pilot, "enter", "PropertyScreen", has_rows=table_rows("#buildings"))
        app.screen.query_one("#buildings").focus()
        await open_screen(pilot, "enter", "BuildingScreen")
        await open_screen(pilot, "b", "BenchmarksScreen")
        await open_screen(pilot, "f3", "PortfolioBenchmarksScreen")
        await open_screen(pilot, "f4", "ReportsScreen")
        await open_screen(pilot, "f5", "SyncStatusScreen")
        await open_screen(pilot, "f6", "ImportWizardScreen")
        await open_screen(pilot, "f7", "PmExportScreen")
        await pilot.press("escape")
        await open_screen(pilot, "f1", "HelpScreen")
        await pilot.press("escape")
        await open_screen(pilot, "f8", "BuildingsScreen", has_rows=table_rows("DataTable"))
    print(json.dumps({"open": times, "rows": rows, "settled": settled}))

asyncio.run(main())
"""


def start_demo(folder: Path) -> tuple[Any, str, str]:
    """The demo service on a free loopback port, its sample portfolio imported; returns the
    server context, its URL and the sandbox key."""
    from bpsync.commands import demo

    stack = demo.running_service()
    server, app, data = stack.__enter__()
    org = demo.ensure_org(app, data)
    key = org.new_key or demo.mint_key(app, org.org_id)

    async def populate() -> None:
        from bpsync.client.service import AsyncServiceClient

        async with AsyncServiceClient(server.url, key, profile=demo.PROFILE) as client:
            await demo.populate(client, demo.sample_data_dir(), f"bench:{data}")

    asyncio.run(populate())
    return stack, server.url, key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", default="120x36")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("config", "state", "data"):
            os.environ[f"BPSYNC_{part.upper()}_DIR"] = str(Path(tmp) / part)
        os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        stack, url, key = start_demo(Path(tmp))
        try:
            env = {**os.environ, "BPSYNC_BASE_URL": url, "BPSYNC_API_KEY": key}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # imports from bytecode, as installed
            runs = []
            for _ in range(args.runs):
                done = subprocess.run(
                    [sys.executable, "-c", PROBE, args.size],
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=tmp,
                    timeout=300,
                )
                if done.returncode != 0:
                    raise SystemExit(done.stderr[-2000:])
                runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        finally:
            stack.__exit__(None, None, None)

    def median(part: str, screen: str) -> float | None:
        values = [r[part][screen] for r in runs if screen in r[part]]
        return round(statistics.median(values), 3) if values else None

    figures = {
        screen: {
            "open_s": median("open", screen),
            "settled_s": median("settled", screen),
            "rows_s": median("rows", screen),
        }
        for screen in runs[0]["open"]
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"screens against the demo service, {args.size}, median of {args.runs} fresh runs")
    for screen, f in figures.items():
        rows = f", first rows {f['rows_s']:.3f} s" if f["rows_s"] is not None else ""
        print(f"{screen:26} open {f['open_s']:.3f} s, idle again {f['settled_s']:.3f} s{rows}")


if __name__ == "__main__":
    main()
