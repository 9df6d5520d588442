"""Benchmark engine: monthly aggregates per meter, recalculated when readings change, and the
scores built from them (docs/decisions.md (benchmarks section)). `engine` is the public read interface."""

from __future__ import annotations

from bpservice.benchmarking.recalculator import BenchmarkRecalculator
from bpservice.recalc import Recalculator


def default_recalculator() -> Recalculator:
    return BenchmarkRecalculator()
