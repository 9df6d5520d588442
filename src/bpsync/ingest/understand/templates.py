"""Mapping templates: which column of a source holds which field of a reading, and how to read it.

Templates are TOML files (human-editable; read with tomllib, written with tomli-w). The shipped
ones live in the repository's `templates/` folder; users keep their own (e.g. saved suggestions) in
a folder of their choosing, searched first. docs/import.md documents every key."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import tomli_w

from bpsync.ingest.cells.dates import DateOrder, looks_like_month
from bpsync.ingest.cells.values import Header, header_key, parse_header
from bpsync.ingest.problems import IngestError
from bpsync.ingest.understand.vocabulary import (
    METER_RANK,
    SYNONYMS,
    is_register_column,
    meter_rank,
)
from bpsync.paths import package_dir

Layout = Literal["long", "wide_meters", "wide_months"]
MeterBy = Literal["meter_id", "external_ref", "building_name"]

FIELDS = (
    "start_date",
    "end_date",
    "bill_date",
    "days",
    "month",
    "consumption",
    "unit",
    "cost",
    "currency",
    "demand",
    "estimated",
    "meter_type",
)
_LAYOUTS = ("long", "wide_meters", "wide_months")
_METER_BY = ("meter_id", "external_ref", "building_name")
_FORMATS = ("csv", "xlsx", "greenbutton", "any")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

ENV_TEMPLATES_DIR = "BPSYNC_TEMPLATES_DIR"


def builtin_templates_dir() -> Path:
    """The shipped templates: `$BPSYNC_TEMPLATES_DIR`, else the package's `templates/` (package
    data, so a wheel install has them; the repository's `templates/` links there)."""
    override = os.environ.get(ENV_TEMPLATES_DIR)
    if override:
        return Path(override)
    return package_dir("templates")


class TemplateError(IngestError):
    def __init__(self, message: str, *, template: str | None = None):
        super().__init__(f"template {template}: {message}" if template else message)
        self.code = "bad_template"


@dataclass(frozen=True)
class MeterSpec:
    """How a row names its meter: a column with the service's meter id, an external reference
    (utility meter number, Portfolio Manager meter id) looked up in the profile's meter map, or a
    building name plus a meter name. In a wide_meters layout the meter is each value column's
    header, read the same way (`column` is then unused)."""

    by: MeterBy = "meter_id"
    column: tuple[str, ...] = ()
    building_column: tuple[str, ...] = ()
    name_column: tuple[str, ...] = ()


@dataclass(frozen=True)
class Template:
    name: str
    description: str = ""
    format: str = "any"
    layout: Layout = "long"
    meter: MeterSpec = field(default_factory=MeterSpec)
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fixed_unit: str | None = None
    fixed_currency: str | None = None
    sheet: str | None = None
    skip_rows: int = 0
    date_order: DateOrder | None = None
    date_format: str | None = None
    decimal: str = "."
    # "auto": decided per meter from the data (consecutive rows where end == next start).
    end_date: Literal["inclusive", "next_start", "auto"] = "inclusive"
    estimated_values: tuple[str, ...] = ()
    exclude_columns: tuple[str, ...] = ()
    signature: tuple[str, ...] = ()
    aggregate: Literal["daily", "monthly", "billing"] = "billing"
    timezone: str | None = None
    # A row with any of these columns filled is not inserted (PM's "Meter Consumption ID": the
    # entry already exists in Portfolio Manager).
    skip_if_filled: tuple[str, ...] = ()
    # Every row belongs to this meter (single-meter utility exports; see `--meter`).
    fixed_meter: str | None = None
    path: Path | None = None

    # -- columns ---------------------------------------------------------------------------------

    def names_for(self, fld: str) -> tuple[str, ...]:
        return self.columns.get(fld, ())

    def expected_keys(self) -> set[str]:
        """Every header key this template can use (helps find the header row)."""
        names = [n for ns in self.columns.values() for n in ns]
        names += [*self.meter.column, *self.meter.building_column, *self.meter.name_column]
        names += list(self.signature)
        return {header_key(n) for n in names}

    def signature_keys(self) -> tuple[str, ...]:
        """Header keys that identify this layout (all must be present for `match_template`)."""
        # With a fixed meter the file needs no meter column (single-meter exports).
        meter_keys = {header_key(n) for n in self.meter.column} if self.fixed_meter else set()
        if self.signature:
            return tuple(k for k in map(header_key, self.signature) if k not in meter_keys)
        keys = []
        meter_names = () if self.fixed_meter else self.meter.column
        for names in (meter_names, *(self.columns.get(f, ()) for f in _required(self))):
            if names:
                keys.append(header_key(names[0]))
        return tuple(keys)

    def to_toml(self) -> str:
        return tomli_w.dumps(template_to_dict(self))


