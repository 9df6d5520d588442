"""Files no template names, read from headers and values together (issue 27 items 2, 5, 6, 9):
each decision stated, two possible readings refused with the suggestion, never a silent pick."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpsync.ingest import IngestError, check_file
from bpsync.ingest.readings.assign_meters import MeterCatalog, MeterInfo
from bpsync.ingest.understand.infer import infer_template
from bpsync.ingest.understand.templates import suggest_template

D = dt.date


def catalog(*meters: tuple[str, str, str, str | None]) -> MeterCatalog:
    """(id, type, unit, external reference) per meter."""
    infos = [MeterInfo(m, t, u, "bld_1", "B", m) for m, t, u, _ in meters]
    return MeterCatalog.build(infos, {ref: m for m, _, _, ref in meters if ref})


def stored(path: Path, cat: MeterCatalog, meter: str | None = None) -> list[tuple]:
    _prepared, result = check_file(path, catalog=cat, meter=meter, today=D(2026, 11, 20))
    assert not result.errors, result.errors
    return sorted(
        (c.meter_id, c.start, c.end, c.consumption, c.cost) for c in result.all_candidates()
    )


def notes(path: Path, cat: MeterCatalog, meter: str | None = None) -> str:
    prepared, _ = check_file(path, catalog=cat, meter=meter, today=D(2026, 11, 20))
    return " ".join(prepared.notes)


def test_a_monthly_electric_export_imports_with_its_cost(tmp_path: Path) -> None:
    """The issue's everyday file: a cost column named `Amount ($)` is stored, not dropped."""
    path = tmp_path / "electric.csv"
    path.write_text(
        "Service Start,Service End,Usage (kWh),Amount ($),Meter Number\n"
        "01/05/2026,02/03/2026,1200,$180.25,E-77\n"
        "02/04/2026,03/05/2026,1100,$171.10,E-77\n"
    )
    cat = catalog(("mtr_e", "electricity", "kWh", "E-77"))
    assert stored(path, cat) == [
        ("mtr_e", D(2026, 1, 5), D(2026, 2, 3), 1200.0, 180.25),
        ("mtr_e", D(2026, 2, 4), D(2026, 3, 5), 1100.0, 171.10),
    ]


def test_the_meter_beats_the_account(tmp_path: Path) -> None:
    """Both an account and a meter number: the meter is taken, and the dry run says so."""
    path = tmp_path / "portal.csv"
    path.write_text(
        "Account Number,Meter Number,Bill Start,Bill End,Total Usage,UOM,Bill Amount\n"
        "A-1,M-9,2025-01-01,2025-01-31,500,kWh,75.00\n"
    )
    cat = catalog(("mtr_m", "electricity", "kWh", "M-9"))
    assert stored(path, cat) == [("mtr_m", D(2025, 1, 1), D(2025, 1, 31), 500.0, 75.0)]
    said = notes(path, cat)
    assert "meter: 'Meter Number' (a meter beats an account: 'Account Number' left out)" in said
    assert suggest_template(["Account Number", "Meter Number", "Usage"]).matched["meter"] == (
        "Meter Number"
    )


def test_one_bill_with_ambiguous_dates_is_decided_by_its_period(tmp_path: Path) -> None:
    """01/03/2026-02/01/2026 is Jan 3 to Feb 1 (read day-first it would end before it starts)."""
    path = tmp_path / "one.csv"
    path.write_text("Service Start,Service End,Usage,Meter Number\n01/03/2026,02/01/2026,640,E-1\n")
    cat = catalog(("mtr_1", "electricity", "kWh", "E-1"))
    assert stored(path, cat) == [("mtr_1", D(2026, 1, 3), D(2026, 2, 1), 640.0, None)]
    assert "dates read month-first: every date could be read either way" in notes(path, cat)


def test_ambiguous_dates_with_no_deciding_period_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "both.csv"
    path.write_text("Service Start,Service End,Usage,Meter Number\n01/02/2026,03/02/2026,1,E-1\n")
    with pytest.raises(IngestError, match="could be day-first or month-first"):
        check_file(path, catalog=catalog(("mtr_1", "electricity", "kWh", "E-1")))


