"""A template for a file no template names, inferred from its headers and values together
(issue 27 item 2).

Each column is profiled from a sample of rows (how many cells are dates, numbers, money, known
units), each field takes the column whose header names it *and* whose values fit it, and every
choice is stated as a sentence for the dry run. When the evidence leaves two readings of the file
possible (two usage columns in different units and no meter unit to choose by, two meter columns),
the inference says so in `doubts` and the file is refused with the suggestion, never guessed."""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bpsync.ingest.cells.dates import _parse_text, looks_like_month
from bpsync.ingest.cells.units import lookup_unit
from bpsync.ingest.cells.values import Header, cell_text, header_key, is_blank, parse_number
from bpsync.ingest.problems import IngestError, Where
from bpsync.ingest.understand.templates import (
    MeterBy,
    MeterSpec,
    Suggestion,
    Template,
    TemplateError,
    _check_fields,
)
from bpsync.ingest.understand.vocabulary import (
    SYNONYMS,
    is_register_column,
    meter_rank,
)

if TYPE_CHECKING:
    from bpsync.ingest.readers.base import Table

# Rows looked at to profile the columns: enough to see every column's kind in a bill export.
SAMPLE_ROWS = 500
# Share of a column's filled cells that must fit a field's kind.
FIT = 0.9

INFERRED = "inferred"

# Extra names real exports use beyond the suggestion vocabulary.
_EXTRA: dict[str, tuple[str, ...]] = {
    "consumption": ("used", "consumed", "amount used", "units used", "usage amount", "verbruik"),
    "days": ("days in bill", "bill days", "days billed", "service days"),
    "cost": ("charge", "charges", "total charge", "total amount", "amount ($)", "bill total"),
    "bill_date": ("read date", "meter read date", "reading date"),
    "end_date": ("thru", "through date", "end read date"),
    "start_date": ("from", "start read date"),
}
_MONEY_WORDS = re.compile(
    r"\b(cost|charges?|amount(?! used| consumed)|price|\$|€|£)", re.IGNORECASE
)
_NOT_A_FIELD = re.compile(
    r"\b(per day|average|avg|temperature|temp|degree|hdd|cdd|due|entry|invoice|voucher|code)\b",
    re.IGNORECASE,
)
_DATE_FIELDS = ("start_date", "end_date", "bill_date")


@dataclass
class Profile:
    """What one column's sampled cells are."""

    header: Header
    filled: int = 0
    dates: int = 0
    numbers: int = 0
    money: int = 0
    service_ids: int = 0  # cells holding the service's own meter ids ("mtr_…")
    units: Counter[str] = field(default_factory=Counter)

    def share(self, count: int) -> float:
        return count / self.filled if self.filled else 0.0

    @property
    def is_date(self) -> bool:
        return self.filled > 0 and self.share(self.dates) >= FIT

    @property
    def is_number(self) -> bool:
        return self.filled > 0 and self.share(self.numbers) >= FIT

    @property
    def is_unit(self) -> bool:
        return self.filled > 0 and self.share(sum(self.units.values())) >= FIT


@dataclass
class Inference:
    """The inferred template (None when the file cannot be read safely), each decision as a
    sentence, and the doubts that stop it."""

    template: Template | None
    decisions: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return self.template is not None and not self.doubts


def _is_date_cell(value: object) -> bool:
    if isinstance(value, dt.date):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    if not text or re.fullmatch(r"\d+(?:[.,]\d+)?", text):
        return False  # a bare number is a quantity here, not an Excel serial
    return any(isinstance(_parse_text(text, order), dt.date) for order in ("MDY", "DMY"))


