"""SI or US customary units for what the tool shows: floor area, energy use intensity, carbon
intensity, energy. The service speaks SI (m², kWh); a US reader wants ft², kBtu, kBtu/ft² and
therms. Pure arithmetic, one place, with the figures' source:

shared/reference/benchmark-figures.md: 1 m² = 10.7639 ft²; 1 kBtu = 0.293071 kWh;
1 therm = 100 kBtu = 29.3071 kWh; 1 kBtu/ft² = 3.15459 kWh/m²."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal, cast

Units = Literal["si", "us"]
UNITS: tuple[Units, ...] = ("si", "us")

SQFT_PER_M2 = 10.7639
KWH_PER_KBTU = 0.293071
KWH_PER_THERM = 29.3071
KWH_M2_PER_KBTU_FT2 = 3.15459


def parse_units(value: str) -> Units:
    """'si' or 'us' (any case); anything else is refused with one line saying what is taken."""
    text = value.strip().lower()
    if text not in UNITS:
        raise ValueError(f"units must be 'si' or 'us', not {value!r}.")
    return cast(Units, text)


def default_units(countries: Iterable[str | None]) -> Units:
    """US units when most of the portfolio's properties are in the US, SI otherwise (also for an
    empty portfolio)."""
    counts = Counter((c or "").upper() for c in countries)
    if not counts:
        return "si"
    country, _ = counts.most_common(1)[0]
    return "us" if country == "US" and counts["US"] * 2 > sum(counts.values()) else "si"


def other(units: Units) -> Units:
    return "us" if units == "si" else "si"


def area(m2: float | None, units: Units) -> float | None:
    if m2 is None:
        return None
    return m2 * SQFT_PER_M2 if units == "us" else m2


def eui(kwh_m2: float | None, units: Units) -> float | None:
    if kwh_m2 is None:
        return None
    return kwh_m2 / KWH_M2_PER_KBTU_FT2 if units == "us" else kwh_m2


def intensity(kg_m2: float | None, units: Units) -> float | None:
    """Carbon intensity: kgCO₂e per m² or per ft²."""
    if kg_m2 is None:
        return None
    return kg_m2 / SQFT_PER_M2 if units == "us" else kg_m2


def energy(kwh: float | None, units: Units, *, therms: bool = False) -> float | None:
    """kWh, or kBtu (therms for gas, `therms=True`) in US units."""
    if kwh is None:
        return None
    if units == "si":
        return kwh
    return kwh / KWH_PER_THERM if therms else kwh / KWH_PER_KBTU


UNIT_LABELS: dict[str, dict[Units, str]] = {
    "area": {"si": "m²", "us": "ft²"},
    "eui": {"si": "kWh/m²", "us": "kBtu/ft²"},
    "intensity": {"si": "kgCO₂e/m²", "us": "kgCO₂e/ft²"},
    "energy": {"si": "kWh", "us": "kBtu"},
    "gas": {"si": "kWh", "us": "therms"},
}


def label(quantity: str, units: Units) -> str:
    """The unit's symbol: label('eui', 'us') == 'kBtu/ft²'."""
    return UNIT_LABELS[quantity][units]