def test_date_order_given_reads_what_nothing_in_the_file_decides(tmp_path: Path) -> None:
    """`--date-order DMY` (or a folder's `date_order`) reads 01/02 as 1 February; a value that
    proves the other order still wins, and the notes say so."""
    path = tmp_path / "both.csv"
    path.write_text("Service Start,Service End,Usage,Meter Number\n01/02/2026,03/02/2026,1,E-1\n")
    cat = catalog(("mtr_1", "electricity", "kWh", "E-1"))
    prepared, result = check_file(path, catalog=cat, date_order="DMY", today=D(2026, 11, 20))
    got = [(c.start, c.end) for c in result.all_candidates()]
    assert got == [(D(2026, 2, 1), D(2026, 2, 3))]
    assert "dates such as 03/04 read day-first where the file does not say" in " ".join(
        prepared.notes
    )
    proof = tmp_path / "proof.csv"
    proof.write_text("Service Start,Service End,Usage,Meter Number\n01/02/2026,01/28/2026,1,E-1\n")
    prepared, result = check_file(proof, catalog=cat, date_order="DMY", today=D(2026, 11, 20))
    assert [(c.start, c.end) for c in result.all_candidates()] == [(D(2026, 1, 2), D(2026, 1, 28))]
    assert "is month-first" in " ".join(prepared.notes)


def test_a_wide_sheet_of_months_is_recognised(tmp_path: Path) -> None:
    """One row per meter, one column per month, no template signature: read as months."""
    path = tmp_path / "wide.csv"
    path.write_text("Meter,Unit,Jan 2025,Feb 2025,Mar 2025\nGAS-1,therms,10,20,30\n")
    cat = catalog(("mtr_g", "natural_gas", "therms", "GAS-1"))
    assert stored(path, cat) == [
        ("mtr_g", D(2025, 1, 1), D(2025, 1, 31), 10.0, None),
        ("mtr_g", D(2025, 2, 1), D(2025, 2, 28), 20.0, None),
        ("mtr_g", D(2025, 3, 1), D(2025, 3, 31), 30.0, None),
    ]
    assert "one row per meter and one column per month (3 month columns" in notes(path, cat)


def test_two_usage_columns_without_a_meter_unit_are_refused(tmp_path: Path) -> None:
    """Mimics Eversource's gas export: the usage in CCF and in therms. With no meter to decide,
    the file is refused naming both columns and the command that accepts a mapping."""
    path = tmp_path / "ever.csv"
    path.write_text(
        "End Date,Days In Bill,Usage (CCF),Usage (Therms),Meter Number\n7/12/2021,32,18,18,G\n"
    )
    with pytest.raises(IngestError) as caught:
        check_file(path, catalog=catalog(("mtr_g", "natural_gas", "therms", "G")))
    message = str(caught.value)
    assert "'Usage (CCF)' and 'Usage (Therms)'" in message
    assert "bpsync templates suggest ever.csv --save NAME" in message


def test_values_overrule_a_header_that_names_a_field(tmp_path: Path) -> None:
    """A `Usage` column of words is not the usage; the numbers under `Quantity` are."""
    path = tmp_path / "q.csv"
    path.write_text(
        "Meter Number,Start Date,End Date,Usage,Quantity\nM,2025-01-01,2025-01-31,metered,42\n"
    )
    cat = catalog(("mtr_q", "water", "m3", "M"))
    assert stored(path, cat) == [("mtr_q", D(2025, 1, 1), D(2025, 1, 31), 42.0, None)]


def test_unused_columns_are_listed_by_name(tmp_path: Path) -> None:
    """A shipped template matches; the columns it reads nothing from are named in the notes."""
    path = tmp_path / "svc.csv"
    path.write_text(
        "Meter Number,Service Start,Service End,Usage,Usage Unit,Tariff Code\n"
        "E-1,2025-01-01,2025-01-31,5,kWh,T2\n"
    )
    said = notes(path, catalog(("mtr_1", "electricity", "kWh", "E-1")))
    assert "columns not used: 'Tariff Code'" in said


def test_inference_alone_states_each_decision(tmp_path: Path) -> None:
    from bpsync.ingest.readers import open_table

    path = tmp_path / "ng.csv"
    path.write_text(
        "TYPE,START DATE,END DATE,USAGE,UNITS,COST,NOTES\n"
        "Natural gas billing,11/25/15,12/7/15,18,therms,$25.20 ,\n"
    )
    inference = infer_template(open_table(path), meter="GAS")
    assert inference.decided
    assert inference.unused == ["TYPE", "NOTES"]
    assert "cost: 'COST' (money in 1 of 1 sampled cells)" in inference.decisions
    assert "unit: 'UNITS' (therms)" in inference.decisions


