"""Building rules that do not need the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Areas are compared to the centimetre-square: sums of decimal floats are not exact.
GFA_TOLERANCE_M2 = 0.01


def use_types_problem(gfa_m2: float, use_types: Sequence[dict[str, Any]] | None) -> str | None:
    """Why `use_types` does not fit `gfa_m2`, or None when it does (or is absent)."""
    if not use_types:
        return None
    seen: set[str] = set()
    for item in use_types:
        if item["type"] in seen:
            return f"use type {item['type']!r} is listed twice"
        seen.add(item["type"])
    total = sum(float(item["gfa_m2"]) for item in use_types)
    if abs(total - gfa_m2) > GFA_TOLERANCE_M2:
        return f"use_types gfa_m2 add up to {total:g} but the building's gfa_m2 is {gfa_m2:g}"
    return None
