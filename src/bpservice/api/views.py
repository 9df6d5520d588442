"""Rows → response dicts, one function per view of a resource (list item, get, create)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bpservice.db.models import Building, Meter, Property, Reading, User

SQFT_PER_M2 = 10.7639  # 1 m² = 10.7639 ft² (shared/reference/benchmark-figures.md)


def building_totals(session: Session, property_ids: list[str]) -> dict[str, tuple[int, float]]:
    """building_count and total_gfa_m2 per property, computed from the buildings themselves."""
    if not property_ids:
        return {}
    rows = session.execute(
        select(Building.property_id, func.count(Building.id), func.sum(Building.gfa_m2))
        .where(Building.property_id.in_(property_ids))
        .group_by(Building.property_id)
    ).all()
    return {pid: (int(count), float(total or 0)) for pid, count, total in rows}


def _address(prop: Property, with_coordinates: bool) -> dict[str, Any]:
    address: dict[str, Any] = {
        "street": prop.street,
        "city": prop.city,
        "state": prop.state,
        "postal_code": prop.postal_code,
        "country": prop.country,
    }
    if with_coordinates:
        address["latitude"] = prop.latitude
        address["longitude"] = prop.longitude
    return address


def property_summary(
    prop: Property, totals: tuple[int, float], *, with_coordinates: bool = False
) -> dict[str, Any]:
    count, gfa = totals
    return {
        "id": prop.id,
        "name": prop.name,
        "address": _address(prop, with_coordinates),
        "type": prop.type,
        "internal_ref": prop.internal_ref,
        "status": prop.status,
        "building_count": count,
        "total_gfa_m2": round(gfa, 2),
        "created_at": prop.created_at,
        "updated_at": prop.updated_at,
    }


def property_created(session: Session, prop: Property) -> dict[str, Any]:
    totals = building_totals(session, [prop.id]).get(prop.id, (0, 0.0))
    return property_summary(prop, totals, with_coordinates=True)


def property_detail(session: Session, prop: Property) -> dict[str, Any]:
    view = property_created(session, prop)
    buildings = session.execute(
        select(Building.id, Building.name)
        .where(Building.property_id == prop.id)
        .order_by(Building.created_at, Building.id)
    ).all()
    view["buildings"] = [{"id": bid, "name": name} for bid, name in buildings]
    return view


def building_summary(building: Building) -> dict[str, Any]:
    return {
        "id": building.id,
        "property_id": building.property_id,
        "name": building.name,
        "primary_use_type": building.primary_use_type,
        "gfa_m2": building.gfa_m2,
        "gfa_sqft": round(building.gfa_m2 * SQFT_PER_M2, 2),
        "year_built": building.year_built,
        "floors": building.floors,
        "occupancy_pct": building.occupancy_pct,
        "operating_hours_week": building.operating_hours_week,
        "data_quality_grade": building.data_quality_grade,
        "status": building.status,
        "created_at": building.created_at,
        "updated_at": building.updated_at,
    }


def building_detail(session: Session, building: Building) -> dict[str, Any]:
    view = building_summary(building)
    meters = session.execute(
        select(Meter.id, Meter.type, Meter.status)
        .where(Meter.building_id == building.id)
        .order_by(Meter.created_at, Meter.id)
    ).all()
    view.update(
        use_types=list(building.use_types or []),
        nla_m2=building.nla_m2,
        renewable_capacity_kw=building.renewable_capacity_kw,
        car_park_area_m2=building.car_park_area_m2,
        meters=[{"id": mid, "type": mtype, "status": status} for mid, mtype, status in meters],
    )
    return view


def meter_view(meter: Meter) -> dict[str, Any]:
    return {
        "id": meter.id,
        "building_id": meter.building_id,
        "type": meter.type,
        "name": meter.name,
        "unit": meter.unit,
        "source": meter.source,
        "provider": meter.provider,
        "status": meter.status,
        "latest_reading_date": meter.latest_reading_date,
        "created_at": meter.created_at,
    }


def reading_view(reading: Reading) -> dict[str, Any]:
    return {
        "id": reading.id,
        "meter_id": reading.meter_id,
        "start_date": reading.start_date,
        "end_date": reading.end_date,
        "consumption": reading.consumption,
        "unit": reading.unit,
        "cost": reading.cost,
        "cost_currency": reading.cost_currency,
        "demand_kw": reading.demand_kw,
        "source": reading.source,
        "anomaly_flags": list(reading.anomaly_flags or []),
        "created_at": reading.created_at,
    }


def property_access_view(user: User) -> str | list[str]:
    return "all" if user.property_access is None else list(user.property_access)


def user_summary(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "role": user.role,
        "status": user.status,
        "last_login_at": user.last_login_at,
        "created_at": user.created_at,
    }


def user_detail(user: User) -> dict[str, Any]:
    view = user_summary(user)
    view.update(
        mfa_enabled=user.mfa_enabled,
        sso_provider=user.sso_provider,
        property_access=property_access_view(user),
    )
    return view


def user_invited(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "email": user.email,
        "role": user.role,
        "status": user.status,
        "property_access": property_access_view(user),
        "invite_expires_at": user.invite_expires_at,
        "created_at": user.created_at,
    }
