"""LL97 and BERDO arithmetic against hand-computed examples (tables in domain/data/*.json)."""

from __future__ import annotations

import pytest

from bpservice.domain import compliance
from bpservice.domain.compliance import ComplianceError, berdo_assess, ll97_assess

SQFT = 10.7639
KBTU_PER_KWH = 1 / 0.293071

# (energy kWh by meter type, areas m² by use type, year, emissions t, limit t, excess t, penalty $)
LL97_CASES = [
    pytest.param(
        {"electricity": 1_000_000, "natural_gas": 500_000},
        [("office", 10_000)],
        2025,
        288.962 + 500_000 * KBTU_PER_KWH * 0.00005311,
        107_639 * 0.00846,
        0.0,
        0.0,
        id="office within limit",
    ),
    pytest.param(
        {"electricity": 480_000},
        [("office", 1_000)],
        2024,
        138.70176,
        91.062594,
        47.639166,
        47.639166 * 268,
        id="office over limit",
    ),
    pytest.param(
        {"electricity": 480_000},
        [("office", 1_000)],
        2030,
        480_000 * 0.000145,
        10_763.9 * 0.00453,
        480_000 * 0.000145 - 10_763.9 * 0.00453,
        (480_000 * 0.000145 - 10_763.9 * 0.00453) * 268,
        id="2030 coefficients and limits",
    ),
    pytest.param(
        {"electricity": 100_000},
        [("office", 800), ("retail", 200)],
        2026,
        28.8962,
        800 * SQFT * 0.00846 + 200 * SQFT * 0.01181,
        0.0,
        0.0,
        id="mixed occupancy limit is the area sum",
    ),
    pytest.param(
        {"steam": 293.071 * 1000, "fuel_oil": 293.071 * 1000, "solar": 50_000},
        [("residential", 100)],
        2027,
        1_000_000 * 0.00004493 + 1_000_000 * 0.00007421,
        100 * SQFT * 0.00675,
        1_000_000 * (0.00004493 + 0.00007421) - 100 * SQFT * 0.00675,
        (1_000_000 * (0.00004493 + 0.00007421) - 100 * SQFT * 0.00675) * 268,
        id="steam and #2 oil per kBtu, solar zero",
    ),
]


@pytest.mark.parametrize(
    ("energy", "areas", "year", "emissions", "limit", "excess", "penalty"), LL97_CASES
)
def test_ll97(
    energy: dict[str, float],
    areas: list[tuple[str, float]],
    year: int,
    emissions: float,
    limit: float,
    excess: float,
    penalty: float,
) -> None:
    result = ll97_assess(energy, areas, year)
    assert result.emissions_tco2e == pytest.approx(emissions, rel=1e-6)
    assert result.limit_tco2e == pytest.approx(limit, rel=1e-9)
    assert result.excess_tco2e == pytest.approx(excess, rel=1e-6, abs=1e-9)
    assert result.penalty_usd == pytest.approx(penalty, rel=1e-6, abs=1e-9)
    assert result.compliant is (excess == 0)


def test_ll97_uncovered_sources_are_listed_not_counted() -> None:
    result = ll97_assess(
        {"electricity": 1000, "lpg": 5000, "district_cooling": 7000}, [("office", 10)], 2025
    )
    assert result.not_covered == ["district_cooling", "lpg"]
    assert result.emissions_tco2e == pytest.approx(1000 * 0.000288962)


def test_ll97_chp_counts_as_natural_gas() -> None:
    result = ll97_assess({"chp": 293.071}, [("office", 10)], 2025)
    assert result.emissions_tco2e == pytest.approx(1000 * 0.00005311)


@pytest.mark.parametrize("year", [2019, 2023, 2035])
def test_ll97_years_outside_the_table(year: int) -> None:
    with pytest.raises(ComplianceError) as info:
        ll97_assess({"electricity": 1}, [("office", 1)], year)
    assert info.value.code == "unsupported_compliance_year"


