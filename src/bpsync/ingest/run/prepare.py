"""The pure half of an import, end to end: read → map → normalise → validate.

prepared = prepare(path, "auto", catalog=catalog)         # no network
ranges = prepared.collected.meter_ranges()                # the network stage fetches these
result = check(prepared, existing=stored, today=today)    # file-level checks
result.all_candidates() / result.problems                  # → plan, journal, reject report
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bpsync.ingest.cells.columnar import distinct, factorize, first_present
from bpsync.ingest.cells.dates import DateOrder
from bpsync.ingest.cells.values import cell_text, is_blank, parse_header
from bpsync.ingest.checks.collected import Collected, MeterSet, StoredReading, ValidationResult
from bpsync.ingest.checks.validate import validate
from bpsync.ingest.memory import give_back_memory
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers import Table, detect_format, open_table
from bpsync.ingest.readers.base import Row
from bpsync.ingest.readers.chunks import CHUNK_ROWS, table_chunks
from bpsync.ingest.readers.xlsx import list_sheets
from bpsync.ingest.readings.assign_meters import CatalogSource, MeterCatalog, Normaliser
from bpsync.ingest.readings.limits import MAX_NAMED_METERS, MAX_REFUSED_ROWS
from bpsync.ingest.readings.map_chunk import map_chunks
from bpsync.ingest.send.results import csv_unquote, is_reject_report
from bpsync.ingest.understand.columns import resolve_columns, unused_columns
from bpsync.ingest.understand.evidence import Plan, plan_table
from bpsync.ingest.understand.infer import INFERRED_NAMES, infer_template, inferred_note, undecided
from bpsync.ingest.understand.intervals import recognise_intervals
from bpsync.ingest.understand.line_items import recognise_line_items
from bpsync.ingest.understand.templates import (
    Template,
    TemplateError,
    list_templates,
    load_template,
    match_reason,
    match_template,
    suggest_template,
)

GREEN_BUTTON_TEMPLATE = "green_button"


@dataclass
class Prepared:
    table: Table
    template: Template
    collected: Collected
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.table.describe()}; template {self.template.name}"


def choose_template(
    path: str | Path,
    template: str | Template | None = "auto",
    *,
    date_order: DateOrder | None = None,
    **options: Any,
) -> tuple[Table, Template]:
    """Open the file and pick its template (`_choose_template`); `date_order` ("DMY" or "MDY",
    from `--date-order` or a folder's setting) reads dates such as 03/04 that way where nothing
    in the file proves the order (a value that does prove it still wins, and the dry run says
    so)."""
    table, chosen = _choose_template(path, template, **options)
    if date_order is None and is_reject_report([h.text for h in table.headers]):
        date_order = _order_of_source(Path(path), template, options)
    if date_order and chosen.format != "greenbutton":
        chosen = replace(chosen, date_order=date_order)
        name = "day-first" if date_order == "DMY" else "month-first"
        table.notes.append(
            f"dates such as 03/04 read {name} where the file does not say (--date-order)"
        )
    return table, chosen


def template_to_keep(
    path: str | Path,
    name: str,
    *,
    meter: str | None = None,
    date_order: DateOrder | None = None,
    sheet: str | None = None,
    template_dirs: Sequence[Path] | None = None,
) -> Template:
    """The mapping `bpsync import FILE --save-template NAME` keeps: the one inferred for this
    file (with the date order and period convention its data decided, and its mapped columns as
    the signature, so the next export of this layout matches it). Raises IngestError when a
    template already reads the file, or a built-in reader (interval exports, line-item bills)
    does, since then there is nothing to keep."""
    table, t = choose_template(
        path, "auto", sheet=sheet, meter=meter, date_order=date_order, template_dirs=template_dirs
    )
    if t.name in ("interval_days", "bill_line_items"):
        raise IngestError(
            "this file is read by bpsync's own interval and line-item readers, with no template; "
            "there is no mapping to save",
            where=Where(table.file, table.sheet),
            code="nothing_to_save",
        )
    if t.name not in INFERRED_NAMES:
        raise IngestError(
            f"the template {t.name!r} already reads this file; pass -t {t.name} or copy it with "
            f"`bpsync templates show {t.name}`",
            where=Where(table.file, table.sheet),
            code="nothing_to_save",
        )
    order = plan_table(table, t).order
    signature = [h for names in t.columns.values() for h in names]
    signature += [*t.meter.column, *t.meter.building_column, *t.meter.name_column]
    return replace(
        t,
        name=name,
        description=f"Inferred from {Path(path).name}'s headers and values; saved with "
        "--save-template.",
        date_order=order,
        signature=tuple(dict.fromkeys(signature)),
    )


def _order_of_source(
    report: Path, template: str | Template | None, options: dict[str, Any]
) -> DateOrder | None:
    """The date order decided for the file a reject report came from (`bills.rejects.csv` →
    `bills.*` beside it): the refused rows alone may hold no date that proves it."""
    stem = report.name.rsplit(".rejects.", 1)[0]
    if stem == report.name:
        return None
    for source in sorted(report.parent.glob(f"{glob_escape(stem)}.*")):
        if source == report or ".rejects." in source.name:
            continue
        try:
            table, t = _choose_template(source, template, **options)
            return plan_table(table, t).order
        except (IngestError, OSError, TemplateError):
            continue
    return None


def _choose_template(
    path: str | Path,
    template: str | Template | None = "auto",
    *,
    template_dirs: Sequence[Path] | None = None,
    sheet: str | None = None,
    include_hidden: bool = False,
    encoding: str | None = None,
    delimiter: str | None = None,
    meter: str | None = None,
    catalog: MeterCatalog | CatalogSource = None,
) -> tuple[Table, Template]:
    """Open the file and pick its template (by name, or `auto` by header signature, or inferred
    from headers and values when none matches). `meter` puts every row in that meter (a
    single-meter export with no meter column); `catalog` gives that meter's unit when the
    inference needs it."""
    fmt = detect_format(path)
    if isinstance(template, str) and template in INFERRED_NAMES:
        template = "auto"  # a journal's record of an inferred import: infer it again
    if isinstance(template, Template) or (template not in (None, "auto")):
        t = (
            template
            if isinstance(template, Template)
            else load_template(str(template), template_dirs)
        )
        if meter:
            t = replace(t, fixed_meter=meter)
        table = open_table(
            path,
            fmt=fmt,
            sheet=sheet or t.sheet,
            expected=t.expected_keys(),
            include_hidden=include_hidden,
            skip_rows=t.skip_rows,
            encoding=encoding,
            delimiter=delimiter,
            aggregate=t.aggregate,
            timezone=t.timezone,
        )
        return _read_back(table), t
    templates = list_templates(template_dirs)
    if meter:
        templates = [replace(x, fixed_meter=meter) for x in templates]
    if fmt == "greenbutton":
        t = next((x for x in templates if x.format == "greenbutton"), None) or load_template(
            GREEN_BUTTON_TEMPLATE, template_dirs
        )
        return open_table(path, fmt=fmt, aggregate=t.aggregate, timezone=t.timezone), t
    expected = set().union(*(t.expected_keys() for t in templates if t.format != "greenbutton"))
    table = open_table(
        path,
        fmt=fmt,
        sheet=sheet,
        expected=expected,
        include_hidden=include_hidden,
        encoding=encoding,
        delimiter=delimiter,
    )
    table = _read_back(table)
    match = match_template(table.headers, templates, fmt=fmt)
    seen: list[str] = []
    if fmt == "xlsx" and sheet is None:
        # Score every other visible sheet against the templates and keep the best (issue 11
        # item 6); when none fits, say what each sheet holds.
        seen.append(f"sheet {table.sheet!r}: " + _some(table))
        for other, state in list_sheets(path):
            if other == table.sheet or (state != "visible" and not include_hidden):
                continue
            try:
                candidate = open_table(path, fmt=fmt, sheet=other, expected=expected)
            except IngestError:
                seen.append(f"sheet {other!r}: no header row")
                continue
            seen.append(f"sheet {other!r}: " + _some(candidate))
            found = match_template(candidate.headers, templates, fmt=fmt)
            if found is not None and (match is None or found.score > match.score):
                table, match = candidate, found
                table.notes.append(f"sheet {other!r} fits a template best")
    if match is None:
        # No template names this layout: an interval export is read as days; otherwise the
        # columns are inferred from headers and values together (issue 27).
        unit_of = _unit_of(catalog)
        recognised = recognise_intervals(table, meter=meter, meter_unit=unit_of)
        recognised = recognised or recognise_line_items(table)
        if recognised is not None:
            return recognised
        one_unit = (lambda: unit_of(meter)) if unit_of and meter else None
        inference = infer_template(table, meter=meter, meter_unit=one_unit)
        if inference.decided:
            assert inference.template is not None
            table.notes.append(inferred_note(inference))
            return table, inference.template
        if len(seen) <= 1:
            raise undecided(table, inference, templates)
    if match is None and len(seen) > 1:
        raise IngestError(
            "no sheet of this workbook fits a template. "
            + "; ".join(seen)
            + ". Save a template with `bpsync templates suggest FILE --sheet NAME`.",
            where=Where(table.file),
            code="no_template",
        )
    if match is None:
        suggestion = suggest_template(table.headers, templates=templates)
        mapped = ", ".join(f"{f} ← {h!r}" for f, h in suggestion.matched.items()) or "nothing"
        raise IngestError(
            "no template matches this file's columns ("
            + ", ".join(repr(h.text) for h in table.headers)
            + f"). A suggested mapping: {mapped}"
            + (f"; still missing: {'; '.join(suggestion.missing)}" if suggestion.missing else "")
            + ". Save it with `bpsync templates suggest FILE` and pass --template NAME.",
            where=Where(table.file, table.sheet, table.header_row),
            code="no_template",
        )
    table.notes.append(match_reason(match.template, table.headers))
    unused = unused_columns(table, match.template)
    if unused:
        table.notes.append("columns not used: " + ", ".join(repr(u) for u in unused))
    return table, match.template


def _unit_of(catalog: MeterCatalog | CatalogSource) -> Callable[[str], str | None] | None:
    """A registered meter's unit by its reference or id, the catalog looked up only when asked
    (a choice between two statements of one quantity needs it)."""
    if catalog is None:
        return None

    def unit(ref: str) -> str | None:
        found = catalog() if callable(catalog) else catalog
        if found is None or not ref:
            return None
        info = found.resolve("external_ref", ref)  # a meter id is its own reference
        return None if isinstance(info, str) else info.unit

    return unit


def _read_back(table: Table) -> Table:
    """A CSV reject report of ours (its last column `Reason`) with the `'` that neutralised
    formula-like cells taken off (results.csv_safe), so its rows import with the source's values.
    Read row by row: a report holds the rejected rows only."""
    if table.kind != "csv" or not is_reject_report([h.text for h in table.headers]):
        return table
    rows = table.rows

    def unquoted() -> Iterator[Row]:
        for row in rows():
            cells = tuple(csv_unquote(c) if isinstance(c, str) else c for c in row.cells)
            yield Row(row.number, cells)

    headers = [
        h if csv_unquote(h.text) == h.text else parse_header(csv_unquote(h.text), h.index)
        for h in table.headers
    ]
    return replace(table, headers=headers, _rows=unquoted, chunks=None, distinct_texts=None)


def _some(table: Table, limit: int = 8) -> str:
    texts = [repr(h.text) for h in table.headers]
    return ", ".join(texts[:limit]) + (
        f" and {len(texts) - limit} more" if len(texts) > limit else ""
    )


def prepare(
    path: str | Path,
    template: str | Template | None = "auto",
    *,
    catalog: MeterCatalog | CatalogSource = None,
    template_dirs: Sequence[Path] | None = None,
    sheet: str | None = None,
    include_hidden: bool = False,
    encoding: str | None = None,
    delimiter: str | None = None,
    meter: str | None = None,
    date_order: DateOrder | None = None,
) -> Prepared:
    """Read, map and normalise a file into per-meter readings and row problems (no network).
    `catalog` may be a function giving it, called when meters are first resolved (after the
    file is read and mapped). Raises IngestError when the file as a whole cannot be imported."""
    table, t = choose_template(
        path,
        template,
        template_dirs=template_dirs,
        sheet=sheet,
        include_hidden=include_hidden,
        encoding=encoding,
        delimiter=delimiter,
        meter=meter,
        catalog=catalog,
        date_order=date_order,
    )
    plan = plan_table(table, t)
    collected = collect_table(table, plan, catalog)
    return Prepared(table, t, collected, notes=list(table.notes))


def named_meters(
    path: str | Path,
    template: str | Template | None = "auto",
    *,
    template_dirs: Sequence[Path] | None = None,
    sheet: str | None = None,
    include_hidden: bool = False,
    meter: str | None = None,
) -> tuple[str, set[str]] | None:
    """(how the template names meters, the distinct names the file uses): meter ids or external
    references, so the network stage can look up only those meters. None when meters are named
    by building and meter name (the whole organisation is needed) or the file cannot be read
    (`prepare` will say why)."""
    try:
        table, t = choose_template(
            path,
            template,
            template_dirs=template_dirs,
            sheet=sheet,
            include_hidden=include_hidden,
            meter=meter,
        )
        if t.meter.by == "building_name" and not t.fixed_meter:
            return None
        if t.fixed_meter:
            return t.meter.by, {t.fixed_meter}
        columns = resolve_columns(table, t) if table.kind != "greenbutton" else None
    except IngestError:
        return None
    if columns is not None and t.layout == "wide_meters":
        return t.meter.by, {h.label for h, _, _ in columns.values}
    header = columns.meter if columns is not None else None
    index = header.index if header is not None else 0
    names: set[str] = set()
    if table.distinct_texts is not None:  # the meter column read by itself
        alone = table.distinct_texts(index, _meter_name, MAX_NAMED_METERS)
        if alone is not None:
            return (t.meter.by, alone) if len(alone) <= MAX_NAMED_METERS else None
    for chunk in table_chunks(table):
        names.update(
            str(x)
            for x in distinct(chunk.raw(index), chunk.text, _meter_name, chunk.factors(index))[1]
            if x is not None
        )
        if len(names) > MAX_NAMED_METERS:  # not a list of meters to look up one by one
            return None
    return t.meter.by, names


def _meter_name(value: object) -> str | None:
    return None if is_blank(value) else cell_text(value).strip()


def check(
    prepared: Prepared,
    *,
    existing: Mapping[str, Sequence[StoredReading]] | None = None,
    today: dt.date | None = None,
) -> ValidationResult:
    """The file-level checks, then every problem gets its row's cells (for the reject report)."""
    columns = (
        resolve_columns(prepared.table, prepared.template)
        if prepared.table.kind != "greenbutton"
        else None
    )
    start = None
    if columns is not None:
        h = next(
            (
                columns.fields[f]
                for f in ("start_date", "bill_date", "month", "end_date")
                if f in columns.fields
            ),
            None,
        )
        start = (h.text, h.index) if h else None
    consumption = columns.fields.get("consumption") if columns is not None else None
    result = validate(
        prepared.collected,
        existing=existing,
        today=today,
        start_column=start,
        value_columns={h.index: h.text for h in prepared.table.headers},
        consumption_column=consumption.index if consumption else None,
    )
    result.problems = attach_row_values(result.problems, prepared.table)
    return result


def check_file(
    path: str | Path,
    template: str | Template | None = "auto",
    *,
    catalog: MeterCatalog | None = None,
    existing: Mapping[str, Sequence[StoredReading]] | None = None,
    today: dt.date | None = None,
    template_dirs: Sequence[Path] | None = None,
    sheet: str | None = None,
    include_hidden: bool = False,
    meter: str | None = None,
    date_order: DateOrder | None = None,
) -> tuple[Prepared, ValidationResult]:
    """`prepare` + `check` in one call (offline checks, tests, `--dry-run` without a server)."""
    prepared = prepare(
        path,
        template,
        catalog=catalog,
        template_dirs=template_dirs,
        sheet=sheet,
        include_hidden=include_hidden,
        meter=meter,
        date_order=date_order,
    )
    return prepared, check(prepared, existing=existing, today=today)


def attach_row_values(problems: Iterable[Problem], table: Table) -> list[Problem]:
    """Fill in `row_values` (the original cells) of problems that lack them: one pass over the
    file, only when some problem needs it."""
    problems = list(problems)
    wanted = {p.where.row for p in problems if not p.row_values and p.where.row is not None}
    if not wanted:
        return problems
    cells: dict[int, tuple[str, ...]] = {}
    for row in table.rows():
        if row.number in wanted:
            cells[row.number] = tuple(cell_text(c) for c in row.cells)
            if len(cells) == len(wanted):
                break
    return [
        replace(p, row_values=cells[p.where.row])
        if not p.row_values and p.where.row in cells
        else p
        for p in problems
    ]


def collect_table(
    table: Table, plan: Plan, catalog: MeterCatalog | CatalogSource, size: int = CHUNK_ROWS
) -> Collected:
    """Read, map, normalise and collect the whole table: chunk by chunk, then every meter's
    readings laid out meter by meter in one set of columns."""
    normaliser = Normaliser(table, plan.template.meter.by, catalog)
    width = len(table.headers)
    problems: list[Problem] = list(table.problems)
    # rows_read counts a row once however many readings or problems it has, the reader's own
    # problems (e.g. Green Button's) included.
    reader_rows = np.array(
        sorted({p.where.row for p in table.problems if p.where.row is not None}), dtype=np.int64
    )
    rows_read, last_row = len(reader_rows), None
    # Each chunk's readings are kept as compact columns only (meter and currency as codes), so
    # the chunk's text is freed as soon as it is mapped: memory grows by ~44 bytes a reading.
    groups = _Codes()
    currencies = _Codes()
    meters: list[tuple[str, str | None, str | None]] = []  # per group: key, meter id, unit
    parts: list[dict[str, np.ndarray]] = []
    refused = 0  # rows refused so far (a row with two problems counts once)
    for chunk, result in map_chunks(table, plan, size):
        found = result.problems
        items, keys, ids = normaliser.run(result.items, chunk, width, found)
        rows = np.sort(
            np.concatenate([items.row, np.array([r for r, _, _ in found], dtype=np.int64)])
        )
        rows = rows[~np.isin(rows, reader_rows)]  # a row the reader spoke of counts once
        if len(rows):
            distinct = 1 + int(np.count_nonzero(rows[1:] != rows[:-1]))
            rows_read += distinct - (1 if rows[0] == last_row else 0)
            last_row = int(rows[-1])
        found.sort(key=lambda x: (x[0], x[1]))
        problems.extend(p for _, _, p in found)
        refused += len({r for r, _, p in found if p.severity == "error"})
        if refused > MAX_REFUSED_ROWS:
            refuse_too_many(table, problems, refused)
        order = np.lexsort((items.order, items.row))  # file order: row, then value column
        if np.any(order[1:] < order[:-1]):  # a long layout is in file order already
            items, keys, ids = items.take(order), keys[order], ids[order]
        named = first_present(ids, keys)
        group, first = groups.codes(named)
        for pos in first:  # a meter seen for the first time
            meters.append((keys[pos], ids[pos], items.unit[pos]))
        parts.append(
            {
                "group": group,
                "rows": items.row.astype(np.int32),
                "starts": items.start.astype(np.int32),
                "ends": items.end.astype(np.int32),
                "consumption": items.consumption.astype(np.float64),
                "cost": items.cost.astype(np.float64),
                "demand": items.demand.astype(np.float64),
                "currency": currencies.codes(items.currency, none=-1)[0].astype(np.int16),
                "estimated": items.estimated.astype(np.int8),
                "cols": items.column.astype(np.int32),
            }
        )
        del items, keys, ids, named, result, chunk
    if not parts or not meters:
        return Collected(file=table.file, sheet=table.sheet, problems=problems, rows_read=rows_read)
    group = np.concatenate([p.pop("group") for p in parts])
    by_meter = np.argsort(group, kind="stable")
    columns = {}
    for name in list(parts[0]):
        columns[name] = np.concatenate([p.pop(name) for p in parts])[by_meter]
        # The pieces just joined go back to the system before the next column is joined:
        # kept by the allocator, they doubled the columns' memory at the end of a read
        # (64 MB for a million rows, the dry run's peak).
        give_back_memory()
    parts.clear()
    collected = Collected(
        file=table.file,
        sheet=table.sheet,
        problems=problems,
        rows_read=rows_read,
        currencies=[str(c) for c in currencies.values],
        columns=columns,
    )
    bounds = np.searchsorted(group[by_meter], np.arange(len(meters) + 1))
    for k, (key, meter_id, unit) in enumerate(meters):
        collected.meters[meter_id or key] = MeterSet(
            key, meter_id, unit, columns, int(bounds[k]), int(bounds[k + 1])
        )
    return collected


def refuse_too_many(table: Table, problems: list[Problem], refused: int) -> None:
    """Raise: the file refused more than MAX_REFUSED_ROWS rows (readings.limits.MAX_REFUSED_ROWS)."""
    first = next(p for p in problems if p.severity == "error")
    column = f", column {first.where.column!r}" if first.where.column else ""
    raise IngestError(
        f"{refused:,} rows were refused, more than {MAX_REFUSED_ROWS:,} (the first, row "
        f"{first.where.row}{column}: {first.reason}): check the template, the columns and the "
        f"meter map, or split the file. Nothing was imported from this file",
        where=Where(table.file, sheet=table.sheet),
        code="too_many_refused_rows",
    )


class _Codes:
    """Numbers for values in order of first appearance, across chunks (meters, currencies)."""

    def __init__(self) -> None:
        self.index: dict[object, int] = {}
        self.values: list[object] = []

    def codes(self, values: np.ndarray, none: int | None = None) -> tuple[np.ndarray, list[int]]:
        """(each value's code, the positions where a value was seen for the first time); with
        `none`, None gets that code and is never numbered."""
        if none is None:  # pd.factorize(use_na_sentinel=False), or from the values' known codes
            local, distinct = factorize(values, True)
        else:
            local, distinct = pd.factorize(values, use_na_sentinel=True)
        mapped = np.empty(len(distinct), dtype=np.int64)
        first_seen: list[int] = []
        for j, value in enumerate(distinct):
            code = self.index.get(value)
            if code is None:
                code = self.index[value] = len(self.values)
                self.values.append(value)
                first_seen.append(j)
            mapped[j] = code
        known = local >= 0
        codes = np.full(len(local), -1 if none is None else none, dtype=np.int64)
        codes[known] = mapped[local[known]]
        first_at = np.full(len(distinct), len(local), dtype=np.int64)
        where = np.flatnonzero(known)
        np.minimum.at(first_at, local[where], where)  # each value's first position
        positions = [int(first_at[j]) for j in first_seen]
        return codes, positions