def _required(t: Template) -> tuple[str, ...]:
    if t.layout == "wide_months":
        return ()
    dates = [f for f in ("start_date", "end_date", "bill_date", "month") if f in t.columns]
    return tuple(dates[:2]) + (("consumption",) if t.layout == "long" else ())


class AmbiguousColumn(ValueError):
    """A template's column name matches more than one header of the file (issue 11 item 1)."""

    def __init__(self, name: str, headers: Sequence[Header]) -> None:
        self.name = name
        self.headers = tuple(headers)
        listed = " and ".join(repr(h.text) for h in headers)
        super().__init__(
            f"the template's column {name!r} matches more than one column of the file "
            f"({listed}); name the column exactly as the file writes it"
        )


def _bracket_unit(name: str) -> str | None:
    return parse_header(name).unit


def find_column(headers: Sequence[Header], names: Iterable[str]) -> Header | None:
    """The header matching the first of `names` that the file has.

    For each name, an exact match (whitespace, line breaks and case folded; "(Required)"-style
    hints dropped) wins. Only without one does the looser key (a trailing unit or currency bracket
    stripped) count, and then a header stating another unit than the name does not match. A name
    matching more than one header raises AmbiguousColumn: a column is never picked silently."""
    for name in names:
        key = header_key(name)
        exact = [h for h in headers if header_key(h.text) == key]
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            raise AmbiguousColumn(name, exact)
        full = parse_header(name).key
        unit = _bracket_unit(name)
        loose = [
            h
            for h in headers
            if (h.key == key or h.key == full) and not (unit and h.unit and h.unit != unit)
        ]
        if len(loose) == 1:
            return loose[0]
        if len(loose) > 1:
            raise AmbiguousColumn(name, loose)
    return None


# -- loading and saving ---------------------------------------------------------------------------


def _names(value: Any, where: str, template: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v for v in value if v.strip())
    raise TemplateError(f"{where} must be a column name or a list of names", template=template)


# Every top-level key a template file may hold.
_TEMPLATE_KEYS = frozenset(
    (
        *("name", "description", "format", "layout", "meter", "columns", "fixed", "sheet"),
        *("skip_rows", "date_order", "date_format", "decimal", "end_date", "signature"),
        *("estimated_values", "exclude_columns", "aggregate", "timezone", "skip_if_filled"),
    )
)


