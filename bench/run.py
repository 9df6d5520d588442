"""Every performance figure of bpsync and bpservice in one table.

    .venv/bin/python bench/run.py            # the published sizes (several minutes on 2 cores)
    .venv/bin/python bench/run.py --quick    # scaled down, under about two minutes

Runs the measuring functions of the bench scripts next to this file (each also runs alone):
- bench_ingest: read + map + validate of a generated long CSV (1M rows) and XLSX (100k rows),
  against a pandas pipe doing the same work and (XLSX) calamine's raw read of the same file in
  the same run (the ratios are the figures), peak RSS;
- bench_import: a sustained import on the real service over loopback with the rate-limit window
  scaled down to 2 s, readings accepted per minute against the ceiling the limits allow (the
  planner's bound), 429s and lost readings counted;
- bench_batch: p50/p99 latency of a 500-reading batch with 1k vs 1M readings already stored;
- bench_recalc: the benchmark recalculation's share of such a batch (1k vs 100k stored);
- bench_reports: report generation for a portfolio;
and times the terminal app from a fresh interpreter to its first screen (headless, `run_test`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import bench_batch  # noqa: E402
import bench_import  # noqa: E402
import bench_ingest  # noqa: E402
import bench_recalc  # noqa: E402
import bench_reports  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    csv_rows: int
    xlsx_rows: int
    import_meters: int
    import_big: int
    import_daily: int
    import_headrooms: tuple[float, ...]
    batch_histories: tuple[int, int]
    batch_samples: int
    recalc_sizes: tuple[int, int]
    recalc_repeat: int
    report_buildings: int
    report_repeat: int
    tui_runs: int


FULL = Sizes(
    csv_rows=1_000_000,
    xlsx_rows=100_000,
    import_meters=40,
    import_big=3,
    import_daily=200,
    import_headrooms=(0.0, 0.1),
    batch_histories=(1_000, 1_000_000),
    batch_samples=40,
    recalc_sizes=(1_000, 100_000),
    recalc_repeat=6,
    report_buildings=100,
    report_repeat=3,
    tui_runs=5,
)
QUICK = Sizes(
    csv_rows=100_000,
    xlsx_rows=10_000,
    import_meters=20,
    import_big=2,
    import_daily=100,
    import_headrooms=(0.0,),
    batch_histories=(1_000, 100_000),
    batch_samples=12,
    recalc_sizes=(1_000, 10_000),
    recalc_repeat=3,
    report_buildings=20,
    report_repeat=1,
    tui_runs=2,
)
REPORT_CASES = {("portfolio_summary", "pdf"), ("compliance_esg", "xlsx")}

Row = tuple[str, str, str, str]  # area, figure, value, setup


# --- the terminal app ----------------------------------------------------------------------------

# Runs in a fresh interpreter so that imports count, as they do for a user typing `bpsync`.
TUI_PROBE = r"""
import time
t0 = time.perf_counter()
import asyncio, json
from bpsync.tui.app import BPSyncApp
imported = time.perf_counter()

async def main():
    app = BPSyncApp(auto_connect=False)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.first_paint_seconds is None:
            await pilot.pause(0.005)
        return app.started, app.first_paint_seconds, type(app.screen).__name__

started, first_paint, screen = asyncio.run(main())
print(json.dumps({
    "import_s": imported - t0,
    "app_s": first_paint,
    "total_s": started + first_paint - t0,
    "screen": screen,
}))
"""


def measure_tui(runs: int) -> dict[str, Any]:
    """Median over `runs` fresh processes: seconds from the interpreter's first line to the first
    screen painted (imports included), and from constructing the app to that paint."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BPSYNC_")}
        env.update(
            BPSYNC_CONFIG_DIR=str(Path(tmp) / "config"),
            BPSYNC_STATE_DIR=str(Path(tmp) / "state"),
            PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        )
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", TUI_PROBE],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp,
                timeout=120,
            )
            if out.returncode:
                raise SystemExit(f"terminal app probe failed:\n{out.stderr}")
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "total_s": statistics.median(r["total_s"] for r in results),
        "import_s": statistics.median(r["import_s"] for r in results),
        "app_s": statistics.median(r["app_s"] for r in results),
        "screen": results[0]["screen"],
        "runs": runs,
    }


# --- the table -----------------------------------------------------------------------------------


def ingest_rows(sizes: Sizes) -> list[Row]:
    rows: list[Row] = []
    for r in bench_ingest.measure(sizes.csv_rows, sizes.xlsx_rows):
        setup = (
            f"generated {r['label']}, {int(r['rows']):,} rows ({r['mb']:.1f} MB), 10,000 meters; "
            "fresh process each"
        )
        area = f"Local {r['label']}"
        ours = r["bpsync"]
        rows.append(
            (
                area,
                "read+map+validate",
                f"{ours['seconds']:.2f} s ({r['rows'] / ours['seconds']:,.0f} rows/s), "
                f"peak {ours['peak_mb']:.0f} MB",
                setup,
            )
        )
        if "pipe" in r:
            rows.append(
                (
                    area,
                    "pandas pipe of the same work",
                    f"{r['pipe']['seconds']:.2f} s, peak {r['pipe']['peak_mb']:.0f} MB; "
                    f"bpsync {r['ratio_pipe']:.2f}x its time",
                    "same parsing, unit/meter lookup, duplicate/overlap/gap checks, 12-month "
                    "rolling average; whole-column operations",
                )
            )
        if "raw" in r:
            rows.append(
                (
                    area,
                    "calamine raw read, same workbook",
                    f"{r['raw']['seconds']:.2f} s; bpsync {r['ratio_raw']:.2f}x its time",
                    "python-calamine to_python() of the sheet: nothing parsed or checked",
                )
            )
    return rows


