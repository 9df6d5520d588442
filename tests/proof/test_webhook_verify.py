"""`bpsync.webhooks` on the receiving side: a tiny receiver built on `verify_request` accepts what
the service's real delivery worker sends, and rejects tampered bodies, wrong secrets, stale or
replayed timestamps and forged ids."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from bpservice.workers.webhooks import deliver_due
from bpsync.webhooks import (
    WebhookVerificationError,
    sign,
    standard_webhooks_secret,
    verify,
    verify_request,
    verify_standard,
)
from tests.conftest import Service
from tests.service.conftest import Tree, reading

SECRET = "receiver-secret-0123456789abcdef"


@dataclass
class VerifyingReceiver:
    """A webhook endpoint as a user would write it: verify, deduplicate by id, 2xx or 400."""

    secret: str
    now: object  # a callable returning the receiver's Unix time
    accepted: list[dict] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    raw: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)

    def start(self) -> VerifyingReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = dict(self.headers.items())
                receiver.raw.append((headers, body))
                try:
                    event = verify_request(body, headers, receiver.secret, now=receiver.now())
                except WebhookVerificationError as exc:
                    receiver.refused.append(str(exc))
                    status = 400
                else:
                    if event["id"] not in receiver.seen_ids:
                        receiver.seen_ids.add(event["id"])
                        receiver.accepted.append(event)
                    status = 204
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(service: Service) -> Iterator[VerifyingReceiver]:
    r = VerifyingReceiver(SECRET, lambda: service.clock().timestamp()).start()
    yield r
    r.stop()


def _deliver_one_event(service: Service, api: httpx.Client, receiver: VerifyingReceiver) -> dict:
    r = api.post(
        "/v1/webhooks",
        json={"url": receiver.url, "events": ["meter.reading.created"], "secret": SECRET},
    )
    assert r.status_code == 201, r.text
    tree = Tree(api)
    stored = api.post(tree.readings, json=reading("2025-01-01", "2025-01-31", 512.5))
    assert stored.status_code == 201
    assert deliver_due(service.app, service.clock()) == 1
    return stored.json()["data"]


def test_real_deliveries_are_accepted_and_tampering_is_refused(
    service: Service, api: httpx.Client, receiver: VerifyingReceiver
) -> None:
    stored = _deliver_one_event(service, api, receiver)
    assert receiver.refused == []
    [event] = receiver.accepted
    assert event["type"] == "meter.reading.created"
    assert event["data"]["reading"]["id"] == stored["id"]
    headers, body = receiver.raw[0]

    def replay(new_body: bytes, **changed: str) -> int:
        sent = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "host")}
        sent.update(changed)
        return httpx.post(receiver.url, content=new_body, headers=sent).status_code

    assert b"512.5" in body
    assert replay(body.replace(b"512.5", b"5125")) == 400  # tampered consumption
    assert replay(body + b" ") == 400  # a single extra byte
    assert replay(body, **{"X-SVC-Signature": sign(body, "another-secret-0123456789")}) == 400
    forged_id = "evt_" + "0" * 24
    assert replay(body, **{"webhook-id": forged_id}) == 400  # id is part of the signed message
    # An identical replay within the window is accepted but deduplicated by id.
    assert replay(body) == 204 and len(receiver.accepted) == 1
    # Ten minutes later the same captured request is stale.
    service.clock.advance(600)
    assert replay(body) == 400
    assert "stale or replayed" in receiver.refused[-1]
    assert all(SECRET not in reason for reason in receiver.refused)


def test_a_receiver_with_the_wrong_secret_refuses_and_the_service_retries(
    service: Service, api: httpx.Client
) -> None:
    wrong = VerifyingReceiver("not-the-subscription-secret", lambda: service.clock().timestamp())
    wrong.start()
    try:
        _deliver_one_event(service, api, wrong)
        assert wrong.accepted == [] and len(wrong.refused) == 1
        [webhook] = api.get("/v1/webhooks").json()["data"]
        [delivery] = api.get(f"/v1/webhooks/{webhook['id']}/deliveries").json()["data"]
        assert delivery["status"] == "pending" and delivery["attempt_count"] == 1
        assert delivery["attempts"][0]["status_code"] == 400
    finally:
        wrong.stop()


# --- the functions, table-driven --------------------------------------------------------------

BODY = b'{"id":"evt_1","type":"property.created","created_at":"2026-11-20T09:30:00Z","data":{}}'


def standard_headers(body: bytes, secret: str, timestamp: int, message_id: str = "evt_1") -> dict:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": f"v1,{digest}",
        "X-SVC-Signature": sign(body, secret),
    }


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (sign(BODY, SECRET), True),
        (sign(BODY, SECRET).upper().replace("SHA256=", "sha256="), True),  # hex case
        (sign(BODY, SECRET)[:-1], False),
        (sign(BODY + b"x", SECRET), False),
        (sign(BODY, SECRET + "x"), False),
        ("sha256=", False),
        ("", False),
        (None, False),
        ("sha256=é", False),
        (sign(BODY, SECRET).removeprefix("sha256="), False),
    ],
)
def test_verify(header: str | None, expected: bool) -> None:
    assert verify(BODY, header, SECRET) is expected


def test_verify_uses_constant_time_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("bpsync.webhooks.hmac.compare_digest", spy)
    assert verify(BODY, sign(BODY, SECRET), SECRET)
    assert verify_standard(BODY, standard_headers(BODY, SECRET, 1000), SECRET, now=1000)
    assert len(calls) == 2


def test_verify_standard_window_and_rotation() -> None:
    headers = standard_headers(BODY, SECRET, 1_000_000)
    assert verify_standard(BODY, headers, SECRET, now=1_000_000 + 300)
    assert verify_standard(BODY, headers, SECRET, now=1_000_000 - 300)
    assert not verify_standard(BODY, headers, SECRET, now=1_000_000 + 301)
    assert not verify_standard(BODY, headers, SECRET + "x", now=1_000_000)
    # During a rotation several signatures are offered; one valid is enough.
    old = standard_headers(BODY, "old-secret-0123456789", 1_000_000)["webhook-signature"]
    rotated = {**headers, "webhook-signature": f"{old} {headers['webhook-signature']}"}
    assert verify_standard(BODY, rotated, SECRET, now=1_000_000)
    # A secret is always its own bytes: the library spelling of the key is a different secret
    # here (the service signs with raw bytes, so decoding it would verify nothing it sent).
    whsec = standard_webhooks_secret(SECRET)
    assert not verify_standard(BODY, headers, whsec, now=1_000_000)
    assert not verify(BODY, headers["X-SVC-Signature"], whsec)
    for missing in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        partial = {k: v for k, v in headers.items() if k != missing}
        assert not verify_standard(BODY, partial, SECRET, now=1_000_000)
    assert not verify_standard(BODY, {**headers, "webhook-timestamp": "soon"}, SECRET, now=0)


def test_verify_request_messages() -> None:
    headers = standard_headers(BODY, SECRET, 5000)
    assert verify_request(BODY, headers, SECRET, now=5000)["id"] == "evt_1"
    with pytest.raises(WebhookVerificationError, match="X-SVC-Signature"):
        verify_request(BODY + b"\n", headers, SECRET, now=5000)
    with pytest.raises(WebhookVerificationError, match="stale or replayed"):
        verify_request(BODY, headers, SECRET, now=9000)
    other = standard_headers(BODY, SECRET, 5000, message_id="evt_2")
    with pytest.raises(WebhookVerificationError, match="does not match webhook-id"):
        verify_request(BODY, other, SECRET, now=5000)
    junk = b"not json"
    with pytest.raises(WebhookVerificationError, match="not JSON"):
        verify_request(junk, standard_headers(junk, SECRET, 5000), SECRET, now=5000)


# --- agreement with the reference Standard Webhooks implementation (issue 14 item 12) -----------


def test_a_secret_that_looks_like_whsec_verifies(service: Service) -> None:
    """The bug: a subscription whose secret is spelled like `whsec_<base64>` never verified,
    because the receiver decoded it while the service signs with its raw bytes."""
    secret = "whsec_" + base64.b64encode(b"looks like a library key").decode()
    with service.client() as api:
        r = api.post(
            "/v1/webhooks",
            json={"url": "http://127.0.0.1:9/h", "events": ["*"], "secret": secret},
        )
        assert r.status_code == 201, r.text
    from bpservice.workers.webhooks import delivery_headers

    body = b'{"id": "evt_1", "type": "x", "created_at": "2026-01-01T00:00:00Z", "data": {}}'
    when = dt.datetime.fromtimestamp(1_000_000, dt.UTC)
    headers = delivery_headers(secret, "evt_1", body, when)
    assert verify_request(body, headers, secret, now=1_000_000)["id"] == "evt_1"


def test_service_signatures_verify_with_the_standardwebhooks_package() -> None:
    from standardwebhooks import Webhook

    from bpservice.workers.webhooks import delivery_headers

    body = b'{"id": "evt_42", "type": "meter.reading.created", "data": {"n": 1}}'
    when = dt.datetime.now(dt.UTC)
    for secret in (SECRET, "whsec_" + base64.b64encode(b"k" * 24).decode(), "ünïcode-sécret"):
        headers = delivery_headers(secret, "evt_42", body, when)
        # theirs accepts what the service sends, given the key in their spelling
        assert Webhook(standard_webhooks_secret(secret)).verify(body, headers) == {
            "id": "evt_42",
            "type": "meter.reading.created",
            "data": {"n": 1},
        }
        # and ours accepts what theirs signs
        theirs = Webhook(standard_webhooks_secret(secret)).sign("evt_42", when, body.decode())
        mine = {**headers, "webhook-signature": theirs}
        assert verify_standard(body, mine, secret, now=when.timestamp())
        assert theirs == headers["webhook-signature"]
