"""`bpsync import --dry-run` as a user runs it, against anchors doing the same work (issue 32 item 4).

    .venv/bin/python bench/bench_dryrun_anchors.py [--rows 100000] [--meters 4167] [--big-rows 1000000]

One organisation served by `bpservice serve` in its own process: `meters` electricity meters over
40 buildings, half of them holding last year's twelve monthly readings (inserted straight into the
service's database: only the import is measured). The files name every meter by id, 24 monthly
bills a meter from January 2024, quantities with a thousands separator in every other row.
Each runner is a fresh process (its imports count, as a user's command pays them; its peak
memory, VmHWM, is its own), from compiled bytecode as an installed package runs:

- `csv`: `bpsync import bills.csv --dry-run --json`, the command line's own entry point;
- `pipe`: a pandas pipe of the same work: the same lookups over HTTP with httpx (the file's
  meters in id lists of 200, and the stored readings of the meters whose latest reading falls in
  the anomaly history, 200 meters a list, 8 requests in flight as bpsync does), then parsing,
  unit and meter lookup, duplicate / overlap / gap checks against the stored readings, and a
  12-month rolling average for spikes and drops, each a whole-column operation;
- `xlsx`: the same dry run of the same bills as an XLSX workbook;
- `raw`: python-calamine's raw read of that workbook (`to_python`), the floor any reader pays;
- `big`: the CSV dry run of `big-rows` rows (the same meters, more years), for its peak memory.

Ratios: csv / pipe (target <= 1.5), (xlsx - csv) / raw, the workbook's cost beyond the CSV
dry run of the same data against calamine's raw read (target <= 1.5), and big's peak
(target <= 400 MB). Each timed runner runs `--rounds` times, taking turns; medians compared.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# ---- the data -----------------------------------------------------------------------------------


def write_csv(path: Path, meter_ids: list[str], rows: int, first_year: int = 2024) -> None:
    """`rows` monthly bills from January of `first_year`, meter after meter, an equal share
    each."""
    per_meter = -(-rows // len(meter_ids))
    written = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["Meter ID", "Start Date", "End Date", "Consumption", "Unit"])
        for mid in meter_ids:
            start = dt.date(first_year, 1, 1)
            for k in range(min(per_meter, rows - written)):
                end = (start + dt.timedelta(days=32)).replace(day=1) - dt.timedelta(days=1)
                usage = 1000 + k % 12 * 3 + (k // 12) % 5
                text = f"{usage:,.1f}" if written % 2 else f"{usage:.1f}"
                out.writerow([mid, start.isoformat(), end.isoformat(), text, "kWh"])
                start = end + dt.timedelta(days=1)
                written += 1


def write_xlsx(csv_path: Path, path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Bills")
    with open(csv_path, newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.reader(fh)):
            if i == 0:
                sheet.append(row)
                continue
            start, end = dt.date.fromisoformat(row[1]), dt.date.fromisoformat(row[2])
            sheet.append([row[0], start, end, float(row[3].replace(",", "")), row[4]])
    book.save(path)


# ---- the runners (each in its own process) ------------------------------------------------------


def run_dry_run(path: str) -> dict[str, Any]:
    """The command line as its console script runs it; the JSON summary is checked."""
    import contextlib
    import io

    from bpsync.cli.entry import main

    sys.argv = ["bpsync", "import", path, "--dry-run", "--json"]
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            main()
        except SystemExit as stop:
            code = stop.code or 0
    summary = json.loads(out.getvalue())
    if code or summary.get("rejected"):
        raise SystemExit(f"dry run exited {code}: {out.getvalue()[:2000]}")
    accounting = summary["accounting"]
    if accounting["with_readings"] != accounting["rows_read"]:
        raise SystemExit(f"not every row was accepted: {accounting}")
    return {"rows": accounting["with_readings"]}


FACTORS = {"kWh": 1.0, "MWh": 1000.0, "therms": 29.3071}
HISTORY_DAYS = 366


async def lookups(base_url: str, key: str, meter_ids: list[str], first: str) -> tuple[Any, Any]:
    """The same requests the dry run makes: the file's meters, then the stored readings of those
    whose latest reading reaches into the anomaly history."""
    import asyncio

    import httpx
    import pandas as pd

    sem = asyncio.Semaphore(8)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as api:

        async def pages(path: str, params: dict[str, Any]) -> list[dict]:
            found, page = [], 1
            while True:
                async with sem:
                    body = (await api.get(path, params={**params, "page": page})).json()
                found += body["data"]
                if page >= body["meta"]["total_pages"]:
                    return found
                page += 1

        groups = [meter_ids[i : i + 200] for i in range(0, len(meter_ids), 200)]
        lists = await asyncio.gather(
            *(pages("/v1/meters", {"filter[id]": ",".join(g), "per_page": 200}) for g in groups)
        )
        meters = pd.DataFrame([m for found in lists for m in found])
        since = (dt.date.fromisoformat(first) - dt.timedelta(days=HISTORY_DAYS)).isoformat()
        holding = meters.loc[meters["latest_reading_date"].fillna("") >= since, "id"].tolist()
        groups = [holding[i : i + 200] for i in range(0, len(holding), 200)]
        params = {"start_date": since, "per_page": 1000}
        lists = await asyncio.gather(
            *(pages("/v1/readings", {**params, "filter[meter_id]": ",".join(g)}) for g in groups)
        )
    stored = pd.DataFrame(
        [r for found in lists for r in found],
        columns=["meter_id", "start_date", "end_date", "consumption"],
    )
    return meters, stored


def run_pipe(path: str, base_url: str, key: str) -> dict[str, Any]:
    """The pandas anchor: the dry run's work, whole columns at a time."""
    import asyncio

    import numpy as np
    import pandas as pd

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    usage = pd.to_numeric(df["Consumption"].str.replace(",", "", regex=False), errors="coerce")
    start = pd.to_datetime(df["Start Date"], format="%Y-%m-%d", errors="coerce")
    end = pd.to_datetime(df["End Date"], format="%Y-%m-%d", errors="coerce")
    names = df["Meter ID"].unique().tolist()
    meters, stored = asyncio.run(lookups(base_url, key, names, start.min().date().isoformat()))
    meter_unit = df["Meter ID"].map(meters.set_index("id")["unit"])
    factor = df["Unit"].map(FACTORS)
    bad = usage.isna() | start.isna() | end.isna() | (end < start) | factor.isna()
    bad |= meter_unit.isna() | (usage < 0)
    frame = pd.DataFrame(
        {"meter": df["Meter ID"], "start": start, "end": end, "usage": usage * factor, "new": True}
    )[~bad]
    before = pd.DataFrame(
        {
            "meter": stored["meter_id"],
            "start": pd.to_datetime(stored["start_date"]),
            "end": pd.to_datetime(stored["end_date"]),
            "usage": stored["consumption"].astype(float),
            "new": False,
        }
    )
    frame = pd.concat([before, frame], ignore_index=True)
    frame = frame.sort_values(["meter", "start", "end"], kind="stable")
    duplicate = frame.duplicated(["meter", "start", "end", "usage"])
    frame = frame[~duplicate]
    group = frame.groupby("meter", sort=False)
    reach = group["end"].cummax()
    overlap = frame["start"] <= reach.groupby(frame["meter"]).shift()
    gap = frame["start"] > group["end"].shift() + pd.Timedelta(days=1)
    kept = frame[~overlap].set_index("end")
    by_meter = kept.groupby("meter", sort=False)["usage"]
    average = by_meter.rolling("365D", closed="left").mean().to_numpy()
    usage_kept = by_meter.apply(list).explode().to_numpy(float)
    flagged = (usage_kept >= 3 * average) | (usage_kept < 0.25 * average)
    new = int((~overlap & frame["new"]).sum())
    return {"rows": new, "gaps": int(gap.sum()), "flagged": int(np.nansum(flagged))}