def template_from_dict(data: Mapping[str, Any], *, path: Path | None = None) -> Template:
    """Build and check a template; raises TemplateError naming the bad key."""
    name = str(data.get("name") or (path.stem if path else ""))
    unknown = sorted(set(data) - _TEMPLATE_KEYS)
    if unknown:
        raise TemplateError(f"unknown key(s) {', '.join(unknown)}", template=name)
    if not _NAME.match(name):
        raise TemplateError("name must be lower-case letters, digits, _ or -", template=name)

    def choice(key: str, options: Sequence[str], default: str) -> Any:
        value = data.get(key, default)
        if value not in options:
            raise TemplateError(f"{key} must be one of {', '.join(options)}", template=name)
        return value

    meter_data = data.get("meter", {})
    columns_data = data.get("columns", {})
    fixed = data.get("fixed", {})
    for section, value in (("meter", meter_data), ("columns", columns_data), ("fixed", fixed)):
        if not isinstance(value, dict):
            raise TemplateError(f"[{section}] must be a table", template=name)
    bad_fields = sorted(set(columns_data) - set(FIELDS))
    if bad_fields:
        raise TemplateError(
            f"unknown field(s) in [columns]: {', '.join(bad_fields)} (fields: {', '.join(FIELDS)})",
            template=name,
        )
    extra_meter = sorted(set(meter_data) - {"by", "column", "building_column", "name_column"})
    if extra_meter:
        raise TemplateError(f"unknown key(s) in [meter]: {', '.join(extra_meter)}", template=name)
    extra_fixed = sorted(set(fixed) - {"unit", "currency", "meter"})
    if extra_fixed:
        raise TemplateError(f"unknown key(s) in [fixed]: {', '.join(extra_fixed)}", template=name)
    meter = MeterSpec(
        by=choice_in(meter_data, "by", _METER_BY, "meter_id", name),
        column=_names(meter_data.get("column"), "meter.column", name),
        building_column=_names(meter_data.get("building_column"), "meter.building_column", name),
        name_column=_names(meter_data.get("name_column"), "meter.name_column", name),
    )
    columns = {f: _names(v, f"columns.{f}", name) for f, v in columns_data.items()}
    order = data.get("date_order", "auto")
    if order not in ("auto", "DMY", "MDY"):
        raise TemplateError('date_order must be "auto", "DMY" or "MDY"', template=name)
    skip = data.get("skip_rows", 0)
    if not isinstance(skip, int) or skip < 0:
        raise TemplateError("skip_rows must be a whole number ≥ 0", template=name)
    t = Template(
        name=name,
        description=str(data.get("description", "")),
        format=choice("format", _FORMATS, "any"),
        layout=choice("layout", _LAYOUTS, "long"),
        meter=meter,
        columns=columns,
        fixed_unit=fixed.get("unit") or None,
        fixed_currency=fixed.get("currency") or None,
        sheet=data.get("sheet") or None,
        skip_rows=skip,
        date_order=None if order == "auto" else order,
        date_format=data.get("date_format") or None,
        decimal=choice("decimal", (".", ",", "auto"), "."),
        end_date=choice("end_date", ("inclusive", "next_start", "auto"), "inclusive"),
        estimated_values=_names(data.get("estimated_values"), "estimated_values", name),
        exclude_columns=_names(data.get("exclude_columns"), "exclude_columns", name),
        signature=_names(data.get("signature"), "signature", name),
        aggregate=choice("aggregate", ("daily", "monthly", "billing"), "billing"),
        timezone=data.get("timezone") or None,
        skip_if_filled=_names(data.get("skip_if_filled"), "skip_if_filled", name),
        fixed_meter=(str(fixed["meter"]).strip() or None) if fixed.get("meter") else None,
        path=path,
    )
    _check_fields(t)
    return t


def choice_in(
    data: Mapping[str, Any], key: str, options: Sequence[str], default: str, name: str
) -> Any:
    value = data.get(key, default)
    if value not in options:
        raise TemplateError(f"meter.{key} must be one of {', '.join(options)}", template=name)
    return value


def _check_fields(t: Template) -> None:
    has = {f for f, names in t.columns.items() if names}
    if t.format == "greenbutton":
        return
    if t.layout == "long" and "consumption" not in has:
        raise TemplateError("columns.consumption is required", template=t.name)
    if t.layout != "wide_meters" and t.meter.by == "building_name":
        if not (t.meter.building_column and t.meter.name_column):
            raise TemplateError(
                'meter.by = "building_name" needs building_column and name_column', template=t.name
            )
    elif t.layout != "wide_meters" and not t.meter.column and not t.fixed_meter:
        raise TemplateError(
            "meter.column is required (or [fixed] meter for single-meter files)", template=t.name
        )
    if t.layout == "wide_months":
        return
    ways = (
        {"start_date", "end_date"} <= has
        or {"bill_date", "days"} <= has
        or {"end_date", "days"} <= has
        or {"start_date", "days"} <= has
        or "month" in has
        or "bill_date" in has  # read dates only: consecutive reads make the periods
    )
    if not ways:
        raise TemplateError(
            "dates need start_date + end_date, bill_date (+ days), start_date + days, or month",
            template=t.name,
        )


def template_to_dict(t: Template) -> dict[str, Any]:
    data: dict[str, Any] = {"name": t.name}
    if t.description:
        data["description"] = t.description
    data["format"] = t.format
    data["layout"] = t.layout
    if t.sheet:
        data["sheet"] = t.sheet
    if t.skip_rows:
        data["skip_rows"] = t.skip_rows
    data["date_order"] = t.date_order or "auto"
    if t.date_format:
        data["date_format"] = t.date_format
    data["decimal"] = t.decimal
    data["end_date"] = t.end_date
    if t.estimated_values:
        data["estimated_values"] = list(t.estimated_values)
    if t.exclude_columns:
        data["exclude_columns"] = list(t.exclude_columns)
    if t.signature:
        data["signature"] = list(t.signature)
    if t.format == "greenbutton":
        data["aggregate"] = t.aggregate
    if t.timezone:
        data["timezone"] = t.timezone
    if t.skip_if_filled:
        data["skip_if_filled"] = list(t.skip_if_filled)
    meter: dict[str, Any] = {"by": t.meter.by}
    for key in ("column", "building_column", "name_column"):
        names = getattr(t.meter, key)
        if names:
            meter[key] = list(names)
    data["meter"] = meter
    data["columns"] = {f: list(n) for f, n in t.columns.items() if n}
    fixed = {
        k: v
        for k, v in (
            ("unit", t.fixed_unit),
            ("currency", t.fixed_currency),
            ("meter", t.fixed_meter),
        )
        if v
    }
    if fixed:
        data["fixed"] = fixed
    return data


