"""Building emissions compliance: NYC Local Law 97 and Boston BERDO 2.0, as pure functions.

The published tables live in cited data files (`domain/data/ll97.json`, `domain/data/berdo.json`);
this module only does the arithmetic. Inputs are annual site energy in kWh per meter type and the
building's floor area per use type in m²; our use types are mapped to LL97 occupancy groups and BERDO
building types by the tables in the same files (docs/decisions.md (reports section)).

LL97 (NYC Admin. Code §28-320): emissions = Σ energy * coefficient (electricity per kWh, fuels and
steam per kBtu); limit = Σ area (ft²) of each occupancy group * that group's limit; excess =
max(0, emissions - limit); penalty = excess * $268.

BERDO 2.0: emissions = Σ energy (MMBtu) * emission factor; intensity = emissions / gross ft²; the
standard of a building with several uses is the area-weighted blend of its types' standards.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from bpservice.domain.units import kwh_to_kbtu

SQFT_PER_M2 = 10.7639  # 1 m² = 10.7639 ft² (shared/reference/benchmark-figures.md)


class ComplianceError(ValueError):
    """The assessment cannot be made; `code` is the machine-readable reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@cache
def _table(name: str) -> dict[str, Any]:
    text = resources.files("bpservice.domain").joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text)


def ll97_table() -> dict[str, Any]:
    return _table("ll97.json")


def berdo_table() -> dict[str, Any]:
    return _table("berdo.json")


# --- floor areas ---------------------------------------------------------------------------------


def areas_by_use_type(
    gfa_m2: float, primary_use_type: str, use_types: Sequence[Mapping[str, Any]] | None
) -> list[tuple[str, float]]:
    """(use type, m²) for each use of a building: the use-type breakdown when one is stored (its
    areas sum to the GFA), else the whole GFA under the primary use type."""
    if use_types:
        return [(str(u["type"]), float(u["gfa_m2"])) for u in use_types]
    return [(primary_use_type, float(gfa_m2))]


def _unmapped(mapping: Mapping[str, str], areas: Iterable[tuple[str, float]]) -> list[str]:
    return sorted({use for use, _ in areas if use not in mapping})


def ll97_unmapped_use_types(areas: Iterable[tuple[str, float]]) -> list[str]:
    """Use types with no LL97 occupancy group (e.g. mixed_use, other): a breakdown is needed."""
    return _unmapped(ll97_table()["use_type_groups"], areas)


def berdo_unmapped_use_types(areas: Iterable[tuple[str, float]]) -> list[str]:
    return _unmapped(berdo_table()["use_type_building_types"], areas)


def _require_mapped(unmapped: list[str], scheme: str) -> None:
    if unmapped:
        raise ComplianceError(
            "unmapped_use_type",
            f"Use type(s) {', '.join(unmapped)} have no {scheme} equivalent; give the building a "
            "use_types breakdown with specific uses.",
        )


# --- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceLine:
    """One energy source of the building and its emissions (None when the scheme has no factor)."""

    meter_type: str
    source: str | None
    kwh: float
    quantity: float  # in `unit`: kWh for LL97 electricity, kBtu for LL97 fuels, MMBtu for BERDO
    unit: str
    factor: float | None
    factor_unit: str
    tco2e: float | None


@dataclass(frozen=True)
class AreaLine:
    use_type: str
    category: str  # LL97 occupancy group or BERDO building type
    category_label: str
    area_m2: float
    area_sqft: float
    limit_per_sqft: float  # LL97: tCO2e/ft²; BERDO: kgCO2e/ft²
    allowed_tco2e: float


@dataclass(frozen=True)
class LL97Result:
    year: int
    period: str
    sources: list[SourceLine]
    not_covered: list[str]  # meter types with energy but no published coefficient
    areas: list[AreaLine]
    area_sqft: float
    emissions_tco2e: float
    limit_tco2e: float
    excess_tco2e: float
    penalty_usd: float
    penalty_usd_per_tco2e: float

    @property
    def compliant(self) -> bool:
        return self.excess_tco2e <= 0


