"""Webhook SSRF (issue 14 item 1): a tenant's URL must not make the service POST into its own
network. Refused at create/update in every spelling of a private address, and at connect time
after resolution (a name pointing at loopback, a DNS answer that changes), with nothing sent;
the server setting `allow_private_webhooks` (on in the rest of the suite) lifts it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpcore
import pytest

from bpservice.app import create_app
from bpservice.netguard import DestinationRefused, _GuardedBackend, check_webhook_url
from bpservice.workers.webhooks import DeliveryDeps, deliver_due
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap, service_settings
from tests.service.test_webhooks import Receiver, history, submit_reading, subscribe

EVENTS = ["meter.reading.created"]
# Every spelling the issue lists, and the neighbours a filter tends to miss.
PRIVATE_HOSTS = [
    "127.0.0.1",
    "localhost",
    "LOCALHOST.",
    "api.localhost",
    "[::1]",
    "0.0.0.0",
    "127.1",
    "2130706433",
    "0x7f000001",
    "017700000001",
    "0177.0.0.1",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "[::]",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
    "[fe80::1]",
    "[fd12:3456::1]",
    "224.0.0.1",
    "[ff02::1]",
    "[64:ff9b::7f00:1]",
    "[2002:7f00:1::1]",
]


class Names:
    """An injected resolver: what each host name resolves to right now (and every question)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        queue = self.answers[host]
        return queue.pop(0) if len(queue) > 1 else queue[0]


@pytest.fixture
def names() -> Names:
    return Names({})


@pytest.fixture
def guarded(tmp_path: Path, clock: FakeClock, names: Names) -> Iterator[Service]:
    """The service as deployed: private webhook targets refused, names resolved by `names`."""
    settings = service_settings(
        tmp_path / "svc.db",
        clock,
        allow_private_webhooks=False,
        webhook_resolver=names,
    )
    app = create_app(settings)
    with LiveServer(app) as server:
        yield _bootstrap(app, clock, server.url)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def _refused(response: Any) -> dict:
    assert response.status_code == 422, response.text
    [detail] = response.json()["error"]["details"]
    assert (detail["field"], detail["code"]) == ("url", "destination_not_allowed")
    return detail


@pytest.mark.parametrize("host", PRIVATE_HOSTS)
def test_every_private_spelling_is_refused_at_create_and_update(guarded: Service, host: str):
    with guarded.client(guarded.test_key) as api:
        _refused(api.post("/v1/webhooks", json={"url": f"http://{host}:8080/h", "events": EVENTS}))
        sub = subscribe(api, "https://hooks.example.com/in", EVENTS)
        _refused(api.patch(f"/v1/webhooks/{sub['id']}", json={"url": f"http://{host}/h"}))
        assert (
            api.get(f"/v1/webhooks/{sub['id']}")
            .json()["data"]["url"]
            .startswith("https://hooks.example.com")
        )


def test_https_to_loopback_with_a_live_key_is_refused_for_the_address(guarded: Service):
    with guarded.client(guarded.live_key) as api:
        detail = _refused(
            api.post("/v1/webhooks", json={"url": "https://127.0.0.1:8443/h", "events": EVENTS})
        )
    assert "loopback" in detail["message"]


def test_public_addresses_and_names_are_accepted():
    for url in (
        "https://8.8.8.8/h",
        "https://[2606:4700:4700::1111]/h",
        "https://hooks.example.com/h",
        "http://localhost.example.com/h",  # only the localhost name itself and its subdomains
    ):
        check_webhook_url(url)
    check_webhook_url("http://127.0.0.1/h", allow_private=True)
    with pytest.raises(DestinationRefused):
        check_webhook_url("http://127.0.0.1/h")