def load_template(name_or_path: str | Path, dirs: Sequence[Path] | None = None) -> Template:
    """A template by name (searched in `dirs`, then the shipped ones) or by file path."""
    path = Path(name_or_path)
    if path.suffix != ".toml" or not path.exists():
        for d in [*(dirs or ()), builtin_templates_dir()]:
            candidate = d / f"{name_or_path}.toml"
            if candidate.exists():
                path = candidate
                break
        else:
            known = ", ".join(t.name for t in list_templates(dirs))
            raise TemplateError(f"no template named {str(name_or_path)!r} (templates: {known})")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TemplateError(f"{path.name} is not valid TOML ({exc})") from None
    return template_from_dict(data, path=path)


def list_templates(dirs: Sequence[Path] | None = None) -> list[Template]:
    """Every template, user folders first; a user template hides a shipped one of the same name.
    Broken files are skipped here (load_template reports them)."""
    seen: dict[str, Template] = {}
    for d in [*(dirs or ()), builtin_templates_dir()]:
        if not d.is_dir():
            continue
        for path in sorted(d.glob("*.toml")):
            try:
                t = load_template(path)
            except TemplateError:
                continue
            seen.setdefault(t.name, t)
    return list(seen.values())


def save_template(template: Template, directory: Path, *, overwrite: bool = False) -> Path:
    """Write `template` as `<directory>/<name>.toml` (refuses to replace a file unless asked)."""
    template_from_dict(template_to_dict(template))  # never write a template we cannot read back
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{template.name}.toml"
    if path.exists() and not overwrite:
        raise TemplateError(f"{path} already exists", template=template.name)
    path.write_text(template.to_toml(), encoding="utf-8")
    return path


# -- choosing a template for a file -----------------------------------------------------------


@dataclass(frozen=True)
class Match:
    template: Template
    score: float  # share of the template's signature found, then of its other columns


def _score(t: Template, headers: Sequence[Header]) -> float:
    """0 unless every signature header is present; then higher for the template that uses more
    of the file: the share of its columns found, then how many columns it maps, then how long its
    signature is, then shipped over user templates (issue 11 item 10: an exact shipped template
    beats a looser user one)."""
    keys = {h.key for h in headers} | {header_key(h.text) for h in headers}
    signature = t.signature_keys()
    if not signature or not all(k in keys for k in signature):
        return 0.0
    if t.layout == "wide_months" and not any(looks_like_month(h.text) for h in headers):
        return 0.0  # a sheet of months has month columns, whatever else it shares
    used = [names for names in t.columns.values() if names]
    found = 0
    for names in used:
        try:
            found += find_column(headers, names) is not None
        except AmbiguousColumn:
            found += 1  # the column is there; resolving it will say which two compete
    shipped = t.path is not None and t.path.parent == builtin_templates_dir()
    return (
        1.0
        + found / max(len(used), 1)
        + found / 100
        + len(signature) / 10_000
        + (1 / 100_000 if shipped else 0.0)
    )


def match_reason(t: Template, headers: Sequence[Header]) -> str:
    """Why `--template auto` chose `t`, for the dry run."""
    used = [names for names in t.columns.values() if names]
    found = 0
    for names in used:
        try:
            found += find_column(headers, names) is not None
        except AmbiguousColumn:
            found += 1
    shipped = t.path is not None and t.path.parent == builtin_templates_dir()
    return (
        f"template {t.name!r} ({'shipped' if shipped else 'user'}) chosen: all "
        f"{len(t.signature_keys())} signature columns found and {found} of its {len(used)} "
        "columns present; the template using most of the file wins"
    )


def match_template(
    headers: Sequence[Header],
    templates: Sequence[Template] | None = None,
    *,
    fmt: str | None = None,
) -> Match | None:
    """The template whose signature headers are all present (ties: the one using most columns).
    This is `--template auto`; the watcher keys on the same header signature."""
    best: Match | None = None
    for t in templates if templates is not None else list_templates():
        if fmt and t.format not in (fmt, "any"):
            continue
        score = _score(t, headers)
        if score and (best is None or score > best.score):
            best = Match(t, score)
    return best


