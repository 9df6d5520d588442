"""Interval exports (set 2, files 4-8) imported with the plain documented command and no
template: each is stored as one reading per meter and local calendar day, the sum of the
intervals that start on that day (README: wall-clock dates the utility prints; ENGIE: the date of
the ISO timestamp in its own offset), DST days with every interval the file has.

Expected days are derived here with the csv module from each file's own layout, following the
README's rules (not from bpsync): ACE's 15-minute column (its 60-minute column restates it),
Fluvius gas's m³ rows (the kWh rows restate them), Fluvius electricity's offtake registers day +
night (injection is not consumption, DST's repeated quarter-hours both count), e-distribuzione's
96 quarter-hour columns, ENGIE's hourly rows per EAN. The dry run's notes must say what was left
out and account for every row read."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from pathlib import Path

import pytest

from tests.real_inputs.conftest import Org, daily_sums, real_path

ACE = "set2/ACE_Electric_72621898_03_30_2024_03_30_2025.csv"
GAS = "set2/Verbruikshistoriek_gas_123456789123456789_20220110_20240929_uurtotalen.csv"
ELEC = (
    "set2/Consumption_history_electricity_541448820052377134_20231022_20250426_15 minute totals.csv"
)
ENEL = "set2/ExportData_settembre.csv"
ENGIE = "set2/Export.verbruiken.ENGIE.csv"


def _rows(path: Path, delimiter: str) -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return list(csv.reader(f, delimiter=delimiter))


def _comma(text: str) -> float:
    return float(text.replace(",", "."))


def _ean(text: str) -> str:
    return text.removeprefix('="').removesuffix('"')


def _as_stored(days: dict[dt.date, float]) -> list[tuple[dt.date, dt.date, float]]:
    return [(d, d, v) for d, v in sorted(days.items())]


def _same(stored: list[tuple], expected: list[tuple[dt.date, dt.date, float]]) -> None:
    """Every stored day's dates exactly, its value to 1e-9 relative."""
    assert [(s, e) for s, e, *_ in stored] == [(s, e) for s, e, _ in expected]
    for (s, _e, got, _cost), (_s, _e2, want) in zip(stored, expected, strict=True):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), s


def _dry_run(org: Org, *args: str) -> dict:
    body = org.import_json(*args, "--dry-run")
    assert body["status"] == "dry-run"
    return body


