"""Workbooks through calamine: the formats it adds (.xls, .ods), what it does not give by itself
(error cells, the 1904 date system), true row and column numbers, and the openpyxl fallback
giving the same outcome on the differential corpus."""

from __future__ import annotations

import datetime as dt
import tempfile
import zipfile
from pathlib import Path

import pytest
import python_calamine
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl import Workbook

from bpsync.ingest import MeterCatalog, MeterInfo, check_file
from bpsync.ingest.readers import detect_format, read_xlsx
from bpsync.ingest.readers import xlsx as xlsx_reader

CATALOG = MeterCatalog.build([MeterInfo("mtr_1", "electricity", "kWh")])
HEADER = ["Meter ID", "Start Date", "End Date", "Consumption", "Unit"]


def _stored(path: Path) -> tuple[list, list]:
    _prepared, result = check_file(path, "long_csv", catalog=CATALOG, today=dt.date(2026, 1, 1))
    readings = [(c.row, c.start, c.end, c.consumption) for c in result.all_candidates()]
    problems = [(p.code, p.where.row, p.where.column, p.value) for p in result.errors]
    return readings, problems


def test_error_cells_keep_their_text(tmp_path: Path) -> None:
    """A formula that failed in Excel (#DIV/0!, #VALUE!) is refused as not a number, naming the
    error, never read as an empty cell (calamine alone reads errors as "")."""
    wb = Workbook()
    ws = wb.active
    ws.append([*HEADER, "Cost"])
    ws.append(["mtr_1", dt.date(2024, 1, 1), dt.date(2024, 1, 31), 100, "kWh", 12])
    ws.append(["mtr_1", dt.date(2024, 2, 1), dt.date(2024, 2, 29), "#DIV/0!", "kWh", 12])
    ws.append(["mtr_1", dt.date(2024, 3, 1), dt.date(2024, 3, 31), 120, "kWh", "#VALUE!"])
    ws.append(["mtr_1", dt.date(2024, 4, 1), dt.date(2024, 4, 30), 130, "kWh", "#N/A"])
    path = tmp_path / "errors.xlsx"
    wb.save(path)
    assert b't="e"' in zipfile.ZipFile(path).read("xl/worksheets/sheet1.xml")
    assert not any("read as empty cells" in n for n in read_xlsx(path).notes)
    readings, problems = _stored(path)
    # #N/A reads as "not available", as PM exports write it: the reading goes without a cost.
    assert readings == [
        (2, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 100.0),
        (5, dt.date(2024, 4, 1), dt.date(2024, 4, 30), 130.0),
    ]
    assert problems == [
        ("bad_consumption", 3, "Consumption", "#DIV/0!"),
        ("bad_cost", 4, "Cost", "#VALUE!"),
    ]


def test_rows_and_columns_are_excel_s_own(tmp_path: Path) -> None:
    """Data starting at C4 under a title in B1: rows and columns are counted from A1."""
    wb = Workbook()
    ws = wb.active
    ws["B1"] = "Bills exported 2024"
    for i, value in enumerate(HEADER):
        ws.cell(row=4, column=3 + i, value=value)
    for i, value in enumerate(["mtr_1", dt.date(2024, 1, 1), dt.date(2024, 1, 31), "x", "kWh"]):
        ws.cell(row=6, column=3 + i, value=value)
    path = tmp_path / "offset.xlsx"
    wb.save(path)
    table = read_xlsx(path, expected={"meter id", "start date", "consumption"})
    assert table.header_row == 4
    assert [h.index for h in table.headers][2:] == [2, 3, 4, 5, 6]
    _, problems = _stored(path)
    assert problems == [("bad_consumption", 6, "Consumption", "x")]


def test_1904_date_system_serials(tmp_path: Path) -> None:
    """A Mac workbook (1904 date system) with serials typed into general cells."""
    wb = Workbook()
    wb.epoch = dt.datetime(1904, 1, 1)
    ws = wb.active
    ws.append(HEADER)
    ws.append(["mtr_1", 43830, 43860, 10, "kWh"])  # 1904 serials: 2024-01-01 .. 2024-01-31
    path = tmp_path / "mac.xlsx"
    wb.save(path)
    readings, _ = _stored(path)
    assert readings == [(2, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 10.0)]


