"""The template keys issue 11 added, each exercised: `[fixed] meter`, `decimal = "auto"` refusing
a file that writes both conventions, and `end_date`/`skip_if_filled` round-tripping through TOML."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bpsync.ingest import IngestError, check_file
from bpsync.ingest.understand.templates import load_template, save_template, template_from_dict


def test_fixed_meter_in_a_template(tmp_path: Path):
    t = template_from_dict(
        {
            "name": "one_account",
            "columns": {"start_date": "From", "end_date": "To", "consumption": "kWh Used"},
            "fixed": {"meter": "ACCT-77", "unit": "kWh"},
        }
    )
    path = tmp_path / "usage.csv"
    path.write_text("From,To,kWh Used\n2024-01-01,2024-01-31,300\n", encoding="utf-8")
    _, result = check_file(path, t)
    assert [
        (m, c.start, c.end, c.consumption) for m in result.meters() for c in result.candidates(m)
    ] == [("ACCT-77", dt.date(2024, 1, 1), dt.date(2024, 1, 31), 300.0)]


def test_both_decimal_conventions_in_one_file_are_refused(tmp_path: Path):
    path = tmp_path / "mixed.csv"
    path.write_text(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        'm,2024-01-01,2024-01-31,"1,234.5",kWh\n'
        'm,2024-02-01,2024-02-29,"12,5",kWh\n',
        encoding="utf-8",
    )
    with pytest.raises(IngestError) as err:
        check_file(path, "long_csv")
    assert err.value.code == "ambiguous_decimal"
    assert "'12,5' has a decimal comma but '1,234.5' a decimal point" in err.value.message


def test_new_keys_round_trip(tmp_path: Path):
    t = template_from_dict(
        {
            "name": "rt",
            "end_date": "auto",
            "decimal": "auto",
            "skip_if_filled": ["Meter Consumption ID"],
            "meter": {"by": "external_ref", "column": "Meter ID"},
            "columns": {
                "start_date": "Start Date",
                "end_date": "End Date",
                "consumption": "Usage",
                "meter_type": "Meter Type",
            },
            "fixed": {"meter": "X-1"},
        }
    )
    again = load_template(save_template(t, tmp_path))
    assert (again.end_date, again.decimal, again.skip_if_filled, again.fixed_meter) == (
        "auto",
        "auto",
        ("Meter Consumption ID",),
        "X-1",
    )
    assert again.columns["meter_type"] == ("Meter Type",)
