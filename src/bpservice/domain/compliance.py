"""Building emissions compliance: NYC Local Law 97 and Boston BERDO 2.0, as pure functions.

The published tables live in cited data files (`domain/data/ll97.json`, `domain/data/berdo.json`,
each figure with its source and status); this module only does the arithmetic and the rules about
which table applies. Inputs are a calendar year's site energy in kWh per meter type and the
building's floor area per use type in m². Our use types map to ENERGY STAR Portfolio Manager
property types (LL97), to LL97 occupancy groups (the 2024-2025 option) and to BERDO building types
by the tables in the same files (docs/decisions.md, CS entries).

LL97 (NYC Admin. Code §28-320, 1 RCNY §103-14): emissions = Σ energy x coefficient (electricity
per kWh, fuels and steam per kBtu) with the coefficients of the year's compliance period; limit =
Σ area (ft²) of each Portfolio Manager property type x that type's limit for the period. For
2024-2025 an owner may instead use the statute's occupancy-group limits; we compute that option
too and show it beside the property-type result. Excess = max(0, emissions - limit); penalty =
excess x $268.

BERDO 2.0: grid electricity G = U (MWh) x (1 - R) x E, R the Massachusetts RPS Class I share of
the year (Emissions Factors List, Appendix D) and E the year's grid factor (Appendix B, published
in lb CO2e/MWh; years between two published values on the straight line between them, and the
documents say which); other fuels = energy (MMBtu) x factor;
intensity = emissions / gross ft²; the standard of a building with several uses is the
area-weighted blend of its types' standards.

Both laws are calendar-year filings for buildings in their own city above a size threshold:
`require_calendar_year` and `applicability` say so before any arithmetic.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from bpservice.domain.units import kwh_to_kbtu

SQFT_PER_M2 = 10.7639  # 1 m² = 10.7639 ft² (shared/reference/benchmark-figures.md)

LL97 = "ll97"
BERDO = "berdo"
METHOD_PROPERTY_TYPE = "property_type"
METHOD_OCCUPANCY_GROUP = "occupancy_group"


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


def _scheme_table(scheme: str) -> dict[str, Any]:
    return ll97_table() if scheme == LL97 else berdo_table()


# --- the period: one calendar year ---------------------------------------------------------------


def require_calendar_year(start: dt.date, end: dt.date) -> int:
    """Both laws are annual filings for a calendar year (1 January to 31 December): any other
    period is refused rather than compared with an annual limit. Returns the year."""
    if start != dt.date(start.year, 1, 1) or end != dt.date(start.year, 12, 31):
        raise ComplianceError(
            "calendar_year_required",
            "LL97 and BERDO assess one calendar year: the reporting period must run from 1 "
            f"January to 31 December of the same year (got {start} to {end}).",
        )
    return start.year


# --- applicability: where and how large ----------------------------------------------------------


@dataclass(frozen=True)
class Applicability:
    applicable: bool
    reason: str  # plain words for the document or the error message
    threshold: str  # the law's coverage rule, always stated
    caveat: str | None = None  # covered only under a condition we cannot check


def _norm(value: Any) -> str:
    return " ".join(str(value or "").replace(".", " ").split()).lower()


def applicability(
    scheme: str,
    *,
    country: str | None,
    state: str | None,
    city: str | None,
    gfa_m2: float,
    use_types: Iterable[str] = (),
) -> Applicability:
    """Whether the law covers the building: in the law's city (country, state when given, city)
    and above its size threshold. BERDO also covers smaller buildings with 15 or more residential
    units; the service stores no unit count, so a smaller residential building is assessed with
    that condition stated (docs/decisions.md CS4)."""
    rule = _scheme_table(scheme)["applicability"]
    name = "NYC Local Law 97" if scheme == LL97 else "Boston BERDO 2.0"
    place = ", ".join(str(p) for p in (city, state, country) if p)
    threshold = str(rule["text"])
    in_city = (
        _norm(country) in {"us", "usa"}
        and _norm(city) in set(rule["cities"])
        and (not state or _norm(state) == rule["state"].lower())
    )
    if not in_city:
        where = "New York City (NY, US)" if scheme == LL97 else "Boston (MA, US)"
        return Applicability(
            False,
            f"{name} applies only to buildings in {where}; this building is in {place or 'an unknown place'}.",
            threshold,
        )
    sqft = gfa_m2 * SQFT_PER_M2
    if scheme == LL97:
        limit = float(rule["min_gross_sqft_exclusive"])
        if sqft <= limit:
            return Applicability(
                False,
                f"{name} covers buildings of more than {limit:,.0f} ft²; this building has "
                f"{sqft:,.0f} ft² (a building on a tax lot with others may still be covered "
                "as part of the lot).",
                threshold,
            )
        return Applicability(
            True, f"In New York City, {sqft:,.0f} ft² (> {limit:,.0f} ft²).", threshold
        )
    minimum = float(rule["min_gross_sqft"])
    if sqft >= minimum:
        return Applicability(True, f"In Boston, {sqft:,.0f} ft² (≥ {minimum:,.0f} ft²).", threshold)
    if "residential" in set(use_types):
        return Applicability(
            True,
            f"In Boston, {sqft:,.0f} ft² (below {minimum:,.0f} ft²).",
            threshold,
            caveat=f"Below {minimum:,.0f} ft², BERDO covers the building only if it has "
            f"{rule['min_residential_units']} or more residential units; the service holds no "
            "unit count, so confirm this before relying on the figures.",
        )
    return Applicability(
        False,
        f"{name} covers buildings of {minimum:,.0f} ft² or more (or with "
        f"{rule['min_residential_units']}+ residential units); this non-residential building "
        f"has {sqft:,.0f} ft².",
        threshold,
    )


def require_applicable(scheme: str, **building: Any) -> Applicability:
    result = applicability(scheme, **building)
    if not result.applicable:
        raise ComplianceError("not_applicable", f"Not applicable: {result.reason}")
    return result


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
    """Use types with no Portfolio Manager property type (mixed_use, other): a breakdown is
    needed. The occupancy-group table maps exactly the same use types."""
    return _unmapped(ll97_table()["use_type_property_types"], areas)


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
    quantity: float  # in `unit`: kWh/MWh for electricity, kBtu (LL97) or MMBtu (BERDO) for fuels
    unit: str
    factor: float | None
    factor_unit: str
    tco2e: float | None
    factor_detail: str = ""  # how the factor was formed, e.g. BERDO's E x (1 - R)


@dataclass(frozen=True)
class AreaLine:
    use_type: str
    category: str  # Portfolio Manager property type, LL97 occupancy group or BERDO building type
    category_label: str
    area_m2: float
    area_sqft: float
    limit_per_sqft: float  # LL97: tCO2e/ft²; BERDO: kgCO2e/ft²
    allowed_tco2e: float


@dataclass(frozen=True)
class LL97Result:
    year: int
    period: str
    method: str  # METHOD_PROPERTY_TYPE or METHOD_OCCUPANCY_GROUP
    method_text: str
    factor_set: str
    sources: list[SourceLine]
    not_covered: list[str]  # meter types with energy but no published coefficient
    areas: list[AreaLine]
    area_sqft: float
    emissions_tco2e: float
    limit_tco2e: float
    excess_tco2e: float
    penalty_usd: float
    penalty_usd_per_tco2e: float
    # For 2024-2025 only: the same year under the statute's occupancy-group limits, which the
    # owner may elect instead (None from 2026).
    alternative: LL97Result | None = None

    @property
    def compliant(self) -> bool:
        return self.excess_tco2e <= 0


@dataclass(frozen=True)
class BerdoResult:
    year: int
    period: str
    factor_set: str
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
    grid_kgco2e_per_mwh: float
    rps_class_i: float
    standards_in_force: bool = True  # False: a 20,000-35,000 ft² building before 2030
    notes: list[str] = field(default_factory=list)

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


def ll97_occupancy_group_allowed(year: int) -> bool:
    return year <= int(ll97_table()["method_by_year"]["occupancy_group_option_last_year"])


def _ll97_sources(
    energy_kwh: Mapping[str, float], coefficients: Mapping[str, Any]
) -> tuple[list[SourceLine], list[str]]:
    table = ll97_table()
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
    return sources, not_covered


def _ll97_result(
    year: int,
    period: Mapping[str, Any],
    method: str,
    sources: list[SourceLine],
    not_covered: list[str],
    areas: list[AreaLine],
) -> LL97Result:
    table = ll97_table()
    emissions = sum(s.tco2e for s in sources if s.tco2e is not None)
    limit_total = sum(a.allowed_tco2e for a in areas)
    excess = max(0.0, emissions - limit_total)
    rate = float(table["penalty_usd_per_tco2e"])
    if method == METHOD_PROPERTY_TYPE:
        method_text = (
            f"Limits by Portfolio Manager property type, 1 RCNY §103-14 ({period['name']} column)"
        )
    else:
        method_text = (
            "Limits by occupancy group, NYC Admin. Code §28-320.3.1 (an option for 2024-2025 only)"
        )
    coefficient_source = period["coefficients_source"]["source"].split(" (")[0]
    return LL97Result(
        year=year,
        period=period["name"],
        method=method,
        method_text=method_text,
        factor_set=f"carbon coefficients for {period['name']} ({coefficient_source})",
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


def ll97_assess(
    energy_kwh: Mapping[str, float], areas_m2: Sequence[tuple[str, float]], year: int
) -> LL97Result:
    """LL97 emissions, limit, excess and penalty for one calendar year, with limits by Portfolio
    Manager property type; for 2024-2025 also the occupancy-group option as `alternative`."""
    table = ll97_table()
    period = ll97_period(year)
    _require_mapped(ll97_unmapped_use_types(areas_m2), "Portfolio Manager property type")
    sources, not_covered = _ll97_sources(energy_kwh, period["coefficients"])

    type_of = table["use_type_property_types"]
    type_limits = period["property_type_limits_tco2e_per_sqft"]
    areas = []
    for use_type, m2 in areas_m2:
        espm = type_of[use_type]
        sqft = m2 * SQFT_PER_M2
        limit = float(type_limits[espm])
        areas.append(AreaLine(use_type, espm, espm, m2, sqft, limit, sqft * limit))
    result = _ll97_result(year, period, METHOD_PROPERTY_TYPE, sources, not_covered, areas)
    if not ll97_occupancy_group_allowed(year):
        return result

    group_of = table["use_type_groups"]
    labels = table["occupancy_groups"]
    group_limits = period["occupancy_group_limits_tco2e_per_sqft"]
    group_areas = []
    for use_type, m2 in areas_m2:
        group = group_of[use_type]
        sqft = m2 * SQFT_PER_M2
        limit = float(group_limits[group])
        group_areas.append(AreaLine(use_type, group, labels[group], m2, sqft, limit, sqft * limit))
    alternative = _ll97_result(
        year, period, METHOD_OCCUPANCY_GROUP, sources, not_covered, group_areas
    )
    return LL97Result(**{**result.__dict__, "alternative": alternative})


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


@dataclass(frozen=True)
class GridFactor:
    """BERDO's grid factor E of one year (kgCO2e/MWh) and how it was obtained."""

    year: int
    kgco2e_per_mwh: float
    interpolated: bool = False
    between: tuple[int, int] | None = None  # the published years it lies between

    @property
    def detail(self) -> str:
        if self.between is None:
            return "as published"
        return f"interpolated between the published {self.between[0]} and {self.between[1]} values"


