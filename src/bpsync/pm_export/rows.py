"""The rows of PM's upload workbooks, built from plain data (no network, no files): which meters
PM knows (by the ids in the meter map and the properties' references), which readings go in, in
which unit, and what is left out and why.

PM's ids among bpsync's links (docs/decisions.md T9): a PM Meter ID is a meter-map reference made
of digits only, with no leading zero (PM's ids are integers; `register import` and the
`pm_add_bills_v2` import link PM's "Meter ID" exactly so); a PM Property ID is a property's
internal_ref made of digits only (what `register import` of PM's own export stores)."""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from bpsync.pm_export import layout as L

_PM_ID = re.compile(r"^[1-9][0-9]{0,14}$")

Factor = Callable[[str, str, str], float | None]


def pm_id(text: object) -> str | None:
    """`text` as a Portfolio Manager id (digits, no leading zero), or None. A workbook cell read
    as a float ("8003.0") is the same id."""
    value = " ".join(str(text or "").split())
    if value.endswith(".0"):
        value = value[:-2]
    return value if _PM_ID.match(value) else None


def pm_meter_ids(links: Mapping[str, str]) -> dict[str, list[str]]:
    """meter id → the meter-map references that have the shape of a PM Meter ID (sorted)."""
    found: dict[str, set[str]] = defaultdict(set)
    for reference, meter_id in links.items():
        known = pm_id(reference)
        if known:
            found[meter_id].add(known)
    return {m: sorted(refs, key=int) for m, refs in found.items()}


@dataclass(frozen=True, slots=True)
class PropertyRow:
    id: str
    name: str
    internal_ref: str | None = None

    @property
    def pm_id(self) -> str | None:
        return pm_id(self.internal_ref)


@dataclass(frozen=True, slots=True)
class MeterRow:
    id: str
    type: str
    unit: str
    property_id: str
    building_id: str
    name: str | None = None
    building_name: str = ""
    status: str = "active"

    @property
    def label(self) -> str:
        return self.name or self.id