def profile_columns(table: Table, rows: int = SAMPLE_ROWS) -> list[Profile]:
    """Each column's profile from the first `rows` data rows."""
    profiles = [Profile(h) for h in table.headers]
    for count, row in enumerate(table.rows()):
        if count >= rows:
            break
        for p in profiles:
            i = p.header.index
            value = row.cells[i] if i < len(row.cells) else None
            if is_blank(value):
                continue
            p.filled += 1
            if _is_date_cell(value):
                p.dates += 1
                continue
            text = cell_text(value).strip()
            number = None
            for decimal in (".", ","):  # "1.234,5" is a number too (the scan decides which)
                try:
                    number = parse_number(value, decimal)
                    break
                except ValueError:
                    continue
            if number is not None:
                p.numbers += 1
                if isinstance(value, str) and re.search(r"[$€£]", text):
                    p.money += 1
                continue
            unit = lookup_unit(text)
            if unit is not None:
                p.units[unit.name] += 1
            p.service_ids += text.startswith("mtr_")
    return profiles


def _names(fld: str) -> set[str]:
    return {*SYNONYMS.get(fld, ()), *_EXTRA.get(fld, ())}


_START_WORDS = frozenset({"from", "start", "begin", "beginning", "starting"})
_END_WORDS = frozenset({"to", "end", "thru", "through", "until", "ending"})


def unit_word(h: Header) -> str | None:
    """The unit a header names as one of its words ("kWh used" → kWh), if any."""
    for word in re.split(r"[^A-Za-z0-9³]+", h.text):
        unit = lookup_unit(word) if len(word) > 1 else None
        if unit is not None:
            return unit.name
    return None


_VOCABULARY = {name: f for f in SYNONYMS for name in sorted(_names(f))}


def _header_fields(h: Header) -> list[str]:
    """The fields a header's words name (before looking at its values)."""
    keys = {h.key, header_key(h.text)}
    if _NOT_A_FIELD.search(h.text):
        return []
    if h.currency or (_MONEY_WORDS.search(h.text) and not h.unit):
        return ["cost"]  # "Amount ($)", "Charges"; "Amount (kWh)" states a quantity
    found = [f for f in SYNONYMS if keys & _names(f)]
    if h.unit and "cost" in found:
        found = ["consumption"]  # a quantity unit in the header: not money
    words = set(re.split(r"[^a-z0-9]+", h.key))
    if not found and words & _START_WORDS:
        found = ["start_date"]  # "Period From", "Begin Date" (the values must be dates)
    elif not found and words & _END_WORDS:
        found = ["end_date"]
    if not found and h.key.split():
        last = h.key.split()[-1]
        found = [f for f in ("consumption", "cost", "unit", "meter") if last in _names(f)]
    if not found and unit_word(h):
        found = ["consumption"]  # "kWh used", "Therms": a quantity named by its unit
    if not found:
        # "Usage Qty", "Consumtion": close to a name a field goes by (the values decide).
        close = difflib.get_close_matches(h.key, list(_VOCABULARY), n=3, cutoff=0.8)
        found = list(dict.fromkeys(_VOCABULARY[c] for c in close if _VOCABULARY[c] != "month"))
    if ("consumption" in found or "meter" in found) and is_register_column(h):
        return []
    return found


