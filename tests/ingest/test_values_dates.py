from __future__ import annotations

import datetime as dt

import pytest

from bpsync.ingest.cells.dates import DateError, DateOrderEvidence, parse_date, parse_month
from bpsync.ingest.cells.values import NumberError, is_blank, parse_header, parse_number


@pytest.mark.parametrize(
    ("text", "decimal", "expected"),
    [
        ("1,234.50", ".", 1234.5),
        ("$1,234.50 ", ".", 1234.5),
        ("£ 12", ".", 12.0),
        ("USD 12.5", ".", 12.5),
        ("1 234,50 €", ",", 1234.5),
        ("1.234.567,8", ",", 1234567.8),
        ("1'234.5", ".", 1234.5),
        ("(42.10)", ".", -42.1),
        ("-7", ".", -7.0),
        ("12.50-", ".", -12.5),
        ("1e3", ".", 1000.0),
        ("0,5", ",", 0.5),
        ("N/A", ".", None),
        ("Not Available", ".", None),
        ("-", ".", None),
        ("", ".", None),
        (12, ".", 12.0),
    ],
)
def test_numbers(text, decimal, expected):
    assert parse_number(text, decimal) == expected


@pytest.mark.parametrize(
    "text", ["1,5", "12,34,5", "abc", "1.2.3", "inf", "2e16", "1,23", "12 kWh"]
)
def test_not_numbers(text):
    with pytest.raises(NumberError):
        parse_number(text, ".")


def test_placeholders():
    assert (
        is_blank(" N/A ")
        and is_blank("#N/A")
        and is_blank("nan")
        and is_blank(None)
        and not is_blank("0")
    )


@pytest.mark.parametrize(
    ("value", "order", "expected"),
    [
        ("2024-01-31", None, dt.date(2024, 1, 31)),
        ("2024/01/31 00:00:00", None, dt.date(2024, 1, 31)),
        ("31/01/2024", None, dt.date(2024, 1, 31)),
        ("01/31/2024", None, dt.date(2024, 1, 31)),
        ("03/04/2024", "DMY", dt.date(2024, 4, 3)),
        ("03/04/2024", "MDY", dt.date(2024, 3, 4)),
        ("31.01.24", None, dt.date(2024, 1, 31)),
        ("31-Jan-2024", None, dt.date(2024, 1, 31)),
        ("Jan 31, 2024", None, dt.date(2024, 1, 31)),
        ("Wed, 31 January 2024", None, dt.date(2024, 1, 31)),
        ("20240131", None, dt.date(2024, 1, 31)),
        (45322, None, dt.date(2024, 1, 31)),  # Excel serial
        ("45322", None, dt.date(2024, 1, 31)),
        (dt.datetime(2024, 1, 31, 13, 5), None, dt.date(2024, 1, 31)),
    ],
)
def test_dates(value, order, expected):
    assert parse_date(value, order) == expected


@pytest.mark.parametrize("value", ["03/04/2024", "2024-02-30", "soon", "", True, 0])
def test_not_dates(value):
    with pytest.raises(DateError):
        parse_date(value)


def test_months():
    assert parse_month("Jan 2024") == (dt.date(2024, 1, 1), dt.date(2024, 1, 31))
    assert parse_month("2024-02") == (dt.date(2024, 2, 1), dt.date(2024, 2, 29))
    assert parse_month("February-24") == (dt.date(2024, 2, 1), dt.date(2024, 2, 29))
    assert parse_month(dt.datetime(2024, 3, 15)) == (dt.date(2024, 3, 1), dt.date(2024, 3, 31))


def test_date_order_evidence():
    ev = DateOrderEvidence()
    for v in ["01/02/2024", "03/04/2024"]:
        ev.observe(v)
    with pytest.raises(DateError, match="day-first or month-first"):
        ev.resolve(None)
    assert ev.resolve("DMY") == ("DMY", None)
    ev.observe("25/04/2024")
    assert ev.resolve("MDY")[0] == "DMY"  # the data decides; the note says so
    ev.observe("04/25/2024")
    with pytest.raises(DateError, match="both"):
        ev.resolve(None)


def test_header_units_and_hints():
    h = parse_header("  Usage/Quantity\n(MBtu (million Btu)) ")
    assert h.key == "usage/quantity" and h.unit == "MMBtu"
    assert parse_header("Gross Floor Area (ft²)").unit == "ft2"
    assert parse_header("Start Date (Required)").key == "start date"