def test_suggest_the_wizard_and_the_import_agree(tmp_path: Path) -> None:
    """Issue 27 item 9: `templates suggest` and the wizard propose the mapping the import infers,
    and the wizard finds `Usage (kWh)` in a file whose header reads `Usage (kWh)`."""
    from bpsync.ingest import find_column, suggest_for_table
    from bpsync.ingest.readers import open_table
    from bpsync.tui.screens.wizard import _in_file

    path = tmp_path / "electric.csv"
    path.write_text(
        "Account Number,Service Start,Service End,Usage (kWh),Amount ($),Meter Number\n"
        "A-1,01/05/2026,02/03/2026,1200,$180.25,E-77\n"
    )
    table = open_table(path)
    suggestion = suggest_for_table(table)
    inferred = infer_template(table).template
    assert inferred is not None
    assert dict(suggestion.matched) == {
        "start_date": "Service Start",
        "end_date": "Service End",
        "cost": "Amount ($)",
        "consumption": "Usage (kWh)",
        "meter": "Meter Number",
    }
    assert suggestion.template.columns == inferred.columns
    assert suggestion.usable and suggestion.unmatched_headers == ("Account Number",)
    assert _in_file(table.headers, ("Usage (kWh)",))
    assert find_column(table.headers, ("Usage (kWh)",)) is not None
    assert not _in_file(table.headers, ("Demand (kW)",))


# -- the property: generated exports are stored exactly or refused, never stored wrong ----------

HEADERS = {
    "meter": ["Meter Number", "Meter ID", "Meter", "Meter No"],
    "start": ["Start Date", "Service Start", "Period From", "Bill Start", "From Date"],
    "end": ["End Date", "Service End", "Period To", "Bill End", "Through"],
    "read": ["Read Date", "Meter Read Date", "Reading Date"],
    "days": ["Days", "Number of Days", "Days In Bill", "Billing Days"],
    "usage": ["Usage", "Consumption", "Total Usage", "Quantity"],
    "unit": ["Unit", "Units", "UOM"],
    "cost": ["Cost", "Amount", "Total Charges", "Charge"],
    "extra": ["Notes", "Account Number", "Tariff", "Average Temperature"],
}
FORMATS = {"iso": "%Y-%m-%d", "mdy": "%m/%d/%Y", "dmy": "%d/%m/%Y", "mon": "%d-%b-%Y"}


@st.composite
def exports(draw: st.DrawFn) -> tuple[str, list[tuple]]:
    shape = draw(st.sampled_from(["start_end", "end_days", "read_days", "reads"]))
    fmt = FORMATS[draw(st.sampled_from(sorted(FORMATS)))]
    unit_in = draw(st.sampled_from(["column", "header", "none"]))
    with_cost = draw(st.booleans())
    with_extra = draw(st.booleans())
    names = {k: draw(st.sampled_from(v)) for k, v in HEADERS.items()}
    start = D(2024, draw(st.integers(1, 12)), draw(st.integers(1, 28)))
    bills = []
    for _ in range(draw(st.integers(1, 5))):
        days = draw(st.integers(27, 35))
        end = start + dt.timedelta(days=days - 1)
        usage = draw(st.integers(0, 99_999))
        cost = draw(st.integers(0, 999_999)) / 100
        bills.append((start, end, days, usage, cost))
        start = end + dt.timedelta(days=1)
    columns: list[tuple[str, object]] = [("meter", names["meter"])]
    if shape == "start_end":
        columns += [("start", names["start"]), ("end", names["end"])]
    elif shape == "reads":  # read dates only: the first read starts no period
        columns += [("read", names["read"])]
    else:
        columns += [
            (
                "end" if shape == "end_days" else "read",
                names["end" if shape == "end_days" else "read"],
            ),
            ("days", names["days"]),
        ]
    usage_header = names["usage"] + (" (kWh)" if unit_in == "header" else "")
    columns.append(("usage", usage_header))
    if unit_in == "column":
        columns.append(("unit", names["unit"]))
    if with_cost:
        columns.append(("cost", names["cost"]))
    if with_extra:
        columns.append(("extra", names["extra"]))
    order = draw(st.permutations(range(len(columns))))
    columns = [columns[i] for i in order]
    lines = [",".join(str(h) for _, h in columns)]
    for s, e, days, usage, cost in bills:
        cell = {
            "meter": "E-1",
            "start": s.strftime(fmt),
            "end": e.strftime(fmt),
            "read": e.strftime(fmt),
            "days": str(days),
            "usage": str(usage),
            "unit": "kWh",
            "cost": f"${cost:.2f}",
            "extra": "x",
        }
        lines.append(",".join(cell[k] for k, _ in columns))
    expected = [
        ("mtr_1", s, e, float(usage), cost if with_cost else None)
        for s, e, _, usage, cost in (bills[1:] if shape == "reads" else bills)
    ]
    return "\n".join(lines) + "\n", expected