def _published_grid() -> dict[int, float]:
    """year -> E in kgCO2e/MWh for the years the list publishes (lb/MWh converted)."""
    electricity = berdo_table()["electricity"]
    kg_per_lb = float(electricity["kg_per_lb"])
    out: dict[int, float] = {}
    for year, figure in electricity["grid_published"].items():
        if "kgco2e_per_mwh" in figure:
            out[int(year)] = float(figure["kgco2e_per_mwh"])
        else:
            out[int(year)] = float(figure["lb_co2e_per_mwh"]) * kg_per_lb
    return dict(sorted(out.items()))


def berdo_grid_factor(year: int) -> GridFactor:
    """E for `year`: the published figure, or the straight line between the published years
    either side (the list's projection declines linearly between them; berdo.json says so)."""
    published = _published_grid()
    if year in published:
        return GridFactor(year, published[year])
    years = list(published)
    if not years[0] < year < years[-1]:
        raise ComplianceError(
            "unsupported_compliance_year",
            f"No BERDO grid electricity factor is tabulated for {year} (the table covers "
            f"{years[0]}-{years[-1]}).",
        )
    lo = max(y for y in years if y < year)
    hi = min(y for y in years if y > year)
    share = (year - lo) / (hi - lo)
    value = published[lo] + share * (published[hi] - published[lo])
    return GridFactor(year, value, True, (lo, hi))