def _accounting(notes: list[str]) -> tuple[int, int, int, int]:
    line = next(n for n in notes if n.startswith("rows read "))
    numbers = [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*", line)]
    read, used, left, refused = numbers[:4]
    assert read == used + left + refused
    return read, used, left, refused


def test_ace_quarter_hours_not_the_60_minute_restatement(org: Org) -> None:
    """Title lines, two column groups (60-minute, 15-minute) with '-' where empty; 2025-03-09
    has 92 quarter-hours; the 60-minute column is left out, said so in the dry run."""
    rows = _rows(real_path(ACE), ",")
    header = next(i for i, r in enumerate(rows) if r[:1] == ["Start Interval Date/Time"])
    quarter = daily_sums(
        (dt.datetime.strptime(r[0], "%m/%d/%Y %H:%M").date(), float(r[5]))
        for r in rows[header + 1 :]
        if r and r[7] == "15min"
    )
    hourly = daily_sums(
        (dt.datetime.strptime(r[0], "%m/%d/%Y %H:%M").date(), float(r[2]))
        for r in rows[header + 1 :]
        if r and r[4] == "60min"
    )
    assert quarter == pytest.approx(hourly)  # the restatement the README describes
    counts = daily_sums(
        (dt.datetime.strptime(r[0], "%m/%d/%Y %H:%M").date(), 1)
        for r in rows[header + 1 :]
        if r and r[7] == "15min"
    )
    assert counts[dt.date(2025, 3, 9)] == 92 and counts[dt.date(2024, 11, 3)] == 96
    meter = org.meter("electricity", "kWh", "ACE", ref="72621898")
    path = str(org.copy(ACE))
    notes = _dry_run(org, path)["notes"]
    assert any(
        n.startswith("left out: 60-minute column 'Usage' (restates the 15-minute column: equal")
        for n in notes
    ), notes
    read, _used, left, refused = _accounting(notes)
    assert (read, refused) == (len(rows) - header - 1, 0)
    assert left == 1  # 2025-03-09 03:00 has only a 60-minute value
    body = org.import_json(path)
    assert (body["accepted"], body["rejected"]) == (len(quarter), 0) == (366, 0)
    _same(org.stored(meter), _as_stored(quarter))


def test_fluvius_gas_hours_in_m3_not_the_kwh_restatement(org: Org) -> None:
    """Dutch headers, ';', decimal comma, dd-mm-yyyy, EAN as ="…", every hour as m³ and kWh,
    an empty 'Geen verbruik' hour, estimated hours, no final line break."""
    rows = _rows(real_path(GAS), ";")
    head = rows[0]
    at = {name: i for i, name in enumerate(head)}
    data = [r for r in rows[1:] if r]
    assert {_ean(r[at["EAN-code"]]) for r in data} == {"123456789123456789"}
    expected = daily_sums(
        (dt.datetime.strptime(r[at["Van datum"]], "%d-%m-%Y").date(), _comma(r[at["Volume"]]))
        for r in data
        if r[at["Eenheid"]] == "m³" and r[at["Volume"]]
    )
    meter = org.meter("natural_gas", "m3", "Gas", ref="123456789123456789")
    path = str(org.copy(GAS))
    notes = _dry_run(org, path)["notes"]
    assert any(n.startswith("left out: kWh rows restating m³") for n in notes), notes
    assert any("Geen verbruik" in n and n.startswith("left out:") for n in notes), notes
    read, used, left, refused = _accounting(notes)
    kwh = sum(1 for r in data if r[at["Eenheid"]] == "kWh")
    assert (read, used, left, refused) == (len(data), kwh - 1, kwh + 1, 0)
    body = org.import_json(path)
    assert (body["accepted"], body["rejected"]) == (len(expected), 0) == (3, 0)
    _same(org.stored(meter), _as_stored(expected))


def test_fluvius_electricity_day_plus_night_offtake_no_injection(org: Org) -> None:
    """Quarter-hours in four registers: consumption = offtake day + offtake night; injection is
    left out; 2023-10-29 writes 02:00-03:00 twice and both count."""
    rows = _rows(real_path(ELEC), ";")
    at = {name: i for i, name in enumerate(rows[0])}
    data = [r for r in rows[1:] if r]
    offtake = [r for r in data if r[at["Register"]].startswith("Offtake")]
    expected = daily_sums(
        (dt.datetime.strptime(r[at["From (date)"]], "%d/%m/%Y").date(), _comma(r[at["Volume"]]))
        for r in offtake
        if r[at["Volume"]]
    )
    dst = sum(1 for r in offtake if r[at["From (date)"]] == "29/10/2023")
    assert dst == 100
    meter = org.meter("electricity", "kWh", "Fluvius", ref="123456879123456789")
    path = str(org.copy(ELEC))
    notes = _dry_run(org, path)["notes"]
    assert any(
        n.startswith("left out: injection registers ('Injection Day', 'Injection Night'): not "
        "consumption") for n in notes
    ), notes  # fmt: skip
    assert any(n.startswith("added: registers 'Offtake Day' + 'Offtake Night'") for n in notes)
    assert any(n.startswith("2023-10-29: 4 quarter-hours written twice") for n in notes), notes
    read, used, left, refused = _accounting(notes)
    blank = sum(1 for r in offtake if not r[at["Volume"]])
    assert (read, used, left, refused) == (len(data), len(offtake) - blank, read - used, 0)
    body = org.import_json(path)
    assert (body["accepted"], body["rejected"]) == (len(expected), 0) == (71, 0)
    _same(org.stored(meter), _as_stored(expected))


def test_e_distribuzione_96_quarter_hour_columns(org: Org) -> None:
    """A row per day, 96 columns '00:00-00:15' …, quoted decimal commas, dd/mm/yyyy, a trailing
    ';' on data rows only; no unit and no meter in the file: --meter, the meter's kWh."""
    rows = _rows(real_path(ENEL), ";")
    head = rows[0]
    assert len(head) == 97 and all(len(r) == 98 and r[97] == "" for r in rows[1:])
    expected = {
        dt.datetime.strptime(r[0], "%d/%m/%Y").date(): sum(_comma(v) for v in r[1:97] if v)
        for r in rows[1:]
    }
    meter = org.meter("electricity", "kWh", "Enel")
    path = str(org.copy(ENEL))
    refused = org.bpsync("--json", "import", path, "--dry-run")
    assert refused.exit_code == 6, refused.output
    error = json.loads(refused.stderr.strip().splitlines()[-1])["error"]
    assert "names no meter: pass --meter METER" in error["message"], error
    notes = _dry_run(org, path, "--meter", meter)["notes"]
    assert "no unit in the file: the values are taken in each meter's unit" in notes
    assert _accounting(notes) == (30, 30, 0, 0)
    body = org.import_json(path, "--meter", meter)
    assert (body["accepted"], body["rejected"]) == (30, 0)
    _same(org.stored(meter), _as_stored(expected))


def test_engie_two_eans_hourly_over_three_dst_changes(org: Org) -> None:
    """Hourly rows for an electricity and a gas EAN, ISO timestamps with offsets (23- and
    25-hour days), no unit: kWh and m³ by the meters; the local day is the timestamp's date."""
    rows = _rows(real_path(ENGIE), ",")
    at = {name: i for i, name in enumerate(rows[0])}
    expected: dict[str, dict[dt.date, float]] = {}
    for r in rows[1:]:
        day = dt.datetime.fromisoformat(r[at["Datum"]]).date()  # its own offset's date
        days = expected.setdefault(r[at["EAN"]], {})
        days[day] = days.get(day, 0.0) + float(r[at["Verbruik"]])
    assert set(expected) == {"871687120061402458", "871687140013926764"}
    elec = org.meter("electricity", "kWh", "ENGIE power", ref="871687120061402458")
    gas = org.meter("natural_gas", "m3", "ENGIE gas", ref="871687140013926764")
    path = str(org.copy(ENGIE))
    notes = _dry_run(org, path)["notes"]
    assert "no unit in the file: the values are taken in each meter's unit" in notes
    assert _accounting(notes) == (len(rows) - 1, len(rows) - 1, 0, 0)
    body = org.import_json(path)
    n = sum(len(d) for d in expected.values())
    assert (body["accepted"], body["rejected"]) == (n, 0)
    _same(org.stored(elec), _as_stored(expected["871687120061402458"]))
    _same(org.stored(gas), _as_stored(expected["871687140013926764"]))
    stored = {s: c for s, _e, c, _ in org.stored(gas)}
    assert len(stored) == len(expected["871687140013926764"])
