"""Every core endpoint through the client, against the real service over loopback HTTP."""

from __future__ import annotations

import datetime as dt

import pytest

from bpsync.client import (
    AsyncServiceClient,
    AuthenticationError,
    ConflictError,
    LockedError,
    NotFoundError,
    OverlapError,
    PermissionDeniedError,
    ServiceClient,
    ValidationError,
)
from bpsync.client.models import (
    AnomalyFlag,
    MeterType,
    PropertyStatus,
    Role,
    UserStatus,
)
from tests.conftest import Service

pytestmark = pytest.mark.anyio

ADDRESS = {"street": "12 Riverside Walk", "city": "London", "country": "GB"}
BUILDING = {"name": "Main", "primary_use_type": "office", "gfa_m2": 1000, "year_built": 1999}


async def make_meter(client: AsyncServiceClient) -> tuple[str, str, str]:
    prop = await client.properties.create(name="Riverside", address=ADDRESS, type="office")
    building = await client.buildings.create(prop.id, **BUILDING, floors=4)
    meter = await client.meters.create(building.id, type="electricity", unit="kwh")
    return prop.id, building.id, meter.id


async def test_properties(client: AsyncServiceClient) -> None:
    created = await client.properties.create(
        name="Riverside House", address=ADDRESS, type="office", internal_ref="RH-1"
    )
    assert created.id.startswith("prp_") and created.status is PropertyStatus.ACTIVE
    assert created.address.country == "GB" and created.building_count == 0
    assert isinstance(created.created_at, dt.datetime) and created.created_at.tzinfo is not None

    for i in range(4):
        await client.properties.create(
            name=f"P{i}", address={**ADDRESS, "country": "FR"}, type="retail"
        )
    got = await client.properties.get(created.id)
    assert got.buildings == [] and got.internal_ref == "RH-1"

    page = await client.properties.list(per_page=2)
    assert len(page) == 2 and page.meta.total == 5 and page.meta.total_pages == 3 and page.has_next
    every = [p.name async for p in client.properties.list(per_page=2)]
    assert len(every) == 5
    french = await client.properties.list(country="FR", sort="-name").to_list()
    assert [p.name for p in french] == ["P3", "P2", "P1", "P0"]

    updated = await client.properties.update(created.id, name="Riverside", internal_ref=None)
    assert updated.name == "Riverside" and updated.internal_ref is None
    archived = await client.properties.archive(created.id)
    assert archived.status is PropertyStatus.ARCHIVED and archived.archived_at is not None
    with pytest.raises(ConflictError) as info:
        await client.properties.archive(created.id)
    assert info.value.code == "property_archived" and info.value.status == 409
    archived_only = await client.properties.list(status="archived").to_list()
    assert [p.id for p in archived_only] == [created.id]

    with pytest.raises(NotFoundError):
        await client.properties.get("prp_doesnotexist")
    with pytest.raises(ValidationError) as invalid:
        await client.properties.create(
            name="X", address={**ADDRESS, "country": "UK"}, type="office"
        )
    assert invalid.value.details[0]["field"] == "address.country"


async def test_buildings_and_lock(client: AsyncServiceClient) -> None:
    prop = await client.properties.create(name="Riverside", address=ADDRESS, type="office")
    building = await client.buildings.create(
        prop.id,
        **BUILDING,
        floors=4,
        use_types=[{"type": "office", "gfa_m2": 800}, {"type": "retail", "gfa_m2": 200}],
    )
    assert building.gfa_sqft == 10763.9 and building.use_types is not None
    assert [u.type for u in building.use_types] == ["office", "retail"]
    listed = await client.buildings.list(prop.id).to_list()
    assert [b.id for b in listed] == [building.id] and listed[0].use_types is None
    got = await client.buildings.get(prop.id, building.id)
    assert got.meters == []
    updated = await client.buildings.update(prop.id, building.id, occupancy_pct=85, use_types=[])
    assert updated.occupancy_pct == 85 and updated.use_types == []
    with pytest.raises(ValidationError) as mismatch:
        await client.buildings.update(
            prop.id, building.id, use_types=[{"type": "office", "gfa_m2": 10}]
        )
    assert mismatch.value.code == "use_types_gfa_mismatch"

    lock = await client.buildings.get_lock(building.id)
    assert lock.locked_through is None
    lock = await client.buildings.lock(building.id, "2025-01-31")
    assert lock.locked_through == dt.date(2025, 1, 31)
    with pytest.raises(ConflictError) as regression:
        await client.buildings.lock(building.id, dt.date(2024, 12, 31))
    assert regression.value.code == "lock_regression"


