"""The inferred mapping's cost: `prepare` of a file no template names, against the same data under
a template (issue 32 item 4).

    .venv/bin/python bench/bench_inferred.py [--rows 100000] [--dates mdy|iso] [--runs 1]
        [--xlsx] [--profile]

Generates two CSVs holding the same bills (1,000 meters x monthly bills, inclusive end dates,
kWh and cost): one with `long_csv`'s headers ("Meter ID", "Start Date", ...), one with a utility
portal's ("Meter Number", "Bill Start", "Bill End", "Total Usage (kWh)", "Bill Amount"), which no
template names, so `prepare(path, "auto")` infers the mapping: it profiles the columns and
decides the date order, the decimal separator and each meter's period convention (end_date =
"auto") from the data. Each `prepare` runs in a fresh process, compiled as bench_ingest.py's are;
prints both times and their ratio (target: inferred within 1.2x of the template), `--runs`
times. `--xlsx` times the same bills as workbooks (date cells, numbers); `--profile` prints the
inferred run's top functions by cumulative time instead.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import compiled_env, peak_rss_mb

METERS = 1_000
TEMPLATE_HEADERS = ["Meter ID", "Start Date", "End Date", "Consumption", "Unit", "Cost"]
PORTAL_HEADERS = ["Meter Number", "Bill Start", "Bill End", "Total Usage (kWh)", "Bill Amount"]


def _date(day: dt.date, style: str) -> str:
    return day.isoformat() if style == "iso" else f"{day.month:02d}/{day.day:02d}/{day.year}"


def make_csvs(template_path: Path, portal_path: Path, rows: int, dates: str) -> None:
    """The same bills twice: under long_csv's headers and under a portal's."""
    per_meter = max(rows // METERS, 1)
    with (
        open(template_path, "w", newline="", encoding="utf-8") as a,
        open(portal_path, "w", newline="", encoding="utf-8") as b,
    ):
        wa, wb = csv.writer(a), csv.writer(b)
        wa.writerow(TEMPLATE_HEADERS)
        wb.writerow(PORTAL_HEADERS)
        n = 0
        for m in range(METERS):
            start = dt.date(1990, 1, 1) + dt.timedelta(days=m % 28)
            for k in range(per_meter):
                if n >= rows:
                    return
                end = start + dt.timedelta(days=27 + (m + k) % 5)
                usage = f"{500 + 37 * (m % 100) + (k % 7) * 3}.{k % 10}"
                cost = f"{(500 + m % 100) * 0.2:.2f}"
                s, e = _date(start, dates), _date(end, dates)
                wa.writerow([f"mtr_{m:05d}", s, e, usage, "kWh", cost])
                wb.writerow([f"E-{m:05d}", s, e, usage, f"${cost}"])
                start = end + dt.timedelta(days=1)
                n += 1


def to_xlsx(csv_path: Path, path: Path, dates: str) -> None:
    """The CSV as a workbook: real date cells and numbers, text elsewhere."""
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Bills")
    with open(csv_path, newline="", encoding="utf-8") as fh:
        for n, row in enumerate(csv.reader(fh)):
            if n:
                row[1:3] = [dt.datetime.strptime(d, _FORMATS[dates]) for d in row[1:3]]
                row[3] = float(row[3])
            sheet.append(row)
    book.save(path)


_FORMATS = {"iso": "%Y-%m-%d", "mdy": "%m/%d/%Y"}


def _catalog():  # type: ignore[no-untyped-def]
    from bpsync.ingest import MeterCatalog, MeterInfo

    infos = [MeterInfo(f"mtr_{m:05d}", "electricity", "kWh") for m in range(METERS)]
    return MeterCatalog.build(infos, {f"E-{m:05d}": f"mtr_{m:05d}" for m in range(METERS)})


def measure_one(kind: str, path: str) -> dict[str, float]:
    """One timed `prepare` in this process (run it in a fresh one: `run`)."""
    from bpsync.ingest import prepare

    catalog = _catalog()
    t0 = time.perf_counter()
    prepared = prepare(path, "long_csv" if kind == "template" else "auto", catalog=catalog)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "rows": prepared.collected.count,
        "problems": len(prepared.collected.problems),
        "template": prepared.template.name,
        "peak_mb": peak_rss_mb(),
    }


def profile_one(path: str, top: int = 30) -> None:
    import cProfile
    import pstats

    from bpsync.ingest import prepare

    catalog = _catalog()
    profiler = cProfile.Profile()
    profiler.enable()
    prepare(path, "auto", catalog=catalog)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def run(kind: str, path: Path, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode:
        raise SystemExit(f"{kind} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dates", choices=("mdy", "iso"), default="mdy")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--xlsx", action="store_true", help="the same bills as workbooks")
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "PATH"))
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_one(*args.measure)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        template_path = Path(tmp) / "bills.csv"
        portal_path = Path(tmp) / "portal.csv"
        make_csvs(template_path, portal_path, args.rows, args.dates)
        if args.xlsx:
            books = template_path.with_suffix(".xlsx"), portal_path.with_suffix(".xlsx")
            to_xlsx(template_path, books[0], args.dates)
            to_xlsx(portal_path, books[1], args.dates)
            template_path, portal_path = books
        if args.profile:
            profile_one(str(portal_path))
            return
        env = compiled_env()
        print(f"{args.rows:,} rows, {args.dates} dates, {template_path.suffix[1:].upper()}")
        for _ in range(args.runs):
            template = run("template", template_path, env)
            inferred = run("inferred", portal_path, env)
            assert inferred["template"] != "long_csv", inferred
            assert inferred["rows"] == template["rows"] == args.rows, (template, inferred)
            print(
                f"template ({template['template']}) {template['seconds']:.2f} s, "
                f"inferred ({inferred['template']}) {inferred['seconds']:.2f} s, "
                f"ratio {inferred['seconds'] / template['seconds']:.2f}x"
            )


if __name__ == "__main__":
    main()