def run_raw(path: str) -> dict[str, Any]:
    import python_calamine

    book = python_calamine.CalamineWorkbook.from_path(path)
    return {"rows": len(book.get_sheet_by_index(0).to_python()) - 1}


def measure_one(kind: str, path: str, base_url: str, key: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    if kind == "pipe":
        found = run_pipe(path, base_url, key)
    elif kind == "raw":
        found = run_raw(path)
    else:
        found = run_dry_run(path)
    return {**found, "seconds": time.perf_counter() - t0, "peak_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(kind: str, path: Path, url: str, key: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path), url, key],
        capture_output=True,
        text=True,
        env={**env, "BPSYNC_BASE_URL": url, "BPSYNC_API_KEY": key},
    )
    if out.returncode:
        raise SystemExit(f"{kind} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the measurement ----------------------------------------------------------------------------


def measure(rows: int, meters: int, big_rows: int, rounds: int) -> dict[str, Any]:
    from bench_dryrun import served, setup
    from bench_ingest import compiled_env

    from bpservice.app import create_app
    from bpservice.settings import RateLimits, Settings
    from bpsync.commands.demo import EmbeddedServer

    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        env = compiled_env()
        env["BPSYNC_STATE_DIR"] = str(tmpd / "state")
        env["BPSYNC_CONFIG_DIR"] = str(tmpd / "config")
        os.environ.update(BPSYNC_STATE_DIR=env["BPSYNC_STATE_DIR"])
        os.environ.update(BPSYNC_CONFIG_DIR=env["BPSYNC_CONFIG_DIR"])
        app = create_app(
            Settings(
                database_url=f"sqlite:///{tmpd / 'svc.db'}",
                rate_limits=RateLimits(per_key=100_000, bulk=1000, per_user=100_000),
                run_workers=False,
            )
        )
        with EmbeddedServer(app) as server:
            key, catalog = setup(app, server.url, meters, 40)
        app.state.db.engine.dispose()
        ids = [mid for mid, _, _ in catalog]
        bills, book, big = tmpd / "bills.csv", tmpd / "bills.xlsx", tmpd / "big.csv"
        write_csv(bills, ids, rows)
        write_xlsx(bills, book)
        # Twenty years a meter, ending before the stored year (nothing in the future or
        # overlapping: the big file is for memory, every row accepted).
        years = -(-big_rows // len(ids)) // 12
        write_csv(big, ids, big_rows, first_year=2023 - years)
        times: dict[str, list[dict[str, Any]]] = {k: [] for k in ("csv", "pipe", "xlsx", "raw")}
        with served(tmpd / "svc.db") as url:
            for _ in range(rounds):
                times["csv"].append(run("csv", bills, url, key, env))
                times["pipe"].append(run("pipe", bills, url, key, env))
                times["xlsx"].append(run("xlsx", book, url, key, env))
                times["raw"].append(run("raw", book, url, key, env))
            large = run("big", big, url, key, env)
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in times.items()}
    return {
        "rows": rows,
        "meters": meters,
        "rounds": rounds,
        "runs": times,
        "median_s": med,
        "csv_over_pipe": med["csv"] / med["pipe"],
        "xlsx_beyond_csv_over_raw": (med["xlsx"] - med["csv"]) / med["raw"],
        "big": {**large, "rows_in_file": big_rows},
        "accepted": {k: v[0]["rows"] for k, v in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--meters", type=int, default=4167)
    parser.add_argument("--big-rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--measure", nargs=4, metavar=("KIND", "PATH", "URL", "KEY"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_one(*args.measure)))
        return
    r = measure(args.rows, args.meters, args.big_rows, args.rounds)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    med, runs = r["median_s"], r["runs"]

    def each(kind: str) -> str:
        return ", ".join(f"{x['seconds']:.2f}" for x in runs[kind])

    peak = {k: max(x["peak_mb"] for x in v) for k, v in runs.items()}
    print(
        f"{r['rows']:,} rows / {r['meters']:,} meters against `bpservice serve`, medians of "
        f"{r['rounds']} fresh processes (accepted: {r['accepted']}):"
    )
    print(f"  CSV dry run   {med['csv']:.2f} s ({each('csv')}), peak {peak['csv']:.0f} MB")
    print(f"  pandas pipe   {med['pipe']:.2f} s ({each('pipe')}), peak {peak['pipe']:.0f} MB")
    print(f"  XLSX dry run  {med['xlsx']:.2f} s ({each('xlsx')}), peak {peak['xlsx']:.0f} MB")
    print(f"  calamine raw  {med['raw']:.2f} s ({each('raw')}), peak {peak['raw']:.0f} MB")
    print(f"  CSV dry run / pandas pipe: {r['csv_over_pipe']:.2f}x (target <= 1.5)")
    print(
        f"  (XLSX - CSV dry run) / calamine raw: {r['xlsx_beyond_csv_over_raw']:.2f}x "
        "(target <= 1.5)"
    )
    b = r["big"]
    print(
        f"  {b['rows_in_file']:,}-row CSV dry run: {b['seconds']:.2f} s, peak {b['peak_mb']:.0f} MB "
        "(target <= 400 MB)"
    )


if __name__ == "__main__":
    main()
