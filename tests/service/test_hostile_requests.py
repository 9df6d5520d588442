"""Hostile input at the service's edges (issue 33, items 2-4): user text in report workbooks,
NUL characters on every surface that reaches the database, trailing-slash redirects under a
forged Host, conditional GETs against an empty bucket."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from openpyxl import load_workbook
from sqlalchemy import event

from bpservice.app import create_app
from tests.conftest import FakeClock, LiveServer, Service, _bootstrap, service_settings
from tests.service.conftest import PROPERTY, ServiceFactory
from tests.service.test_core_limits import remaining
from tests.service.test_reports import complete, download, make_building

# --- item 2: user text is written as text cells -----------------------------------------------

EVIL = '=HYPERLINK("http://x","y")'


def _sheet_xml(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return "".join(
            z.read(name).decode("utf-8")
            for name in z.namelist()
            if name.startswith("xl/worksheets/sheet")
        )


def test_user_text_in_a_workbook_is_text_never_a_formula(
    service: Service, api: httpx.Client
) -> None:
    names = ["=1+1", "+44 20", "-minus", "@SUM(A1)"]
    for name in names:
        make_building(api, name=name, monthly={("electricity", "kWh"): 1000})
    template = api.post(
        "/v1/reports/templates",
        json={"name": EVIL, "title": EVIL, "columns": ["building_name", "gfa_m2"]},
    )
    assert template.status_code == 201, template.text
    template_id = template.json()["data"]["id"]

    report = complete(api, service, type="custom", format="xlsx", template_id=template_id)
    data = download(service, report)
    assert "<f>" not in _sheet_xml(data) and "<f " not in _sheet_xml(data)
    wb = load_workbook(io.BytesIO(data))
    for sheet in ("Summary", "Report"):
        cell = wb[sheet]["A1"]
        assert (cell.value, cell.data_type) == (EVIL, "s"), sheet
    written = {
        row[0].value: row[0].data_type
        for row in wb["Report"].iter_rows(min_row=4)
        if row[0].value in names
    }
    # exactly what the user typed: no visible apostrophe, and a string cell
    assert written == dict.fromkeys(names, "s")

    # CSV has no cell types: there the leading apostrophe is the neutralisation, and it stays.
    report = complete(api, service, type="custom", format="csv", template_id=template_id)
    rows = list(csv.reader(io.StringIO(download(service, report).decode("utf-8-sig"))))
    assert sorted(r[0] for r in rows[1:]) == sorted("'" + n for n in names)


# --- item 3: NUL never reaches the database -------------------------------------------------------

NUL = "\x00"


def _refused(r: httpx.Response, field: str | None = None) -> None:
    """A NUL is answered 422 validation_error naming the field (404 for an id in the path)."""
    assert r.status_code in (404, 422), (r.request.method, r.request.url, r.status_code, r.text)
    error = r.json()["error"]
    if r.status_code == 404:
        assert error["code"] == "not_found", r.text
        return
    assert error["code"] == "validation_error", r.text
    if field is not None:
        assert field in [d["field"] for d in error["details"]], r.text


def test_nul_in_ids_filters_and_bodies_is_refused_on_every_backend(
    service: Service, api: httpx.Client
) -> None:
    building = make_building(api, monthly={("electricity", "kWh"): 1000})
    hook = api.post(
        "/v1/webhooks", json={"url": "https://example.com/hook", "events": ["*"]}
    ).json()["data"]

    # ids in the path
    _refused(api.get(f"/v1/buildings/{building['id']}%00"))
    _refused(api.get("/v1/reports/rpt_%00"))
    # filters and other query parameters
    for path, params, field in (
        ("/v1/meters", {"filter[id]": f"mtr_{NUL}"}, "filter[id]"),
        ("/v1/meters", {"filter[building_id]": NUL}, "filter[building_id]"),
        ("/v1/readings", {"filter[meter_id]": f"mtr_{NUL}"}, "filter[meter_id]"),
        (f"/v1/webhooks/{hook['id']}/deliveries", {"filter[event_id]": NUL}, "filter[event_id]"),
        ("/v1/properties", {"sort": f"name{NUL}"}, "sort"),
    ):
        _refused(api.get(path, params=params), field)
    # JSON string values, at any depth
    period = {"start": "2025-01-01", "end": "2025-12-31"}
    for path, body, field in (
        (
            "/v1/reports",
            {
                "type": "benchmark_certificate",
                "format": "pdf",
                "building_id": f"bld_{NUL}",
                "reporting_period": period,
            },
            "building_id",
        ),
        (
            "/v1/reports",
            {
                "type": "custom",
                "format": "csv",
                "template_id": f"rtp_{NUL}",
                "reporting_period": period,
            },
            "template_id",
        ),
        (
            "/v1/users/invite",
            {"email": "new@example.com", "role": "viewer", "property_access": [f"prp_{NUL}"]},
            "property_access[0]",
        ),
        ("/v1/webhooks", {"url": f"https://example.com/{NUL}", "events": ["*"]}, "url"),
    ):
        _refused(api.post(path, json=body), field)
    _refused(api.patch(f"/v1/webhooks/{hook['id']}", json={"url": f"https://x.example/{NUL}"}))
    # nothing was stored by any of them
    assert api.get("/v1/webhooks").json()["meta"]["total"] == 1
    assert api.get("/v1/users").json()["meta"]["total"] == 1


def test_nul_in_an_uploaded_meter_id_refuses_that_row(api: httpx.Client) -> None:
    building = make_building(api)
    meter = api.post(
        f"/v1/buildings/{building['id']}/meters", json={"type": "electricity", "unit": "kWh"}
    ).json()["data"]
    upload = (
        "meter_id,start_date,end_date,consumption\r\n"
        f"{meter['id']}{NUL},2025-01-01,2025-01-31,100\r\n"
        f"{meter['id']},2025-02-01,2025-02-28,100\r\n"
    )
    r = api.post("/v1/readings/upload", content=upload, headers={"Content-Type": "text/csv"})
    assert r.status_code == 201, r.text
    result = r.json()["data"]
    assert (result["accepted"], result["rejected"]) == (1, 1)
    (error,) = result["errors"]
    assert (error["index"], error["field"], error["code"]) == (0, "meter_id", "validation_error")
    assert NUL not in (error["meter_id"] or "")


def test_nul_in_oauth_parameters_is_refused_in_oauths_own_formats(service: Service) -> None:
    from tests.service.test_oauth import authorize_query, hidden_token, register_app

    app = register_app(service)
    with httpx.Client(base_url=service.base_url, follow_redirects=False) as browser:
        # the authorization request: an error page, never a redirect
        for field in ("client_id", "redirect_uri", "state", "scope"):
            r = browser.get(authorize_query(app, **{field: f"x{NUL}"}))
            assert r.status_code == 400 and "location" not in r.headers, (field, r.text)
        # the sign-in form
        page = browser.get(authorize_query(app))
        assert page.status_code == 200, page.text
        r = browser.post(
            "/oauth/authorize/login",
            data={
                "form_token": hidden_token(page.text),
                "email": f"ana{NUL}@example.com",
                "password": "correct horse battery staple",
            },
        )
        assert r.status_code == 400, r.text
        # the token endpoint, JSON and form-encoded, and Basic credentials
        body = {
            "grant_type": "refresh_token",
            "refresh_token": f"rt_{NUL}",
            "client_id": app.client_id,
            "client_secret": app.client_secret,
        }
        for sent in (
            browser.post("/oauth/token", json=body),
            browser.post("/oauth/token", data=body),
            browser.post("/oauth/token", json={**body, "client_id": f"{app.client_id}{NUL}"}),
            browser.post(
                "/oauth/token",
                data={"grant_type": "refresh_token", "refresh_token": "rt_x"},
                auth=(f"cli{NUL}", "secret"),
            ),
        ):
            assert sent.status_code in (400, 401), sent.text
            assert sent.json()["error"] in ("invalid_request", "invalid_client"), sent.text


# --- item 4: redirects and conditional GETs -------------------------------------------------------


def test_trailing_slash_redirect_never_points_at_the_host_header(api: httpx.Client) -> None:
    r = api.get("/v1/reports/?page=2", headers={"Host": "evil.example"})
    assert r.status_code == 307, r.text
    assert r.headers["location"] == "/v1/reports?page=2"
    # OAuth's own redirects are the application's business and keep their absolute address
    assert "evil.example" not in r.headers["location"]


def test_trailing_slash_redirect_uses_the_configured_public_address(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = service_settings(tmp_path / "svc.db", clock, public_base_url="https://bp.example/")
    app = create_app(settings)
    with LiveServer(app) as server:
        service = _bootstrap(app, clock, server.url)
        with service.client() as api:
            r = api.get("/v1/properties/", headers={"Host": "evil.example"})
    assert r.status_code == 307, r.text
    assert r.headers["location"] == "https://bp.example/v1/properties"


class StatementCounter:
    """Counts the SQL statements the service runs: a handler that runs reads the database."""

    def __init__(self, service: Service) -> None:
        self.count = 0
        self.engine = service.app.state.db.engine
        event.listen(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, *_: Any) -> None:
        self.count += 1

    def during(self, send: Callable[[], httpx.Response]) -> tuple[httpx.Response, int]:
        before = self.count
        response = send()
        return response, self.count - before


def test_an_empty_bucket_refuses_conditional_gets_before_any_handler_runs(
    scaled_service: ServiceFactory,
) -> None:
    service = scaled_service(per_key=3)
    counter = StatementCounter(service)
    with service.client() as api:
        issued = api.get("/v1/users").headers["ETag"]
        stale = api.get("/v1/properties").headers["ETag"]
        api.post("/v1/properties", json=PROPERTY)  # changes the list; the bucket is now empty

        plain, baseline = counter.during(lambda: api.get("/v1/properties"))
        assert plain.status_code == 429
        # a tag the service never gave: refused without running the handler
        for made_up in ('"made-up"', 'W/"made-up", "other"', f'"{"0" * 32}"'):
            r, statements = counter.during(
                lambda tag=made_up: api.get("/v1/properties", headers={"If-None-Match": tag})
            )
            assert r.status_code == 429 and statements == baseline, made_up
        # a tag given for another URL is no better
        r, statements = counter.during(
            lambda: api.get("/v1/properties", headers={"If-None-Match": issued})
        )
        assert r.status_code == 429 and statements == baseline
        # decisions D30: a tag given for this URL, data unchanged: still 304, not counted
        r = api.get("/v1/users", headers={"If-None-Match": issued})
        assert r.status_code == 304 and remaining(r) == 0
        # a tag given for this URL whose data has changed since: checked once, then forgotten
        assert api.get("/v1/properties", headers={"If-None-Match": stale}).status_code == 429
        r, statements = counter.during(
            lambda: api.get("/v1/properties", headers={"If-None-Match": stale})
        )
        assert r.status_code == 429 and statements == baseline


def test_whole_numbers_written_with_a_fraction_are_integers(api: httpx.Client) -> None:
    """JSON Schema (and so the document's `integer`) counts 4.0 as the integer 4."""
    prop = api.post("/v1/properties", json=PROPERTY).json()["data"]
    body = {"name": "B", "primary_use_type": "office", "gfa_m2": 100, "year_built": 1990.0}
    r = api.post(f"/v1/properties/{prop['id']}/buildings", json={**body, "floors": 4.0})
    assert r.status_code == 201, r.text
    assert r.json()["data"]["floors"] == 4 and r.json()["data"]["year_built"] == 1990
    for floors in (4.5, "4", True, 0.0):
        r = api.post(f"/v1/properties/{prop['id']}/buildings", json={**body, "floors": floors})
        assert r.status_code == 422 and r.json()["error"]["details"][0]["field"] == "floors"
