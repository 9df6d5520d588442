"""Templates and mapping: layouts, date conventions, ambiguity, template files."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest import IngestError, Problem, check_file, load_template, map_table, open_table
from bpsync.ingest.cells.values import parse_header
from bpsync.ingest.readings.mapped_rows import MappedRow
from bpsync.ingest.understand.templates import (
    TemplateError,
    list_templates,
    match_template,
    save_template,
    suggest_template,
    template_from_dict,
)


def mapped(path, template):
    t = load_template(template) if isinstance(template, str) else template
    table = open_table(path, expected=t.expected_keys())
    items = list(map_table(table, t))
    return [i for i in items if isinstance(i, MappedRow)], [
        i for i in items if isinstance(i, Problem)
    ]


def tpl(**kw):
    base = {
        "name": "t",
        "meter": {"by": "meter_id", "column": "Meter"},
        "columns": {
            "consumption": "Usage",
            "start_date": "Start",
            "end_date": "End",
            "unit": "Unit",
        },
    }
    for k, v in kw.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            base[k] = {**base[k], **v}
        else:
            base[k] = v
    return template_from_dict(base)


def test_next_start_convention_becomes_inclusive(csv_file):
    path = csv_file(
        "Meter,Start,End,Usage,Unit\nm1,2024-01-01,2024-02-01,10,kWh\nm1,2024-02-01,2024-02-01,1,kWh\n"
    )
    rows, problems = mapped(path, tpl(end_date="next_start"))
    assert (rows[0].start, rows[0].end) == (dt.date(2024, 1, 1), dt.date(2024, 1, 31))
    assert [p.code for p in problems] == ["end_before_start"]
    assert problems[0].row == 3 and problems[0].column == "End"


def test_read_date_plus_days(csv_file):
    path = csv_file(
        "Meter No.,Read Date,Days,Usage,Unit\nE1,31/01/2024,31,5,kWh\nE1,29/02/2024,29,6,kWh\n"
    )
    rows, _ = mapped(path, "utility_read_date_days")
    assert [(r.start, r.end) for r in rows] == [
        (dt.date(2024, 1, 1), dt.date(2024, 1, 31)),
        (dt.date(2024, 2, 1), dt.date(2024, 2, 29)),
    ]


def test_ambiguous_dates_are_refused_with_an_explanation(csv_file):
    path = csv_file("Meter,Start,End,Usage,Unit\nm1,01/02/2024,03/02/2024,1,kWh\n")
    with pytest.raises(IngestError, match="day-first or month-first"):
        mapped(path, tpl())
    rows, _ = mapped(path, tpl(date_order="DMY"))
    assert rows[0].start == dt.date(2024, 2, 1)


def test_data_resolves_the_order_when_a_day_is_over_12(csv_file):
    path = csv_file(
        "Meter,Start,End,Usage,Unit\nm1,01/02/2024,03/02/2024,1,kWh\nm1,04/02/2024,28/02/2024,1,kWh\n"
    )
    rows, _ = mapped(path, tpl())
    assert rows[0].start == dt.date(2024, 2, 1) and rows[1].end == dt.date(2024, 2, 28)


def test_row_errors_name_row_column_value(csv_file):
    path = csv_file(
        "Meter,Start,End,Usage,Unit\n"
        "m1,2024-01-01,2024-01-31,ten,kWh\n"
        ",2024-01-01,2024-01-31,1,kWh\n"
        "m1,someday,2024-01-31,1,kWh\n"
        "m1,2024-01-01,2024-01-31,1,furlongs\n"
    )
    _, problems = mapped(path, tpl())
    got = [(p.code, p.row, p.column, p.value) for p in problems]
    assert got == [
        ("bad_consumption", 2, "Usage", "ten"),
        ("missing_meter", 3, "Meter", None),
        ("bad_date", 4, "Start", "someday"),
        ("unknown_unit", 5, "Unit", "furlongs"),
    ]
    assert problems[0].row_values == ("m1", "2024-01-01", "2024-01-31", "ten", "kWh")
    assert "row 2" in str(problems[0]) and "(D)" in str(problems[0])


def test_wide_meters_unpivots_with_units_from_headers(xlsx):
    path = xlsx(
        {
            "Usage": [
                ["Month", "E-1 (kWh)", "G-1 (therms)", "Total"],
                ["Jan 2024", 100, 5, 105],
                ["Feb 2024", 90, None, 90],
            ]
        }
    )
    rows, problems = mapped(path, "wide_monthly_usage")
    assert not problems
    assert [(r.meter_key, r.start, r.consumption, r.unit) for r in rows] == [
        ("E-1", dt.date(2024, 1, 1), 100.0, "kWh"),
        ("G-1", dt.date(2024, 1, 1), 5.0, "therms"),
        ("E-1", dt.date(2024, 2, 1), 90.0, "kWh"),
    ]


def test_wide_months_one_row_per_meter(xlsx):
    path = xlsx(
        {
            "S": [
                ["Meter Reference", "Unit", "Jan 2024", "Feb 2024", "Annual Total"],
                ["W-9", "m3", 12, "1,5", 13.5],
            ]
        }
    )
    rows, problems = mapped(path, "wide_months_by_meter")
    # decimal = "auto": "1,5" typed as text is evidence of a decimal comma (issue 11 item 9)
    assert [(r.meter_key, r.end, r.consumption) for r in rows] == [
        ("W-9", dt.date(2024, 1, 31), 12.0),
        ("W-9", dt.date(2024, 2, 29), 1.5),
    ]
    assert problems == []


def test_template_mismatch_lists_found_columns(csv_file):
    path = csv_file("Foo,Bar\n1,2\n")
    with pytest.raises(IngestError, match="Columns found: 'Foo', 'Bar'"):
        mapped(path, tpl())


def test_auto_template_and_no_match_message(csv_file):
    path = csv_file(
        "Meter ID,Start Date,End Date,Consumption,Unit\nmtr_1,2024-01-01,2024-01-31,3,kWh\n"
    )
    prepared, result = check_file(path)
    assert prepared.template.name == "long_csv" and result.accepted_count == 1
    with pytest.raises(IngestError, match="no template matches") as err:
        check_file(
            csv_file(
                "Site,Period From,Period To,kWh used\nA,2024-01-01,2024-01-31,3\n", name="u.csv"
            )
        )
    assert "start_date" in str(err.value)


def test_every_shipped_template_loads_and_round_trips(tmp_path):
    templates = list_templates()
    assert {t.name for t in templates} >= {
        "long_csv",
        "pm_add_bills",
        "pm_meter_entries_export",
        "wide_monthly_usage",
        "utility_service_period",
        "utility_read_date_days",
        "green_button",
    }
    for t in templates:
        saved = save_template(t, tmp_path)
        again = load_template(saved)
        assert again.columns == t.columns and again.meter == t.meter and again.layout == t.layout


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "x", "colums": {}}, "unknown key"),
        ({"name": "x", "columns": {"usage": "U"}}, "unknown field"),
        (
            {"name": "x", "meter": {"column": "M"}, "columns": {"start_date": "S"}},
            "consumption is required",
        ),
        ({"name": "x", "date_order": "YMD"}, "date_order"),
        ({"name": "Bad Name!"}, "name must be"),
    ],
)
def test_bad_templates_say_what_is_wrong(data, message):
    with pytest.raises(TemplateError, match=message):
        template_from_dict(data)


def test_suggest_and_save_a_template_for_an_unknown_file(csv_file, tmp_path):
    headers = ["Site Meter", "Period Start", "Period End", "Usage (kWh)", "Total Cost"]
    suggestion = suggest_template([parse_header(h, i) for i, h in enumerate(headers)], "my_export")
    cols = suggestion.template.columns
    assert cols["start_date"] == ("Period Start",) and cols["end_date"] == ("Period End",)
    assert cols["consumption"] == ("Usage (kWh)",) and cols["cost"] == ("Total Cost",)
    assert suggestion.usable, suggestion.missing
    path = save_template(suggestion.template, tmp_path)
    t = load_template("my_export", [tmp_path])
    data = csv_file(",".join(headers) + "\nM-7,2024-01-01,2024-01-31,120,9.5\n")
    rows, problems = mapped(data, t)
    assert not problems and rows[0].unit == "kWh" and rows[0].meter_key == "M-7"
    assert path.read_text().startswith('name = "my_export"')
    assert match_template([parse_header(h, i) for i, h in enumerate(headers)], [t]) is not None


# Cells a utility export's number columns hold: whole numbers (proving nothing), grouped
# thousands either way, decimals either way, currency, blanks and placeholders.
DECIMAL_CELLS = st.sampled_from(
    ["1003", "1,234", "1.234", "12,5", "12.5", "1.234,56", "1,234.56", "$1,234.50", "", "N/A",
     " 7 ", "-3,25", "(12.50)", "0,0001", "abc"]
)  # fmt: skip


@given(
    rows=st.lists(
        st.tuples(DECIMAL_CELLS, DECIMAL_CELLS, st.sampled_from(["full", "short", "blank"])),
        max_size=60,
    ),
    limit=st.integers(1, 9),
)
@settings(max_examples=150, deadline=None)
def test_the_decimal_scan_over_chunks_sees_what_the_row_scan_sees(rows, limit, tmp_path_factory):
    """A CSV's decimal evidence is gathered from its column chunks: the same counts, the same
    first example of each kind and the same stopping point (`limit` cells with proof, or 20
    times that without) as reading it row by row, blank lines and short rows included."""
    from bpsync.ingest.understand.columns import resolve_columns
    from bpsync.ingest.understand.evidence import _Evidence, _evidence_by_chunks, _evidence_by_rows

    lines = ["Meter,Start,End,Unit,Usage,Cost"]
    for n, (usage, cost, shape) in enumerate(rows):
        if shape == "blank":
            lines.append("")
        elif shape == "short":
            lines.append(f"m{n},2024-01-01,2024-01-31,kWh,{_quoted(usage)}")
        else:
            lines.append(f"m{n},2024-01-01,2024-01-31,kWh,{_quoted(usage)},{_quoted(cost)}")
    path = tmp_path_factory.mktemp("dec") / "bills.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = open_table(path)
    template = tpl(columns={"cost": "Cost"})
    columns = resolve_columns(table, template)
    idx = [columns.fields["consumption"].index, columns.fields["cost"].index]
    by_rows = _Evidence(limit)
    _evidence_by_rows(table, idx, by_rows, 20 * limit)
    # Chunks from the first row, and chunks carrying on from where `limit` cells ended.
    by_chunks = _Evidence(limit)
    _evidence_by_chunks(table, idx, by_chunks)
    carried = _Evidence(limit)
    _evidence_by_rows(table, idx, carried, limit)
    if not carried.done:
        _evidence_by_chunks(table, idx, carried)
    assert by_chunks == by_rows and carried == by_rows


def _quoted(cell: str) -> str:
    return f'"{cell}"' if "," in cell else cell
