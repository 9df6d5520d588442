"""Download links are not built from what the client says the host is (issue 14, item 5).

An attacker who can make a victim's client, a cache or a proxy log show a link built from a forged
`Host` or `X-Forwarded-*` header could send the victim's report download to their own server. The
links come from the configured public address, else from the socket the server is bound to; and
`bpservice serve` believes forwarded headers only from proxies it is told about.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from bpservice import cli
from bpservice.app import create_app
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap, service_settings
from tests.service.test_reports import PERIOD, generate, make_building

FORGED = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}


def _report_url(service: Service, headers: dict[str, str]) -> str:
    auth = {"Authorization": f"Bearer {service.test_key}"}
    with httpx.Client(base_url=service.base_url, headers=auth, timeout=30) as client:
        building = make_building(
            client,
            name="Tower A",
            property_name="Riverside House",
            monthly={("electricity", "kWh"): 10_000},
        )
        r = client.post(
            "/v1/reports",
            json={
                "type": "benchmark_certificate",
                "format": "pdf",
                "building_id": building["id"],
                "reporting_period": PERIOD,
            },
        )
        assert r.status_code == 202, r.text
        service.clock.advance(3)
        assert generate(service) == 1
        r = client.get(f"/v1/reports/{r.json()['data']['id']}", headers=headers)
        assert r.status_code == 200, r.text
        return r.json()["data"]["download_url"]


def test_a_forged_host_header_does_not_choose_the_download_host(service: Service) -> None:
    url = _report_url(service, FORGED)
    assert url.startswith(f"{service.base_url}/v1/reports/")
    assert "evil.example" not in url


def test_the_configured_public_address_is_used(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = service_settings(
        tmp_path / "svc.db", clock, public_base_url="https://bp.example.com/"
    )
    app = create_app(settings)
    with LiveServer(app) as server:
        service = _bootstrap(app, clock, server.url)
        url = _report_url(service, FORGED)
    assert url.startswith("https://bp.example.com/v1/reports/")


@pytest.mark.parametrize(
    ("args", "proxy_headers", "allowed"),
    [([], False, ""), (["--trusted-proxies", "10.0.0.5"], True, "10.0.0.5")],
)
def test_serve_believes_forwarded_headers_only_from_named_proxies(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    proxy_headers: bool,
    allowed: str,
) -> None:
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    db = tmp_path / "serve.db"
    result = CliRunner().invoke(
        cli.app, ["serve", "--db", str(db), "--public-url", "https://bp.example.com", *args]
    )
    assert result.exit_code == 0, result.output
    assert seen["proxy_headers"] is proxy_headers
    assert seen["forwarded_allow_ips"] == allowed
    assert seen["app"].state.settings.public_base_url == "https://bp.example.com"


def test_serve_keeps_idle_connections_open_longer_than_clients_pool_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An idle keep-alive connection outlives httpx's pool expiry (5 s; uvicorn's default is
    also 5 s): a client reusing a connection as the service closes it met httpx.ReadError on a
    request the service never saw (200 concurrent writers retrying under load, in CI)."""
    import httpx
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    result = CliRunner().invoke(cli.app, ["serve", "--db", str(tmp_path / "serve.db")])
    assert result.exit_code == 0, result.output
    assert seen["timeout_keep_alive"] >= 2 * httpx.Limits().keepalive_expiry