def berdo_electricity(year: int) -> tuple[float, float]:
    """(E kgCO2e/MWh, R RPS Class I share) of `year` (BERDO Emissions Factors List, Appendices
    B and D)."""
    grid = berdo_grid_factor(year)
    rps = berdo_table()["electricity"]["rps_class_i_by_year"]
    if str(year) not in rps:
        raise ComplianceError(
            "unsupported_compliance_year",
            f"No Massachusetts RPS Class I share is tabulated for {year} (the table covers "
            f"{min(rps)}-{max(rps)}).",
        )
    return grid.kgco2e_per_mwh, float(rps[str(year)])


def berdo_electricity_factor(year: int) -> float:
    """kgCO2e per MWh of grid electricity in `year` after the RPS adjustment: E x (1 - R)."""
    e, r = berdo_electricity(year)
    return e * (1 - r)


def berdo_assess(
    energy_kwh: Mapping[str, float],
    areas_m2: Sequence[tuple[str, float]],
    year: int,
    *,
    gross_sqft: float | None = None,
) -> BerdoResult:
    """BERDO emissions intensity against the (area-blended) standard for one calendar year.
    `gross_sqft` (the whole building) decides whether the standards are yet in force: buildings
    under 35,000 ft² meet them from 2030 (before that, figures are for information)."""
    table = berdo_table()
    index = berdo_period_index(year)
    _require_mapped(berdo_unmapped_use_types(areas_m2), "BERDO building type")
    grid, rps = berdo_electricity(year)
    grid_detail = berdo_grid_factor(year).detail
    factors = dict(table["emission_factors_kgco2e_per_mmbtu"])
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
        if source == "electricity":
            mwh = kwh / 1000
            factor = grid * (1 - rps)
            sources.append(
                SourceLine(
                    meter_type,
                    source,
                    kwh,
                    mwh,
                    "MWh",
                    factor,
                    "kgCO2e/MWh",
                    mwh * factor / 1000,
                    f"E = {grid:.1f} kgCO2e/MWh ({year}, Appendix B, {grid_detail}) x (1 - R), "
                    f"R = {rps:.0%} RPS Class I (Appendix D)",
                )
            )
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
    phase = table["standards_phase_in"]
    in_force = (gross_sqft if gross_sqft is not None else area_sqft) >= float(
        phase["large_min_gross_sqft"]
    ) or year >= int(phase["small_first_year"])
    notes = []
    if not in_force:
        notes.append(
            f"Buildings under {phase['large_min_gross_sqft']:,} ft² (and under "
            f"{phase['large_min_units']} units) must meet the emissions standards from "
            f"{phase['small_first_year']}; for {year} they report emissions only. The comparison "
            "with the standard is shown for information and no payment is due."
        )
    return BerdoResult(
        year=year,
        period=table["periods"][index]["name"],
        factor_set=(
            f"BERDO Emissions Factors List: grid electricity {year} E = {grid:.1f} kgCO2e/MWh "
            f"(Appendix B, {grid_detail}) with RPS Class I R = {rps:.0%} (Appendix D, "
            "225 CMR 14.07); fuel and district energy factors"
        ),
        sources=sources,
        not_covered=not_covered,
        areas=areas,
        area_sqft=area_sqft,
        emissions_kgco2e=emissions_kg,
        intensity_kgco2e_per_sqft=emissions_kg / area_sqft if area_sqft else 0.0,
        standard_kgco2e_per_sqft=1000 * allowed_t / area_sqft if area_sqft else 0.0,
        allowed_tco2e=allowed_t,
        excess_tco2e=excess_t if in_force else 0.0,
        acp_usd=excess_t * rate if in_force else 0.0,
        acp_usd_per_tco2e=rate,
        grid_kgco2e_per_mwh=grid,
        rps_class_i=rps,
        standards_in_force=in_force,
        notes=notes,
    )


def sources_cited(scheme: str) -> list[str]:
    """The citations printed on a report, straight from the data file (no internal tags)."""
    table = _scheme_table(scheme)
    return [table["title"], *table["citations"]]