@dataclass(frozen=True)
class Suggestion:
    template: Template
    matched: Mapping[str, str]  # field → header text
    unmatched_headers: tuple[str, ...]
    missing: tuple[str, ...]  # fields a usable template still needs

    @property
    def usable(self) -> bool:
        return not self.missing


def _vocabulary(templates: Sequence[Template]) -> dict[str, list[str]]:
    vocab = {k: list(v) for k, v in SYNONYMS.items()}
    for t in templates:
        for f, names in t.columns.items():
            vocab.setdefault(f, []).extend(header_key(n) for n in names)
        vocab["meter"].extend(header_key(n) for n in t.meter.column)
    return vocab


def suggest_template(
    headers: Sequence[Header | str],
    name: str = "suggested",
    *,
    templates: Sequence[Template] | None = None,
    cutoff: float = 0.75,
) -> Suggestion:
    """A mapping for an unknown file, by fuzzy-matching its headers (difflib) against the names
    each field goes by. Review it, then `save_template` it. Month headers ("Jan 2024") make a
    wide_months layout; unmatched headers carrying a unit ("Boiler gas (therms)") with a date or
    month column make a wide_meters layout."""
    hs = [h if isinstance(h, Header) else parse_header(h, i) for i, h in enumerate(headers)]
    vocab = _vocabulary(templates if templates is not None else list_templates())
    flat = [(syn, f) for f, syns in vocab.items() for syn in syns]
    words = [w for w, _ in flat]
    matched: dict[str, Header] = {}
    for h in hs:
        for candidate in (h.key, header_key(h.text)):
            close = difflib.get_close_matches(candidate, words, n=3, cutoff=cutoff)
            fld = next((f for w, f in flat if close and w == close[0]), None)
            if fld is None and candidate.split():
                # "Site Meter", "Total Usage": the last word alone may name the field
                fld = next((f for w, f in flat if w == candidate.split()[-1]), None)
            if fld in ("meter", "consumption") and is_register_column(h):
                continue  # a cumulative register read is neither the meter nor its usage
            if fld and fld not in matched:
                matched[fld] = h
                break
    if "meter" in matched:
        # The meter itself beats the account it is billed to, whatever the column order.
        meters = [h for h in hs if meter_rank(h) < len(METER_RANK) and not is_register_column(h)]
        best = min(meters, key=meter_rank, default=matched["meter"])
        if meter_rank(best) < meter_rank(matched["meter"]) and best not in matched.values():
            matched["meter"] = best
    month_headers = [h for h in hs if looks_like_month(h.text)]
    rest = [h for h in hs if h not in matched.values() and h not in month_headers]
    layout: Layout = "long"
    if len(month_headers) >= 3:
        layout = "wide_months"
    elif (
        "consumption" not in matched
        and any(h.unit for h in rest)
        and ("month" in matched or "start_date" in matched)
    ):
        layout = "wide_meters"
    columns = {
        f: (matched[f].text,)
        for f in FIELDS
        if f in matched and not (layout != "long" and f == "consumption")
    }
    if "meter_name" in matched and "building" in matched:
        meter = MeterSpec(
            by="building_name",
            building_column=(matched["building"].text,),
            name_column=(matched["meter_name"].text,),
        )
    elif "meter" in matched:
        key = matched["meter"].text
        by: MeterBy = (
            "meter_id"
            if "id" in header_key(key).split() and "portfolio" not in header_key(key)
            else "external_ref"
        )
        meter = MeterSpec(by=by, column=(key,))
    else:
        meter = MeterSpec(by="external_ref")
    t = Template(
        name=name,
        description="Suggested from the headers of a sample file; check every column.",
        layout=layout,
        meter=meter,
        columns=columns,
        signature=tuple(h.text for h in matched.values()) if layout == "long" else (),
    )
    missing = []
    try:
        _check_fields(t)
    except TemplateError as exc:
        missing.append(exc.message.split(": ", 1)[-1])
    if (
        "unit" not in columns
        and layout == "long"
        and not ("consumption" in matched and matched["consumption"].unit)
    ):
        missing.append("a unit column, or [fixed] unit = ...")
    return Suggestion(
        template=replace(t),
        matched={f: h.text for f, h in matched.items()},
        unmatched_headers=tuple(h.text for h in rest if layout != "wide_meters" or not h.unit),
        missing=tuple(missing),
    )
