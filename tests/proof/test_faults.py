"""The fault-injection mode and the TCP proxy: each kind happens, and a plain httpx client sees it
as the failure it emulates (status, timeout, protocol error); the nasty `drop_after` case really
stored the write. Faults touch only /v1, are off by default, and follow their seed."""

from __future__ import annotations

import time

import httpx
import pytest
from typer.testing import CliRunner

from bpservice.cli import app as cli_app
from bpservice.db.models import Property
from bpservice.faults import FAULT_KINDS, FaultInjector, FaultSettings, parse_kinds
from tests.conftest import Service
from tests.proof.conftest import FaultyFactory, count_rows, http
from tests.proof.proxy import TCPProxy
from tests.service.conftest import PROPERTY


def test_faults_are_off_by_default(service: Service) -> None:
    assert service.app.state.settings.faults.enabled is False
    assert service.app.state.fault_injector is None


@pytest.mark.parametrize(
    ("kind", "status", "code"),
    [
        ("http_500", 500, "internal_error"),
        ("http_503", 503, "service_unavailable"),
        ("rate_limit", 429, "rate_limit_exceeded"),
    ],
)
def test_error_answers_do_not_run_the_request(
    faulty_service: FaultyFactory, kind: str, status: int, code: str
) -> None:
    service = faulty_service(rate=1.0, kinds=(kind,))
    with service.client() as api:
        r = api.post("/v1/properties", json=PROPERTY)
    assert r.status_code == status
    assert r.json()["error"]["code"] == code
    if status in (429, 503):
        assert r.headers["Retry-After"] == "1"
    if status == 429:
        assert r.json()["error"]["retry_after"] == 1
    assert count_rows(service, Property) == 0
    assert service.app.state.fault_injector.counts == {kind: 1}


def test_bad_gateway_is_a_proxy_page(faulty_service: FaultyFactory) -> None:
    service = faulty_service(rate=1.0, kinds=("http_502",))
    with service.client() as api:
        r = api.get("/v1/properties")
    assert r.status_code == 502 and "Bad Gateway" in r.text
    assert r.headers["content-type"] == "text/html"


def test_drop_before_loses_the_connection_and_runs_nothing(
    faulty_service: FaultyFactory,
) -> None:
    service = faulty_service(rate=1.0, kinds=("drop_before",))
    # Depending on timing the closed connection surfaces as a protocol error or a read reset.
    with service.client() as api, pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        api.post("/v1/properties", json=PROPERTY)
    assert count_rows(service, Property) == 0


def test_drop_after_commits_then_loses_the_answer(faulty_service: FaultyFactory) -> None:
    service = faulty_service(rate=1.0, kinds=("drop_after",))
    with service.client() as api, pytest.raises(httpx.RemoteProtocolError):
        api.post("/v1/properties", json=PROPERTY)
    # The client heard nothing, yet the property is stored: the case clients must reconcile.
    assert count_rows(service, Property) == 1


def test_hang_outlasts_the_client_timeout_then_runs(faulty_service: FaultyFactory) -> None:
    service = faulty_service(rate=1.0, kinds=("hang",), hang_seconds=0.4)
    with http(service, timeout=0.1) as api, pytest.raises(httpx.ReadTimeout):
        api.post("/v1/properties", json=PROPERTY)
    # A stalled server still finishes the work after the client has given up.
    deadline = time.monotonic() + 5
    while count_rows(service, Property) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert count_rows(service, Property) == 1


def test_only_v1_is_touched(faulty_service: FaultyFactory) -> None:
    service = faulty_service(rate=1.0, kinds=("http_500",))
    with httpx.Client(base_url=service.base_url) as plain:
        for _ in range(5):
            assert plain.get("/healthz").status_code == 200
        assert plain.get("/openapi.json").status_code == 200
    assert service.app.state.fault_injector.requests == 0


