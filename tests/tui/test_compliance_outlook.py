"""The compliance outlook (bpsync.compliance) agrees with the service's own LL97 and BERDO reports:
the demo's New York tower and Boston block, their 2025 figures gathered through the public API,
against the reports the service generates for calendar year 2025."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from bpsync import compliance as C
from bpsync.client.service import AsyncServiceClient
from tests.service.test_reports import complete, download, sheet_rows
from tests.tui.conftest import TODAY, Seeded


def summary_of(data: bytes) -> dict[str, object]:
    """Label -> value of the Summary sheet, first occurrence (the headline, property-type result;
    LL97's 2024-2025 occupancy-group option repeats the labels below it)."""
    out: dict[str, object] = {}
    for row in sheet_rows(data, "Summary"):
        if row and row[0] and row[0] not in out:
            out[row[0]] = row[1]
    return out


async def _outlooks(seeded: Seeded) -> dict[str, tuple[str, C.ComplianceOutlook]]:
    service = seeded.service
    out: dict[str, tuple[str, C.ComplianceOutlook]] = {}
    async with AsyncServiceClient(service.base_url, service.test_key) as client:
        async for prop in client.properties.list(per_page=200):
            async for b in client.buildings.list(prop.id):
                out[b.name] = (b.id, await C.fetch_outlook(client, b, today=TODAY, prop=prop))
    return out


def test_outlooks_match_the_service_reports(seeded: Seeded) -> None:
    outlooks = asyncio.run(_outlooks(seeded))
    service = seeded.service
    tower_id, tower = outlooks["Tower A"]
    assert (tower.law, tower.covered, tower.basis_year) == ("LL97", True, 2025)
    assert [p.label for p in tower.periods] == [
        "2024\u20132029",
        "2030\u20132034",
        "2035\u20132039",
        "2040\u20132049",
        "2050\u2013",
    ]
    assert tower.periods[2].limit_tco2e is None and "not in the published table" in (
        tower.periods[2].note
    )
    assert tower.basis_text == "projected from 2025's emissions"

    with service.client() as api:
        period = {"start": "2025-01-01", "end": "2025-12-31"}
        report = complete(
            api,
            service,
            type="compliance_ll97",
            format="xlsx",
            building_id=tower_id,
            reporting_period=period,
        )
        ll97 = summary_of(download(service, report))
        current = tower.current()
        assert current is not None
        assert current.emissions_tco2e == pytest.approx(ll97["Annual emissions"], rel=1e-9)
        assert current.limit_tco2e == pytest.approx(ll97["Emissions limit"], rel=1e-9)
        assert current.penalty == pytest.approx(ll97["Estimated annual penalty"], rel=1e-9)
        assert tower.status == (C.OVER_LIMIT if current.penalty else C.COMPLIANT)

        block_id, block = next(v for v in outlooks.values() if v[1].law == "BERDO" and v[1].covered)
        report = complete(
            api,
            service,
            type="compliance_berdo",
            format="xlsx",
            building_id=block_id,
            reporting_period=period,
        )
        berdo = summary_of(download(service, report))
        current = block.current()
        assert current is not None and current.label == "2025\u20132029"
        assert block.periods[-1].label == "2050\u2013"
        emissions = next(v for k, v in berdo.items() if str(k).startswith("Annual emissions"))
        assert current.emissions_tco2e == pytest.approx(emissions, rel=1e-9)
        assert current.limit_tco2e == pytest.approx(berdo["Allowed emissions"], rel=1e-9)
        assert current.penalty == pytest.approx(berdo["Alternative compliance payment"], rel=1e-9)

    # Elsewhere no law applies; the reason is stated.
    _, riverside = outlooks["Riverside House"]
    assert (riverside.law, riverside.status, riverside.periods) == (None, C.NOT_COVERED, ())
    assert "No city emissions law" in riverside.reason


def test_outlook_rules_without_the_service() -> None:
    meters = [C.MeterInfo("m1", "electricity", "kWh")]
    readings = [
        C.ReadingInfo("m1", dt.date(2025, m, 1), dt.date(2025, m, 28), 400_000) for m in (1, 2)
    ]
    nyc = dict(country="US", state="NY", city="New York", primary_use_type="office")
    small = C.outlook(
        gfa_m2=1000, use_types=None, meters=meters, readings=readings, today=TODAY, **nyc
    )
    assert (small.law, small.covered, small.status) == ("LL97", False, C.NOT_COVERED)
    assert "25,000" in small.reason
    big = C.outlook(
        gfa_m2=3000, use_types=None, meters=meters, readings=readings, today=TODAY, **nyc
    )
    assert big.basis_year == 2025 and big.annualised and big.status == C.OVER_LIMIT
    assert "annualised" in big.basis_text
    none = C.outlook(gfa_m2=3000, use_types=None, meters=meters, readings=[], today=TODAY, **nyc)
    assert (none.status, none.basis_year) == (C.NO_DATA, None)
    mixed = C.outlook(
        gfa_m2=3000,
        use_types=None,
        meters=meters,
        readings=readings,
        today=TODAY,
        **{**nyc, "primary_use_type": "mixed_use"},
    )
    assert mixed.status == C.NO_DATA and "mixed_use" in mixed.reason
    # Next period: the limit falls, the same emissions cost more.
    current, following = big.current(), big.next()
    assert current and following and following.limit_tco2e < current.limit_tco2e  # type: ignore[operator]
    assert following.penalty > current.penalty  # type: ignore[operator]


def test_a_basis_year_before_the_law_uses_its_first_factors() -> None:
    """BERDO's tables start in 2025: a Boston building whose last full year is 2024 is still
    projected, its 2024 energy under 2025's factors, and the reason says so."""
    meters = [C.MeterInfo("m1", "electricity", "kWh")]
    readings = [
        C.ReadingInfo("m1", dt.date(2024, m, 1), dt.date(2024, m, 28), 300_000)
        for m in range(1, 13)
    ]
    boston = dict(country="US", state="MA", city="Boston", primary_use_type="office")
    old = C.outlook(
        gfa_m2=5000, use_types=None, meters=meters, readings=readings, today=TODAY, **boston
    )
    assert old.basis_year == 2024 and old.status in (C.COMPLIANT, C.OVER_LIMIT)
    assert "with BERDO's first factors, 2025" in old.reason
    assert old.basis_text.startswith("projected from 2024's emissions")
