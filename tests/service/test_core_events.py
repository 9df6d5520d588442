"""The events outbox: every change records an event of the spec's types, in the same transaction."""

from __future__ import annotations

import re
from typing import Any

import httpx
from sqlalchemy import select

from bpservice.db.models import Event
from bpservice.domain.vocab import EVENT_TYPES
from bpservice.events import event_body
from tests.conftest import Service
from tests.service.conftest import BUILDING, Tree, month, ok, reading

# Events of the core resources; benchmark recalculation adds its own (benchmark.updated, ...).
CORE = ("property.", "building.", "meter.reading.")


def outbox(service: Service) -> list[tuple[str, dict[str, Any]]]:
    """(environment, delivered payload) of every core event recorded, oldest first."""
    with service.app.state.db.read() as session:
        rows = session.scalars(select(Event).order_by(Event.seq)).all()
        return [(e.environment, event_body(e)) for e in rows if e.type.startswith(CORE)]


def test_every_change_records_its_event(service: Service, checked: httpx.Client) -> None:
    tree = Tree(checked)
    service.clock.advance(1)
    ok(checked.patch(f"/v1/properties/{tree.pid}", json={"name": "Renamed"}))
    ok(checked.patch(f"/v1/properties/{tree.pid}", json={"name": "Renamed"}))  # no change
    path = f"/v1/properties/{tree.pid}/buildings/{tree.bid}"
    ok(checked.patch(path, json={"floors": 7}))
    single = ok(checked.post(tree.readings, json=reading(*month(2025, 1), 10.5)), 201)["data"]
    batch = [reading(*month(2025, 2)), reading(*month(2025, 3)), reading(*month(2025, 3))]
    stored = ok(checked.post(tree.batch, json={"readings": batch}), 201)["data"]["readings"]
    assert checked.delete(f"{tree.readings}/{single['id']}").status_code == 204
    ok(checked.post(f"/v1/properties/{tree.pid}/archive"))

    events = outbox(service)
    assert all(env == "test" for env, _ in events)
    payloads = [p for _, p in events]
    assert [p["type"] for p in payloads] == [
        "property.created",
        "building.created",
        "property.updated",
        "building.updated",
        "meter.reading.created",
        "meter.reading.created",
        "meter.reading.created",
        "meter.reading.deleted",
        "property.archived",
    ]
    for p in payloads:
        assert set(p) == {"id", "type", "created_at", "data"}
        assert re.match(r"^evt_[0-9a-z]{24}$", p["id"]) and p["type"] in EVENT_TYPES
        assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$", p["created_at"])
    assert len({p["id"] for p in payloads}) == len(payloads)
    created, building, updated, building_updated = payloads[:4]
    assert created["data"]["property"]["id"] == tree.pid
    assert building["data"]["property_id"] == tree.pid
    assert building["data"]["building"]["id"] == tree.bid
    assert updated["data"]["changed_fields"] == ["name"]
    assert updated["data"]["property"]["name"] == "Renamed"
    assert building_updated["data"]["changed_fields"] == ["floors"]
    # meter.reading.created carries exactly the spec's data
    assert payloads[4]["data"] == {
        "building_id": tree.bid,
        "meter_id": tree.mid,
        "reading": {
            "id": single["id"],
            "start_date": "2025-01-01",
            "end_date": "2025-01-31",
            "consumption": 10.5,
            "unit": "kWh",
        },
    }
    assert [p["data"]["reading"]["id"] for p in payloads[5:7]] == [r["id"] for r in stored]
    assert payloads[7]["data"]["reading"]["id"] == single["id"]
    assert payloads[7]["data"]["meter_id"] == tree.mid
    archived = payloads[8]["data"]
    assert archived["id"] == tree.pid and archived["status"] == "archived"


def test_refused_requests_record_nothing(service: Service, checked: httpx.Client) -> None:
    tree = Tree(checked)
    before = len(outbox(service))
    ok(checked.post(tree.readings, json=reading(*month(2025, 1))), 201)
    assert checked.post(tree.readings, json=reading(*month(2025, 1))).status_code == 409
    assert (
        checked.post(
            f"/v1/properties/{tree.pid}/buildings", json={**BUILDING, "gfa_m2": -1}
        ).status_code
        == 422
    )
    rejected = ok(checked.post(tree.batch, json={"readings": [reading(*month(2025, 1))]}), 201)
    assert rejected["data"]["accepted"] == 0
    assert checked.patch(f"/v1/properties/{tree.pid}", json={"type": "castle"}).status_code == 422
    assert [p["type"] for _, p in outbox(service)[before:]] == ["meter.reading.created"]


def test_events_belong_to_the_callers_environment(service: Service) -> None:
    with service.client(service.live_key) as live:
        Tree(live)
    assert {env for env, _ in outbox(service)} == {"live"}
