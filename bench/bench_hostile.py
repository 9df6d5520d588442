"""Hostile files (issue 33 item 7): time and peak memory of `bpsync import FILE --dry-run` for each
shape, against a served bpservice, each run in its own process.

    .venv/bin/python bench/bench_hostile.py [--only NAME ...] [--timeout 120] [--max-rss-mb 4000]

Shapes (tests/ingest/hostile_shapes.py, seeded): a workbook whose shared strings inflate to 300 MB
at a ratio near 185 (and one of 60 MB, under the shared strings limit); a workbook with one cell
at XFD1048576 (and one at ZZ100000); an .xlsx whose 100 cells without a reference and one at
row 900,000 make a 90-million-cell grid; an .ods row of 20 numbers repeated a million times; an
.xls with a cell at IV65536; an .xlsb with a cell at CV900000; a CSV header of 50,000 columns; a 50 MB single line (as the
first line, and as a data line under a proper header); 1M rows of garbage named by external
reference and by meter id, and after one sound bill; 1M sound rows whose meters are in no meter map. A run is stopped past --timeout seconds or --max-rss-mb (polled every 0.1 s): the
figure then reads "stopped". Prints per shape: file size, seconds, peak RSS (the child's
ru_maxrss), exit code, and the last line of stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_infra import free_port, wait_until_up  # noqa: E402

from tests.ingest import hostile_shapes as shapes  # noqa: E402

BIN = Path(sys.executable).parent

SHAPES = {
    "sst_bomb_300mb": lambda d: shapes.shared_strings_bomb(d / "bomb.xlsx", 300),
    "sst_60mb_admitted": lambda d: shapes.shared_strings_bomb(d / "sst60.xlsx", 60),
    "cell_at_xfd1048576": lambda d: shapes.far_cell(d / "far.xlsx", "XFD1048576"),
    "cell_at_zz100000": lambda d: shapes.far_cell(d / "zz.xlsx", "ZZ100000"),
    "header_50k_columns": lambda d: shapes.wide_header_csv(d / "wide.csv", 50_000),
    "single_line_50mb": lambda d: shapes.long_line_csv(d / "line.csv", 50),
    "data_line_50mb": lambda d: shapes.long_line_csv(d / "dataline.csv", 50, header=True),
    "garbage_1m_refs": lambda d: shapes.garbage_csv(d / "garbage.csv", 1_000_000),
    "garbage_1m_ids": lambda d: shapes.garbage_csv(d / "garbage_ids.csv", 1_000_000, by_id=True),
    "garbage_1m_after_a_bill": lambda d: shapes.garbage_csv(
        d / "late.csv", 1_000_000, by_id=True, readable_first=True
    ),
    "ods_row_repeated_1m": lambda d: shapes.ods_repeat_bomb(d / "repeat.ods"),
    "xls_cell_at_iv65536": lambda d: shapes.xls_with_cells(d / "far.xls", [(65535, 255, 1)]),
    "xlsb_cell_at_cv900000": lambda d: shapes.xlsb_with_cells(
        d / "far.xlsb", [(0, 0, 1.0), (899_999, 99, 2.0)]
    ),
    "xlsx_cells_without_r": lambda d: shapes.cells_without_references(d / "nor.xlsx"),
    "unknown_meters_1m": lambda d: shapes.unknown_meters_csv(d / "unknown.csv", 1_000_000),
}


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(path: Path, env: dict[str, str], timeout: float, max_rss_mb: float) -> dict:
    """One dry run in a child process: wall time, peak RSS, exit code, last stderr line."""
    with tempfile.TemporaryFile() as err:
        return _run(path, env, timeout, max_rss_mb, err)


def _run(path: Path, env: dict[str, str], timeout: float, max_rss_mb: float, err: Any) -> dict:
    started = time.monotonic()
    child = subprocess.Popen(
        [str(BIN / "bpsync"), "import", str(path), "--dry-run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    stopped = None
    peak_polled = 0.0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        peak_polled = max(peak_polled, _rss_mb(child.pid))
        if time.monotonic() - started > timeout:
            stopped = f"stopped after {timeout:.0f} s"
        elif peak_polled > max_rss_mb:
            stopped = f"stopped past {max_rss_mb:.0f} MB"
        if stopped:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.1)
    seconds = time.monotonic() - started
    err.seek(0)
    lines = [x for x in err.read().decode("utf-8", "replace").splitlines() if x.strip()]
    human = [x for x in lines if not x.startswith('{"error"')]
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(max(usage.ru_maxrss / 1024, peak_polled)),
        "exit": os.waitstatus_to_exitcode(status),
        "stopped": stopped,
        "last_line": (human or lines or [""])[-1][:200],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SHAPES))
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--max-rss-mb", type=float, default=4000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        db = d / "svc.db"
        boot = subprocess.run(
            [str(BIN / "bpservice"), "admin", "bootstrap", "--db", str(db), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        key = json.loads(boot.stdout)["test_key"]
        server = subprocess.Popen(
            [str(BIN / "bpservice"), "serve", "--db", str(db), "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until_up(url, server)
            env = {
                **os.environ,
                "BPSYNC_API_KEY": key,
                "BPSYNC_BASE_URL": url,
                "BPSYNC_CONFIG_DIR": str(d / "config"),
                "BPSYNC_STATE_DIR": str(d / "state"),
                "NO_COLOR": "1",
            }
            results = {}
            for name in args.only or SHAPES:
                t0 = time.monotonic()
                path = SHAPES[name](d)
                made = time.monotonic() - t0
                result = run(path, env, args.timeout, args.max_rss_mb)
                result["file_mb"] = round(path.stat().st_size / 1e6, 2)
                result["made_in_s"] = round(made, 1)
                results[name] = result
                path.unlink()
                if not args.json:
                    print(
                        f"{name:20} {result['file_mb']:>7} MB  {result['seconds']:>6} s  "
                        f"{result['peak_rss_mb']:>5} MB RSS  exit {result['exit']:>3}  "
                        f"{result['stopped'] or ''}\n    {result['last_line']}",
                        flush=True,
                    )
            if args.json:
                print(json.dumps(results, indent=2))
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