def test_a_name_resolving_to_loopback_is_refused_at_connect_and_nothing_is_sent(
    guarded: Service, names: Names, receiver: Receiver
):
    port = receiver.server.server_address[1]
    names.answers["hooks.tenant.example"] = [["127.0.0.1"]]
    names.answers["mixed.tenant.example"] = [["93.184.215.14", "127.0.0.1"]]
    with guarded.client(guarded.test_key) as api:
        one = subscribe(api, f"http://hooks.tenant.example:{port}/h", EVENTS)
        two = subscribe(api, f"http://mixed.tenant.example:{port}/h", EVENTS)
        submit_reading(api)
        assert deliver_due(guarded.app, guarded.clock()) == 2
        for sub in (one, two):
            [attempt] = history(api, sub["id"])[0]["attempts"]
            assert attempt["status_code"] is None and attempt["response_body"] is None
            assert attempt["failure_reason"] == "connection_error"
            assert "resolves to a loopback address" in attempt["error_message"]
    assert receiver.received == []  # no socket was opened to it
    # deliveries run concurrently: each name asked once, in either order
    assert sorted(names.asked) == ["hooks.tenant.example", "mixed.tenant.example"]


class _Recording(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.connected: list[str] = []

    def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        self.connected.append(host)
        raise httpcore.ConnectError("recorded")


def test_the_connection_goes_to_the_checked_address_so_rebinding_cannot_swap_it():
    """DNS rebinding: the name answers a public address for the check, then loopback. The
    backend connects to the address it checked (never re-resolving), and the next connection's
    answer is checked again and refused."""
    names = Names({"rebind.example": [["93.184.215.14"], ["127.0.0.1"]]})
    backend = _GuardedBackend(names)
    recording = _Recording()
    backend._inner = recording  # type: ignore[assignment]
    with pytest.raises(httpcore.ConnectError):
        backend.connect_tcp("rebind.example", 443)
    assert recording.connected == ["93.184.215.14"]
    with pytest.raises(DestinationRefused):
        backend.connect_tcp("rebind.example", 443)
    assert recording.connected == ["93.184.215.14"]
    with pytest.raises(DestinationRefused):
        backend.connect_tcp("2130706433", 80)  # literal spellings never reach the resolver
    assert names.asked == ["rebind.example", "rebind.example"]


def test_a_url_stored_before_the_rule_is_refused_at_connect(guarded: Service, receiver: Receiver):
    """A subscription already pointing at loopback (created when the setting was on, or before
    the upgrade) is stopped by the connect-time check."""
    with guarded.client(guarded.test_key) as api:
        sub = subscribe(api, "https://hooks.example.com/in", EVENTS)
        with guarded.app.state.db.write() as session:
            from bpservice.db.webhook_models import WebhookSubscription

            session.get(WebhookSubscription, sub["id"]).url = receiver.url
        submit_reading(api)
        deliver_due(guarded.app, guarded.clock())
        [attempt] = history(api, sub["id"])[0]["attempts"]
    assert attempt["failure_reason"] == "connection_error"
    assert "loopback" in attempt["error_message"]
    assert receiver.received == []


def test_connection_errors_say_nothing_about_the_network(service: Service, api: Any):
    """With private targets allowed (local testing), failures are fixed sentences: no errno
    text, resolver message or address that would map the service's network."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = subscribe(api, f"http://127.0.0.1:{port}/h", EVENTS)
    unresolvable = subscribe(api, "http://no-such-host.invalid/h", EVENTS)
    submit_reading(api)
    deliver_due(DeliveryDeps(db=service.app.state.db, allow_private=True), service.clock())
    [a] = history(api, refused["id"])[0]["attempts"]
    [b] = history(api, unresolvable["id"])[0]["attempts"]
    assert (a["failure_reason"], a["error_message"]) == (
        "connection_refused",
        "The receiver refused the connection.",
    )
    assert (b["failure_reason"], b["error_message"]) == (
        "connection_error",
        "Could not connect to the receiver.",
    )


def test_the_reply_excerpt_is_capped_and_sanitised(service: Service, api: Any, receiver: Receiver):
    receiver.status = 500
    receiver.reply = b"bad\x1b[31m\x00\x07" + b"x" * 5000
    sub = subscribe(api, receiver.url, EVENTS)
    submit_reading(api)
    deliver_due(service.app, service.clock())
    [attempt] = history(api, sub["id"])[0]["attempts"]
    body = attempt["response_body"]
    assert body.startswith("bad\ufffd[31m\ufffd\ufffd") and len(body.encode()) <= 1024 + 6
    assert "\x1b" not in body and "\x00" not in body