def test_legacy_xls(tmp_path: Path) -> None:
    """An Excel 97-2003 .xls (BIFF8), as older utility portals still export: dates, a number
    typed as text with separators, a hidden sheet."""
    import xlwt

    book = xlwt.Workbook()
    ws = book.add_sheet("Bills")
    dates = xlwt.easyxf(num_format_str="YYYY-MM-DD")
    for c, value in enumerate(HEADER):
        ws.write(0, c, value)
    ws.write(1, 0, "mtr_1")
    ws.write(1, 1, dt.date(2024, 1, 1), dates)
    ws.write(1, 2, dt.date(2024, 1, 31), dates)
    ws.write(1, 3, "1,234.5")
    ws.write(1, 4, "kWh")
    hidden = book.add_sheet("Lists")
    hidden.write(0, 0, "x")
    hidden.visibility = 1
    path = tmp_path / "old.xls"
    book.save(str(path))
    assert detect_format(path) == "xlsx"
    assert detect_format(path.rename(tmp_path / "old.bin")) == "xlsx"  # by its first bytes
    readings, problems = _stored(tmp_path / "old.bin")
    assert problems == []
    assert readings == [(2, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 1234.5)]
    # The legacy format's error cells cannot be told from empty ones: the dry run says so.
    assert any("read as empty cells" in n for n in read_xlsx(tmp_path / "old.bin").notes)
    assert xlsx_reader.list_sheets(tmp_path / "old.bin") == [
        ("Bills", "visible"),
        ("Lists", "hidden"),
    ]


def _ods(path: Path, rows: list[list[tuple[str, str]]]) -> Path:
    """A minimal OpenDocument spreadsheet (LibreOffice's .ods): (value type, value) cells."""
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    )

    def cell(kind: str, value: str) -> str:
        attr = {
            "string": "",
            "float": f' office:value="{value}"',
            "date": f' office:date-value="{value}"',
        }[kind]
        return (
            f'<table:table-cell office:value-type="{kind}"{attr}><text:p>{value}</text:p>'
            "</table:table-cell>"
        )

    body = "".join(
        "<table:table-row>" + "".join(cell(*c) for c in row) + "</table:table-row>" for row in rows
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns} '
        'office:version="1.2"><office:body><office:spreadsheet>'
        f'<table:table table:name="Bills">{body}</table:table>'
        "</office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        z.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        z.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    return path


def test_opendocument_spreadsheet(tmp_path: Path) -> None:
    path = _ods(
        tmp_path / "bills.ods",
        [
            [("string", h) for h in HEADER],
            [
                ("string", "mtr_1"),
                ("date", "2024-01-01"),
                ("date", "2024-01-31"),
                ("float", "321.5"),
                ("string", "kWh"),
            ],
            [
                ("string", "mtr_1"),
                ("date", "2024-02-01"),
                ("string", "soon"),
                ("float", "300"),
                ("string", "kWh"),
            ],
        ],
    )
    readings, problems = _stored(path)
    assert readings == [(2, dt.date(2024, 1, 1), dt.date(2024, 1, 31), 321.5)]
    assert [p[:3] for p in problems] == [("bad_date", 3, "End Date")]


def test_a_damaged_legacy_workbook_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.xls"
    path.write_bytes(b"\xd0\xcf\x11\xe0" + b"\x00" * 600)
    with pytest.raises(Exception) as info:
        read_xlsx(path)
    assert "broken.xls: not a readable .xls workbook" in str(info.value)