def test_the_share_and_the_sequence_follow_rate_and_seed() -> None:
    settings = FaultSettings(rate=0.1, seed=7)
    first, second = FaultInjector(settings), FaultInjector(settings)
    drawn = [first.draw() for _ in range(5000)]
    assert drawn == [second.draw() for _ in range(5000)]
    hits = [k for k in drawn if k is not None]
    assert 0.08 < len(hits) / len(drawn) < 0.12
    assert set(hits) == set(FAULT_KINDS)  # every kind happens
    other = FaultInjector(FaultSettings(rate=0.1, seed=8))
    assert [other.draw() for _ in range(5000)] != drawn


def test_ten_percent_of_live_requests_fail(faulty_service: FaultyFactory) -> None:
    kinds = ("http_500", "http_502", "http_503", "rate_limit")
    service = faulty_service(rate=0.1, kinds=kinds, seed=3)
    statuses = []
    with service.client() as api:
        for _ in range(300):
            statuses.append(api.get("/v1/properties").status_code)
    failed = [s for s in statuses if s != 200]
    assert 15 <= len(failed) <= 45
    assert set(failed) == {500, 502, 503, 429}
    assert sum(service.app.state.fault_injector.counts.values()) == len(failed)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rate": 1.5}, "between 0 and 1"),
        ({"rate": 0.1, "kinds": ("meteor",)}, "unknown fault kinds"),
        ({"rate": 0.1, "kinds": ()}, "at least one"),
        ({"hang_seconds": -1}, "must not be negative"),
    ],
)
def test_fault_settings_are_checked(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultSettings(**settings)


def test_parse_kinds() -> None:
    assert parse_kinds(None) == FAULT_KINDS
    assert parse_kinds(" http_500, drop_after ,") == ("http_500", "drop_after")


def test_serve_refuses_bad_fault_options() -> None:
    result = CliRunner().invoke(cli_app, ["serve", "--faults", "0.1", "--fault-kinds", "meteor"])
    assert result.exit_code == 1
    assert "unknown fault kinds ['meteor']" in result.output
    assert "Traceback" not in result.output


# --- the TCP proxy: real resets and slow links --------------------------------------------------

NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)


def test_proxy_reset_is_a_connection_error(service: Service) -> None:
    with TCPProxy(("127.0.0.1", int(service.base_url.rsplit(":", 1)[1]))) as proxy:
        proxy.plan("reset", "pass")
        with httpx.Client(base_url=proxy.url, limits=NO_KEEPALIVE) as client:
            # Where the RST meets the client depends on timing on a loaded machine: while it
            # still sets the connection up, writes the request or reads the answer. Each is a
            # connection error, never a timeout or an HTTP answer.
            resets = (httpx.ConnectError, httpx.WriteError, httpx.ReadError)
            with pytest.raises((*resets, httpx.RemoteProtocolError)):
                client.get("/healthz")
            assert client.get("/healthz").status_code == 200
        assert proxy.taken == {"reset": 1, "pass": 1}


def test_proxy_loses_the_answer_after_the_server_ran_it(service: Service) -> None:
    port = int(service.base_url.rsplit(":", 1)[1])
    headers = {"Authorization": f"Bearer {service.test_key}"}
    with (
        TCPProxy(("127.0.0.1", port), default="reset_after_request") as proxy,
        httpx.Client(base_url=proxy.url, headers=headers, limits=NO_KEEPALIVE) as client,
        pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)),
    ):
        client.post("/v1/properties", json=PROPERTY)
    assert count_rows(service, Property) == 1


def test_proxy_slow_link_trips_a_short_timeout(service: Service) -> None:
    port = int(service.base_url.rsplit(":", 1)[1])
    headers = {"Authorization": f"Bearer {service.test_key}"}
    with TCPProxy(("127.0.0.1", port), default="slow", slow_chunk=64, slow_delay=0.1) as proxy:
        with (
            httpx.Client(
                base_url=proxy.url, headers=headers, limits=NO_KEEPALIVE, timeout=0.05
            ) as client,
            pytest.raises(httpx.ReadTimeout),
        ):
            client.get("/v1/properties")
        # The same link with patience delivers the whole answer.
        with httpx.Client(base_url=proxy.url, headers=headers, timeout=5) as client:
            started = time.monotonic()
            r = client.get("/healthz")
            assert r.status_code == 200 and r.json()["status"] == "ok"
            assert time.monotonic() - started >= 0.1
