"""Validate: the checks that need every reading of a meter at once, before anything is sent.

Errors (the row is not sent): duplicate rows beyond the first copy are dropped (reported), two
rows whose periods overlap are both rejected (the file cannot say which is right), a reading that
overlaps one already stored is rejected (one stored with the same dates and quantity is "already
there" and skipped), and an end date after tomorrow is refused as the service would (D22).

Warnings (sent anyway): gaps between consecutive readings, periods far longer or shorter than the
meter's usual ones, negative values, and the spike/drop flags the service will set, computed
exactly as the service does (`service_rules`).

Meters with nothing stored are checked column-wise (`columnwise`), the others reading by reading
(`against_stored`); both add to one `ValidationResult` (`collected`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from bpsync.ingest.checks.against_stored import check_meter_with_stored, flag_stored_meters
from bpsync.ingest.checks.collected import Collected, MeterSet, StoredReading, ValidationResult
from bpsync.ingest.checks.columnwise import Context, check_meters
from bpsync.ingest.problems import Problem, Where


def validate(
    collected: Collected,
    *,
    existing: Mapping[str, Sequence[StoredReading]] | None = None,
    today: dt.date | None = None,
    start_column: tuple[str, int] | None = None,
    value_columns: Mapping[int, str] | None = None,
    consumption_column: int | None = None,
) -> ValidationResult:
    """Run the file-level checks. `existing` maps a meter id to its stored readings (in and a year
    before the file's range, see `Collected.meter_ranges`); `today` enables the future-date check
    (the service allows ends up to one day ahead of its UTC date). `start_column` names the column
    period problems point at; value problems point at the reading's consumption column
    (`consumption_column`, or the wide layout's own column), named by `value_columns`.

    Meters without stored readings are checked column-wise (`bpsync.ingest.checks.columnwise`); a meter with
    stored readings reading by reading against them, and the anomaly flags of all such meters
    together at the end (`flag_stored_meters`). Problems come out in row order, errors first
    within a row, then in the order the checks run."""
    result = ValidationResult(collected)
    last_allowed = (today + dt.timedelta(days=1)).toordinal() if today else None
    col_name, col_index = start_column or (None, None)
    names = value_columns or {}

    def where(row: int, column: int | None = None) -> Where:
        if column is None or column < 0:
            return Where(collected.file, collected.sheet, row, col_name, col_index)
        return Where(collected.file, collected.sheet, row, names.get(column), column)

    keyed: list[tuple[tuple[Any, ...], Problem]] = [
        ((p.where.row is None, p.where.row or 0, p.severity != "error", 0, i), p)
        for i, p in enumerate(collected.problems)
    ]
    context = Context(where, last_allowed, consumption_column, keyed)
    # Stored readings still arriving (an importer's ArrivingStored): the meters not waiting for
    # any go first, and those without stored readings are checked before the rest arrive.
    # Problems are keyed by the meter's place in the file, so the order checked changes nothing.
    awaited = getattr(existing, "awaited", None)
    later: dict[str, int] = awaited() if callable(awaited) else {}  # meter → expected arrival
    meters = sorted(
        enumerate(collected.meters.items()), key=lambda pm: later.get(pm[1][1].meter_id, -1)
    )
    plain: list[tuple[int, str, MeterSet]] = []
    plain_later: list[tuple[int, str, MeterSet]] = []
    ready_checked = False
    for position, (key, m) in meters:
        if m.meter_id in later and not ready_checked:
            check_meters(result, context, plain)
            ready_checked = True
        stored = existing.get(m.meter_id, ()) if existing is not None and m.meter_id else ()
        if stored:
            check_meter_with_stored(result, context, position, key, m, stored)
        else:
            (plain_later if ready_checked else plain).append((position, key, m))
    check_meters(result, context, sorted(plain_later) if ready_checked else plain)
    flag_stored_meters(result, context)
    result.accepted = {key: result.accepted[key] for key in collected.meters}  # file order
    keyed.sort(key=lambda kp: kp[0])
    result.problems = [p for _, p in keyed]
    return result
