"""Property tests: whatever the headers, encodings, delimiters, date formats and numbers, every
row ends as a reading or a clear per-row problem, never an exception."""

from __future__ import annotations

import csv
import datetime as dt
import io
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpsync.ingest import IngestError, Problem, check_file
from bpsync.ingest.cells.values import NumberError, parse_number
from bpsync.ingest.understand.templates import template_from_dict

DATE_FORMATS = ["%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%d-%b-%Y", "%b %d, %Y"]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "cp1252"]
cell_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
number_text = st.one_of(
    st.floats(min_value=-1e14, max_value=1e14, allow_nan=False).map(lambda v: f"{v:,.2f}"),
    st.floats(min_value=-1e20, max_value=1e20, allow_nan=False).map(repr),
    st.integers(min_value=0, max_value=10**18).map(str),
    st.sampled_from(["", "N/A", "-", "Not Available", "abc", "1,2,3", "$12.50", "(4.00)"]),
)


@st.composite
def bill_files(draw):
    fmt = draw(st.sampled_from(DATE_FORMATS))
    n = draw(st.integers(min_value=1, max_value=25))
    rows = []
    for _ in range(n):
        start = draw(st.dates(min_value=dt.date(2000, 1, 1), max_value=dt.date(2030, 12, 31)))
        end = start + dt.timedelta(days=draw(st.integers(min_value=-3, max_value=40)))
        start_text = draw(st.one_of(st.just(start.strftime(fmt)), cell_text))
        rows.append(
            [
                draw(st.sampled_from(["m1", "m2", ""])),
                start_text,
                end.strftime(fmt),
                draw(number_text),
                draw(st.sampled_from(["kWh", "therms", "m3", "bogus", ""])),
            ]
        )
    return fmt, rows


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=bill_files(),
    delimiter=st.sampled_from([",", ";", "\t", "|"]),
    encoding=st.sampled_from(ENCODINGS),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    extra_header=st.lists(cell_text, max_size=3),
)
def test_every_row_is_a_reading_or_a_problem(files, delimiter, encoding, newline, extra_header):
    fmt, rows = files
    order = "DMY" if fmt.startswith("%d") else "MDY"
    template = template_from_dict(
        {
            "name": "prop",
            "date_order": order,
            "meter": {"by": "meter_id", "column": "Meter"},
            "columns": {
                "start_date": "Start",
                "end_date": "End",
                "consumption": "Usage",
                "unit": "Unit",
            },
            "fixed": {"unit": "kWh"},
        }
    )
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator=newline)
    writer.writerow(["Meter", "Start", "End", "Usage", "Unit", *extra_header])
    writer.writerows(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bills.csv"
        try:
            path.write_bytes(out.getvalue().encode(encoding))
        except UnicodeEncodeError:
            path.write_bytes(out.getvalue().encode("utf-8"))
        try:
            _prepared, result = check_file(path, template)
        except IngestError as exc:
            assert str(exc)  # a whole-file refusal is fine, if it says why
            return
    # Rows as Excel would number them (a bare \r in a cell is a line break to csv and Excel alike).
    records = list(csv.reader(io.StringIO(out.getvalue(), newline=""), delimiter=delimiter))
    seen_rows = {p.row for p in result.problems if p.row is not None}
    seen_rows |= {c.row for c in result.all_candidates()}
    assert seen_rows <= set(range(2, len(records) + 1))
    for p in result.problems:
        assert isinstance(p, Problem) and p.reason and p.file == "bills.csv"
    for c in result.all_candidates():
        assert c.end >= c.start and abs(c.consumption) <= 1e15


@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False), st.sampled_from([".", ","]))
def test_numbers_written_with_separators_read_back(value, decimal):
    text = f"{value:,.2f}"
    if decimal == ",":
        text = text.replace(",", "\u00a0").replace(".", ",")
    assert abs(parse_number(text, decimal) - round(value, 2)) <= 1e-6 * max(1.0, abs(value))


@given(st.text(max_size=20))
def test_parse_number_never_raises_anything_else(text):
    try:
        result = parse_number(text)
    except NumberError:
        return
    assert result is None or abs(result) <= 1e15


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=15), min_size=1, max_size=8))
def test_random_headers_never_crash_template_matching(headers):
    from bpsync.ingest.cells.values import parse_header
    from bpsync.ingest.understand.templates import match_template, suggest_template

    parsed = [parse_header(h, i) for i, h in enumerate(headers)]
    match_template(parsed)
    suggestion = suggest_template(parsed)
    assert suggestion.template.name == "suggested"
