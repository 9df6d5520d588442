"""Bill line-item exports (an energy-accounting system's "one line per charge") turned into one
bill per service and period.

Such a file writes every charge of a bill on its own line (energy charge, customer charge, late
charge, credits), the usage only on the usage line, demand on a line of its own, and the period on
every line. Read line by line, the charge lines would be refused for their missing usage and a
demand line would be stored as energy; read as bills, each bill is:

- its usage: the usage line's quantity, in its Units (or the unit its item names, "Natural gas
  (CCF)", where Units is blank);
- its demand: a line in kW, or whose item names demand ("KW Charge", "On peak demand");
- its cost: the sum of all its lines (decisions: the bill's total for that service);
- its meter: the service at the site (building = site name, meter name = service name).

A service whose usage only restates another's (sewer billed on the water meter's gallons) is left
out, and every line is accounted for in the notes. `recognise_line_items` returns None when the
table is not such an export."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from bpsync.ingest.cells.units import lookup_meter_type, lookup_unit
from bpsync.ingest.cells.values import Header, cell_text, is_blank, parse_header, parse_number
from bpsync.ingest.readers.base import Row, Table, make_headers
from bpsync.ingest.understand.templates import MeterSpec, Template, find_column

TEMPLATE_NAME = "bill_line_items"
SAMPLE_ROWS = 500
_COLUMNS = ("Site", "Service", "From", "Thru", "Usage", "Unit", "Cost", "Demand")
_DEMAND = re.compile(r"\b(kw|demand)\b", re.IGNORECASE)
# A service restating another: the same quantity on this share of the periods they share.
RESTATES = 0.9


@dataclass
class _Columns:
    site: Header | None
    service: Header
    item: Header
    start: Header
    end: Header
    usage: Header
    unit: Header | None
    cost: Header


@dataclass
class _Bill:
    first_row: int
    lines: int = 0
    usage: float | None = None
    unit: str | None = None
    cost: float = 0.0
    costs: int = 0
    demand: float | None = None
    usage_rows: list[int] = field(default_factory=list)


def _find(headers: Sequence[Header], *names: str) -> Header | None:
    try:
        return find_column(headers, names)
    except ValueError:
        return None


def _columns(headers: Sequence[Header]) -> _Columns | None:
    service = _find(headers, "Service Name", "Service", "Commodity", "Utility")
    item = _find(headers, "Item Description", "Item", "Charge Description", "Line Item")
    start = _find(headers, "From", "Start Date", "Service From", "Period Start")
    end = _find(headers, "Thru", "Through", "To", "End Date", "Service To", "Period End")
    usage = _find(headers, "Usage", "Quantity", "Consumption")
    cost = _find(headers, "Cost", "Amount", "Charge Amount")
    if None in (service, item, start, end, usage, cost):
        return None
    return _Columns(
        _find(headers, "Site Name", "Site", "Building", "Facility"),
        service,  # type: ignore[arg-type]
        item,  # type: ignore[arg-type]
        start,  # type: ignore[arg-type]
        end,  # type: ignore[arg-type]
        usage,  # type: ignore[arg-type]
        _find(headers, "Units", "Unit", "UOM"),
        cost,  # type: ignore[arg-type]
    )


def _cell(row: Row, h: Header | None) -> object:
    if h is None or h.index >= len(row.cells):
        return None
    return row.cells[h.index]


def _text(row: Row, h: Header | None) -> str:
    value = _cell(row, h)
    return "" if is_blank(value) else cell_text(value).strip()


def _number(row: Row, h: Header) -> float | None:
    try:
        return parse_number(_cell(row, h))
    except ValueError:
        return None


def _is_line_items(cols: _Columns, sample: Sequence[Row]) -> bool:
    """Most lines carry a cost and no usage, and bills span several lines."""
    if len(sample) < 4:
        return False
    charge_only = sum(1 for r in sample if _number(r, cols.usage) is None and _text(r, cols.cost))
    keys = Counter(
        (_text(r, cols.service), _text(r, cols.start), _text(r, cols.end)) for r in sample
    )
    return charge_only >= len(sample) * 0.1 and len(keys) < len(sample) * 0.7


def recognise_line_items(table: Table) -> tuple[Table, Template] | None:
    """The bills table and its template, or None when `table` is not a line-item export."""
    if table.kind not in ("csv", "xlsx"):
        return None
    cols = _columns(table.headers)
    if cols is None:
        return None
    if not _is_line_items(cols, list(itertools.islice(table.rows(), SAMPLE_ROWS))):
        return None
    bills: dict[tuple[str, str, str, str], _Bill] = {}
    count = Counter[str]()
    for row in table.rows():
        key = (_text(row, cols.site), _text(row, cols.service), _text(row, cols.start),
               _text(row, cols.end))  # fmt: skip
        bill = bills.setdefault(key, _Bill(row.number))
        bill.lines += 1
        cost = _number(row, cols.cost)
        if cost is not None:
            bill.cost += cost
            bill.costs += 1
        usage = _number(row, cols.usage)
        if usage is None:
            count["charge"] += 1
            continue
        unit_text = _text(row, cols.unit)
        item = _text(row, cols.item)
        if unit_text.casefold() == "kw" or (not unit_text and _DEMAND.search(item)):
            bill.demand = usage if bill.demand is None else max(bill.demand, usage)
            count["demand"] += 1
            continue
        unit = unit_text or parse_header(item).unit
        if bill.usage is not None:
            count["second_usage"] += 1
        bill.usage = usage if bill.usage is None else bill.usage + usage
        bill.unit = unit or bill.unit
        bill.usage_rows.append(row.number)
        count["usage"] += 1
    restated = _restating_services(bills)
    rows: list[tuple[int, tuple[object, ...]]] = []
    left_out = Counter[str]()
    for (site, service, start, end), bill in bills.items():
        if service in restated:
            left_out[service] += bill.lines
            continue
        if bill.usage is None:
            left_out["no usage"] += bill.lines
            continue
        unit = lookup_unit(bill.unit or "")
        # Cells as text, as the file's own: the table keeps its reader's kind.
        cells = (site, service, start, end, _plain(bill.usage),
                 unit.name if unit else (bill.unit or ""),
                 f"{bill.cost:.2f}" if bill.costs else "", _plain(bill.demand))  # fmt: skip
        rows.append((bill.usage_rows[0], cells))
    rows.sort()
    notes = [_account(table, count, restated, left_out, len(rows))]
    headers = make_headers(list(_COLUMNS))

    def source() -> Iterator[Row]:
        for number, cells in rows:
            yield Row(number, cells)

    daily = replace(
        table,
        headers=headers,
        _rows=source,
        chunks=None,
        distinct_texts=None,
        notes=[*table.notes, *notes],
    )
    spec = (
        MeterSpec(by="building_name", building_column=("Site",), name_column=("Service",))
        if cols.site is not None
        else MeterSpec(by="external_ref", column=("Service",))
    )
    template = Template(
        name=TEMPLATE_NAME,
        description="A bill export with one line per charge, read as one bill per service.",
        meter=spec,
        columns={
            "start_date": ("From",),
            "end_date": ("Thru",),
            "consumption": ("Usage",),
            "unit": ("Unit",),
            "cost": ("Cost",),
            "demand": ("Demand",),
        },
        decimal=".",
        end_date="auto",
    )
    return daily, template


def _plain(value: float | None) -> str:
    return "" if value is None else repr(value)


def _restating_services(bills: dict[tuple[str, str, str, str], _Bill]) -> dict[str, str]:
    """service → the service it restates: the same usage and unit for (nearly) every period
    both bill (sewer on the water meter's gallons). A service naming a meter type is kept, then
    the one with more bills, then the first by name."""
    usage: dict[tuple[str, str], dict[tuple[str, str], tuple[float, str | None]]] = {}
    for (site, service, start, end), bill in bills.items():
        if bill.usage is not None:
            usage.setdefault((site, service), {})[(start, end)] = (bill.usage, bill.unit)
    out: dict[str, str] = {}
    # A metered commodity (water) is kept over a service billed on its quantity (sewer).
    services = sorted(usage, key=lambda s: (lookup_meter_type(s[1]) is None, -len(usage[s]), s))
    for i, a in enumerate(services):
        for b in services[i + 1 :]:
            if a[0] != b[0] or b[1] in out or a[1] in out:
                continue
            shared = usage[a].keys() & usage[b].keys()
            same = sum(1 for p in shared if usage[a][p] == usage[b][p])
            if shared and same >= RESTATES * len(usage[b]):
                out[b[1]] = a[1]
    return out


def _account(
    table: Table, count: Counter[str], restated: dict[str, str], left_out: Counter[str], bills: int
) -> str:
    lines = sum(count.values())
    text = (
        f"a bill export with one line per charge: {lines:,} lines read as {bills:,} bills "
        f"(one per service and period; cost = the sum of the bill's lines). "
        f"{count['usage']:,} usage lines, {count['charge']:,} charge lines (no usage: their cost "
        f"is in the bill's cost), {count['demand']:,} demand lines (kW: the bill's demand, not "
        "consumption)"
    )
    for service, kept in restated.items():
        text += (
            f"; left out: {service!r} ({left_out[service]:,} lines), whose usage restates "
            f"{kept!r} on every period they share"
        )
    if left_out["no usage"]:
        text += f"; {left_out['no usage']:,} lines of bills with no usage line (charges only)"
    return text
