"""One table test per reader quirk, on files generated in tmp dirs."""

from __future__ import annotations

import datetime as dt

import pytest
from openpyxl import Workbook

from bpsync.ingest.problems import IngestError
from bpsync.ingest.readers import open_table, read_csv, read_xlsx
from bpsync.ingest.readers.csv import detect_encoding, sniff_delimiter

HEADER = "Meter ID,Start Date,End Date,Consumption,Unit\n"
ROWS = 'mtr_a,2024-01-01,2024-01-31,"1,234.5",kWh\nmtr_a,2024-02-01,2024-02-29,1100,kWh\n'


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ("utf-8", "utf-8"),
        ("utf-8-sig", "utf-8-sig"),
        ("utf-16", "utf-16"),
        ("utf-16-le", "utf-16-le"),
        ("cp1252", "cp1252"),
    ],
)
def test_encodings(csv_file, encoding, expected):
    text = "Meter ID,Start Date,End Date,Consumption,Unit,Note\nmtr_a,2024-01-01,2024-01-31,5,m³,Café £\n"
    if encoding.startswith("utf-16"):
        text = text.replace(",", "\t")
    table = read_csv(csv_file(text, encoding))
    assert table.encoding == expected
    assert table.delimiter == ("\t" if encoding.startswith("utf-16") else ",")
    rows = list(table.rows())
    assert rows[0].cells[4] == "m³" and rows[0].cells[5] == "Café £"


def test_utf8_file_with_stray_cp1252_bytes_late_in_the_file(tmp_path):
    head = HEADER + "mtr_a,2024-01-01,2024-01-31,1,kWh\n" * 20000  # beyond the sniffed sample
    path = tmp_path / "mixed.csv"
    path.write_bytes(head.encode() + "mtr_b,2024-01-01,2024-01-31,2,kWh café\n".encode("cp1252"))
    table = read_csv(path)
    assert table.encoding == "utf-8"
    last = list(table.rows())[-1]
    assert last.cells[4] == "kWh café" and last.number == 20002


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings_and_quoted_newlines(csv_file, newline):
    text = HEADER + 'mtr_a,2024-01-01,2024-01-31,"12",kWh\n"mtr_b",2024-01-01,2024-01-31,"3",kWh\n'
    table = read_csv(csv_file(text.replace("\n", newline)))
    assert [r.cells[0] for r in table.rows()] == ["mtr_a", "mtr_b"]


def test_quoted_field_with_a_line_break_keeps_row_numbers_as_excel_shows_them(csv_file):
    text = HEADER + 'mtr_a,2024-01-01,2024-01-31,1,"k\nWh"\nmtr_b,2024-01-01,2024-01-31,2,kWh\n'
    rows = list(read_csv(csv_file(text)).rows())
    assert [r.number for r in rows] == [2, 3]
    assert rows[0].cells[4] == "k\nWh"


@pytest.mark.parametrize("delim", [",", ";", "\t", "|"])
def test_delimiter_sniffing(csv_file, delim):
    text = (HEADER + ROWS.replace('"1,234.5"', "1234.5")).replace(",", delim)
    table = read_csv(csv_file(text))
    assert table.delimiter == delim
    assert len(list(table.rows())) == 2


def test_semicolons_with_decimal_commas():
    sample = "Meter;Start;End;Usage\nA;01.01.2024;31.01.2024;1,5\nB;01.01.2024;31.01.2024;2\n"
    assert sniff_delimiter(sample) == ";"


def test_ragged_rows_blank_lines_title_rows_and_totals(csv_file):
    text = (
        "Utility export for Riverside Park\n"
        "Generated 2025-01-15\n"
        "\n"
        + HEADER
        + "mtr_a,2024-01-01,2024-01-31,10\n"  # short row
        + "\n,,,,\n"  # blank line and a row of separators
        + "mtr_a,2024-02-01,2024-02-29,11,kWh,extra,cells\n"  # long row
        + "Total,,,21,\n"
    )
    table = read_csv(csv_file(text))
    assert table.header_row == 4
    rows = list(table.rows())
    assert [r.number for r in rows] == [5, 8, 9]
    assert rows[0].cells[4] == ""
    assert rows[1].cells[:5] == ("mtr_a", "2024-02-01", "2024-02-29", "11", "kWh")