@pytest.fixture
def openpyxl_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """calamine refusing every file: the reader falls back to openpyxl for .xlsx."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise python_calamine.CalamineError("cannot read this file")

    monkeypatch.setattr(python_calamine.CalamineWorkbook, "from_path", refuse)
    monkeypatch.setattr(xlsx_reader, "_cached", None)


def test_the_openpyxl_fallback_gives_the_same_outcomes(openpyxl_only: None, tmp_path: Path):
    """Every workbook of the differential corpus, read by the fallback, matches the golden
    outcome (which the calamine reader matches too: tests/ingest/differential)."""
    import gzip
    import json

    from tests.ingest.differential import corpus
    from tests.ingest.differential.test_differential import REPLACING, since_the_golden

    golden = json.loads(gzip.decompress(corpus.GOLDEN.read_bytes()))
    books = [c for c in corpus.cases() if corpus.suffix(c) == ".xlsx" or c.name.endswith("xlsx")]
    assert len(books) >= 8
    for case in books:
        got = json.loads(json.dumps(corpus.outcome(case, tmp_path)))
        assert any("read with openpyxl" in note for note in got.pop("notes")), case.name
        want = since_the_golden(golden[case.name], got)  # the deliberate changes since
        want.pop("notes")
        if "problems" in got:
            got["problems"] = [p for p in got["problems"] if p[0] not in REPLACING]
        assert got == want, case.name


CELL = st.one_of(
    st.none(),
    st.sampled_from(["", "N/A", " - ", "x", "#DIV/0!", "Total"]),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.dates(dt.date(2020, 1, 1), dt.date(2030, 1, 1)),
    st.booleans(),
)


def _chunked(table) -> list[tuple[int, tuple[object, ...]]]:
    from bpsync.ingest.readers.chunks import table_chunks

    out = []
    for chunk in table_chunks(table, size=4):
        for pos in range(len(chunk)):
            n = max(len(table.headers), int(chunk.lengths[pos]))
            out.append((int(chunk.numbers[pos]), tuple(chunk.column(j)[pos] for j in range(n))))
    return out


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.lists(CELL, max_size=7), max_size=25),
    offset=st.integers(0, 2),
    limit=st.integers(2, 6),
)
def test_calamine_chunks_match_its_rows(rows, offset, limit):
    """The import's chunks (straight from calamine) hold the same rows, numbers and cells as the
    row-by-row reader: blank and placeholder-only rows skipped, trailing blanks trimmed, error
    cells kept, and the sheet ended by a run of `limit` blank rows."""
    with tempfile.TemporaryDirectory() as tmp:
        wb = Workbook()
        ws = wb.active
        ws.append([None] * offset + HEADER)
        for row in rows:
            ws.append([None] * offset + row)
        path = Path(tmp) / "random.xlsx"
        wb.save(path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(xlsx_reader, "BLANK_RUN_LIMIT", limit)
            mp.setattr(xlsx_reader, "_cached", None)
            table = read_xlsx(path)
            by_rows = [
                (r.number, tuple(r.cells) + (None,) * (len(table.headers) - len(r.cells)))
                for r in table.rows()
            ]
            assert _chunked(table) == by_rows


def test_a_run_of_blank_rows_ends_the_sheet_in_both_readers(tmp_path: Path, monkeypatch):
    """Three blank rows (the limit, lowered from 1,000 for the test) end the sheet: the row after
    them is not read, by the chunks or by the rows; two blank rows do not."""
    monkeypatch.setattr(xlsx_reader, "BLANK_RUN_LIMIT", 3)
    monkeypatch.setattr(xlsx_reader, "_cached", None)
    wb = Workbook()
    ws = wb.active
    ws.append(HEADER)
    ws.append(["m1", dt.date(2024, 1, 1), dt.date(2024, 1, 31), 1, "kWh"])
    ws.append([None, "N/A"])
    ws.append([])
    ws.append(["m1", dt.date(2024, 2, 1), dt.date(2024, 2, 29), 2, "kWh"])  # row 5: read
    for _ in range(3):
        ws.append(["-"])
    ws.append(["m1", dt.date(2024, 3, 1), dt.date(2024, 3, 31), 3, "kWh"])  # row 9: not read
    path = tmp_path / "gaps.xlsx"
    wb.save(path)
    table = read_xlsx(path)
    assert [r.number for r in table.rows()] == [2, 5]
    assert [n for n, _ in _chunked(table)] == [2, 5]


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.lists(CELL, max_size=7), max_size=25),
    offset=st.integers(0, 2),
    title_rows=st.integers(0, 2),
)
def test_one_column_read_alone_gives_the_chunks_distinct_values(rows, offset, title_rows):
    """The meter lookup reads one column by itself (`Table.distinct_texts`, calamine's rows
    without making chunks): every column gives the same distinct values as the import's chunks,
    whatever the sheet's first used column, the rows above the header, the error cells."""
    from bpsync.ingest.cells.values import cell_text, is_blank

    def name(value: object) -> str | None:
        return None if is_blank(value) else cell_text(value).strip()

    with tempfile.TemporaryDirectory() as tmp:
        wb = Workbook()
        ws = wb.active
        for _ in range(title_rows):
            ws.append([None] * offset + ["Monthly bills"])
        ws.append([None] * offset + HEADER)
        for row in rows:
            ws.append([None] * offset + row)
        path = Path(tmp) / "random.xlsx"
        wb.save(path)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(xlsx_reader, "_cached", None)
            table = read_xlsx(path)
            cells = _chunked(table)
            width = max([len(c) for _, c in cells] + [len(table.headers)])
            for index in range(width):
                want = {name(c[index]) for _, c in cells if index < len(c)} - {None}
                assert table.distinct_texts(index, name, 1_000) == want, index