def infer_template(
    table: Table,
    *,
    meter: str | None = None,
    meter_unit: Callable[[], str | None] | None = None,
    profiles: Sequence[Profile] | None = None,
) -> Inference:
    """Infer how to read `table`. `meter` is the one meter every row belongs to (`--meter`);
    `meter_unit` gives that meter's unit when a choice needs it (two usage columns in different
    units: the one in the meter's unit is taken)."""
    profiles = list(profiles) if profiles is not None else profile_columns(table)
    out = Inference(None)
    by_field: dict[str, list[Profile]] = {}
    for p in profiles:
        for f in _header_fields(p.header):
            by_field.setdefault(f, []).append(p)
    months = [p for p in profiles if looks_like_month(p.header.text)]
    if len(months) >= 3:
        return _wide_months(out, profiles, months, by_field, meter)
    chosen: dict[str, Header] = {}

    # Dates: a header naming a date field whose values are dates.
    for f in (*_DATE_FIELDS, "month"):
        fitting = [p for p in by_field.get(f, []) if p.is_date or f == "month"]
        if len(fitting) == 1:
            chosen[f] = fitting[0].header
    for f in ("days", "demand"):
        fitting = [p for p in by_field.get(f, []) if p.is_number]
        if len(fitting) == 1:
            chosen[f] = fitting[0].header
    if "start_date" in chosen and "end_date" in chosen:
        chosen.pop("bill_date", None)
        chosen.pop("days", None)  # the period is stated; days only restate it
    elif "bill_date" in chosen and "end_date" in chosen:
        chosen.pop("bill_date")  # an end date and a read date: the end closes the period
    if "start_date" in chosen and "end_date" in chosen:
        out.decisions.append(
            f"period: {chosen['start_date'].text!r} to {chosen['end_date'].text!r} (dates in "
            "both); whether an end is inclusive or the next start is decided from the data"
        )
    elif "bill_date" in chosen and "days" not in chosen and "end_date" not in chosen:
        out.decisions.append(
            f"period: consecutive read dates in {chosen['bill_date'].text!r} (each bill from the "
            "day after the previous read to its own)"
        )
    elif "days" in chosen and ("bill_date" in chosen or "end_date" in chosen):
        end = chosen.get("bill_date") or chosen["end_date"]
        out.decisions.append(
            f"period: {chosen['days'].text!r} days ending on {end.text!r} (a read date and the "
            "days it closes)"
        )

    # Cost: money in a money-named column.
    costs = [p for p in by_field.get("cost", []) if p.is_number]
    if len(costs) > 1:
        exact = [p for p in costs if p.header.key in _names("cost")]
        costs = exact if len(exact) == 1 else costs
    if len(costs) == 1:
        chosen["cost"] = costs[0].header
        out.decisions.append(f"cost: {costs[0].header.text!r} (money in {_share(costs[0])})")
    elif len(costs) > 1:
        out.doubts.append(
            "two columns could be the cost: " + " and ".join(repr(p.header.text) for p in costs)
        )

    # Consumption: a usage-named column of numbers, not the cost.
    usage = [
        p
        for p in by_field.get("consumption", [])
        if p.is_number and p.header not in chosen.values()
    ]
    if len(usage) > 1:
        usage = _one_usage(usage, meter_unit, out)
    if len(usage) == 1:
        chosen["consumption"] = usage[0].header
        out.decisions.append(
            f"consumption: {usage[0].header.text!r} (numbers in {_share(usage[0])})"
        )
    elif not usage:
        out.doubts.append("no column holds the usage (a usage-named column of numbers)")

    # Unit: a unit column, else the usage header's bracket, else the meter's own unit.
    unit_cols = [p for p in by_field.get("unit", []) if p.is_unit]
    fixed_unit = None
    if len(unit_cols) == 1:
        chosen["unit"] = unit_cols[0].header
        out.decisions.append(
            f"unit: {unit_cols[0].header.text!r} (" + ", ".join(sorted(unit_cols[0].units)) + ")"
        )
    elif "consumption" in chosen and (
        chosen["consumption"].unit or unit_word(chosen["consumption"])
    ):
        fixed_unit = chosen["consumption"].unit or unit_word(chosen["consumption"])
        out.decisions.append(f"unit: {fixed_unit} (from the header {chosen['consumption'].text!r})")
    else:
        out.decisions.append("unit: none in the file, so each reading is in its meter's unit")

    # Estimated flags.
    flags = by_field.get("estimated", [])
    if len(flags) == 1 and not flags[0].is_number:
        chosen["estimated"] = flags[0].header

    spec = _meter_spec(by_field, profiles, chosen, meter, out)
    columns = {f: (h.text,) for f, h in chosen.items() if f not in ("meter",)}
    template = Template(
        name=INFERRED,
        description="Inferred from the file's headers and values.",
        layout="long",
        meter=spec,
        columns=columns,
        fixed_unit=fixed_unit,
        date_order=None,
        decimal="auto",
        end_date="auto",
        estimated_values=("E", "EST", "Estimated", "ESTIMATE", "Estimate"),
        fixed_meter=meter,
    )
    try:
        _check_fields(template)
    except TemplateError as exc:
        out.doubts.append(exc.message.split(": ", 1)[-1])
    used = {h.index for h in chosen.values()}
    out.unused = [p.header.text for p in profiles if p.header.index not in used]
    out.template = template
    return out


