"""Benchmark engine: recalculates scores when readings change (filled in by the part 2 work)."""

from __future__ import annotations

from bpservice.recalc import NoRecalculation, Recalculator


def default_recalculator() -> Recalculator:
    return NoRecalculation()
