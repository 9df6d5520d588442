"""The bench scripts docs/performance.md names run as documented, at small sizes: each measures
what it says (rows read, requests counted) and prints its figures. Timings are not asserted
here: they live in the bench output, never in tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(script: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_bench_ingest_small() -> None:
    printed = _run("bench_ingest.py", "--csv-rows", "3000", "--xlsx-rows", "1000")
    assert "CSV 3,000 rows" in printed and "bpsync/pipe" in printed
    assert "XLSX 1,000 rows" in printed and "bpsync/raw" in printed


def test_bench_dryrun_small_served_and_embedded() -> None:
    small = ("--rows", "400", "--meters", "40", "--buildings", "4", "--rounds", "2")
    served = _run("bench_dryrun.py", *small)
    # 40 meters: one lookup; 20 hold readings: one page of them. Medians of two rounds.
    assert "dry run of 400 rows / 40 meters" in served and "`bpservice serve`" in served
    assert "medians of 2" in served
    assert "2 requests = 1 readings lists (meters holding readings that can overlap: 20)" in served
    embedded = _run("bench_dryrun.py", *small, "--embedded")
    assert "the embedded bpservice" in embedded and "2 requests = 1 readings lists" in embedded


def test_bench_dryrun_anchors_small() -> None:
    """The dry run as a user runs it (the command line, a fresh process) against a pandas pipe
    doing the same lookups and checks, calamine's raw read, and the big file's peak."""
    printed = _run(
        "bench_dryrun_anchors.py",
        *("--rows", "600", "--meters", "50", "--big-rows", "1200", "--rounds", "1"),
    )
    accepted = "'csv': 600, 'pipe': 600, 'xlsx': 600, 'raw': 600"
    assert "600 rows / 50 meters against `bpservice serve`" in printed and accepted in printed
    assert (
        "CSV dry run / pandas pipe:" in printed
        and "(XLSX - CSV dry run) / calamine raw:" in printed
    )
    assert "1,200-row CSV dry run:" in printed and "peak" in printed


def test_bench_inferred_small() -> None:
    """A file no template names (the mapping inferred) against the same bills under a template."""
    printed = _run("bench_inferred.py", "--rows", "2000", "--runs", "1")
    assert "2,000 rows, mdy dates, CSV" in printed
    assert "template (long_csv)" in printed and "inferred (inferred)" in printed
