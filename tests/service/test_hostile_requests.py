"""Hostile input at the service's edges (issue 19, items 2-4): user text in report workbooks,
NUL characters on every surface that reaches the database, trailing-slash redirects under a
forged Host, conditional GETs against an empty bucket."""

from __future__ import annotations

import csv
import io
import zipfile

import httpx
from openpyxl import load_workbook

from tests.conftest import Service
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