@dataclass(frozen=True)
class BerdoResult:
    year: int
    period: str
    sources: list[SourceLine]
    not_covered: list[str]
    areas: list[AreaLine]
    area_sqft: float
    emissions_kgco2e: float
    intensity_kgco2e_per_sqft: float
    standard_kgco2e_per_sqft: float
    allowed_tco2e: float
    excess_tco2e: float
    acp_usd: float
    acp_usd_per_tco2e: float

    @property
    def emissions_tco2e(self) -> float:
        return self.emissions_kgco2e / 1000

    @property
    def compliant(self) -> bool:
        return self.excess_tco2e <= 0


# --- LL97 ----------------------------------------------------------------------------------------


def ll97_period(year: int) -> dict[str, Any]:
    for period in ll97_table()["periods"]:
        if period["first_year"] <= year <= period["last_year"]:
            return period
    first = ll97_table()["periods"][0]["first_year"]
    last = ll97_table()["periods"][-1]["last_year"]
    raise ComplianceError(
        "unsupported_compliance_year",
        f"LL97 limits are tabulated for calendar years {first}-{last}; {year} is outside them.",
    )


def ll97_assess(
    energy_kwh: Mapping[str, float], areas_m2: Sequence[tuple[str, float]], year: int
) -> LL97Result:
    """LL97 emissions, limit, excess and penalty for one calendar year."""
    table = ll97_table()
    period = ll97_period(year)
    _require_mapped(ll97_unmapped_use_types(areas_m2), "LL97 occupancy group")
    coefficients = period["coefficients"]
    source_of = table["meter_type_sources"]
    zero = set(table["zero_emission_meter_types"])

    sources: list[SourceLine] = []
    not_covered: list[str] = []
    for meter_type, kwh in sorted(energy_kwh.items()):
        if kwh == 0:
            continue
        source = source_of.get(meter_type)
        if meter_type in zero:
            sources.append(SourceLine(meter_type, "onsite_renewable", kwh, kwh, "kWh", 0.0, "", 0))
            continue
        if source is None:
            not_covered.append(meter_type)
            sources.append(SourceLine(meter_type, None, kwh, kwh, "kWh", None, "", None))
            continue
        coefficient = coefficients[source]
        quantity = kwh if coefficient["unit"] == "kWh" else kwh_to_kbtu(kwh)
        factor = float(coefficient["tco2e_per"])
        sources.append(
            SourceLine(
                meter_type,
                source,
                kwh,
                quantity,
                coefficient["unit"],
                factor,
                f"tCO2e/{coefficient['unit']}",
                quantity * factor,
            )
        )

    limits = period["limits_tco2e_per_sqft"]
    labels = table["occupancy_groups"]
    groups = table["use_type_groups"]
    areas: list[AreaLine] = []
    for use_type, m2 in areas_m2:
        group = groups[use_type]
        sqft = m2 * SQFT_PER_M2
        limit = float(limits[group])
        areas.append(AreaLine(use_type, group, labels[group], m2, sqft, limit, sqft * limit))

    emissions = sum(s.tco2e for s in sources if s.tco2e is not None)
    limit_total = sum(a.allowed_tco2e for a in areas)
    excess = max(0.0, emissions - limit_total)
    rate = float(table["penalty_usd_per_tco2e"])
    return LL97Result(
        year=year,
        period=period["name"],
        sources=sources,
        not_covered=not_covered,
        areas=areas,
        area_sqft=sum(a.area_sqft for a in areas),
        emissions_tco2e=emissions,
        limit_tco2e=limit_total,
        excess_tco2e=excess,
        penalty_usd=excess * rate,
        penalty_usd_per_tco2e=rate,
    )


# --- BERDO ---------------------------------------------------------------------------------------


def berdo_period_index(year: int) -> int:
    for index, period in enumerate(berdo_table()["periods"]):
        last = period["last_year"]
        if period["first_year"] <= year and (last is None or year <= last):
            return index
    first = berdo_table()["periods"][0]["first_year"]
    raise ComplianceError(
        "unsupported_compliance_year",
        f"BERDO 2.0 emissions standards start with calendar year {first}; {year} is before them.",
    )


