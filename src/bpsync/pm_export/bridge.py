"""The one place this package takes anything from the import engine (its paths are about to
move): the unit conversion, so an exported quantity and its re-import use the same factors, and
the profile's meter map. Imported lazily by the callers: the `bpsync.ingest` package loads pandas."""

from __future__ import annotations

from bpsync.ingest.meters import load_meter_map
from bpsync.ingest.units import conversion_factor

__all__ = ["conversion_factor", "load_meter_map"]