def _share(p: Profile) -> str:
    return f"{p.numbers + p.dates} of {p.filled} sampled cells"


def _one_usage(
    usage: list[Profile], meter_unit: Callable[[], str | None] | None, out: Inference
) -> list[Profile]:
    """Several usage columns: restatements of one quantity in different units (`Usage (CCF)`,
    `Usage (Therms)`) are decided by the meter's unit; anything else stays a doubt."""
    units = [p.header.unit for p in usage]
    if all(units) and len(set(units)) == len(units):
        wanted = meter_unit() if meter_unit is not None else None
        same = [
            p for p in usage if wanted and lookup_unit(p.header.unit or "") == lookup_unit(wanted)
        ]
        if len(same) == 1:
            others = ", ".join(repr(p.header.text) for p in usage if p is not same[0])
            out.decisions.append(
                f"consumption: {same[0].header.text!r} is in the meter's unit ({wanted}); "
                f"{others} states the same usage in another unit and is left out"
            )
            return same
        out.doubts.append(
            "the usage is stated in "
            + " and ".join(repr(p.header.text) for p in usage)
            + (
                f"; none is in the meter's unit ({wanted})"
                if wanted
                else "; name the meter with --meter so its unit decides"
            )
        )
        return []
    exact = [p for p in usage if p.header.key in ("usage", "consumption", "quantity")]
    if len(exact) == 1:
        return exact
    out.doubts.append(
        "two columns could be the usage: " + " and ".join(repr(p.header.text) for p in usage)
    )
    return []


def _meter_spec(
    by_field: dict[str, list[Profile]],
    profiles: Sequence[Profile],
    chosen: dict[str, Header],
    meter: str | None,
    out: Inference,
) -> MeterSpec:
    if meter:
        out.decisions.append(f"meter: every row is meter {meter!r} (--meter)")
        return MeterSpec(by="external_ref")
    candidates = [
        p for p in by_field.get("meter", []) if p.filled and p.header not in chosen.values()
    ]
    if not candidates:
        out.doubts.append("no column names the meter; pass --meter METER for a one-meter file")
        return MeterSpec(by="external_ref")
    candidates.sort(key=lambda p: (meter_rank(p.header), -p.filled))
    best = candidates[0]
    if len(candidates) > 1 and meter_rank(candidates[1].header) == meter_rank(best.header):
        out.doubts.append(
            "two columns could name the meter: "
            + " and ".join(repr(p.header.text) for p in candidates[:2])
        )
    elif len(candidates) > 1:
        out.decisions.append(
            f"meter: {best.header.text!r} (a meter beats an account: "
            + ", ".join(repr(p.header.text) for p in candidates[1:])
            + " left out)"
        )
    else:
        out.decisions.append(f"meter: {best.header.text!r}")
    chosen["meter"] = best.header
    # The service's meter ids start "mtr_"; a utility's "Meter Id" holds its own numbers,
    # which the profile's meter map links (`bpsync meters link`).
    by: MeterBy = "meter_id" if best.share(best.service_ids) >= FIT else "external_ref"
    return MeterSpec(by=by, column=(best.header.text,))