def berdo_electricity_factor(year: int) -> float:
    """kgCO2e/MMBtu for grid electricity: the latest published year at or before `year` (the table
    lists 2025, 2027, 2030 and 2050 only, and factors only fall over time)."""
    by_year = {
        int(y): float(v) for y, v in berdo_table()["electricity_kgco2e_per_mmbtu_by_year"].items()
    }
    known = [y for y in by_year if y <= year]
    if not known:
        raise ComplianceError(
            "unsupported_compliance_year",
            f"No BERDO electricity emission factor is published for {year} or earlier.",
        )
    return by_year[max(known)]


def berdo_assess(
    energy_kwh: Mapping[str, float], areas_m2: Sequence[tuple[str, float]], year: int
) -> BerdoResult:
    """BERDO emissions intensity against the (area-blended) standard for one calendar year."""
    table = berdo_table()
    index = berdo_period_index(year)
    _require_mapped(berdo_unmapped_use_types(areas_m2), "BERDO building type")
    factors = dict(table["emission_factors_kgco2e_per_mmbtu"])
    factors["electricity"] = berdo_electricity_factor(year)
    source_of = table["meter_type_sources"]
    zero = set(table["zero_emission_meter_types"])

    sources: list[SourceLine] = []
    not_covered: list[str] = []
    for meter_type, kwh in sorted(energy_kwh.items()):
        if kwh == 0:
            continue
        mmbtu = kwh_to_kbtu(kwh) / 1000
        if meter_type in zero:
            sources.append(
                SourceLine(meter_type, "onsite_renewable", kwh, mmbtu, "MMBtu", 0.0, "", 0)
            )
            continue
        source = source_of.get(meter_type)
        if source is None:
            not_covered.append(meter_type)
            sources.append(SourceLine(meter_type, None, kwh, mmbtu, "MMBtu", None, "", None))
            continue
        factor = float(factors[source])
        # tco2e holds tonnes so every SourceLine means the same thing; kg = tco2e * 1000.
        sources.append(
            SourceLine(
                meter_type,
                source,
                kwh,
                mmbtu,
                "MMBtu",
                factor,
                "kgCO2e/MMBtu",
                mmbtu * factor / 1000,
            )
        )

    standards = table["standards_kgco2e_per_sqft"]
    types = table["use_type_building_types"]
    areas: list[AreaLine] = []
    for use_type, m2 in areas_m2:
        building_type = types[use_type]
        sqft = m2 * SQFT_PER_M2
        standard = float(standards[building_type][index])
        areas.append(
            AreaLine(
                use_type, building_type, building_type, m2, sqft, standard, sqft * standard / 1000
            )
        )

    area_sqft = sum(a.area_sqft for a in areas)
    emissions_kg = 1000 * sum(s.tco2e for s in sources if s.tco2e is not None)
    allowed_t = sum(a.allowed_tco2e for a in areas)
    excess_t = max(0.0, emissions_kg / 1000 - allowed_t)
    rate = float(table["alternative_compliance_payment_usd_per_tco2e"])
    return BerdoResult(
        year=year,
        period=table["periods"][index]["name"],
        sources=sources,
        not_covered=not_covered,
        areas=areas,
        area_sqft=area_sqft,
        emissions_kgco2e=emissions_kg,
        intensity_kgco2e_per_sqft=emissions_kg / area_sqft if area_sqft else 0.0,
        standard_kgco2e_per_sqft=1000 * allowed_t / area_sqft if area_sqft else 0.0,
        allowed_tco2e=allowed_t,
        excess_tco2e=excess_t,
        acp_usd=excess_t * rate,
        acp_usd_per_tco2e=rate,
    )


def sources_cited(scheme: str) -> list[str]:
    """The citations printed on a report, straight from the data file."""
    table = ll97_table() if scheme == "ll97" else berdo_table()
    return [table["title"], *table["sources"]]
