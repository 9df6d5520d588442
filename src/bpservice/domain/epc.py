"""Energy performance certificate grades from operational data (pure).

Scales are the published ones in `domain/data/epc_bands.json`; how operational data is mapped to
each (an EPC is normally a modelled asset rating) is recorded in docs/decisions.md (benchmarks section):
- GB: the asset-rating bands applied to the Display Energy Certificate operational rating,
  100 x actual kgCO2e/m² / typical kgCO2e/m² of the use type (CIBSE TM46).
- FR: DPE 2021, the worse of the class by primary energy (site kWh x primary energy factor) and
  the class by emissions, with strict bounds.
- DE: GEG final-energy classes A+..H on the site EUI, kept as published (nine classes).
Other countries have no scale: the caller leaves eu_epc out.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass

from bpservice.domain.emissions import carrier
from bpservice.domain.tables import Band, EpcScale, epc_scales, regional_schemes, typical_energy


def has_scale(country: str) -> bool:
    return country in epc_scales()


def band_for(value: float, bands: tuple[Band, ...], strict: bool, second: bool = False) -> str:
    for band in bands:
        upper = band.upper_2 if second else band.upper
        if upper is None:
            return band.grade
        if (value < upper) if strict else (value <= upper):
            return band.grade
    return bands[-1].grade


def tm46_benchmark_intensity(use_type: str) -> float:
    """kgCO2/m² of the CIBSE TM46 benchmark for the use type, priced with TM46's own CO2 factors
    (electricity 0.55, fossil thermal 0.19 kgCO2/kWh) as TM46 defines it for a DEC."""
    factors = regional_schemes()["GB"]["tm46_co2_factors_kg_per_kwh"]
    tm = typical_energy().get(use_type) or typical_energy()["other"]
    return tm.electricity_kwh_m2 * float(factors["electricity"]) + tm.fossil_kwh_m2 * float(
        factors["fossil_thermal"]
    )


def operational_rating(carbon_intensity: float, use_type: str, country: str = "GB") -> int:
    """DEC-style rating: 100 is a typical building of the use type (the TM46 benchmark); rounded
    half up. `country` is kept for callers; the DEC benchmark is the UK's."""
    return math.floor(100.0 * carbon_intensity / tm46_benchmark_intensity(use_type) + 0.5)


def primary_energy_factor(scale: EpcScale, meter_type: str, on: dt.date) -> float:
    if carrier(meter_type) != "electricity" or not scale.electricity_pef:
        return scale.default_pef
    factor = scale.electricity_pef[0][1]
    for start, value in scale.electricity_pef:
        if on >= start:
            factor = value
    return factor


@dataclass(frozen=True)
class EpcGrade:
    grade: str | None
    country_methodology: str


def epc_grade(
    country: str,
    *,
    use_type: str,
    gfa_m2: float,
    kwh_by_type: Mapping[str, float] | None,
    carbon_intensity: float | None,
    period_end: dt.date | None,
) -> EpcGrade | None:
    """The grade on the country's scale, None grade without data, None without a scale."""
    scale = epc_scales().get(country)
    if scale is None:
        return None
    if kwh_by_type is None or carbon_intensity is None or period_end is None:
        return EpcGrade(None, country)
    if country == "GB":
        rating = operational_rating(carbon_intensity, use_type, country)
        return EpcGrade(band_for(rating, scale.bands, scale.strict), country)
    if scale.double:
        cep = (
            sum(kwh * primary_energy_factor(scale, t, period_end) for t, kwh in kwh_by_type.items())
            / gfa_m2
        )
        by_energy = band_for(cep, scale.bands, scale.strict)
        by_carbon = band_for(carbon_intensity, scale.bands, scale.strict, second=True)
        order = [b.grade for b in scale.bands]
        return EpcGrade(max(by_energy, by_carbon, key=order.index), country)
    eui = sum(kwh_by_type.values()) / gfa_m2
    return EpcGrade(band_for(eui, scale.bands, scale.strict), country)