@dataclass(frozen=True, slots=True)
class Bill:
    """A stored reading, as the workbook needs it (dates inclusive, quantity in the meter's unit)."""

    meter_id: str
    start: dt.date
    end: dt.date
    consumption: float
    cost: float | None = None
    currency: str | None = None
    demand_kw: float | None = None
    estimated: bool | None = None  # the service keeps no flag: None = not known

    @property
    def key(self) -> str:
        return f"{self.start.isoformat()}/{self.end.isoformat()}"


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A meter in scope that is not in the workbook: why, how many readings, and the fix."""

    meter_id: str
    meter: str
    building: str
    reason: str
    readings: int = 0
    fix: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "meter_id": self.meter_id,
            "meter": self.meter,
            "building": self.building,
            "reason": self.reason,
            "readings": self.readings,
            "fix": self.fix,
        }


@dataclass(frozen=True, slots=True)
class PmUnit:
    """The unit a meter is written in: PM's label, the service unit it is, and the factor from the
    meter's unit (None: the meter's own unit, values unchanged)."""

    label: str
    unit: str
    factor: float | None = None


def _default_factor(source: str, meter_type: str, target: str) -> float | None:
    # The import's own conversion table, so the two directions agree (imported only when a unit
    # has to be converted: bpsync.ingest loads pandas).
    from bpsync.pm_export.bridge import conversion_factor

    return conversion_factor(source, meter_type, target)


def pm_unit(meter_type: str, unit: str, factor: Factor = _default_factor) -> PmUnit | None:
    """How a `meter_type` meter read in `unit` is written for PM, or None if PM has no bills for
    the type. A unit PM offers for the type is written as is; another is converted (D T9)."""
    kind = L.KINDS.get(meter_type)
    if kind is None:
        return None
    label = L.PM_UNIT_LABEL.get(unit)
    if label in kind.units:
        return PmUnit(label, unit)
    for target in (L.CONVERT_TO.get(unit), L.FALLBACK_UNIT):
        if target and L.PM_UNIT_LABEL.get(target) in kind.units:
            return PmUnit(L.PM_UNIT_LABEL[target], target, factor(unit, meter_type, target))
    return None


# --- bills ---------------------------------------------------------------------------------------


@dataclass
class BillsPlan:
    """What `export pm-bills` writes: rows per sheet (cells in PM's column order), the readings
    it writes per meter (for the ledger), and everything it leaves out."""

    sheets: dict[str, list[tuple[object, ...]]] = field(default_factory=dict)
    written: dict[str, list[str]] = field(default_factory=dict)  # meter id → period keys
    left_out: list[LeftOut] = field(default_factory=list)
    already_exported: int = 0
    notes: list[str] = field(default_factory=list)
    meters: int = 0

    @property
    def readings(self) -> int:
        return sum(len(rows) for rows in self.sheets.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "readings": self.readings,
            "meters": self.meters,
            "sheets": {name: len(rows) for name, rows in self.sheets.items()},
            "already_exported": self.already_exported,
            "left_out": [x.as_dict() for x in self.left_out],
            "notes": list(self.notes),
        }


def link_fix(meter_id: str) -> str:
    return f"bpsync meters link <PM Meter ID> {meter_id}"


def property_fix(property_id: str) -> str:
    return f"bpsync properties update {property_id} --internal-ref <PM Property ID>"


def _yes_no(flag: bool | None) -> str:
    # PM requires Yes or No; the service keeps no estimated flag, so an unknown one is PM's own
    # pre-filled "No" (decisions T9).
    return "Yes" if flag else "No"


def bill_cells(
    sheet: str,
    pm_meter: str,
    prop: PropertyRow,
    meter: MeterRow,
    kind: L.PmKind,
    unit: PmUnit,
    bill: Bill,
) -> tuple[object, ...]:
    """One bill as the cells of a row of `sheet`, in PM's column order."""
    usage = bill.consumption if unit.factor is None else bill.consumption * unit.factor
    head = (
        int(pm_meter),
        None,  # Meter Consumption ID: empty = a new bill (a number tells PM to skip the row)
        int(prop.pm_id) if prop.pm_id else None,
        prop.name,
        meter.label,
        kind.bills_type,
        bill.start,
        bill.end,
        usage,
        unit.label,
        bill.cost,
    )
    if sheet == L.ELECTRICITY:
        # Demand (kW), Demand Cost, Estimation, Green Power? (the service has no green power)
        return (*head, bill.demand_kw, None, _yes_no(bill.estimated), "No")
    return (*head, _yes_no(bill.estimated))


def plan_bills(
    properties: Iterable[PropertyRow],
    meters: Iterable[MeterRow],
    bills: Iterable[Bill],
    links: Mapping[str, str],
    *,
    exported: Mapping[str, Iterable[str]] | None = None,
    everything: bool = False,
    factor: Factor = _default_factor,
) -> BillsPlan:
    """The Add Bills workbook's rows for `meters` (already narrowed to the chosen scope) and their
    `bills`. Readings whose period is in `exported` are skipped unless `everything`."""
    props = {p.id: p for p in properties}
    by_meter: dict[str, list[Bill]] = defaultdict(list)
    for b in bills:
        by_meter[b.meter_id].append(b)
    done = {m: set(keys) for m, keys in (exported or {}).items()}
    pm_ids = pm_meter_ids(links)
    plan = BillsPlan(sheets={s: [] for s in L.BILL_SHEETS if s in L.HEADERS})
    no_property_id: dict[str, str] = {}
    currencies: set[str] = set()
    order = sorted(
        meters, key=lambda m: (props[m.property_id].name, m.building_name, m.label, m.id)
    )
    for meter in order:
        prop = props[meter.property_id]
        mine = sorted(by_meter.get(meter.id, ()), key=lambda b: (b.start, b.end))

        def leave(
            reason: str, fix: str | None = None, meter: MeterRow = meter, count: int = len(mine)
        ) -> None:
            plan.left_out.append(
                LeftOut(meter.id, meter.label, meter.building_name, reason, count, fix)
            )

        kind = L.KINDS.get(meter.type)
        if kind is None:
            leave(f"{meter.type} meter: {L.NOT_IN_PM.get(meter.type, 'not a PM bill type')}")
            continue
        candidates = pm_ids.get(meter.id, [])
        if not candidates:
            leave("no PM Meter ID in the meter map", link_fix(meter.id))
            continue
        if len(candidates) > 1:
            leave(
                f"{len(candidates)} meter-map references look like PM Meter IDs "
                f"({', '.join(candidates)}): keep only its PM Meter ID among the numeric links",
                f"bpsync meters link {candidates[-1]} --remove",
            )
            continue
        unit = pm_unit(meter.type, meter.unit, factor)
        if unit is None:
            leave(f"PM offers no unit a {meter.type} meter in {meter.unit} can be written in")
            continue
        if unit.factor is not None:
            plan.notes.append(
                f"{meter.label} ({meter.id}): PM has no {meter.unit} for {kind.bills_type}; "
                f"usage written in {unit.unit}"
            )
        if not prop.pm_id:
            no_property_id[prop.id] = prop.name
        plan.meters += 1
        for bill in mine:
            if not everything and bill.key in done.get(meter.id, ()):
                plan.already_exported += 1
                continue
            if bill.cost is not None and bill.currency and bill.currency != "USD":
                currencies.add(bill.currency)
            row = bill_cells(kind.bills_sheet, candidates[0], prop, meter, kind, unit, bill)
            plan.sheets[kind.bills_sheet].append(row)
            plan.written.setdefault(meter.id, []).append(bill.key)
    for pid, name in sorted(no_property_id.items()):
        plan.notes.append(
            f"property {name} ({pid}) has no PM Property ID (a numeric internal_ref): its "
            f"'Portfolio Manager ID' cells are empty; set it with `{property_fix(pid)}`"
        )
    if currencies:
        plan.notes.append(
            "costs in " + ", ".join(sorted(currencies)) + " are written as they are: PM takes "
            "costs in the property's currency"
        )
    return plan


# --- meters --------------------------------------------------------------------------------------


@dataclass
class MetersPlan:
    """What `export pm-meters` writes: one Create Meters row per meter PM does not have yet."""

    sheets: dict[str, list[tuple[object, ...]]] = field(default_factory=dict)
    units_lists: dict[str, list[str]] = field(default_factory=dict)  # sheet → list name per row
    left_out: list[LeftOut] = field(default_factory=list)
    in_pm: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def meters(self) -> int:
        return sum(len(rows) for rows in self.sheets.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "meters": self.meters,
            "sheets": {name: len(rows) for name, rows in self.sheets.items()},
            "already_in_pm": self.in_pm,
            "left_out": [x.as_dict() for x in self.left_out],
            "notes": list(self.notes),
        }


CUSTOM_ID_NAME = "bpsync meter id"


def plan_meters(
    properties: Iterable[PropertyRow],
    meters: Iterable[MeterRow],
    links: Mapping[str, str],
    first_bill: Mapping[str, dt.date],
    last_bill: Mapping[str, dt.date] | None = None,
    factor: Factor = _default_factor,
) -> MetersPlan:
    """Create Meters rows for the meters in scope that have no PM Meter ID yet. The first bill's
    start is the date the meter became active; the meter's id goes in as a custom meter id, so
    PM's meter can be traced back (and linked: `bpsync meters link <PM Meter ID> <id>`)."""
    props = {p.id: p for p in properties}
    pm_ids = pm_meter_ids(links)
    plan = MetersPlan(sheets={L.CREATE_ENERGY: [], L.CREATE_WATER: []})
    plan.units_lists = {L.CREATE_ENERGY: [], L.CREATE_WATER: []}
    names: dict[tuple[str, str], int] = defaultdict(int)
    order = sorted(
        meters, key=lambda m: (props[m.property_id].name, m.building_name, m.label, m.id)
    )
    for meter in order:
        names[(meter.property_id, meter.label.casefold())] += 1
    for meter in order:
        prop = props[meter.property_id]

        def leave(reason: str, fix: str | None = None, meter: MeterRow = meter) -> None:
            plan.left_out.append(
                LeftOut(meter.id, meter.label, meter.building_name, reason, 0, fix)
            )

        if meter.id in pm_ids:
            plan.in_pm += 1
            continue
        kind = L.KINDS.get(meter.type)
        if kind is None:
            leave(f"{meter.type} meter: {L.NOT_IN_PM.get(meter.type, 'not a PM meter type')}")
            continue
        if not prop.pm_id:
            leave(
                f"property {prop.name} has no PM Property ID (a numeric internal_ref)",
                property_fix(prop.id),
            )
            continue
        unit = pm_unit(meter.type, meter.unit, factor)
        if unit is None:
            leave(f"PM offers no unit a {meter.type} meter in {meter.unit} can be written in")
            continue
        if unit.factor is not None:
            plan.notes.append(
                f"{meter.label} ({meter.id}): PM has no {meter.unit} for {kind.meters_type}; "
                f"the PM meter is made in {unit.unit} and bills are exported in it"
            )
        name = meter.label
        if names[(meter.property_id, name.casefold())] > 1:
            # PM wants meter names unique in a property; the service only within a building.
            name = f"{name} ({meter.building_name or meter.building_id})"
        first = first_bill.get(meter.id)
        if first is None:
            plan.notes.append(
                f"{meter.label} ({meter.id}) has no stored reading: enter the date it became "
                "active in the workbook"
            )
        active = meter.status == "active"
        inactive = None if active else (last_bill or {}).get(meter.id)
        common = (int(prop.pm_id), prop.name, kind.meters_type, None, name, unit.label, first)
        if kind.meters_sheet == L.CREATE_ENERGY:
            row = (*common, "Yes" if active else "No", inactive, "Metered", "Yes")
        else:
            row = (*common, "Yes" if active else "No", inactive, "Yes")
        plan.sheets[kind.meters_sheet].append((*row, CUSTOM_ID_NAME, meter.id))
        plan.units_lists[kind.meters_sheet].append(kind.units_list)
    return plan
