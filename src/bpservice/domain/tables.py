"""The published figures behind benchmark scoring, read once from `domain/data/`.

Every row of every table names its source and a status (V verified, S one secondary source,
U unverified), following shared/reference/benchmark-figures.md; the files themselves are the
citation. This module only parses them into typed, immutable lookups.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

FALLBACK_COUNTRY = "*"


def _text(name: str) -> str:
    return resources.files("bpservice.domain").joinpath("data", name).read_text("utf-8")


def _csv(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_text(name))))


def _json(name: str) -> dict[str, Any]:
    return json.loads(_text(name))


@dataclass(frozen=True)
class Figure:
    value: float
    source: str
    status: str
    set_name: str = ""  # the factor set a document names, e.g. "UK DESNZ conversion factors 2025"


@cache
def emission_factor_sets() -> dict[tuple[str, str], tuple[tuple[int, Figure], ...]]:
    """(country or "*", energy source) -> ((first year the row applies, factor), ...) in year
    order; a row without a year applies to every year. kgCO2e per kWh of site energy."""
    out: dict[tuple[str, str], list[tuple[int, Figure]]] = {}
    for r in _csv("emission_factors.csv"):
        figure = Figure(float(r["kgco2e_per_kwh"]), r["source"], r["status"], r["set_name"])
        year = int(r["from_year"]) if r["from_year"] else 0
        out.setdefault((r["country"], r["energy_source"]), []).append((year, figure))
    return {k: tuple(sorted(v, key=lambda p: p[0])) for k, v in out.items()}


def factor_for_year(rows: tuple[tuple[int, Figure], ...], year: int | None) -> Figure:
    """The row of the reporting year's set: the latest that starts at or before `year` (the
    earliest held for an earlier year; the latest when `year` is None)."""
    if year is None:
        return rows[-1][1]
    chosen = rows[0][1]
    for first, figure in rows:
        if first <= year:
            chosen = figure
    return chosen


@cache
def emission_factors() -> dict[tuple[str, str], Figure]:
    """(country or "*", energy source) -> the latest kgCO2e per kWh of site energy."""
    return {k: rows[-1][1] for k, rows in emission_factor_sets().items()}


@cache
def source_site_ratios() -> dict[tuple[str, str], Figure]:
    return {
        (r["country"], r["energy_source"]): Figure(
            float(r["source_site_ratio"]), r["source"], r["status"]
        )
        for r in _csv("source_site_ratios.csv")
    }


@cache
def energy_rating_medians() -> dict[str, Figure]:
    """use type -> national median source EUI in kBtu/ft² (ENERGY STAR technical reference)."""
    return {
        r["use_type"]: Figure(float(r["median_source_eui_kbtu_ft2"]), r["source"], r["status"])
        for r in _csv("energy_rating_medians.csv")
    }


@dataclass(frozen=True)
class TypicalEnergy:
    category: str
    electricity_kwh_m2: float
    fossil_kwh_m2: float
    status: str


@cache
def typical_energy() -> dict[str, TypicalEnergy]:
    """use type -> CIBSE TM46 typical electricity and fossil-thermal energy per m²."""
    return {
        r["use_type"]: TypicalEnergy(
            r["tm46_category"],
            float(r["electricity_kwh_m2"]),
            float(r["fossil_thermal_kwh_m2"]),
            r["status"],
        )
        for r in _csv("typical_energy_tm46.csv")
    }


@cache
def crrem_pathways() -> dict[tuple[str, str, str], tuple[tuple[int, float], ...]]:
    """(country, property type, scenario) -> ((year, kgCO2e/m²), ...) in year order."""
    out: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for r in _csv("crrem_pathways.csv"):
        key = (r["country"], r["property_type"], r["scenario"])
        out.setdefault(key, []).append((int(r["year"]), float(r["kgco2e_m2"])))
    return {k: tuple(sorted(v)) for k, v in out.items()}


@dataclass(frozen=True)
class Band:
    grade: str
    upper: float | None  # None: open-ended last band
    upper_2: float | None = None  # the second threshold of a double-threshold scale


@dataclass(frozen=True)
class EpcScale:
    country: str
    name: str
    strict: bool
    bands: tuple[Band, ...]
    double: bool
    # Dated primary-energy factors for electricity, and the factor for every other carrier.
    electricity_pef: tuple[tuple[dt.date, float], ...] = ()
    default_pef: float = 1.0


@cache
def epc_scales() -> dict[str, EpcScale]:
    raw = _json("epc_bands.json")
    scales = {}
    for country, spec in raw.items():
        if country.startswith("_"):
            continue
        double = "max_cep" in spec["bands"][0]
        bands = tuple(
            Band(b["grade"], b["max_cep"], b["max_eges"]) if double else Band(b["grade"], b["max"])
            for b in spec["bands"]
        )
        pef = spec.get("primary_energy_factors", {})
        scales[country] = EpcScale(
            country=country,
            name=spec["name"],
            strict=bool(spec["strict"]),
            bands=bands,
            double=double,
            electricity_pef=tuple(
                (dt.date.fromisoformat(e["from"]), float(e["factor"]))
                for e in pef.get("electricity", [])
            ),
            default_pef=float(pef.get("default", 1.0)),
        )
    return scales


@cache
def energy_star_models() -> dict[str, dict[str, Any]]:
    """use type -> a published ENERGY STAR score model (regression and gamma fit)."""
    return {k: v for k, v in _json("energy_star_models.json").items() if not k.startswith("_")}


@cache
def regional_schemes() -> dict[str, dict[str, Any]]:
    return {k: v for k, v in _json("regional_schemes.json").items() if not k.startswith("_")}
