"""Webhooks end to end: subscriptions through the live API, deliveries to a real HTTP receiver on a
loopback port that checks both signatures, retries and the 7-day rule driven by the FakeClock
through `deliver_due`, and the background worker's delivery latency."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from bpservice.app import create_app
from bpservice.db.webhook_models import (
    Notification,
    WebhookAttempt,
    WebhookDelivery,
    WebhookSubscription,
)
from bpservice.settings import RateLimits, Settings
from bpservice.workers.webhooks import DeliveryDeps, deliver_due
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap

SECRET = "s3cret-for-tests-0123456789"
PROPERTY = {
    "name": "Riverside House",
    "address": {"street": "12 Riverside Walk", "city": "London", "country": "GB"},
    "type": "office",
}
BUILDING = {
    "name": "Main",
    "primary_use_type": "office",
    "gfa_m2": 1000,
    "year_built": 1999,
    "floors": 4,
}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.perf_counter() when it arrived
    svc_signature_ok: bool
    standard_signature_ok: bool

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook endpoint: records what arrives, verifies both signatures, and answers as told."""

    secret: str = SECRET
    status: int = 200
    reply: bytes = b"ok"
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.received.append(
                    Received(
                        self.path,
                        headers,
                        body,
                        time.perf_counter(),
                        verify_svc(receiver.secret, headers, body),
                        verify_standard(receiver.secret, headers, body),
                    )
                )
                receiver.arrived.set()
                if receiver.delay:
                    time.sleep(receiver.delay)
                try:
                    self.send_response(receiver.status)
                    self.send_header("Content-Length", str(len(receiver.reply)))
                    self.end_headers()
                    self.wfile.write(receiver.reply)
                except OSError:
                    pass  # the sender gave up (timeout test)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def verify_svc(secret: str, headers: dict[str, str], body: bytes) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers.get("x-svc-signature", ""), expected)


