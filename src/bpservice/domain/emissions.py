"""Emissions and source energy from site energy by carrier (pure).

Factors come from `domain/data/emission_factors.csv` and `source_site_ratios.csv` (each row cites
its source). Lookups fall back from the building's country to "*": fuel combustion factors are fuel
chemistry and hold everywhere; grid electricity falls back to a world average (documented in
docs/decisions.md (benchmarks section)).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from bpservice.domain.tables import (
    FALLBACK_COUNTRY,
    Figure,
    emission_factor_sets,
    factor_for_year,
    source_site_ratios,
)

# Meter types whose factors are another carrier's: a CHP meter records the natural gas burnt in the
# on-site unit (its electricity and heat are then not metered again from the grid).
CARRIER_OF_METER = {"chp": "natural_gas"}

# The ENERGY STAR source-site ratios are published for the US and Canada; every other country uses
# the US ratios, because the energy_rating model (medians and ratios) is the US one.
SOURCE_RATIO_FALLBACK = "US"


def carrier(meter_type: str) -> str:
    return CARRIER_OF_METER.get(meter_type, meter_type)


def reporting_year(start: dt.date, end: dt.date) -> int:
    """The year whose factor set applies to a period: the calendar year holding most of it (the
    DESNZ rule: use the set of the year in which most of the data falls)."""
    return (start + (end - start) / 2).year


def emission_figure(country: str, meter_type: str, year: int | None = None) -> Figure:
    """The factor row for a meter type in a country, from the set of `year` (None: latest)."""
    table = emission_factor_sets()
    source = carrier(meter_type)
    for key in ((country, source), (FALLBACK_COUNTRY, source)):
        if key in table:
            return factor_for_year(table[key], year)
    raise KeyError(f"no emission factor for {meter_type}")


def emission_factor(country: str, meter_type: str, year: int | None = None) -> float:
    """kgCO2e per kWh of site energy for a meter type in a country, in `year`'s factor set."""
    return emission_figure(country, meter_type, year).value


def factor_set_text(country: str | None, year: int | None = None) -> str:
    """The factor sets behind a country's carbon figures, for a document's method section."""
    country = country or FALLBACK_COUNTRY
    parts = []
    for source in ("electricity", "natural_gas"):
        figure = emission_figure(country, source, year)
        parts.append(
            f"{source.replace('_', ' ')} {figure.value:.4g} kgCO2e/kWh ({figure.set_name})"
        )
    return "; ".join(parts) + "; other fuels by fuel chemistry (US EPA / BERDO factors)"


def source_site_ratio(country: str, meter_type: str) -> float:
    table = source_site_ratios()
    source = carrier(meter_type)
    for key in ((country, source), (SOURCE_RATIO_FALLBACK, source)):
        if key in table:
            return table[key].value
    raise KeyError(f"no source-site ratio for {meter_type}")


def annual_kgco2e(kwh_by_type: Mapping[str, float], country: str, year: int | None = None) -> float:
    return sum(kwh * emission_factor(country, t, year) for t, kwh in kwh_by_type.items())


def annual_source_kwh(kwh_by_type: Mapping[str, float], country: str) -> float:
    return sum(kwh * source_site_ratio(country, t) for t, kwh in kwh_by_type.items())