def test_use_types_that_do_not_map_are_refused() -> None:
    with pytest.raises(ComplianceError) as info:
        ll97_assess({"electricity": 1}, [("office", 1), ("mixed_use", 1)], 2025)
    assert info.value.code == "unmapped_use_type" and "mixed_use" in info.value.message
    assert compliance.berdo_unmapped_use_types([("other", 1.0)]) == ["other"]


def test_every_use_type_but_mixed_and_other_maps() -> None:
    from bpservice.domain.vocab import USE_TYPES

    areas = [(u, 1.0) for u in USE_TYPES]
    assert compliance.ll97_unmapped_use_types(areas) == ["mixed_use", "other"]
    assert compliance.berdo_unmapped_use_types(areas) == ["mixed_use", "other"]


def test_areas_by_use_type() -> None:
    assert compliance.areas_by_use_type(100, "office", None) == [("office", 100.0)]
    breakdown = [{"type": "office", "gfa_m2": 60}, {"type": "retail", "gfa_m2": 40}]
    assert compliance.areas_by_use_type(100, "office", breakdown) == [
        ("office", 60.0),
        ("retail", 40.0),
    ]


# (energy, areas, year, intensity kg/ft², standard kg/ft², excess t)
def _mmbtu(kwh: float) -> float:
    return kwh * KBTU_PER_KWH / 1000


BERDO_CASES = [
    pytest.param(
        {"electricity": 1_000_000, "natural_gas": 500_000},
        [("office", 10_000)],
        2025,
        (_mmbtu(1_000_000) * 73 + _mmbtu(500_000) * 53.11) / 107_639,
        5.3,
        id="office 2025",
    ),
    pytest.param(
        {"electricity": 1_000_000},
        [("office", 10_000)],
        2026,
        _mmbtu(1_000_000) * 73 / 107_639,
        5.3,
        id="2026 uses the 2025 electricity factor",
    ),
    pytest.param(
        {"electricity": 1_000_000},
        [("office", 10_000)],
        2027,
        _mmbtu(1_000_000) * 69 / 107_639,
        5.3,
        id="2027 factor",
    ),
    pytest.param(
        {"electricity": 1_000_000},
        [("office", 10_000)],
        2031,
        _mmbtu(1_000_000) * 62 / 107_639,
        3.2,
        id="2030-2034 standard and 2030 factor",
    ),
    pytest.param(
        {"electricity": 1_000_000},
        [("office", 5_000), ("retail", 5_000)],
        2025,
        _mmbtu(1_000_000) * 73 / 107_639,
        (5.3 + 7.1) / 2,
        id="blended standard",
    ),
    pytest.param(
        {"lpg": 293_071, "district_cooling": 293_071},
        [("laboratory", 1_000)],
        2050,
        (1000 * 61.71 + 1000 * 66.4) / 10_763.9,
        0.0,
        id="2050 zero standard",
    ),
]


@pytest.mark.parametrize(("energy", "areas", "year", "intensity", "standard"), BERDO_CASES)
def test_berdo(
    energy: dict[str, float],
    areas: list[tuple[str, float]],
    year: int,
    intensity: float,
    standard: float,
) -> None:
    result = berdo_assess(energy, areas, year)
    assert result.intensity_kgco2e_per_sqft == pytest.approx(intensity, rel=1e-6)
    assert result.standard_kgco2e_per_sqft == pytest.approx(standard, rel=1e-9)
    excess = max(0.0, (intensity - standard) * result.area_sqft / 1000)
    assert result.excess_tco2e == pytest.approx(excess, rel=1e-6, abs=1e-9)
    assert result.acp_usd == pytest.approx(excess * 234, rel=1e-6, abs=1e-9)
    assert result.compliant is (excess == 0)


def test_berdo_before_2025_is_refused() -> None:
    with pytest.raises(ComplianceError) as info:
        berdo_assess({"electricity": 1}, [("office", 1)], 2024)
    assert info.value.code == "unsupported_compliance_year"


def test_tables_cite_their_sources() -> None:
    assert any("§28-320.6" in s for s in compliance.sources_cited("ll97"))
    assert any("BERDO" in s for s in compliance.sources_cited("berdo"))