def _wide_months(
    out: Inference,
    profiles: Sequence[Profile],
    months: Sequence[Profile],
    by_field: dict[str, list[Profile]],
    meter: str | None,
) -> Inference:
    """One row per meter, one column per month."""
    chosen: dict[str, Header] = {}
    unit_cols = [p for p in by_field.get("unit", []) if p.is_unit]
    if len(unit_cols) == 1:
        chosen["unit"] = unit_cols[0].header
    spec = _meter_spec(by_field, profiles, chosen, meter, out)
    out.decisions.insert(
        0,
        f"layout: one row per meter and one column per month ({len(months)} month columns, "
        f"{months[0].header.text!r} to {months[-1].header.text!r})",
    )
    if "unit" in chosen:
        out.decisions.append(f"unit: {chosen['unit'].text!r}")
    else:
        out.decisions.append("unit: none in the file, so each reading is in its meter's unit")
    template = Template(
        name=INFERRED,
        description="Inferred from the file's headers and values.",
        layout="wide_months",
        meter=spec,
        columns={"unit": (chosen["unit"].text,)} if "unit" in chosen else {},
        decimal="auto",
        exclude_columns=("Total", "Annual Total", "Year Total"),
        fixed_meter=meter,
    )
    month_index = {p.header.index for p in months}
    used = month_index | {h.index for h in chosen.values()}
    out.unused = [p.header.text for p in profiles if p.header.index not in used]
    out.template = template
    return out


# Names an inferred template goes by in the journal: re-reading the file infers it again.
# (The interval and line-item readers' own names too: their tables are built, not found.)
INFERRED_NAMES = frozenset({INFERRED, "interval_days", "bill_line_items"})


def inferred_note(inference: Inference) -> str:
    """The dry run's account of an inferred mapping: each decision, then the unused columns."""
    text = "no template names these columns, so they were read from headers and values: " + (
        "; ".join(inference.decisions)
    )
    if inference.unused:
        text += ". Columns not used: " + ", ".join(repr(u) for u in inference.unused)
    return text + ". Keep this mapping with `--save-template NAME`."


def undecided(table: Table, inference: Inference, templates: Sequence[Template]) -> IngestError:
    """Why the file cannot be read without a template, what was decided, and the one command
    that accepts a mapping."""
    decided = "; ".join(inference.decisions) or "nothing"
    suggestion = suggest_for_table(table)
    mapped = ", ".join(f"{f} ← {h!r}" for f, h in suggestion.matched.items()) or "nothing"
    return IngestError(
        "no template matches this file's columns ("
        + ", ".join(repr(h.text) for h in table.headers)
        + ") and they cannot be read safely without one: "
        + "; ".join(inference.doubts)
        + f". Decided so far: {decided}. A suggested mapping: {mapped}. Write the mapping with `bpsync templates suggest "
        f"{Path(table.file).name} --save NAME`, check it, and pass --template NAME",
        where=Where(table.file, table.sheet, table.header_row),
        code="no_template",
    )


def suggest_for_table(
    table: Table, name: str = "suggested", *, meter: str | None = None
) -> Suggestion:
    """The inferred mapping as a suggestion to review and save: what `templates suggest`, the
    import wizard and the import itself all use, so the three agree (issue 27 item 9)."""
    inference = infer_template(table, meter=meter)
    assert inference.template is not None
    t = replace(
        inference.template,
        name=name,
        description="Inferred from the headers and values of a sample file; check every column.",
        fixed_meter=None,
    )
    matched = {f: names[0] for f, names in t.columns.items() if names}
    if t.meter.column:
        matched["meter"] = t.meter.column[0]
    missing = [d for d in inference.doubts if not (meter is None and "--meter" in d)]
    if t.layout == "long" and not t.meter.column and not meter:
        missing.append("meter.column is required (or [fixed] meter for single-meter files)")
    return Suggestion(
        template=t,
        matched=matched,
        unmatched_headers=tuple(inference.unused),
        missing=tuple(dict.fromkeys(missing)),
    )
