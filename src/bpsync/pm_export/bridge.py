"""The one place this package takes anything from the import engine (its paths are about to
move): the unit conversion, so an exported quantity and its re-import use the same factors, and
the profile's meter map. Imported lazily by the callers: the `bpsync.ingest` package loads pandas."""

from __future__ import annotations

from bpsync.ingest import conversion_factor, load_meter_map

__all__ = ["conversion_factor", "load_meter_map"]
