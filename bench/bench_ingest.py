"""Import engine throughput: read + map + normalise + validate, against anchors doing the same work.

    .venv/bin/python bench/bench_ingest.py [--csv-rows 1000000] [--xlsx-rows 100000]

Generates a long CSV (10,000 meters x monthly bills, ISO dates, thousands separators in half the
quantities, each meter's bills within +/-10 % of its level, so no anomaly warnings) and an XLSX of
the same layout, then times, each in a fresh subprocess so peak memory (VmHWM) belongs to one
measurement:
- bpsync: `prepare` + `check` with a 10,000-meter catalog (unit conversion, overlap, duplicate,
  gap and anomaly checks included); the accepted readings are counted, not turned into objects;
- the pandas pipe: the same read, number parsing (thousands separators), date parsing, unit
  lookup and conversion, meter lookup, period/duplicate/overlap/gap checks and a 12-month rolling
  average for spike/drop, each a whole-column operation (`pipe` below): like with like;
- for the XLSX, calamine's raw read of the sheet (`to_python`), the floor any reader pays.
Every runner imports from compiled bytecode, as an installed package does (pip compiles at
install, and an editable checkout writes its own on first use): bpsync's sources are compiled
first (into their __pycache__), so a shell that sets PYTHONDONTWRITEBYTECODE (this sandbox does)
does not make each fresh process compile bpsync from source (about 0.1 s).
Prints seconds, rows/s, the ratios and peak RSS.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

METERS = 10_000


def make_csv(path: Path, rows: int) -> None:
    rng = random.Random(7)
    per_meter = max(rows // METERS, 1)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Meter ID", "Start Date", "End Date", "Consumption", "Unit", "Cost"])
        n = 0
        for m in range(METERS):
            year, month = 2000, 1
            for _ in range(per_meter):
                if n >= rows:
                    return
                start = dt.date(year, month, 1)
                month += 1
                if month == 13:
                    year, month = year + 1, 1
                end = dt.date(year, month, 1) - dt.timedelta(days=1)
                # A realistic bill: the meter's own level, +/-10 % (no spike/drop flags).
                usage = (500 + 37 * (m % 1000)) * rng.uniform(0.9, 1.1)
                text = f"{usage:,.1f}" if n % 2 else f"{usage:.1f}"
                w.writerow(
                    [
                        f"mtr_{m:05d}",
                        start.isoformat(),
                        end.isoformat(),
                        text,
                        "kWh",
                        f"{usage * 0.2:.2f}",
                    ]
                )
                n += 1


def make_xlsx(csv_path: Path, path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("Bills")
    with open(csv_path, newline="", encoding="utf-8") as fh:
        for i, row in enumerate(csv.reader(fh)):
            if i == 0:
                ws.append(row)
                continue
            ws.append(
                [
                    row[0],
                    dt.date.fromisoformat(row[1]),
                    dt.date.fromisoformat(row[2]),
                    float(row[3].replace(",", "")),
                    row[4],
                    float(row[5]),
                ]
            )
    wb.save(path)


FACTORS = {"kWh": 1.0, "MWh": 1000.0, "therms": 29.3071}


def pipe(df, *, text: bool):  # type: ignore[no-untyped-def]
    """The pandas anchor: what bpsync does to a file, with whole-column operations."""
    import numpy as np
    import pandas as pd

    if text:
        usage = pd.to_numeric(df["Consumption"].str.replace(",", "", regex=False), errors="coerce")
        cost = pd.to_numeric(df["Cost"].str.replace(",", "", regex=False), errors="coerce")
        start = pd.to_datetime(df["Start Date"], format="%Y-%m-%d", errors="coerce")
        end = pd.to_datetime(df["End Date"], format="%Y-%m-%d", errors="coerce")
    else:
        usage = pd.to_numeric(df["Consumption"], errors="coerce")
        cost = pd.to_numeric(df["Cost"], errors="coerce")
        start = pd.to_datetime(df["Start Date"], errors="coerce")
        end = pd.to_datetime(df["End Date"], errors="coerce")
    factor = df["Unit"].map(FACTORS)
    catalog = pd.Series("kWh", index=[f"mtr_{m:05d}" for m in range(METERS)])
    meter_unit = df["Meter ID"].map(catalog)
    bad = usage.isna() | start.isna() | end.isna() | (end < start) | factor.isna()
    bad |= meter_unit.isna()
    frame = pd.DataFrame(
        {"meter": df["Meter ID"], "start": start, "end": end, "usage": usage * factor, "cost": cost}
    )[~bad]
    frame = frame.sort_values(["meter", "start", "end"], kind="stable")
    duplicate = frame.duplicated(["meter", "start", "end", "usage", "cost"])
    frame = frame[~duplicate]
    group = frame.groupby("meter", sort=False)
    reach = group["end"].cummax()
    before = reach.groupby(frame["meter"]).shift()
    overlap = frame["start"] <= before
    previous_end = group["end"].shift()
    gap = frame["start"] > previous_end + pd.Timedelta(days=1)
    kept = frame[~overlap].set_index("end")
    average = (
        kept.groupby("meter", sort=False)["usage"].rolling("365D", closed="left").mean().to_numpy()
    )
    usage_kept = kept.groupby("meter", sort=False)["usage"].apply(list).explode().to_numpy(float)
    flagged = (usage_kept >= 3 * average) | (usage_kept < 0.25 * average)
    return int((~overlap).sum()), int(gap.sum()), int(np.nansum(flagged))


def measure_one(kind: str, path: str) -> dict[str, float]:
    """One timed run in this process (run it in a fresh one: `run`)."""
    t0 = time.perf_counter()
    if kind == "pipe-csv":
        import pandas as pd

        rows = pipe(pd.read_csv(path, dtype=str, keep_default_na=False), text=True)[0]
    elif kind == "pipe-xlsx":
        import pandas as pd

        rows = pipe(pd.read_excel(path, engine="calamine"), text=False)[0]
    elif kind == "calamine-raw":
        import python_calamine

        book = python_calamine.CalamineWorkbook.from_path(path)
        rows = len(book.get_sheet_by_index(0).to_python()) - 1
    else:
        from bpsync.ingest import MeterCatalog, MeterInfo, check, prepare

        catalog = MeterCatalog.build(
            MeterInfo(f"mtr_{m:05d}", "electricity", "kWh") for m in range(METERS)
        )
        prepared = prepare(path, "long_csv", catalog=catalog)
        result = check(prepared, today=dt.date(2100, 1, 1))
        rows = result.accepted_count
        assert not result.errors, result.errors[:3]
    seconds = time.perf_counter() - t0
    return {"rows": rows, "seconds": seconds, "peak_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident memory. Linux's VmHWM belongs to this program alone; the
    rusage figure can carry the parent's peak over the fork + exec that started it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compiled_env() -> dict[str, str]:
    """The environment of the measured processes: bytecode read and written as Python does by
    default, with bpsync's sources compiled now (its dependencies were compiled by pip)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    src = Path(__file__).resolve().parents[1] / "src"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], env=env, check=True)
    return env


