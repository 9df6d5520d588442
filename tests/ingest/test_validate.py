"""File-level checks: duplicates, overlaps (in the file and against stored readings), future
dates, and the warnings."""

from __future__ import annotations

import datetime as dt

from bpsync.ingest import MeterCatalog, MeterInfo, StoredReading, check_file

D = dt.date


def catalog():
    return MeterCatalog.build(
        [
            MeterInfo("mtr_e", "electricity", "kWh", "bld_1", "Tower", "Main"),
            MeterInfo("mtr_w", "water", "m3"),
        ],
        {"E-1": "mtr_e"},
    )


def run(csv_file, body, **kw):
    path = csv_file("Meter ID,Start Date,End Date,Consumption,Unit\n" + body)
    return check_file(path, "long_csv", catalog=catalog(), **kw)[1]


def codes(result):
    return [(p.code, p.row) for p in result.problems]


def test_duplicate_rows_are_sent_once(csv_file):
    r = run(csv_file, "mtr_e,2024-01-01,2024-01-31,5,kWh\nmtr_e,2024-01-01,2024-01-31,5,kWh\n")
    assert codes(r) == [("duplicate_row", 3)]
    assert r.accepted_count == 1 and not r.errors


def test_overlaps_in_the_file_reject_both_rows(csv_file):
    r = run(
        csv_file,
        "mtr_e,2024-01-01,2024-01-31,5,kWh\nmtr_e,2024-01-31,2024-02-28,5,kWh\nmtr_e,2024-03-01,2024-03-31,5,kWh\n",
    )
    assert sorted(c for c in codes(r) if c[0] == "overlap") == [("overlap", 2), ("overlap", 3)]
    assert r.rejected_rows == {2, 3} and r.accepted_count == 1


def test_a_period_over_a_stored_one_is_a_rebill(csv_file):
    """Other dates over a stored reading: a rebill (issue 30), listed with what it replaces and
    applied only with --update."""
    stored = {"mtr_e": [StoredReading(D(2024, 1, 1), D(2024, 1, 31), 5.0, "rdg_1")]}
    r = run(csv_file, "mtr_e,2024-01-02,2024-01-31,5,kWh\n", existing=stored)
    [p] = [p for p in r.problems if p.code == "rebill"]
    assert p.reason == (
        "rebill 2024-01-02..2024-01-31 (5 kWh) replaces stored reading(s) rdg_1 "
        "(2024-01-01..2024-01-31, 5 kWh); applied with --update"
    )


def test_overlap_with_stored_readings_and_already_stored(csv_file):
    stored = {
        "mtr_e": [
            StoredReading(D(2024, 1, 1), D(2024, 1, 31), 5.0, "rdg_1"),
            StoredReading(D(2024, 2, 1), D(2024, 2, 29), 7.0, "rdg_2"),
        ]
    }
    r = run(
        csv_file,
        "mtr_e,2024-01-01,2024-01-31,5,kWh\nmtr_e,2024-02-15,2024-03-14,5,kWh\nmtr_e,2024-03-15,2024-04-14,5,kWh\n",
        existing=stored,
    )
    assert ("already_stored", 2) in codes(r) and ("rebill", 3) in codes(r)
    reason = next(p.reason for p in r.problems if p.code == "rebill")
    assert reason == (
        "rebill 2024-02-15..2024-03-14 (5 kWh) replaces stored reading(s) rdg_2 "
        "(2024-02-01..2024-02-29, 7 kWh); applied with --update"
    )
    assert [c.row for c in r.all_candidates()] == [4] and r.already_stored == 1


def test_future_dates_unknown_meters_and_unit_conversion(csv_file):
    r = run(
        csv_file,
        "mtr_e,2024-01-01,2024-01-31,2,MWh\nmtr_x,2024-01-01,2024-01-31,1,kWh\nmtr_w,2024-01-01,2024-01-31,1,kWh\n"
        "mtr_e,2025-06-01,2025-06-30,1,kWh\nmtr_w,2024-01-01,2024-01-31,2,kgal\n",
        today=D(2025, 1, 15),
    )
    assert [(p.code, p.row) for p in r.errors] == [
        ("unknown_meter", 3),
        ("unit_mismatch", 4),
        ("future_date", 5),
    ]
    values = {(c.meter_id, c.row): (c.consumption, c.unit) for c in r.all_candidates()}
    assert values[("mtr_e", 2)] == (2000.0, "kWh")
    assert abs(values[("mtr_w", 6)][0] - 7.570823568) < 1e-9


def test_warnings_gap_length_negative_and_predicted_anomalies(csv_file):
    body = (
        "".join(
            f"mtr_e,2023-{m:02d}-01,2023-{m:02d}-28,{v},kWh\n"
            for m, v in [(1, 100), (2, 100), (3, 100), (5, 400), (6, -3), (7, 20)]
        )
        + "mtr_e,2023-08-01,2023-08-03,5,kWh\n"
    )
    r = run(csv_file, body)
    got = {(p.code, p.row) for p in r.warnings}
    assert ("gap", 5) in got  # April missing
    assert ("spike", 5) in got and ("negative", 6) in got and ("drop", 7) in got
    assert ("short_period", 8) in got
    assert not r.errors