def test_empty_and_binary_files_are_refused(csv_file, tmp_path):
    with pytest.raises(IngestError, match="empty"):
        read_csv(csv_file(""))
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\x00\x01\x02\xff" * 100)
    with pytest.raises(IngestError):
        read_csv(binary)


def test_detect_utf16_without_bom():
    assert detect_encoding("a\tb\n".encode("utf-16-le")) == "utf-16-le"
    assert detect_encoding("a\tb\n".encode("utf-16-be")) == "utf-16-be"


def test_xlsx_title_rows_merged_group_header_and_header_cleanup(tmp_path):
    wb = Workbook()
    ws = wb.active
    ws.title = "Bills"
    ws.append(["Riverside Park bills"])
    ws.append([])
    ws.append(["Meter", None, "Period", None, "Usage", None])
    ws.merge_cells("A3:B3")
    ws.merge_cells("C3:D3")
    ws.append(
        [
            "Meter\nID",
            "Account  No ",
            "Start Date (Required)",
            "End Date*",
            "Usage\n(kWh)",
            "Cost ($)",
            "Usage",
        ]
    )
    ws.append(["mtr_a", 1, dt.datetime(2024, 1, 1), 45322, " 1,234.50 ", "$99.10", 3])
    path = tmp_path / "b.xlsx"
    wb.save(path)
    table = read_xlsx(path)
    assert table.header_row == 4
    texts = [h.text for h in table.headers]
    assert texts == [
        "Meter ID",
        "Account No",
        "Start Date",
        "End Date",
        "Usage (kWh)",
        "Cost ($)",
        "Usage",  # only identical texts get a suffix: "Usage" and "Usage (kWh)" differ
    ]
    usage = table.headers[4]
    assert (usage.key, usage.unit) == ("usage", "kWh")
    assert (table.headers[5].key, table.headers[5].currency) == ("cost", "USD")
    [row] = list(table.rows())
    assert row.number == 5 and row.cells[2] in (dt.date(2024, 1, 1), dt.datetime(2024, 1, 1))


def test_xlsx_sheet_choice_hidden_sheets_and_listing(xlsx):
    data = [
        ["Meter ID", "Start Date", "End Date", "Consumption"],
        ["mtr_a", "2024-01-01", "2024-01-31", 1],
    ]
    path = xlsx({"Notes": [["Read me first"]], "Helper": data, "Data": data}, hidden=("Helper",))
    table = read_xlsx(path, expected={"meter id", "start date", "end date", "consumption"})
    assert table.sheet == "Data"
    assert "Helper (hidden, ignored)" in table.other_sheets and "Notes" in table.other_sheets
    assert (
        read_xlsx(path, include_hidden=True, expected={"meter id", "consumption"}).sheet == "Helper"
    )
    assert read_xlsx(path, sheet="helper").sheet == "Helper"  # asked for by name
    with pytest.raises(IngestError, match="no sheet named"):
        read_xlsx(path, sheet="Missing")


def test_xlsx_stops_in_tens_of_thousands_of_formatted_blank_rows(tmp_path):
    wb = Workbook()
    ws = wb.active
    ws.append(["Meter ID", "Start Date", "End Date", "Consumption"])
    ws.append(["mtr_a", "2024-01-01", "2024-01-31", 1])
    for r in range(3, 40_000, 7):
        ws.cell(row=r, column=1).number_format = "0.00"  # styled but empty
    path = tmp_path / "blank.xlsx"
    wb.save(path)
    rows = list(read_xlsx(path).rows())
    assert len(rows) == 1


def test_open_table_reads_old_xls_and_names_a_damaged_one(tmp_path):
    """An OLE file (.xls) is a workbook by its first bytes (calamine reads it,
    tests/ingest/test_workbooks.py); a damaged one is a one-line error naming the file."""
    path = tmp_path / "old.dat"
    path.write_bytes(b"\xd0\xcf\x11\xe0" + b"\x00" * 100)
    with pytest.raises(IngestError, match=r"old\.dat: not a readable workbook"):
        open_table(path)


def test_the_readers_package_names_the_workbook_suffixes_of_the_workbook_reader() -> None:
    """`readers.WORKBOOK_SUFFIXES` is written out so the package loads without the workbook
    reader (and pandas): the two lists are one."""
    from bpsync.ingest import readers
    from bpsync.ingest.readers import xlsx

    assert readers.WORKBOOK_SUFFIXES == xlsx.WORKBOOK_SUFFIXES