def verify_standard(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """As a Standard Webhooks receiver does it (key = the secret's UTF-8 bytes)."""
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()
    offered = [s.removeprefix("v1,") for s in headers.get("webhook-signature", "").split()]
    return any(hmac.compare_digest(expected, s) for s in offered)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks"


def subscribe(api: httpx.Client, url: str, events: list[str], **extra: Any) -> dict:
    r = api.post("/v1/webhooks", json={"url": url, "events": events, "secret": SECRET, **extra})
    assert r.status_code == 201, r.text
    return r.json()["data"]


def submit_reading(api: httpx.Client, consumption: float = 1200.5, month: int = 1) -> dict:
    prop = api.post("/v1/properties", json=PROPERTY).json()["data"]
    building = api.post(f"/v1/properties/{prop['id']}/buildings", json=BUILDING).json()["data"]
    meter = api.post(
        f"/v1/buildings/{building['id']}/meters", json={"type": "electricity", "unit": "kWh"}
    ).json()["data"]
    r = api.post(
        f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings",
        json={
            "start_date": f"2026-{month:02d}-01",
            "end_date": f"2026-{month:02d}-28",
            "consumption": consumption,
        },
    )
    assert r.status_code == 201, r.text
    return {"building_id": building["id"], "meter_id": meter["id"], "reading": r.json()["data"]}


def deliver(service: Service, **deps: Any) -> int:
    target = (
        DeliveryDeps(db=service.app.state.db, allow_private=True, **deps) if deps else service.app
    )
    return deliver_due(target, service.clock())


def history(api: httpx.Client, webhook_id: str) -> list[dict]:
    r = api.get(f"/v1/webhooks/{webhook_id}/deliveries")
    assert r.status_code == 200, r.text
    return r.json()["data"]


# --- subscriptions --------------------------------------------------------------------------------


def test_subscription_lifecycle_and_secret_is_never_returned(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    created = subscribe(
        api, receiver.url, ["meter.reading.created", "dividend.statement.available"]
    )
    assert created["id"].startswith("whk_") and created["status"] == "enabled"
    assert created["secret"] is None  # the caller chose it; it is not echoed
    assert created["events"] == ["meter.reading.created", "dividend.statement.available"]
    generated = api.post("/v1/webhooks", json={"url": receiver.url, "events": ["*"]})
    assert generated.status_code == 201
    assert len(generated.json()["data"]["secret"]) >= 32

    webhook_id = created["id"]
    for r in (api.get(f"/v1/webhooks/{webhook_id}"), api.get("/v1/webhooks")):
        assert r.status_code == 200
        assert SECRET not in r.text and generated.json()["data"]["secret"] not in r.text
        assert "secret" not in json.dumps(r.json()["data"])
    assert api.get("/v1/webhooks").json()["meta"]["total"] == 2

    r = api.patch(
        f"/v1/webhooks/{webhook_id}", json={"events": ["*"], "secret": "another-secret-1234567"}
    )
    assert r.status_code == 200 and r.json()["data"]["events"] == ["*"]
    assert "another-secret" not in r.text

    r = api.post(f"/v1/webhooks/{webhook_id}/pause")
    assert r.status_code == 200 and r.json()["data"]["status"] == "paused"
    assert r.json()["data"]["paused_at"] is not None
    assert api.post(f"/v1/webhooks/{webhook_id}/pause").json()["error"]["code"] == "invalid_state"
    assert api.get("/v1/webhooks", params={"filter[status]": "paused"}).json()["meta"]["total"] == 1
    r = api.post(f"/v1/webhooks/{webhook_id}/resume")
    assert r.status_code == 200 and r.json()["data"]["status"] == "enabled"
    assert api.post(f"/v1/webhooks/{webhook_id}/resume").status_code == 409

    assert api.delete(f"/v1/webhooks/{webhook_id}").status_code == 204
    assert api.get(f"/v1/webhooks/{webhook_id}").status_code == 404
    assert api.delete(f"/v1/webhooks/{webhook_id}").status_code == 404


def test_subscription_validation_scope_and_tenancy(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    def invalid(body: dict, field: str) -> None:
        r = api.post("/v1/webhooks", json=body)
        assert r.status_code == 422, r.text
        assert r.json()["error"]["details"][0]["field"].startswith(field), r.text

    invalid({"url": receiver.url, "events": ["property.exploded"]}, "events")
    invalid({"url": receiver.url, "events": ["*", "property.created"]}, "events")
    invalid({"url": receiver.url, "events": []}, "events")
    invalid({"url": "ftp://example.com/x", "events": ["*"]}, "url")
    invalid({"url": "https://user:pw@example.com/x", "events": ["*"]}, "url")
    invalid({"url": "/relative", "events": ["*"]}, "url")
    invalid({"url": receiver.url, "events": ["*"], "secret": "short"}, "secret")
    invalid({"url": receiver.url, "events": ["*"], "colour": "red"}, "colour")
    r = api.patch("/v1/webhooks/whk_x", json={"url": None})
    assert r.status_code in (404, 422)

    with service.client(service.live_key) as live:
        r = live.post("/v1/webhooks", json={"url": receiver.url, "events": ["*"]})
        assert r.status_code == 422 and r.json()["error"]["details"][0]["code"] == "https_required"
        assert (
            live.post(
                "/v1/webhooks", json={"url": "https://hooks.example.com/in", "events": ["*"]}
            ).status_code
            == 201
        )

    created = subscribe(api, receiver.url, ["*"])
    with service.client(service.live_key) as live:
        assert live.get(f"/v1/webhooks/{created['id']}").status_code == 404
        assert live.get("/v1/webhooks").json()["meta"]["total"] == 1
    other = service.bootstrap(owner_email="other@example.com")
    with service.client(other["test_key"]) as stranger:
        assert stranger.get(f"/v1/webhooks/{created['id']}").status_code == 404
        assert stranger.delete(f"/v1/webhooks/{created['id']}").status_code == 404

    without = service.new_key(["properties:read"])
    with service.client(without) as limited:
        r = limited.get("/v1/webhooks")
        assert r.status_code == 403 and r.json()["error"]["required_scope"] == "webhooks:manage"


# --- deliveries -----------------------------------------------------------------------------------


def test_delivery_payload_signatures_and_history(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    submit_reading(api, month=1)  # before the subscription: never delivered to it
    sub = subscribe(api, receiver.url, ["meter.reading.created"])
    assert deliver(service) == 0
    expected = submit_reading(api, month=2)

    assert deliver(service) == 1
    assert deliver(service) == 0  # delivered once
    [got] = receiver.received
    assert got.svc_signature_ok and got.standard_signature_ok
    assert got.headers["content-type"] == "application/json"
    assert got.headers["webhook-timestamp"] == str(int(service.clock().timestamp()))
    body = got.json()
    assert set(body) == {"id", "type", "created_at", "data"}
    assert body["id"].startswith("evt_") and body["type"] == "meter.reading.created"
    assert got.headers["webhook-id"] == body["id"]
    reading = expected["reading"]
    assert body["data"] == {
        "building_id": expected["building_id"],
        "meter_id": expected["meter_id"],
        "reading": {
            "id": reading["id"],
            "start_date": "2026-02-01",
            "end_date": "2026-02-28",
            "consumption": 1200.5,
            "unit": "kWh",
        },
    }

    [delivery] = history(api, sub["id"])
    assert delivery["status"] == "succeeded" and delivery["event_id"] == body["id"]
    [attempt] = delivery["attempts"]
    assert attempt["status_code"] == 200 and attempt["response_body"] == "ok"
    assert attempt["succeeded"] and attempt["failure_reason"] is None
    assert attempt["latency_ms"] >= 0
    detail = api.get(f"/v1/webhooks/{sub['id']}/deliveries/{delivery['id']}").json()["data"]
    assert detail["payload"] == body
    assert api.get(f"/v1/webhooks/{sub['id']}").json()["data"]["last_success_at"] is not None

    # A tampered body or another secret does not verify at the receiver.
    assert not verify_svc("wrong-secret", got.headers, got.body)
    assert not verify_standard(SECRET, got.headers, got.body + b" ")


def test_only_the_subscriptions_environment_and_types(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    everything = subscribe(api, receiver.url, ["*"])
    receiver_live = Receiver().start()
    try:
        with service.client(service.live_key) as live:
            r = live.post(
                "/v1/webhooks",
                json={"url": "https://127.0.0.1:1/never", "events": ["*"], "secret": SECRET},
            )
            live_sub = r.json()["data"]
        only_props = subscribe(api, receiver_live.url, ["property.created"])
        submit_reading(api)
        deliver(service)
        types = {r.json()["type"] for r in receiver.received}
        assert {"property.created", "building.created", "meter.reading.created"} <= types
        assert "dividend.statement.available" not in types
        assert [r.json()["type"] for r in receiver_live.received] == ["property.created"]
        with service.client(service.live_key) as live:
            assert history(live, live_sub["id"]) == []
        assert len(history(api, everything["id"])) == len(receiver.received)
        assert len(history(api, only_props["id"])) == 1
    finally:
        receiver_live.stop()


def test_retries_follow_the_schedule_then_give_up(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    receiver.status, receiver.reply = 500, b"x" * 3000
    sub = subscribe(api, receiver.url, ["meter.reading.created"])
    submit_reading(api)
    start = service.clock()
    assert deliver(service) == 1
    for delay in (60, 300, 1800, 7200, 43200):
        service.clock.advance(delay - 1)
        assert deliver(service) == 0, f"too early before the {delay}s retry"
        service.clock.advance(1)
        assert deliver(service) == 1, f"no retry after {delay}s"
    service.clock.advance(86400)
    assert deliver(service) == 0
    assert len(receiver.received) == 6
    assert len({r.json()["id"] for r in receiver.received}) == 1  # the same event each time
    assert len({r.body for r in receiver.received}) == 1  # byte-identical retries

    [delivery] = history(api, sub["id"])
    assert delivery["status"] == "failed" and delivery["attempt_count"] == 6
    offsets = [
        (httpx_time(a["attempted_at"]) - start).total_seconds() for a in delivery["attempts"]
    ]
    assert offsets == [0, 60, 360, 2160, 9360, 52560]
    for attempt in delivery["attempts"]:
        assert attempt["status_code"] == 500 and attempt["failure_reason"] == "non_2xx"
        assert attempt["response_body"] == "x" * 1024
    assert api.get(f"/v1/webhooks/{sub['id']}").json()["data"]["status"] == "enabled"


def httpx_time(value: str) -> Any:
    import datetime as dt

    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_recovery_after_failures(service: Service, api: httpx.Client, receiver: Receiver) -> None:
    receiver.status = 503
    sub = subscribe(api, receiver.url, ["meter.reading.created"])
    submit_reading(api)
    deliver(service)
    assert api.get(f"/v1/webhooks/{sub['id']}").json()["data"]["failing_since"] is not None
    receiver.status = 204
    service.clock.advance(60)
    assert deliver(service) == 1
    [delivery] = history(api, sub["id"])
    assert delivery["status"] == "succeeded"
    assert [a["status_code"] for a in delivery["attempts"]] == [503, 204]
    assert api.get(f"/v1/webhooks/{sub['id']}").json()["data"]["failing_since"] is None


def test_timeout_and_connection_refused_are_recorded(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    # The refused delivery first, with time to spare: on a loaded machine even a refusal can
    # take longer than the slow receiver's 0.1 s limit (CI once recorded it as a timeout).
    refused = subscribe(api, closed_port_url(), ["meter.reading.created"])
    submit_reading(api)
    assert deliver(service, timeout=10.0) == 1
    [no_answer] = history(api, refused["id"])[0]["attempts"]
    assert no_answer["failure_reason"] == "connection_refused"
    assert no_answer["status_code"] is None and no_answer["response_body"] is None
    receiver.delay = 0.5
    slow = subscribe(api, receiver.url, ["meter.reading.created"])
    submit_reading(api, month=2)
    assert deliver(service, timeout=0.1) == 2  # the new reading goes to both subscriptions
    [timed_out] = history(api, slow["id"])[0]["attempts"]
    assert timed_out["failure_reason"] == "timeout" and timed_out["status_code"] is None


def test_injected_transport(service: Service, api: httpx.Client) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(202, text="queued")

    sub = subscribe(api, "https://hooks.example.com/in", ["meter.reading.created"])
    submit_reading(api)
    assert deliver(service, transport=httpx.MockTransport(handler)) == 1
    assert seen[0].url == "https://hooks.example.com/in"
    assert verify_svc(SECRET, dict(seen[0].headers), seen[0].content)
    assert history(api, sub["id"])[0]["attempts"][0]["status_code"] == 202


def test_pause_queues_events_and_resume_delivers_them(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    sub = subscribe(api, receiver.url, ["meter.reading.created"])
    assert api.post(f"/v1/webhooks/{sub['id']}/pause").status_code == 200
    submit_reading(api)
    assert deliver(service) == 0 and receiver.received == []
    [queued] = history(api, sub["id"])
    assert queued["status"] == "pending" and queued["attempts"] == []
    service.clock.advance(3600)
    assert api.post(f"/v1/webhooks/{sub['id']}/resume").status_code == 200
    assert deliver(service) == 1
    assert len(receiver.received) == 1 and history(api, sub["id"])[0]["status"] == "succeeded"


def test_seven_days_of_failure_disable_and_notify_the_owner(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    receiver.status = 500
    sub = subscribe(api, receiver.url, ["meter.reading.created"])
    submit_reading(api, month=1)
    deliver(service)
    for day in range(1, 7):  # an event a day, each failing
        service.clock.advance(86400)
        submit_reading(api, month=1 + day)
        deliver(service)
        assert api.get(f"/v1/webhooks/{sub['id']}").json()["data"]["status"] == "enabled"
    service.clock.advance(86400)
    submit_reading(api, month=8)
    deliver(service)  # 7 days after the first failure: disabled
    data = api.get(f"/v1/webhooks/{sub['id']}").json()["data"]
    assert data["status"] == "disabled" and data["disabled_at"] is not None
    assert "7 consecutive days" in data["disabled_reason"]
    statuses = {d["status"] for d in history(api, sub["id"])}
    assert "pending" not in statuses and "cancelled" in statuses

    with service.app.state.db.read() as session:
        [note] = session.scalars(select(Notification)).all()
        assert note.user_id == service.owner_user_id and note.subject_id == sub["id"]
        assert note.type == "webhook.disabled"

    received = len(receiver.received)
    submit_reading(api, month=9)
    service.clock.advance(86400)
    assert deliver(service) == 0 and len(receiver.received) == received

    receiver.status = 200
    assert api.post(f"/v1/webhooks/{sub['id']}/resume").json()["data"]["status"] == "enabled"
    submit_reading(api, month=10)
    assert deliver(service) == 1  # only the event after the resume
    assert receiver.received[-1].json()["data"]["reading"]["start_date"] == "2026-10-01"


def test_delete_purges_subscription_and_history(
    service: Service, api: httpx.Client, receiver: Receiver
) -> None:
    sub = subscribe(api, receiver.url, ["*"])
    submit_reading(api)
    assert deliver(service) >= 3
    assert api.delete(f"/v1/webhooks/{sub['id']}").status_code == 204
    with service.app.state.db.read() as session:
        assert session.get(WebhookSubscription, sub["id"]) is None
        assert session.scalar(select(func.count(WebhookDelivery.id))) == 0
        assert session.scalar(select(func.count(WebhookAttempt.id))) == 0
    assert api.get(f"/v1/webhooks/{sub['id']}/deliveries").status_code == 404


# --- the background worker ------------------------------------------------------------------------


@pytest.fixture
def working_service(tmp_path: Path) -> Iterator[Service]:
    """The service with its background workers running, on the real clock."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'svc.db'}",
        rate_limits=RateLimits(per_key=100_000, bulk=100_000),
        run_workers=True,
        allow_private_webhooks=True,  # the receivers listen on loopback
    )
    app = create_app(settings)
    clock = FakeClock()
    with LiveServer(app) as server:
        yield _bootstrap(app, clock, server.url)


def test_worker_delivers_in_the_background_and_latency(
    working_service: Service, receiver: Receiver
) -> None:
    service = working_service
    with service.client() as api:
        subscribe(api, receiver.url, ["meter.reading.created"])
        submit_reading(api, month=1)  # warm up
        assert receiver.arrived.wait(10)
        prop = api.post("/v1/properties", json=PROPERTY).json()["data"]
        building = api.post(f"/v1/properties/{prop['id']}/buildings", json=BUILDING).json()["data"]
        meter = api.post(
            f"/v1/buildings/{building['id']}/meters", json={"type": "electricity", "unit": "kWh"}
        ).json()["data"]
        latencies = []
        for month in range(1, 11):
            receiver.arrived.clear()
            count = len(receiver.received)
            r = api.post(
                f"/v1/buildings/{building['id']}/meters/{meter['id']}/readings",
                json={
                    "start_date": f"2024-{month:02d}-01",
                    "end_date": f"2024-{month:02d}-28",
                    "consumption": 1000,
                },
            )
            committed = time.perf_counter()  # the response follows the commit
            assert r.status_code == 201
            deadline = time.monotonic() + 10
            while len(receiver.received) == count and time.monotonic() < deadline:
                receiver.arrived.wait(0.01)
            assert len(receiver.received) > count, "not delivered in 10 s"
            latencies.append(receiver.received[count].at - committed)
    median = statistics.median(latencies)
    print(
        f"\nwebhook latency (commit -> receiver), n={len(latencies)}: "
        f"median {median * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms"
    )
    assert median < 2.0
