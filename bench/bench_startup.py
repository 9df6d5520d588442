"""Start-up of the command line (issue 28 item 7, issue 32 item 3): wall time of fresh processes
running `bpsync --help`, `bpsync version` and `bpsync watch --help` (a cron tick of `watch --once`
pays the same start), against the anchor `python -c "import typer, rich, httpx"` (the libraries
any such command line loads), each the median of --runs fresh processes, and which heavy
libraries each command loaded (pandas, pyarrow, numpy, textual, openpyxl, bpservice).

    .venv/bin/python bench/bench_startup.py [--runs 15] [--json]

Every runner imports from compiled bytecode, as an installed package does: bpsync's sources are
compiled first, so a shell that sets PYTHONDONTWRITEBYTECODE (this sandbox does) does not make
each fresh process compile them.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "numpy", "textual", "openpyxl", "bpservice")

ANCHOR = "import typer, rich, httpx"
COMMANDS = {
    "bpsync --help": ["--help"],
    "bpsync version": ["version"],
    "bpsync watch --help": ["watch", "--help"],
}
# Runs the CLI as its console script does, then says which heavy modules got imported.
PROBE = (
    "import sys\n"
    "from bpsync.cli.entry import main\n"
    "sys.argv = ['bpsync', *sys.argv[1:]]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
    "sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')\n"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("COLUMNS", "100")
    return env


def time_process(args: list[str], runs: int) -> tuple[float, str]:
    """Median wall seconds of `runs` fresh processes, and the last run's HEAVY line."""
    times, heavy = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, env=_env(), check=False)
        times.append(time.perf_counter() - start)
        for line in done.stderr.splitlines():
            if line.startswith("HEAVY="):
                heavy = line[6:]
    return statistics.median(times), heavy


def measure(runs: int) -> dict[str, dict[str, object]]:
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    anchor, _ = time_process([sys.executable, "-c", ANCHOR], runs)
    out: dict[str, dict[str, object]] = {"anchor": {"seconds": round(anchor, 3)}}
    for name, argv in COMMANDS.items():
        seconds, heavy = time_process([sys.executable, "-c", PROBE, *argv], runs)
        out[name] = {
            "seconds": round(seconds, 3),
            "vs_anchor": round(seconds / anchor, 2),
            "heavy_imported": heavy.split(",") if heavy else [],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.runs)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    anchor = figures.pop("anchor")["seconds"]
    print(f'anchor `python -c "{ANCHOR}"`: {anchor:.3f} s (median of {args.runs})')
    for name, f in figures.items():
        heavy = ", ".join(f["heavy_imported"]) or "none"  # type: ignore[arg-type]
        print(f"{name:24} {f['seconds']:.3f} s  {f['vs_anchor']:.2f}x anchor  heavy: {heavy}")


if __name__ == "__main__":
    main()