def pacing_rows(sizes: Sizes) -> list[Row]:
    """The ceiling is what the limits allow for this file: the planner's bound with no headroom
    (the time the limits let the last call start, plus that call), from the headroom 0 run of
    the same kind of plan."""
    rows: list[Row] = []
    results = bench_import.measure(
        sizes.import_meters,
        sizes.import_big,
        sizes.import_daily,
        headrooms=sizes.import_headrooms,
    )
    for r in results:
        bound = next(x for x in results if x["headroom"] == 0.0 and x["uploads"] == r["uploads"])
        ceiling = bound["rows"] / bound["estimate_s"] * 60
        per_min = r["accepted"] / r["actual_s"] * 60
        label = f"headroom {r['headroom']:.0%}" + (", CSV upload" if r["uploads"] else "")
        setup = (
            f"{r['limits']} window; {r['rows']:,} readings, "
            + (f"{r['upload_calls']} upload + " if r["uploads"] else "")
            + f"{r['batch_calls']} batch + {r['single_calls']} single calls"
        )
        if r["headroom"]:
            setup += f"; leaves {r['headroom']:.0%} of each bucket to other traffic"
        rows += [
            (
                "Pacing",
                f"readings accepted / min, {label}",
                f"{per_min:,.0f} of {ceiling:,.0f} ceiling ({per_min / ceiling:.1%})",
                setup,
            ),
            (
                "Pacing",
                f"429s / lost readings, {label}",
                f"{r['429s']} / {r['lost']}",
                f"{r['requests']} requests; server holds {r['stored']:,} of {r['rows']:,}",
            ),
        ]
    return rows


def service_rows(sizes: Sizes) -> list[Row]:
    rows: list[Row] = []
    results = asyncio.run(
        bench_batch.measure(list(sizes.batch_histories), sizes.batch_samples, (True,))
    )
    for r in results:
        rows.append(
            (
                "Service",
                f"500-reading batch, {int(r['history']):,} stored",
                f"p50 {r['full_median_ms']:.0f} ms, p99 {r['full_p99_ms']:.0f} ms",
                f"{sizes.batch_samples} batches, whole app incl. recalculation, ASGI, SQLite",
            )
        )
    for r in bench_recalc.measure(sizes.recalc_sizes, sizes.recalc_repeat):
        rows.append(
            (
                "Service",
                f"recalculation, {int(r['stored']):,} stored",
                f"{r['recalc_ms']:.0f} ms of a {r['request_ms']:.0f} ms batch request",
                f"median of {min(sizes.recalc_repeat, 6)} batches; 10 meters, 4 peers",
            )
        )
    reports = bench_reports.measure(sizes.report_buildings, sizes.report_repeat, only=REPORT_CASES)
    for c in reports["cases"]:
        rows.append(
            (
                "Reports",
                f"{c['type']} {c['format']}",
                f"{c['median_s']:.2f} s ({c['size_kb']:.0f} KB)",
                f"{reports['buildings']} buildings, 3 meters x 12 months each",
            )
        )
    return rows


def tui_rows(sizes: Sizes) -> list[Row]:
    t = measure_tui(sizes.tui_runs)
    return [
        (
            "Terminal app",
            "start to first screen",
            f"{t['total_s']:.2f} s (imports {t['import_s']:.2f} s, app {t['app_s']:.2f} s)",
            f"fresh interpreter, headless run_test 120x40, {t['screen']}; median of {t['runs']}",
        )
    ]


def render(rows: list[Row]) -> str:
    """One Markdown table (readable in a terminal, pasted as is into docs/performance.md)."""
    head = ("Area", "Figure", "Value", "Setup")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *(line(r) for r in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes (~2 minutes)")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    started = time.perf_counter()
    rows: list[Row] = []
    parts: list[tuple[str, Callable[[Sizes], list[Row]]]] = [
        ("local parse + map + validate", ingest_rows),
        ("pacing on the real service", pacing_rows),
        ("service latency, recalculation, reports", service_rows),
        ("terminal app", tui_rows),
    ]
    for label, part in parts:
        t0 = time.perf_counter()
        print(f"measuring {label}…", file=sys.stderr, flush=True)
        rows += part(sizes)
        print(f"  done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    cpus = os.cpu_count()
    print(
        f"bpsync figures ({'--quick' if args.quick else 'full sizes'}); Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}, {cpus} CPU(s); "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    print(render(rows))


if __name__ == "__main__":
    main()
