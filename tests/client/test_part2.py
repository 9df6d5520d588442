"""Benchmarks, reports (with templates and download) and webhooks through the client, against the
real service. The report worker is run by the test (`generate_pending`) instead of in the
background, so nothing waits on a timer."""

from __future__ import annotations

import calendar
import datetime as dt
from pathlib import Path

import pytest

from bpservice.workers.reports import generate_pending
from bpservice.workers.webhooks import fan_out
from bpsync.client import AsyncServiceClient, ConflictError, NotFoundError, ValidationError
from bpsync.client.auth import Secret
from bpsync.client.models import Grade, ReportStatus, WebhookStatus
from tests.conftest import Service

pytestmark = pytest.mark.anyio

ADDRESS = {"street": "12 Riverside Walk", "city": "London", "country": "GB"}


async def building_with_a_year(client: AsyncServiceClient) -> tuple[str, str]:
    prop = await client.properties.create(name="Riverside", address=ADDRESS, type="office")
    building = await client.buildings.create(
        prop.id, name="Main", primary_use_type="office", gfa_m2=2000, year_built=1999, floors=4
    )
    meter = await client.meters.create(building.id, type="electricity", unit="kWh")
    months = []
    for m in range(1, 13):
        last = calendar.monthrange(2025, m)[1]
        months.append(
            {
                "start_date": dt.date(2025, m, 1),
                "end_date": dt.date(2025, m, last),
                "consumption": 25000,
            }
        )
    result = await client.readings.create_batch(building.id, meter.id, months)
    assert result.accepted == 12
    return prop.id, building.id


async def test_benchmarks(client: AsyncServiceClient) -> None:
    _, building_id = await building_with_a_year(client)
    result = await client.benchmarks.building(building_id)
    assert result.building_id == building_id
    assert result.eui_kwh_m2 == pytest.approx(150.0)
    assert isinstance(result.data_quality_grade, Grade)
    standards = {s.standard for s in result.scores}
    assert {
        "svc",
        "energy_rating",
        "eu_epc",
        "decarbonisation_pathway",
        "regional_rating",
    } <= standards
    history = await client.benchmarks.history(building_id, periods=2, standard="svc")
    assert history.building_id == building_id and 1 <= len(history.history) <= 2
    assert history.history[0].energy_rating_score is None
    portfolio = await client.benchmarks.portfolio(country="GB")
    assert portfolio.building_count == 1 and portfolio.total_gfa_m2 == 2000
    assert set(portfolio.grade_distribution) == {"A", "B", "C", "D", "E", "F"}
    with pytest.raises(ValueError):
        await client.benchmarks.history(building_id, periods=21)
    with pytest.raises(NotFoundError):
        await client.benchmarks.building("bld_missing")


async def test_reports_generate_and_download(
    service: Service, client: AsyncServiceClient, tmp_path: Path
) -> None:
    _, building_id = await building_with_a_year(client)
    types = {t.type: t for t in await client.reports.types()}
    assert types["benchmark_certificate"].formats == ["pdf"]
    assert types["portfolio_summary"].scope == "organisation"

    report = await client.reports.create(
        type="benchmark_certificate",
        format="pdf",
        reporting_period={"start": "2025-01-01", "end": "2025-12-31"},
        building_id=building_id,
    )
    assert report.status is ReportStatus.PROCESSING and report.estimated_completion is not None
    with pytest.raises(ConflictError) as not_ready:
        await client.reports.download(report.id, tmp_path)
    assert not_ready.value.code == "report_not_ready"
    assert generate_pending(service.app) == 1
    done = await client.reports.wait(report.id, timeout=5)
    assert done.status is ReportStatus.COMPLETE and done.download_url
    seen: list[tuple[int, int | None]] = []
    path = await client.reports.download(
        report.id, tmp_path, progress=lambda n, total: seen.append((n, total)), chunk_size=1024
    )
    data = path.read_bytes()
    assert data.startswith(b"%PDF") and len(data) == done.file_size_bytes
    assert seen[-1] == (len(data), len(data)) and len(seen) > 1
    assert not list(tmp_path.glob("*.part"))
    listed = await client.reports.list(status="complete").to_list()
    assert [r.id for r in listed] == [report.id]

    with pytest.raises(ValidationError) as wrong:
        await client.reports.create(
            type="benchmark_certificate",
            format="xlsx",
            reporting_period={"start": "2025-01-01", "end": "2025-12-31"},
            building_id=building_id,
        )
    assert wrong.value.extra["allowed_formats"] == ["pdf"]


async def test_report_templates_and_custom_report(
    service: Service, client: AsyncServiceClient, tmp_path: Path
) -> None:
    await building_with_a_year(client)
    columns = [c.key for c in await client.reports.template_columns()]
    template = await client.reports.create_template(name="Mine", columns=columns[:3])
    assert template.columns == columns[:3]
    renamed = await client.reports.update_template(template.id, name="Renamed")
    assert renamed.name == "Renamed"
    assert [t.id for t in await client.reports.templates().to_list()] == [template.id]
    report = await client.reports.create(
        type="custom",
        format="csv",
        reporting_period={"start": "2025-01-01", "end": "2025-12-31"},
        template_id=template.id,
    )
    generate_pending(service.app)
    await client.reports.wait(report.id, timeout=5)
    path = await client.reports.download(report.id, tmp_path / "custom.csv")
    assert path.name == "custom.csv" and path.read_text().count("\n") >= 2
    await client.reports.delete_template(template.id)
    with pytest.raises(NotFoundError):
        await client.reports.get_template(template.id)


async def test_webhooks(service: Service, client: AsyncServiceClient) -> None:
    created = await client.webhooks.create(
        url="https://hooks.example.com/bp", events=["meter.reading.created"], secret="s" * 24
    )
    assert created.status is WebhookStatus.ENABLED and created.secret is None
    generated = await client.webhooks.create(url="https://hooks.example.com/all", events=["*"])
    assert isinstance(generated.secret, Secret) and len(generated.secret.reveal()) >= 16
    assert generated.secret.reveal() not in repr(generated) + str(generated)

    listed = await client.webhooks.list().to_list()
    assert {w.id for w in listed} == {created.id, generated.id}
    assert not any(hasattr(w, "secret") and w.secret for w in listed)
    updated = await client.webhooks.update(created.id, events=["property.created"])
    assert updated.events == ["property.created"]

    paused = await client.webhooks.pause(created.id)
    assert paused.status is WebhookStatus.PAUSED
    again = await client.webhooks.pause(created.id)  # already paused: returned as is
    assert again.status is WebhookStatus.PAUSED
    assert [w.id for w in await client.webhooks.list(status="paused").to_list()] == [created.id]
    resumed = await client.webhooks.resume(created.id)
    assert resumed.status is WebhookStatus.ENABLED

    await client.properties.create(name="Event source", address=ADDRESS, type="office")
    with service.app.state.db.write() as session:
        fan_out(session, service.clock())  # the delivery worker's first step
    deliveries = await client.webhooks.deliveries(created.id).to_list()
    assert [d.event_type for d in deliveries] == ["property.created"]
    one = await client.webhooks.delivery(created.id, deliveries[0].id)
    assert one.payload is not None and one.payload["type"] == "property.created"

    await client.webhooks.delete(created.id)
    with pytest.raises(NotFoundError):
        await client.webhooks.get(created.id)
    with pytest.raises(ValidationError):
        await client.webhooks.create(url="ftp://x", events=["*"], secret="s" * 24)
