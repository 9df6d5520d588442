"""Interval exports read as one reading per meter and local day (understand/intervals.py).

Each fixture is written here and mimics one quirk of a real export of ../shared/real-inputs/set2
(named in its test); the real files themselves are imported in tests/real_inputs. The property
test generates interval exports (step, layout, date format, decimal mark, DST days) and checks
that each is stored as its day sums exactly, or refused with a reason, never stored wrong."""

from __future__ import annotations

import datetime as dt
import random
import zoneinfo
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpsync.ingest import MeterCatalog, MeterInfo, check
from bpsync.ingest.problems import IngestError
from bpsync.ingest.run.prepare import choose_template, prepare
from bpsync.ingest.understand.interval_text import resolve_dates, slot_minutes, split_stamp


def _days(path: Path, meter: str | None = None) -> tuple[dict, list[str], list]:
    """{(meter, date): (value, unit, estimated, row)}, the notes, the problems."""
    table, template = choose_template(path, meter=meter)
    assert template.name == "interval_days"
    out = {}
    for row in table.rows():
        m, start, end, value, unit, estimated = row.cells
        assert start == end
        out[(m, dt.date.fromisoformat(start))] = (float(value), unit, estimated, row.number)
    return out, table.notes, table.problems


def _accounting(notes: list[str]) -> tuple[int, ...]:
    line = next(n for n in notes if n.startswith("rows read "))
    nums = tuple(int(w.strip(":,").replace(",", "")) for w in line.split() if w[:1].isdigit())
    assert nums[0] == nums[1] + nums[2] + nums[3], line
    return nums[:4]