async def test_meters_and_readings(client: AsyncServiceClient) -> None:
    _, building_id, meter_id = await make_meter(client)
    meter = await client.meters.get(building_id, meter_id)
    assert meter.type is MeterType.ELECTRICITY and meter.unit == "kWh"
    assert [m.id for m in await client.meters.list(building_id).to_list()] == [meter_id]
    with pytest.raises(ValidationError) as bad_unit:
        await client.meters.create(building_id, type="water", unit="kWh")
    assert bad_unit.value.code == "invalid_unit"

    one = await client.readings.create(
        building_id,
        meter_id,
        start_date=dt.date(2025, 1, 1),
        end_date="2025-01-31",
        consumption=1000,
        cost=150.5,
        cost_currency="GBP",
    )
    assert one.id.startswith("rdg_") and one.anomaly_flags == [] and one.cost == 150.5
    result = await client.readings.create_batch(
        building_id,
        meter_id,
        [
            {"start_date": "2025-02-01", "end_date": "2025-02-28", "consumption": 1000},
            {"start_date": "2025-03-01", "end_date": "2025-03-31", "consumption": 4000},
            {"start_date": "2025-01-15", "end_date": "2025-01-20", "consumption": 5},
        ],
    )
    assert (result.accepted, result.rejected) == (2, 1)
    assert result.readings[1].anomaly_flags == [AnomalyFlag.SPIKE]
    assert result.errors[0].index == 2 and result.errors[0].code == "reading_overlap"
    assert result.errors[0].conflicting_reading_id == one.id

    with pytest.raises(OverlapError) as overlap:
        await client.readings.create(
            building_id, meter_id, start_date="2025-01-31", end_date="2025-02-02", consumption=1
        )
    assert overlap.value.conflicting_reading_id == one.id

    since_feb = await client.readings.list(building_id, meter_id, start_date="2025-02-01").to_list()
    assert [r.start_date for r in since_feb] == [dt.date(2025, 2, 1), dt.date(2025, 3, 1)]
    newest = await client.readings.list(building_id, meter_id, newest_first=True, per_page=1)
    assert newest.items[0].start_date == dt.date(2025, 3, 1) and newest.meta.total_pages == 3

    await client.readings.delete(building_id, meter_id, result.readings[1].id)
    with pytest.raises(NotFoundError):
        await client.readings.delete(building_id, meter_id, result.readings[1].id)
    await client.buildings.lock(building_id, "2025-01-31")
    with pytest.raises(LockedError) as locked:
        await client.readings.delete(building_id, meter_id, one.id)
    assert locked.value.status == 403 and locked.value.code == "building_locked"


async def test_users(service: Service, client: AsyncServiceClient) -> None:
    owner = await client.users.get(service.owner_user_id)
    assert owner.role is Role.OWNER and owner.mfa_enabled is False
    prop = await client.properties.create(name="Riverside", address=ADDRESS, type="office")
    invited = await client.users.invite(email="Ana@Example.com", role="viewer")
    assert invited.status is UserStatus.INVITED and invited.email == "ana@example.com"
    assert invited.invite_expires_at is not None
    with pytest.raises(ConflictError) as taken:
        await client.users.invite(email="ana@example.com", role="viewer")
    assert taken.value.code == "email_taken"
    updated = await client.users.update(invited.id, role="admin", property_access=[prop.id])
    assert updated.role is Role.ADMIN and updated.property_access == [prop.id]
    admins = await client.users.list(role="admin").to_list()
    assert [u.id for u in admins] == [invited.id]
    gone = await client.users.deactivate(invited.id)
    assert gone.status is UserStatus.DEACTIVATED
    back = await client.users.reactivate(invited.id)
    assert back.status is UserStatus.INVITED
    with pytest.raises(ConflictError) as last:
        await client.users.update(service.owner_user_id, role="admin")
    assert last.value.code == "last_owner"


async def test_auth_and_scope_errors(service: Service) -> None:
    async with AsyncServiceClient(service.base_url, "svc_test_" + "x" * 32) as bad:
        with pytest.raises(AuthenticationError) as info:
            await bad.properties.list()
        assert info.value.status == 401
        assert "svc_test_" not in str(info.value) and "x" * 32 not in repr(info.value)
    read_only = service.new_key(["properties:read"])
    async with AsyncServiceClient(service.base_url, read_only) as c:
        with pytest.raises(PermissionDeniedError) as denied:
            await c.properties.create(name="X", address=ADDRESS, type="office")
        assert denied.value.code == "insufficient_scope"
        assert denied.value.required_scope == "properties:write"


async def test_environments_are_separate(service: Service) -> None:
    async with (
        AsyncServiceClient(service.base_url, service.test_key) as sandbox,
        AsyncServiceClient(service.base_url, service.live_key) as production,
    ):
        assert sandbox.environment == "sandbox" and production.environment == "production"
        prop = await sandbox.properties.create(name="S", address=ADDRESS, type="office")
        with pytest.raises(NotFoundError):
            await production.properties.get(prop.id)


def test_sync_facade(service: Service) -> None:
    with ServiceClient(service.base_url, service.test_key) as c:
        assert c.environment == "sandbox"
        created = [
            c.properties.create(name=f"P{i}", address=ADDRESS, type="office") for i in range(3)
        ]
        assert c.properties.get(created[0].id).name == "P0"
        assert sorted(p.id for p in c.properties.list(per_page=2)) == sorted(p.id for p in created)
        first = c.properties.list(per_page=2).first()
        assert first.meta.total == 3 and len(first.items) == 2
        with pytest.raises(NotFoundError):
            c.properties.get("prp_nothing")


def test_sync_facade_from_profile(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    from bpsync.config import resolve_profile

    monkeypatch.setenv("BPSYNC_API_KEY", service.live_key)
    monkeypatch.setenv("BPSYNC_BASE_URL", service.base_url)
    with ServiceClient.from_profile(resolve_profile()) as c:
        assert c.environment == "production"
        assert [u.id for u in c.users.list(role="owner")] == [service.owner_user_id]
