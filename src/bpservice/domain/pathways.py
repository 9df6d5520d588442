"""CRREM-style decarbonisation pathways and stranding years (pure).

Published: CRREM v2.05 1.5 °C office pathways for the UK (GB) and Germany (DE), in
`domain/data/crrem_pathways.csv`. Everything else is derived, and the derivation is stated:

- Other property types in a country: the country's office pathway times the ratio of the type's
  typical carbon intensity to the office's (CIBSE TM46 typical electricity and fossil energy,
  `typical_energy_tm46.csv`, priced with the country's emission factors).
- Other countries: the GB office pathway's shape, scaled by the ratio of the country's typical
  intensity for the type to GB's typical office intensity (same TM46 energy, each country's
  factors). The shape, i.e. the rate of decline, is the UK's.
- 2 °C: CRREM v2 publishes no 2 °C pathway. IPCC AR6 WG III (SPM C.1) puts global net-zero CO2 in
  the early 2050s for 1.5 °C and the early 2070s for 2 °C, so the 2 °C pathway is the 1.5 °C one
  stretched in time: p2(t) = p1.5(2020 + (t - 2020) * 30 / 50).
Years between published points are interpolated linearly; before the first year the first value
holds, after the last year the last value.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from bpservice.domain.emissions import emission_factor
from bpservice.domain.tables import crrem_pathways, typical_energy

SCENARIOS = ("1.5c", "2c")
BASE_YEAR = 2020
LAST_YEAR = 2050
# 2 °C reaches in 2070 what 1.5 °C reaches in 2050: time runs 30/50 as fast.
STRETCH_2C = 30 / 50
REFERENCE_COUNTRY = "GB"
REFERENCE_TYPE = "office"


def _interpolate(points: tuple[tuple[int, float], ...], year: float) -> float:
    if year <= points[0][0]:
        return points[0][1]
    for (y0, v0), (y1, v1) in pairwise(points):
        if y0 <= year <= y1:
            return v0 + (v1 - v0) * (year - y0) / (y1 - y0)
    return points[-1][1]


# The derivation scales CRREM's published pathways by ratios of typical intensities; it uses one
# fixed factor set (the 2024 sets it was defined with, B11) so a new year's UK factors do not
# shift every derived pathway (docs/decisions.md CS7).
DERIVATION_FACTOR_YEAR = 2024


def typical_intensity(use_type: str, country: str) -> float:
    """kgCO2e/m² of a typical building of `use_type` (TM46 energy) with `country`'s factors."""
    tm = typical_energy().get(use_type) or typical_energy()["other"]
    year = DERIVATION_FACTOR_YEAR
    return tm.electricity_kwh_m2 * emission_factor(
        country, "electricity", year
    ) + tm.fossil_kwh_m2 * emission_factor(country, "natural_gas", year)


@dataclass(frozen=True)
class Pathway:
    name: str  # e.g. "crrem-v2.05-1.5c-gb-office", or "derived-1.5c-us-retail"
    country: str
    use_type: str
    published: bool
    base: tuple[tuple[int, float], ...]  # the published office pathway it is derived from
    scale: float

    def value(self, year: float, scenario: str = "1.5c") -> float:
        if scenario == "2c":
            year = BASE_YEAR + (year - BASE_YEAR) * STRETCH_2C
        return _interpolate(self.base, year) * self.scale


def pathway_for(country: str, use_type: str) -> Pathway:
    table = crrem_pathways()
    if (country, use_type, "1.5c") in table:
        return Pathway(
            f"crrem-v2.05-1.5c-{country.lower()}-{use_type}",
            country,
            use_type,
            True,
            table[(country, use_type, "1.5c")],
            1.0,
        )
    base_country = country if (country, REFERENCE_TYPE, "1.5c") in table else REFERENCE_COUNTRY
    base = table[(base_country, REFERENCE_TYPE, "1.5c")]
    scale = typical_intensity(use_type, country) / typical_intensity(REFERENCE_TYPE, base_country)
    return Pathway(
        f"derived-1.5c-{country.lower()}-{use_type}", country, use_type, False, base, scale
    )


def stranding_year(
    intensity: float, pathway: Pathway, from_year: int, scenario: str = "1.5c"
) -> int | None:
    """First year from `from_year` (the reporting year) in which a constant `intensity` exceeds
    the pathway; None when it never does through 2050."""
    for year in range(from_year, LAST_YEAR + 1):
        if intensity > pathway.value(year, scenario):
            return year
    return None
