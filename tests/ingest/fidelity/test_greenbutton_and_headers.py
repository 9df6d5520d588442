"""Import fidelity (issue 11): real-export quirks imported into a real bpservice over loopback,
asserting the exact readings stored (dates, value, cost) in the meter's unit. Each file is built by
tests/ingest/fidelity/fixtures and mimics the real export named in the test's docstring."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.ingest import IngestError, check_file
from bpsync.ingest.lookup.meter_map import load_meter_map
from bpsync.ingest.run.import_file import ImportOptions, import_file
from tests.importer.conftest import PROFILE
from tests.importer.helpers import server_readings
from tests.ingest.fidelity.fixtures import greenbutton as gb

pytestmark = pytest.mark.anyio
D = dt.date


def user_template(folder: Path, name: str, toml: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.toml").write_text(f'name = "{name}"\n{toml}', encoding="utf-8")
    return folder


async def stored_for(client, ref: str) -> list[tuple]:
    return (await server_readings(client))[load_meter_map(PROFILE)[ref]]


async def test_green_button_gas_bills_across_us_fall_back(client, registered, tmp_path):
    """Mimics a US gas utility's Green Button "Download My Data" feed: hourly therm intervals with
    LocalTimeParameters for US Eastern, and bills whose boundaries the utility writes at midnight
    *standard* time all year (01:00 local while daylight time is on), so each bill appears to end
    on the next bill's first day. The October bill's summary states 1615 therms against 744 therms
    of intervals (a real feed differed by 117 %)."""
    path = tmp_path / "gas_feed.xml"
    iv = gb.intervals(D(2024, 9, 1), D(2024, 12, 31), "America/New_York", 60, 1000)
    bills = gb.monthly_bills(
        [(2024, 9), (2024, 10), (2024, 11), (2024, 12)],
        "Etc/GMT+5",
        costs=[101.5, 202.25, 303.0, 404.75],
        usages=[720, 1615, 721.5, 744],
    )
    path.write_text(gb.feed("GAS-22-8841", iv, uom=169, power=-3, bills=bills, kind=1))
    summary = await import_file(client, PROFILE, path)
    assert (summary.status, summary.accepted, summary.rejected) == ("complete", 4, 0)
    assert await stored_for(client, "GAS-22-8841") == [
        (D(2024, 9, 1), D(2024, 9, 30), 720.0, 101.5),
        (D(2024, 10, 1), D(2024, 10, 31), 744.0, 202.25),
        (D(2024, 11, 1), D(2024, 11, 30), 721.0, 303.0),  # 3 November has 25 hours
        (D(2024, 12, 1), D(2024, 12, 31), 744.0, 404.75),
    ]
    mismatch = [p for p in summary.problems if p["code"] == "summary_mismatch"]
    assert len(mismatch) == 1 and mismatch[0]["severity"] == "warning"
    assert (
        "states 1615 therms but its intervals sum to 744 therms (+117.1 %)"
        in (mismatch[0]["reason"])
    )


async def test_green_button_15_minute_eu_both_transitions(client, registered, tmp_path):
    """Mimics a European smart-meter export converted to Green Button: 15-minute Wh intervals, no
    LocalTimeParameters (the zone comes from the template), bills cut at 00:00 UTC, which is
    01:00 or 02:00 in Berlin. Covers the March (23 h) and October (25 h) changes."""
    folder = user_template(
        tmp_path / "tpl",
        "gb_berlin",
        'format = "greenbutton"\nlayout = "long"\ntimezone = "Europe/Berlin"\n'
        'signature = ["Usage Point", "Consumption"]\n'
        '[meter]\nby = "external_ref"\ncolumn = ["Usage Point"]\n'
        '[columns]\nstart_date = ["Start Date"]\nend_date = ["End Date"]\n'
        'consumption = ["Consumption"]\nunit = ["Unit"]\ncost = ["Cost"]\n'
        'currency = ["Currency"]\n[fixed]\ncurrency = "EUR"\n',
    )
    path = tmp_path / "smart_meter.xml"
    z = "Europe/Berlin"
    iv = gb.intervals(D(2024, 3, 1), D(2024, 4, 30), z, 15, 250)
    iv += gb.intervals(D(2024, 10, 1), D(2024, 11, 30), z, 15, 250)
    months = [(2024, 3), (2024, 4), (2024, 10), (2024, 11)]
    bills = gb.monthly_bills(months, "UTC", costs=[10.0, 20.0, 30.0, 40.0])
    path.write_text(gb.feed("1200023456789", iv, ltp=None, bills=bills))
    options = ImportOptions(template="gb_berlin", template_dirs=[folder])
    summary = await import_file(client, PROFILE, path, options)
    assert (summary.status, summary.accepted, summary.rejected) == ("complete", 4, 0)
    assert await stored_for(client, "1200023456789") == [
        (D(2024, 3, 1), D(2024, 3, 31), 743.0, 10.0),
        (D(2024, 4, 1), D(2024, 4, 30), 720.0, 20.0),
        (D(2024, 10, 1), D(2024, 10, 31), 745.0, 30.0),
        (D(2024, 11, 1), D(2024, 11, 30), 720.0, 40.0),
    ]
    assert not [p for p in summary.problems if p["code"] == "summary_mismatch"]


async def test_two_usage_columns_the_named_one_is_read(client, registered, tmp_path):
    """Mimics a US gas utility's CSV bill history that states usage twice, as metered (CCF) and as
    billed (Therms). The template names the Therms column: the Therms values are stored."""
    folder = user_template(
        tmp_path / "tpl",
        "gas_therms",
        'layout = "long"\ndate_order = "MDY"\n[meter]\nby = "external_ref"\ncolumn = ["Account"]\n'
        '[columns]\nstart_date = ["Service Start"]\nend_date = ["Service End"]\n'
        'consumption = ["Usage (Therms)"]\ncost = ["Amount Due"]\n[fixed]\ncurrency = "USD"\n',
    )
    path = tmp_path / "gas_history.csv"
    path.write_text(
        "Account,Service Start,Service End,Usage (CCF),Usage (Therms),Amount Due\n"
        "GAS-22-8841,01/03/2024,02/01/2024,100,103.7,120.50\n"
        "GAS-22-8841,02/02/2024,03/03/2024,90,93.3,110.25\n",
        encoding="utf-8",
    )
    options = ImportOptions(template="gas_therms", template_dirs=[folder])
    summary = await import_file(client, PROFILE, path, options)
    assert (summary.accepted, summary.rejected) == (2, 0)
    assert await stored_for(client, "GAS-22-8841") == [
        (D(2024, 1, 3), D(2024, 2, 1), 103.7, 120.5),
        (D(2024, 2, 2), D(2024, 3, 3), 93.3, 110.25),
    ]
    # A template that says only "Usage" matches both columns: an error naming both, no pick.
    loose = user_template(
        tmp_path / "tpl2",
        "gas_usage",
        'layout = "long"\ndate_order = "MDY"\n[meter]\nby = "external_ref"\ncolumn = ["Account"]\n'
        '[columns]\nstart_date = ["Service Start"]\nend_date = ["Service End"]\n'
        'consumption = ["Usage"]\n',
    )
    with pytest.raises(IngestError) as err:
        check_file(path, "gas_usage", template_dirs=[loose])
    assert err.value.code == "ambiguous_column"
    assert "'Usage (CCF)' and 'Usage (Therms)'" in err.value.message
