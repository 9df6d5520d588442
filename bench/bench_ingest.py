"""Import engine throughput: read + map + normalise + validate, against pandas' raw read.

    .venv/bin/python bench/bench_ingest.py [--csv-rows 1000000] [--xlsx-rows 100000]

Generates a long CSV (10,000 meters x monthly bills, ISO dates, thousands separators in half the
quantities, each meter's bills within +/-10 % of its level, so no anomaly warnings) and an XLSX of the same layout, then times, each in a fresh subprocess so peak memory
(VmHWM) belongs to one measurement:
- pandas: `read_csv(dtype=str)` / `read_excel(engine="openpyxl")` - the raw read, nothing checked;
- bpsync: `prepare` + `check` with a 10,000-meter catalog (unit conversion, overlap, gap and
  anomaly checks included), consuming every accepted reading.
Prints rows/s, the ratio bpsync/pandas, and peak RSS.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def measure_one(kind: str, path: str) -> dict[str, float]:
    """One timed read in this process (run it in a fresh one: `run`)."""
    t0 = time.perf_counter()
    if kind == "pandas-csv":
        import pandas as pd

        rows = len(pd.read_csv(path, dtype=str))
    elif kind == "pandas-xlsx":
        import pandas as pd

        rows = len(pd.read_excel(path, engine="openpyxl"))
    else:
        from bpsync.ingest import MeterCatalog, MeterInfo, check, prepare

        catalog = MeterCatalog.build(
            MeterInfo(f"mtr_{m:05d}", "electricity", "kWh") for m in range(METERS)
        )
        prepared = prepare(path, "long_csv", catalog=catalog)
        result = check(prepared, today=dt.date(2100, 1, 1))
        rows = sum(1 for _ in result.all_candidates())
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


def run(kind: str, path: Path) -> dict[str, float]:
    """`measure_one` in a fresh subprocess, so its peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)], capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(f"{kind} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def measure(csv_rows: int = 1_000_000, xlsx_rows: int = 100_000) -> list[dict[str, float | str]]:
    """Generate the CSV and the XLSX, then time pandas' raw read and bpsync's read + map +
    validate of each (fresh subprocesses). One dict per format: label, rows, megabytes,
    pandas and bpsync rows/s, seconds and peak MB, and the ratio bpsync/pandas."""
    results: list[dict[str, float | str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "bills.csv"
        small = Path(tmp) / "bills_small.csv"
        book = Path(tmp) / "bills.xlsx"
        make_csv(big, csv_rows)
        make_csv(small, xlsx_rows)
        make_xlsx(small, book)
        for label, path, pandas_kind in (("CSV", big, "pandas-csv"), ("XLSX", book, "pandas-xlsx")):
            base = run(pandas_kind, path)
            ours = run("bpsync", path)
            pandas_rate = base["rows"] / base["seconds"]
            ours_rate = ours["rows"] / ours["seconds"]
            results.append(
                {
                    "label": label,
                    "rows": ours["rows"],
                    "mb": path.stat().st_size / 1e6,
                    "pandas_rate": pandas_rate,
                    "pandas_seconds": base["seconds"],
                    "pandas_peak_mb": base["peak_mb"],
                    "rate": ours_rate,
                    "seconds": ours["seconds"],
                    "peak_mb": ours["peak_mb"],
                    "ratio": ours_rate / pandas_rate,
                }
            )
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
        print(
            f"{r['label']} {int(r['rows']):,} rows ({r['mb']:.0f} MB): "
            f"pandas raw read {r['pandas_rate']:,.0f} rows/s, peak {r['pandas_peak_mb']:.0f} MB; "
            f"bpsync read+map+validate {r['rate']:,.0f} rows/s "
            f"({r['seconds']:.1f} s), peak {r['peak_mb']:.0f} MB; ratio {r['ratio']:.2f}"
        )


if __name__ == "__main__":
    main()