def run(kind: str, path: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    """`measure_one` in a fresh subprocess, so its peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode:
        raise SystemExit(f"{kind} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def measure(csv_rows: int = 1_000_000, xlsx_rows: int = 100_000) -> list[dict[str, Any]]:
    """Generate the CSV and the XLSX, then time bpsync and the anchors on each (fresh
    subprocesses). One dict per format: label, rows, megabytes, and per runner (bpsync, pipe,
    raw) its seconds and peak MB; ratios are bpsync's time over the anchor's."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "bills.csv"
        small = Path(tmp) / "bills_small.csv"
        book = Path(tmp) / "bills.xlsx"
        make_csv(big, csv_rows)
        make_csv(small, xlsx_rows)
        make_xlsx(small, book)
        env = compiled_env()
        for label, path, anchors in (
            ("CSV", big, {"pipe": "pipe-csv"}),
            ("XLSX", book, {"raw": "calamine-raw", "pipe": "pipe-xlsx"}),
        ):
            ours = run("bpsync", path, env)
            entry: dict[str, Any] = {
                "label": label,
                "rows": ours["rows"],
                "mb": path.stat().st_size / 1e6,
                "bpsync": ours,
            }
            for name, kind in anchors.items():
                entry[name] = run(kind, path, env)
                entry[f"ratio_{name}"] = ours["seconds"] / entry[name]["seconds"]
            results.append(entry)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv-rows", type=int, default=1_000_000)
    parser.add_argument("--xlsx-rows", type=int, default=100_000)
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "PATH"))
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_one(*args.measure)))
        return
    for r in measure(args.csv_rows, args.xlsx_rows):
        ours = r["bpsync"]
        line = (
            f"{r['label']} {int(r['rows']):,} rows ({r['mb']:.0f} MB): bpsync read+map+validate "
            f"{ours['seconds']:.2f} s ({r['rows'] / ours['seconds']:,.0f} rows/s), "
            f"peak {ours['peak_mb']:.0f} MB"
        )
        for name in ("pipe", "raw"):
            if name in r:
                line += (
                    f"; {name} {r[name]['seconds']:.2f} s, peak {r[name]['peak_mb']:.0f} MB, "
                    f"bpsync/{name} {r[f'ratio_{name}']:.2f}x"
                )
        print(line)


if __name__ == "__main__":
    main()