def test_building_and_meter_name_matching(csv_file):
    path = csv_file(
        "Building,Meter Name,Start,End,Usage\nTower,main,2024-01-01,2024-01-31,4\nTower,Spare,2024-01-01,2024-01-31,4\n"
    )
    t = {
        "name": "by_name",
        "meter": {
            "by": "building_name",
            "building_column": "Building",
            "name_column": "Meter Name",
        },
        "columns": {"start_date": "Start", "end_date": "End", "consumption": "Usage"},
    }
    from bpsync.ingest.understand.templates import template_from_dict

    _, r = check_file(path, template_from_dict(t), catalog=catalog())
    assert [c.meter_id for c in r.all_candidates()] == ["mtr_e"]
    assert [(p.code, p.row) for p in r.errors] == [("unknown_meter", 3)]
    assert r.errors[0].row_values == ("Tower", "Spare", "2024-01-01", "2024-01-31", "4")


def test_meter_ranges_for_the_network_stage(csv_file):
    from bpsync.ingest import prepare

    path = csv_file(
        "Meter ID,Start Date,End Date,Consumption,Unit\nmtr_e,2024-03-01,2024-03-31,1,kWh\nE-1,2024-01-01,2024-01-31,1,kWh\n"
    )
    prepared = prepare(path, "long_csv", catalog=catalog())
    assert prepared.collected.meter_ranges() == {"mtr_e": (D(2023, 3, 1), D(2024, 3, 31))}


def test_a_catalog_given_later_reads_the_same_and_is_asked_once(csv_file):
    """`prepare` may be given a function for the catalog (the importer looks meters up while the
    file is read): it is called once, when meters are first resolved, and the readings and
    problems are those of the catalog given at once."""
    from bpsync.ingest import check, prepare

    path = csv_file(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        "mtr_e,2024-01-01,2024-01-31,2,MWh\nmtr_x,2024-01-01,2024-01-31,1,kWh\n"
        "E-1,2024-02-01,2024-02-29,3,kWh\nmtr_w,2024-01-01,2024-01-31,2,kgal\n"
    )
    asked = []

    def later():
        asked.append(1)
        return catalog()

    given = check(prepare(path, "long_csv", catalog=catalog()), today=D(2025, 1, 1))
    lazy = check(prepare(path, "long_csv", catalog=later), today=D(2025, 1, 1))
    assert asked == [1]
    assert [(p.code, p.row, p.reason) for p in lazy.problems] == [
        (p.code, p.row, p.reason) for p in given.problems
    ]
    assert [(c.meter_id, c.row, c.consumption) for c in lazy.all_candidates()] == [
        (c.meter_id, c.row, c.consumption) for c in given.all_candidates()
    ]


def _mixed_file(csv_file):
    """Three meters: one with stored readings (an overlap, an already stored one), one without
    (a spike), one the service does not know."""
    return csv_file(
        "Meter ID,Start Date,End Date,Consumption,Unit\n"
        + "".join(
            f"mtr_w,2024-{m:02d}-01,2024-{m:02d}-28,{v},m3\n"
            for m, v in enumerate([10, 10, 10, 10, 50], start=1)
        )
        + "mtr_e,2024-01-01,2024-01-31,5,kWh\nmtr_e,2024-02-15,2024-03-14,5,kWh\n"
        + "mtr_x,2024-01-01,2024-01-31,1,kWh\nmtr_e,2024-03-15,2024-04-14,5,kWh\n"
    )


_STORED = {
    "mtr_e": [
        StoredReading(D(2024, 1, 1), D(2024, 1, 31), 5.0, "rdg_1"),
        StoredReading(D(2024, 2, 1), D(2024, 2, 29), 7.0, "rdg_2"),
    ]
}


def _outcome(result):
    return (
        [(p.code, p.row, p.reason, p.severity) for p in result.problems],
        [(c.meter_id, c.row, c.consumption) for c in result.all_candidates()],
        dict(result.flags),
        result.already_stored,
    )


def test_stored_readings_arriving_while_the_check_runs_change_nothing(csv_file):
    """An importer's check starts before the stored readings are all in (ArrivingStored): the
    meters not waiting for any are checked first, the others as their readings arrive from
    another thread, and problems, readings, flags and their order are those of a check given
    every stored reading at once."""
    import threading
    import time

    from bpsync.ingest import check, prepare
    from bpsync.ingest.lookup.fetch import ArrivingStored

    prepared = prepare(_mixed_file(csv_file), "long_csv", catalog=catalog())
    at_once = check(prepared, existing=_STORED, today=D(2025, 1, 1))
    arriving = ArrivingStored(["mtr_e", "mtr_w"])  # mtr_w is awaited but holds nothing
    assert arriving.awaited() == {"mtr_e": 0, "mtr_w": 1}

    def deliver() -> None:
        time.sleep(0.05)
        arriving.deliver({"mtr_w": []})
        time.sleep(0.05)
        arriving.deliver(_STORED)

    courier = threading.Thread(target=deliver)
    courier.start()
    later = check(prepared, existing=arriving, today=D(2025, 1, 1))
    courier.join()
    assert _outcome(later) == _outcome(at_once)
    assert arriving.awaited() == {} and dict(arriving) == {"mtr_w": [], **_STORED}


def test_a_failed_fetch_ends_a_check_waiting_for_it(csv_file):
    import threading

    import pytest

    from bpsync.ingest import check, prepare
    from bpsync.ingest.lookup.fetch import ArrivingStored, StoredUnavailable

    prepared = prepare(_mixed_file(csv_file), "long_csv", catalog=catalog())
    arriving = ArrivingStored(["mtr_e"])
    threading.Timer(0.05, arriving.fail).start()
    with pytest.raises(StoredUnavailable):
        check(prepared, existing=arriving, today=D(2025, 1, 1))