def _write(tmp_path: Path, text: str, name: str = "export.csv", bom: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


# -- ACE (Atlantic City Electric): title lines, two column groups, DST as the utility writes it --


def _ace(days: list[tuple[str, list[float]]], hourly_delta: float = 0.0) -> str:
    lines = [
        "Name,SOMEONE,,,,,,",
        "Title,Advanced Metering Data,,,,,,",
        "Meter Number,123,,,,,,",
        ",,,,,,,",
        "Start Interval Date/Time,Meter Id,Usage,Units,Interval,Usage,Units,Interval",
    ]
    for date, quarters in days:
        for k, q in enumerate(quarters):
            hour, minute = divmod(k * 15, 60)
            hourly = "-,-,-"
            if minute == 0:
                total = sum(quarters[k : k + 4]) + hourly_delta
                hourly = f"{round(total, 2)},kwh,60min"
            lines.append(f"{date} {hour:02d}:{minute:02d},123,{hourly},{q},kwh,15min")
    return "\n".join(lines) + "\n"


def test_ace_two_column_groups_the_60_minute_one_left_out(tmp_path: Path) -> None:
    rng = random.Random(4)
    day1 = [round(rng.uniform(0, 1), 2) for _ in range(96)]
    day2 = [round(rng.uniform(0, 1), 2) for _ in range(92)]  # a spring-forward day: 92
    path = _write(tmp_path, _ace([("03/08/2025", day1), ("03/09/2025", day2)]), bom=True)
    days, notes, problems = _days(path)
    assert not problems
    assert days[("123", dt.date(2025, 3, 8))][0] == pytest.approx(sum(day1), abs=1e-9)
    assert days[("123", dt.date(2025, 3, 9))][0] == pytest.approx(sum(day2), abs=1e-9)
    assert days[("123", dt.date(2025, 3, 9))][1] == "kwh"
    assert any(
        n.startswith("left out: 60-minute column 'Usage' (restates the 15-minute column: equal")
        for n in notes
    ), notes
    assert any("2025-03-09 (92)" in n for n in notes), notes
    assert _accounting(notes) == (188, 188, 0, 0)


def test_ace_a_60_minute_column_that_disagrees_refuses_the_day(tmp_path: Path) -> None:
    quarters = [0.25] * 96
    text = _ace([("03/18/2025", quarters)], hourly_delta=0.5)
    days, notes, problems = _days(_write(tmp_path, text))
    assert days == {}
    assert len(problems) == 96 and problems[0].where.row == 6
    assert "the day 2025-03-18 is not stored" in problems[0].reason
    assert "which one is right is not clear" in problems[0].reason
    assert _accounting(notes) == (96, 0, 0, 96)  # every row holds a quarter-hour of that day


# -- Fluvius gas: ';', decimal comma, ="EAN", m³ and kWh for every hour, 'Geen verbruik' ---------


FLUVIUS_GAS = (
    "Van datum;Van tijdstip;Tot datum;Tot tijdstip;EAN-code;Meter;Metertype;Register;Volume;"
    "Eenheid;Validatiestatus;Calorische Bovenwaarde\n"
    '10-01-2022;06:00:00;10-01-2022;07:00:00;="5414";7FLO1;Digitale Meter;Afname;;kWh;'
    "Geen verbruik;\n"
    '10-01-2022;06:00:00;10-01-2022;07:00:00;="5414";7FLO1;Digitale Meter;Afname;;m³;'
    "Geen verbruik;\n"
    '10-01-2022;07:00:00;10-01-2022;08:00:00;="5414";7FLO1;Digitale Meter;Afname;5,445;kWh;'
    "Gevalideerd;Voorlopig\n"
    '10-01-2022;07:00:00;10-01-2022;08:00:00;="5414";7FLO1;Digitale Meter;Afname;0,495;m³;'
    "Gevalideerd;\n"
    '10-01-2022;08:00:00;10-01-2022;09:00:00;="5414";7FLO1;Digitale Meter;Afname;5,005;kWh;'
    "Geschat;Definitief\n"
    '10-01-2022;08:00:00;10-01-2022;09:00:00;="5414";7FLO1;Digitale Meter;Afname;0,455;m³;'
    "Geschat;\n"
    '11-01-2022;08:00:00;11-01-2022;09:00:00;="5414";7FLO1;Digitale Meter;Afname;1,100;kWh;'
    "Gevalideerd;Definitief\n"
    '11-01-2022;08:00:00;11-01-2022;09:00:00;="5414";7FLO1;Digitale Meter;Afname;0,100;m³;'
    "Gevalideerd;"  # no line break at the end
)


def test_fluvius_gas_m3_kept_kwh_restatement_and_empty_hour_left_out(tmp_path: Path) -> None:
    days, notes, problems = _days(_write(tmp_path, FLUVIUS_GAS, bom=True))
    assert not problems
    assert days == {
        ("5414", dt.date(2022, 1, 10)): (0.95, "m³", "Y", 2),
        ("5414", dt.date(2022, 1, 11)): (0.1, "m³", "", 8),
    }
    assert any(n.startswith("left out: kWh rows restating m³") for n in notes), notes
    assert any(
        "'Geen verbruik'" in n and n.startswith("left out: rows with an empty") for n in notes
    )
    assert _accounting(notes) == (8, 3, 5, 0)


def test_fluvius_gas_through_the_engine_in_the_meters_unit(tmp_path: Path) -> None:
    catalog = MeterCatalog.build([MeterInfo("mtr_gas", "natural_gas", "m3")], {"5414": "mtr_gas"})
    prepared = prepare(_write(tmp_path, FLUVIUS_GAS), catalog=catalog)
    result = check(prepared, today=dt.date(2025, 1, 1))
    got = [(c.start, c.end, c.consumption, c.estimated) for c in result.candidates("mtr_gas")]
    assert got == [
        (dt.date(2022, 1, 10), dt.date(2022, 1, 10), 0.95, True),
        (dt.date(2022, 1, 11), dt.date(2022, 1, 11), 0.1, False),
    ]


def test_fluvius_gas_into_a_meter_in_kwh_takes_the_kwh_rows(tmp_path: Path) -> None:
    """A gas meter registered in kWh: the utility's own kWh rows (its calorific value) are
    stored, not the m³ converted at a standard factor, and the note says why."""
    catalog = MeterCatalog.build([MeterInfo("mtr_gas", "natural_gas", "kWh")], {"5414": "mtr_gas"})
    prepared = prepare(_write(tmp_path, FLUVIUS_GAS), catalog=catalog)
    result = check(prepared, today=dt.date(2025, 1, 1))
    got = [(c.start, c.consumption) for c in result.candidates("mtr_gas")]
    assert got == [(dt.date(2022, 1, 10), 5.445 + 5.005), (dt.date(2022, 1, 11), 1.1)]
    said = " ".join(prepared.notes)
    assert (
        "m³ rows restating kWh (the same intervals in another unit, kWh being the meter's" in said
    )


# -- Fluvius electricity: day + night offtake added, injection left out, DST repeats counted -----


def _fluvius_elec(rows: list[tuple[str, str, str, str]]) -> str:
    head = (
        "From (date);From (time);Until (date);Until (time);EAN code;Meter;Meter type;Register;"
        "Volume;Unit;Validation status;Description\r\n"
    )
    body = "".join(
        f'{d};{t};{d};{u};="5414";1SAG;Digital meter;{reg};{v};kWh;Read;\r\n'
        for d, t, u, reg, v in ((d, t, _plus15(t), r, v) for d, t, r, v in rows)
    )
    return head + body


def _plus15(t: str) -> str:
    h, m = map(int, t.split(":")[:2])
    m += 15
    return f"{(h + m // 60) % 24:02d}:{m % 60:02d}:00"


def _quarters(date: str, repeat: list[str] = ()) -> list[tuple[str, str, str, str]]:  # type: ignore[assignment]
    rows = []
    for k in range(96):
        t = f"{k // 4:02d}:{k % 4 * 15:02d}:00"
        for _ in range(2 if t in repeat else 1):
            reg = "Offtake Night" if k < 28 else "Offtake Day"
            rows.append((date, t, reg, "0,100"))
            rows.append((date, t, reg.replace("Offtake", "Injection"), "0,050"))
    return rows


def test_fluvius_electricity_registers_and_the_repeated_dst_hour(tmp_path: Path) -> None:
    dst = ["02:00:00", "02:15:00", "02:30:00", "02:45:00"]
    text = _fluvius_elec(_quarters("28/10/2023") + _quarters("29/10/2023", dst))
    days, notes, problems = _days(_write(tmp_path, text, bom=True))
    assert not problems
    assert days[("5414", dt.date(2023, 10, 28))][0] == pytest.approx(9.6)
    assert days[("5414", dt.date(2023, 10, 29))][0] == pytest.approx(10.0)  # 100 quarter-hours
    assert any(n.startswith("added: registers 'Offtake Day' + 'Offtake Night'") for n in notes)
    assert any(
        n.startswith("left out: injection registers ('Injection Day', 'Injection Night'): not")
        for n in notes
    )
    assert "2023-10-29: 4 quarter-hours written twice" in " ".join(notes)
    assert _accounting(notes) == (392, 196, 196, 0)


def test_a_repeated_interval_outside_a_dst_change_refuses_its_day(tmp_path: Path) -> None:
    text = _fluvius_elec(_quarters("27/10/2023") + _quarters("28/10/2023", ["10:00:00"]))
    days, notes, problems = _days(_write(tmp_path, text))
    assert list(days) == [("5414", dt.date(2023, 10, 27))]
    reasons = {p.reason for p in problems}
    assert reasons == {
        "the day 2023-10-28 is not stored: the interval starting 10:00 is written more than "
        "once (not the repeated hour of a daylight-saving change)"
    }
    assert len(problems) == 97  # every offtake row of that day, for the reject report
    assert _accounting(notes)[3] == 97


# -- e-distribuzione: a day per row, 96 quarter-hour columns, trailing ';' on data rows only -----


def _enel(days: dict[str, list[str]]) -> str:
    slots = [
        f"{k // 4:02d}:{k % 4 * 15:02d}-{(k + 1) // 4:02d}:{(k + 1) % 4 * 15:02d}"
        for k in range(96)
    ]
    lines = ["Giorno;" + ";".join(slots)]
    for date, values in days.items():
        lines.append(f'"{date}";' + ";".join(f'"{v}"' for v in values) + ";")
    return "\n".join(lines) + "\n"


def test_e_distribuzione_wide_quarter_hours(tmp_path: Path) -> None:
    values = [f"0,{k:03d}" for k in range(96)]
    path = _write(tmp_path, _enel({"13/09/2024": values, "14/09/2024": ["0,5"] * 96}))
    with pytest.raises(IngestError) as refused:
        choose_template(path)
    assert refused.value.code == "no_meter" and "--meter" in refused.value.message
    days, notes, problems = _days(path, meter="mtr_1")
    assert not problems
    assert days[("mtr_1", dt.date(2024, 9, 13))][0] == pytest.approx(sum(range(96)) / 1000)
    assert days[("mtr_1", dt.date(2024, 9, 14))][0] == pytest.approx(48.0)
    assert days[("mtr_1", dt.date(2024, 9, 14))][1] == ""  # no unit: the meter's
    assert "no unit in the file: the values are taken in each meter's unit" in notes


def test_e_distribuzione_a_bad_cell_refuses_its_day_naming_row_and_column(tmp_path: Path) -> None:
    bad = ["0,1"] * 96
    bad[5] = "abc"
    path = _write(tmp_path, _enel({"13/09/2024": ["0,1"] * 96, "14/09/2024": bad}))
    days, notes, problems = _days(path, meter="mtr_1")
    assert list(days) == [("mtr_1", dt.date(2024, 9, 13))]
    (p,) = problems
    assert (p.where.row, p.where.column) == (3, "01:15-01:30")
    assert "'abc' is not a number" in p.reason and p.row_values[0] == "14/09/2024"
    assert _accounting(notes) == (2, 1, 0, 1)


# -- ENGIE: ISO timestamps with offsets, two EANs, no unit -------------------------------------


def test_engie_iso_offsets_local_day_is_the_printed_date(tmp_path: Path) -> None:
    zone = zoneinfo.ZoneInfo("Europe/Amsterdam")
    start = dt.datetime(2022, 10, 29, 22, tzinfo=dt.UTC)
    lines = ['"Datum","EAN","Verbruik","Type","Piek"']
    expected: dict[tuple[str, dt.date], float] = {}
    for ean, kind in (("8716871", "Elektriciteit"), ("8716872", "Gas")):
        for h in range(49):
            local = (start + dt.timedelta(hours=h)).astimezone(zone)
            value = (h % 7) / 10
            lines.append(f'"{local.isoformat()}","{ean}","{value}","{kind}","false"')
            key = (ean, local.date())
            expected[key] = expected.get(key, 0.0) + value
    days, notes, problems = _days(_write(tmp_path, "\n".join(lines) + "\n"))
    assert not problems
    assert {k: v[0] for k, v in days.items()} == pytest.approx(expected)
    assert sum(1 for (_e, d) in expected if d == dt.date(2022, 10, 30)) == 2
    assert "2022-10-30 (25)" in " ".join(notes)
    with pytest.raises(IngestError) as several:
        choose_template(tmp_path / "export.csv", meter="mtr_1")
    assert several.value.code == "several_meters"


# -- general rules --------------------------------------------------------------------------------


def test_end_stamped_intervals_belong_to_the_day_they_start(tmp_path: Path) -> None:
    lines = ["Interval End,Meter,kWh"]
    for k in range(1, 49):
        end = dt.datetime(2024, 5, 1) + dt.timedelta(hours=k)
        lines.append(f"{end:%Y-%m-%d %H:%M},M1,1")
    days, notes, _ = _days(_write(tmp_path, "\n".join(lines) + "\n"))
    assert {d: v[0] for (_m, d), v in days.items()} == {
        dt.date(2024, 5, 1): 24.0,
        dt.date(2024, 5, 2): 24.0,
    }
    assert "(the column gives each interval's end)" in notes[0]


def test_day_month_order_from_the_sequence_or_refused(tmp_path: Path) -> None:
    def hours(dates: list[str]) -> str:
        rows = [f"{d} {h:02d}:00;M1;1" for d in dates for h in range(24)]
        return "Start;Meter;Usage\n" + "\n".join(rows) + "\n"

    days, notes, _ = _days(_write(tmp_path, hours(["01/02/2024", "02/02/2024"])))
    assert [d for _m, d in days] == [dt.date(2024, 2, 1), dt.date(2024, 2, 2)]
    assert any(n.startswith("dates read day first (DMY)") for n in notes)
    with pytest.raises(IngestError) as refused:
        choose_template(_write(tmp_path, hours(["01/02/2024"]), name="one.csv"))
    assert refused.value.code == "date_order"


def test_bills_are_not_intervals(tmp_path: Path) -> None:
    text = "Account,Service From,Service To,Usage\nA1,01/01/2024,01/31/2024,100\n"
    text += "A1,02/01/2024,02/29/2024,90\nA1,03/01/2024,03/31/2024,80\n"
    try:
        _table, template = choose_template(_write(tmp_path, text))
    except IngestError:
        return
    assert template.name != "interval_days"


def test_cell_readers() -> None:
    assert split_stamp("2021-12-25T00:15:00+01:00") == ("2021-12-25", 15)
    assert split_stamp("03/30/2024 12:15 PM") == ("03/30/2024", 735)
    assert split_stamp("10-01-2022") == ("10-01-2022", None)
    assert slot_minutes("23:45-24:00") == (1425, 1440)
    assert slot_minutes("Giorno") is None
    dates, order, why = resolve_dates(["31/12/2024", "01/01/2025"])
    assert why == "'31/12/2024' has a first number over 12"
    assert order == "DMY" and dates["01/01/2025"] == dt.date(2025, 1, 1)


# -- property: generated exports are stored as their day sums or refused with a reason -----------

_FORMATS = ("%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%d-%m-%Y", "%d.%m.%Y")
_ZONES = ("Europe/Brussels", "America/New_York", "Europe/Rome")
_NEAR_DST = (dt.date(2024, 3, 30), dt.date(2024, 10, 26), dt.date(2024, 3, 9), dt.date(2024, 11, 2))


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    step=st.sampled_from((15, 30, 60)),
    wide=st.booleans(),
    fmt=st.sampled_from(_FORMATS),
    comma=st.booleans(),
    zone=st.sampled_from(_ZONES),
    first=st.one_of(
        st.sampled_from(_NEAR_DST), st.dates(dt.date(2023, 1, 1), dt.date(2025, 12, 1))
    ),
    ndays=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_generated_exports_are_day_sums_or_refused(
    tmp_path: Path,
    step: int,
    wide: bool,
    fmt: str,
    comma: bool,
    zone: str,
    first: dt.date,
    ndays: int,
    seed: int,
) -> None:
    rng = random.Random(seed)
    sep, mark = (";", ",") if comma else (",", ".")
    tz = zoneinfo.ZoneInfo(zone)
    expected: dict[dt.date, int] = {}  # thousandths, exact
    lines: list[str] = []

    def number(thousandths: int) -> str:
        return f"{thousandths / 1000:.3f}".replace(".", mark)

    if wide:
        per_day = 1440 // step
        slots = [f"{k * step // 60:02d}:{k * step % 60:02d}" for k in range(per_day)]
        lines.append(sep.join(["Date", *slots]))
        for d in range(ndays):
            day = first + dt.timedelta(days=d)
            values = [rng.randint(0, 2000) for _ in slots]
            blank = rng.randrange(per_day) if rng.random() < 0.3 else None  # a missing slot
            cells = ["" if k == blank else number(v) for k, v in enumerate(values)]
            expected[day] = sum(v for k, v in enumerate(values) if k != blank)
            lines.append(sep.join([day.strftime(fmt), *cells]) + (sep if comma else ""))
    else:
        lines.append(sep.join(["Start", "Usage", "Unit"]))
        t = dt.datetime.combine(first, dt.time(), tz).astimezone(dt.UTC)
        end = dt.datetime.combine(first + dt.timedelta(days=ndays), dt.time(), tz)
        while t < end:
            local = t.astimezone(tz)
            v = rng.randint(0, 2000)
            expected[local.date()] = expected.get(local.date(), 0) + v
            lines.append(sep.join([f"{local.strftime(fmt)} {local:%H:%M}", number(v), "kWh"]))
            t += dt.timedelta(minutes=step)
    path = tmp_path / f"gen_{seed}_{step}_{int(wide)}.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        table, template = choose_template(path, meter="mtr_1")
    except IngestError as exc:
        # Refused as a whole, with a reason: only when the dates cannot say day from month.
        assert exc.code == "date_order", exc.message
        assert fmt in ("%d/%m/%Y", "%m/%d/%Y", "%d-%m-%Y", "%d.%m.%Y")
        assert exc.message
        return
    assert template.name == "interval_days"
    stored = {dt.date.fromisoformat(r.cells[1]): float(r.cells[3]) for r in table.rows()}
    refused = {p.reason for p in table.problems}
    assert not refused, refused
    assert stored == {d: v / 1000 for d, v in expected.items()}