@settings(max_examples=80, deadline=None, derandomize=True)
@given(exports())
def test_generated_exports_are_stored_exactly_or_refused(case: tuple[str, list[tuple]]) -> None:
    import tempfile

    text, expected = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bills.csv"
        path.write_text(text)
        try:
            _prepared, result = check_file(
                path, catalog=catalog(("mtr_1", "electricity", "kWh", "E-1")), today=D(2026, 1, 1)
            )
        except IngestError as exc:
            assert exc.code in ("no_template", "ambiguous_dates"), exc
            return
    got = sorted(
        (c.meter_id, c.start, c.end, c.consumption, c.cost) for c in result.all_candidates()
    )
    assert got == expected, text


def test_a_reject_report_keeps_the_date_order_of_its_source(tmp_path: Path) -> None:
    """Issue 27 item 5: the refused rows alone (01/02-01/03) prove no order; the source file
    beside the report (01/28 is month-first) does, so the report is read the same way."""
    source = tmp_path / "bills.csv"
    source.write_text(
        "Service Start,Service End,Usage,Meter Number\n"
        "01/02/2026,01/28/2026,1,E-1\n"
        "01/02/2026,01/03/2026,x,E-1\n"
    )
    report = tmp_path / "bills.rejects.csv"
    report.write_text(
        "Service Start,Service End,Usage,Meter Number,Reason\n"
        "01/02/2026,01/03/2026,2,E-1,row 3: not a number\n"
    )
    cat = catalog(("mtr_1", "electricity", "kWh", "E-1"))
    _prepared, result = check_file(report, catalog=cat, today=D(2026, 11, 20))
    assert [(c.start, c.end) for c in result.all_candidates()] == [(D(2026, 1, 2), D(2026, 1, 3))]
    source.unlink()  # without its source, the report alone cannot say
    with pytest.raises(IngestError, match="could be day-first or month-first"):
        check_file(report, catalog=cat, today=D(2026, 11, 20))


def test_read_dates_only_make_periods_from_consecutive_reads(tmp_path: Path) -> None:
    """Issue 27 item 3: a meter read on the 15th of each month, no days column. Each reading
    runs from the day after the previous read; the first read starts no period and is skipped
    with that reason (newest first, as a water utility's portal lists them)."""
    path = tmp_path / "reads.csv"
    path.write_text(
        "Meter Number,Read Date,Usage (kgal)\n"
        "W-1,03/15/2024,80\nW-1,02/14/2024,90\nW-1,01/15/2024,100\n"
        "W-2,02/20/2024,7\nW-2,01/19/2024,6\n"
    )
    cat = catalog(("mtr_1", "water", "kgal", "W-1"), ("mtr_2", "water", "kgal", "W-2"))
    prepared, result = check_file(path, catalog=cat, today=D(2026, 11, 20))
    got = sorted((c.meter_id, c.start, c.end, c.consumption) for c in result.all_candidates())
    assert got == [
        ("mtr_1", D(2024, 1, 16), D(2024, 2, 14), 90.0),
        ("mtr_1", D(2024, 2, 15), D(2024, 3, 15), 80.0),
        ("mtr_2", D(2024, 1, 20), D(2024, 2, 20), 7.0),
    ]
    skipped = sorted((p.where.row, p.code) for p in result.problems if p.code == "first_read")
    assert skipped == [(4, "first_read"), (6, "first_read")]
    assert result.row_accounting()["skipped"] == {"first_read": 2}
    said = " ".join(prepared.notes)
    assert "period: consecutive read dates in 'Read Date'" in said
    assert "the first read of each meter (2) starts no period and is skipped" in said


def test_a_quantity_unit_in_the_header_is_not_money(tmp_path: Path) -> None:
    """`Amount (kWh)` is the usage and `Amount ($)` the cost: the bracket decides, never the word."""
    path = tmp_path / "amounts.csv"
    path.write_text(
        "Meter Number,Start Date,End Date,Amount (kWh),Amount ($)\nE-1,2025-01-01,2025-01-31,900,120\n"
    )
    cat = catalog(("mtr_1", "electricity", "kWh", "E-1"))
    assert stored(path, cat) == [("mtr_1", D(2025, 1, 1), D(2025, 1, 31), 900.0, 120.0)]
