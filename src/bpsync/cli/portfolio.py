"""`properties`, `buildings`, `meters`, `readings`: the portfolio's resources."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bpsync.cli.output import (
    EXIT,
    AllOpt,
    JsonOpt,
    PageOpt,
    PerPageOpt,
    _parse_date,
    _state,
    fail,
    item_command,
    listing,
    print_json,
    run,
    show,
    show_list,
    stderr,
    stdout,
    table,
)
from bpsync.cli.results import benchmarks_app
from bpsync.cli.root import app

if TYPE_CHECKING:  # the client loads when a command runs, not at start-up
    from bpsync.client.service import AsyncServiceClient

# --- properties ----------------------------------------------------------------------------------

properties_app = typer.Typer(
    help="Properties: list, get, create, update, archive.", no_args_is_help=True
)
app.add_typer(properties_app, name="properties")
PROPERTY_COLUMNS = [
    ("id", "id"),
    ("name", "name"),
    ("type", "type"),
    ("country", "address.country"),
    ("status", "status"),
    ("buildings", "building_count"),
    ("GFA m²", "total_gfa_m2"),
]


@properties_app.command("list")
def properties_list(
    ctx: typer.Context,
    type_: Annotated[str | None, typer.Option("--type", help="Property type")] = None,
    country: Annotated[str | None, typer.Option(help="ISO 3166-1 alpha-2")] = None,
    status_: Annotated[str | None, typer.Option("--status", help="active or archived")] = None,
    sort: Annotated[str | None, typer.Option(help="name, created_at, updated_at; - = desc")] = None,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List properties."""
    listing(
        ctx,
        as_json,
        fetch_all,
        PROPERTY_COLUMNS,
        "Properties",
        lambda c: c.properties.list(
            type=type_, country=country, status=status_, sort=sort, page=page, per_page=per_page
        ),
    )


item_command(
    properties_app,
    "get",
    ["property_id"],
    lambda c, i: c.properties.get(i),
    "Show one property with its buildings.",
)
item_command(
    properties_app,
    "archive",
    ["property_id"],
    lambda c, i: c.properties.archive(i),
    "Archive a property (its data is kept).",
)


@properties_app.command("create")
def properties_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Property name")],
    street: Annotated[str, typer.Option()],
    city: Annotated[str, typer.Option()],
    country: Annotated[str, typer.Option(help="ISO 3166-1 alpha-2")],
    type_: Annotated[str, typer.Option("--type", help="office, retail, ...")],
    state_: Annotated[str | None, typer.Option("--state")] = None,
    postal_code: Annotated[str | None, typer.Option()] = None,
    internal_ref: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a property."""
    state = _state(ctx, None, as_json)
    address = {
        "street": street,
        "city": city,
        "country": country,
        "state": state_,
        "postal_code": postal_code,
    }
    item = run(
        ctx,
        lambda c: c.properties.create(
            name=name,
            address={k: v for k, v in address.items() if v is not None},
            type=type_,
            internal_ref=internal_ref,
        ),
    )
    show(state, item)


@properties_app.command("update")
def properties_update(
    ctx: typer.Context,
    property_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    type_: Annotated[str | None, typer.Option("--type")] = None,
    internal_ref: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a property's name, type or internal reference."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v
        for k, v in {"name": name, "type": type_, "internal_ref": internal_ref}.items()
        if v is not None
    }
    if not fields:
        fail("nothing to change: give --name, --type or --internal-ref", EXIT.USAGE)
    item = run(ctx, lambda c: c.properties.update(property_id, **fields))
    show(state, item)


# --- buildings -----------------------------------------------------------------------------------

buildings_app = typer.Typer(
    help="Buildings of a property, and reading locks.", no_args_is_help=True
)
app.add_typer(buildings_app, name="buildings")
BUILDING_COLUMNS = [
    ("id", "id"),
    ("name", "name"),
    ("use", "primary_use_type"),
    ("GFA m²", "gfa_m2"),
    ("built", "year_built"),
    ("floors", "floors"),
    ("grade", "data_quality_grade"),
]


@buildings_app.command("list")
def buildings_list(
    ctx: typer.Context,
    property_id: str,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List the buildings of a property."""
    listing(
        ctx,
        as_json,
        fetch_all,
        BUILDING_COLUMNS,
        "Buildings",
        lambda c: c.buildings.list(property_id, page=page, per_page=per_page),
    )


item_command(
    buildings_app,
    "get",
    ["property_id", "building_id"],
    lambda c, p, b: c.buildings.get(p, b),
    "Show one building with its use types and meters.",
)


@buildings_app.command("create")
def buildings_create(
    ctx: typer.Context,
    property_id: str,
    name: Annotated[str, typer.Option()],
    use: Annotated[str, typer.Option(help="Primary use type")],
    gfa: Annotated[float, typer.Option(help="Gross floor area, m²")],
    year_built: Annotated[int, typer.Option()],
    floors: Annotated[int, typer.Option()],
    occupancy: Annotated[float | None, typer.Option(help="Occupancy %")] = None,
    hours: Annotated[float | None, typer.Option(help="Operating hours per week")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a building to a property."""
    state = _state(ctx, None, as_json)
    show(
        state,
        run(
            ctx,
            lambda c: c.buildings.create(
                property_id,
                name=name,
                primary_use_type=use,
                gfa_m2=gfa,
                year_built=year_built,
                floors=floors,
                occupancy_pct=occupancy,
                operating_hours_week=hours,
            ),
        ),
    )


@buildings_app.command("update")
def buildings_update(
    ctx: typer.Context,
    property_id: str,
    building_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    gfa: Annotated[float | None, typer.Option(help="Gross floor area, m²")] = None,
    occupancy: Annotated[float | None, typer.Option(help="Occupancy %")] = None,
    hours: Annotated[float | None, typer.Option(help="Operating hours per week")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a building's details."""
    state = _state(ctx, None, as_json)
    fields = {
        k: v
        for k, v in {
            "name": name,
            "gfa_m2": gfa,
            "occupancy_pct": occupancy,
            "operating_hours_week": hours,
        }.items()
        if v is not None
    }
    if not fields:
        fail("nothing to change", EXIT.USAGE)
    show(state, run(ctx, lambda c: c.buildings.update(property_id, building_id, **fields)))


@buildings_app.command("lock")
def buildings_lock(
    ctx: typer.Context,
    building_id: str,
    through: Annotated[str | None, typer.Option(help="Lock readings ending on or before")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the building's reading lock, or move it forward with --through DATE."""
    state = _state(ctx, None, as_json)
    if through is None:
        show(state, run(ctx, lambda c: c.buildings.get_lock(building_id)))
    else:
        day = _parse_date(through, "--through")
        show(state, run(ctx, lambda c: c.buildings.lock(building_id, day)))


# --- meters and readings -------------------------------------------------------------------------

meters_app = typer.Typer(help="Meters of a building.", no_args_is_help=True)
app.add_typer(meters_app, name="meters")
METER_COLUMNS = [
    ("id", "id"),
    ("type", "type"),
    ("name", "name"),
    ("unit", "unit"),
    ("source", "source"),
    ("latest reading", "latest_reading_date"),
]


@meters_app.command("list")
def meters_list(
    ctx: typer.Context,
    building_id: str,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List a building's meters."""
    listing(
        ctx,
        as_json,
        fetch_all,
        METER_COLUMNS,
        "Meters",
        lambda c: c.meters.list(building_id, page=page, per_page=per_page),
    )


@meters_app.command("get")
def meters_get(
    ctx: typer.Context, building_id: str, meter_id: str, as_json: JsonOpt = False
) -> None:
    """Show one meter."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.meters.get(building_id, meter_id)))


@meters_app.command("create")
def meters_create(
    ctx: typer.Context,
    building_id: str,
    type_: Annotated[str, typer.Option("--type", help="electricity, natural_gas, water, ...")],
    unit: Annotated[str, typer.Option(help="kWh, therms, m3, litres, ...")],
    name: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a meter to a building."""
    state = _state(ctx, None, as_json)
    show(state, run(ctx, lambda c: c.meters.create(building_id, type=type_, unit=unit, name=name)))


readings_app = typer.Typer(
    help="Readings of a meter: list, add, submit a file, delete.", no_args_is_help=True
)
app.add_typer(readings_app, name="readings")
READING_COLUMNS = [
    ("id", "id"),
    ("start", "start_date"),
    ("end", "end_date"),
    ("consumption", "consumption"),
    ("unit", "unit"),
    ("cost", "cost"),
    ("flags", "anomaly_flags"),
]


@readings_app.command("list")
def readings_list(
    ctx: typer.Context,
    building_id: str,
    meter_id: str,
    from_: Annotated[str | None, typer.Option("--from", help="Starting on or after")] = None,
    to: Annotated[str | None, typer.Option("--to", help="Ending on or before")] = None,
    newest_first: Annotated[bool, typer.Option("--newest-first")] = False,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List a meter's readings."""
    state = _state(ctx, None, as_json)
    start = _parse_date(from_, "--from") if from_ else None
    end = _parse_date(to, "--to") if to else None
    run(
        ctx,
        lambda c: show_list(
            state,
            c.readings.list(
                building_id,
                meter_id,
                start_date=start,
                end_date=end,
                newest_first=newest_first,
                page=page,
                per_page=per_page,
            ),
            fetch_all,
            READING_COLUMNS,
            "Readings",
        ),
    )


@readings_app.command("add")
def readings_add(
    ctx: typer.Context,
    building_id: str,
    meter_id: str,
    start: Annotated[str, typer.Option(help="First day (YYYY-MM-DD)")],
    end: Annotated[str, typer.Option(help="Last day, inclusive")],
    consumption: Annotated[float, typer.Option()],
    cost: Annotated[float | None, typer.Option()] = None,
    currency: Annotated[str | None, typer.Option(help="ISO 4217")] = None,
    demand_kw: Annotated[float | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """Submit one reading."""
    state = _state(ctx, None, as_json)
    body = {
        "start_date": _parse_date(start, "--start"),
        "end_date": _parse_date(end, "--end"),
        "consumption": consumption,
        "cost": cost,
        "cost_currency": currency,
        "demand_kw": demand_kw,
    }
    show(state, run(ctx, lambda c: c.readings.create(building_id, meter_id, body)))


SUBMIT_COLUMNS = ("start_date", "end_date", "consumption", "cost", "cost_currency", "demand_kw")


def _load_readings(path: Path) -> list[dict[str, Any]]:
    """A JSON list of readings, or a CSV with start_date, end_date, consumption (and optional
    cost, cost_currency, demand_kw) columns; each row checked here, so a bad one is named by its
    row and column instead of reaching the user as a validation dump."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".json":
        data = json.loads(text)
        data = data.get("readings", data) if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of readings")
        return [_checked_reading(path, i + 1, "item", row) for i, row in enumerate(data)]
    reader = csv.DictReader(text.splitlines())
    unknown = [h for h in (reader.fieldnames or []) if h and h.strip() not in SUBMIT_COLUMNS]
    if unknown:
        hint = (
            " (readings are stored in the meter's own unit; `bpsync import` reads a unit "
            "column and converts)"
            if any(h.strip().lower() in ("unit", "units", "uom") for h in unknown)
            else ""
        )
        raise ValueError(
            f"{path}: column(s) {', '.join(map(repr, unknown))} not accepted{hint}; the "
            f"columns are {', '.join(SUBMIT_COLUMNS)}"
        )
    rows = []
    for number, row in enumerate(reader, start=2):  # row 1 is the header, as in a spreadsheet
        item = {k.strip(): v.strip() for k, v in row.items() if k and v not in (None, "")}
        rows.append(_checked_reading(path, number, "row", item))
    return rows


def _checked_reading(path: Path, number: int, kind: str, item: Any) -> dict[str, Any]:
    from pydantic import ValidationError as ModelError

    from bpsync.client.models import ReadingInput

    if not isinstance(item, dict):
        raise ValueError(f"{path}, {kind} {number}: expected an object with {SUBMIT_COLUMNS}")
    try:
        ReadingInput.model_validate(item)
    except ModelError as exc:
        first = exc.errors()[0]
        column = ".".join(str(x) for x in first.get("loc", ())) or "?"
        value = item.get(column) if isinstance(column, str) else None
        shown = f" ({value!r})" if value is not None else ""
        raise ValueError(
            f"{path}, {kind} {number}, column {column}{shown}: {first.get('msg', 'invalid')}"
        ) from None
    return {
        k: float(v) if k in ("consumption", "cost", "demand_kw") else v for k, v in item.items()
    }


@readings_app.command("submit")
def readings_submit(
    ctx: typer.Context,
    building_id: str,
    meter_id: str,
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="CSV or JSON")],
    as_json: JsonOpt = False,
) -> None:
    """Submit readings from a file in batches of 500; rejected rows are listed (exit 13).

    A CSV has the columns start_date, end_date, consumption (in the meter's unit) and optionally
    cost, cost_currency, demand_kw; a JSON file is a list of such objects. For utility exports in
    other layouts or units, use `bpsync import`."""
    state = _state(ctx, None, as_json)
    try:
        rows = _load_readings(file)
    except (ValueError, OSError) as exc:
        fail(str(exc), EXIT.INVALID, None, state.json)
    if not rows:
        fail(f"{file}: no readings", EXIT.INVALID, None, state.json)

    async def submit(c: AsyncServiceClient) -> dict[str, Any]:
        accepted, errors = 0, []
        for offset in range(0, len(rows), 500):
            result = await c.readings.create_batch(
                building_id, meter_id, rows[offset : offset + 500]
            )
            accepted += result.accepted
            for e in result.errors:
                errors.append(
                    {**e.model_dump(mode="json", exclude_none=True), "index": e.index + offset}
                )
        return {"accepted": accepted, "rejected": len(errors), "errors": errors}

    outcome = run(ctx, submit)
    if state.json:
        print_json(outcome)
    else:
        stdout().print(f"accepted {outcome['accepted']}, rejected {outcome['rejected']}")
        if outcome["errors"]:
            table(
                outcome["errors"],
                [("row", "index"), ("code", "code"), ("message", "message")],
                "Rejected",
            )
    if outcome["rejected"]:
        raise typer.Exit(int(EXIT.PARTIAL))


@readings_app.command("delete")
def readings_delete(ctx: typer.Context, building_id: str, meter_id: str, reading_id: str) -> None:
    """Delete a reading (refused when the building is locked through its end)."""
    run(ctx, lambda c: c.readings.delete(building_id, meter_id, reading_id))
    stderr().print(f"deleted {reading_id}")


# --- benchmarks list: the portfolio's table of buildings (issue 28) -------------------------------

BuildingSortOpt = Annotated[
    str,
    typer.Option(
        "--sort",
        help="Column: building, property, city, country, use_type, gfa, eui, carbon, score, "
        "grade, law, status, penalty_now, penalty_next; a leading - sorts descending",
    ),
]


@benchmarks_app.command("list")
def benchmarks_list(
    ctx: typer.Context,
    search: Annotated[
        str | None,
        typer.Option(
            "--search", help="Words to find in building/property name, city, country, use"
        ),
    ] = None,
    sort: BuildingSortOpt = "building",
    units: Annotated[
        str | None,
        typer.Option(help="si or us (default: the profile's, else US for a mostly-US portfolio)"),
    ] = None,
    as_json: JsonOpt = False,
    as_csv: Annotated[
        bool, typer.Option("--csv", help="Print CSV (the columns, in the units)")
    ] = False,
) -> None:
    """Every building with GFA, EUI, carbon intensity, svc score (or why none), grade, and the
    city law (LL97, BERDO) with its status and projected yearly penalty now and next period."""
    import datetime as dt

    from bpsync import building_table as BT
    from bpsync.units import parse_units

    state = _state(ctx, None, as_json)
    key, descending = sort.removeprefix("-"), sort.startswith("-")
    if key not in BT.KEYS:
        fail(
            f"--sort takes one of {', '.join(BT.KEYS)} (with - for descending), not {sort!r}.",
            EXIT.USAGE,
            as_json=state.json,
        )
    try:
        chosen = parse_units(units) if units else None
    except ValueError as exc:
        fail(str(exc), EXIT.USAGE, as_json=state.json)
    today = dt.datetime.now(dt.UTC).date()
    rows = run(ctx, lambda c: _building_rows(c, today))
    if chosen is None:
        profile_units = state.profile().units
        chosen = parse_units(profile_units) if profile_units else None
    if chosen is None:
        from bpsync.units import default_units

        chosen = default_units(r.country for r in rows)
    shown = BT.visible(rows, search or "", key, descending, chosen)
    if state.json:
        print_json({"units": chosen, "buildings": [_building_json(r, chosen) for r in shown]})
    elif as_csv:
        _building_csv(shown, chosen)
    else:
        _building_table(shown, chosen, len(rows))


async def _building_rows(c: AsyncServiceClient, today: Any) -> list[Any]:
    import asyncio
    from dataclasses import replace

    from bpsync import building_table as BT

    rows = [r async for chunk in BT.list_rows(c) for r in chunk]
    scored: dict[str, Any] = {}
    outlooks: dict[str, Any] = {}

    async def scores() -> None:
        async for r in BT.benchmarks(c, rows):
            scored[r.building_id] = r

    async def laws() -> None:
        async for r in BT.outlooks(c, rows, today):
            outlooks[r.building_id] = r.outlook

    await asyncio.gather(scores(), laws())
    return [replace(scored[r.building_id], outlook=outlooks[r.building_id]) for r in rows]


def _building_json(row: Any, units: Any) -> dict[str, Any]:
    from dataclasses import asdict

    from bpsync import building_table as BT
    from bpsync.units import label

    outlook = row.outlook
    return {
        "building_id": row.building_id,
        "property_id": row.property_id,
        **BT.values(row, units),
        "score_note": row.score_note or None,
        "units": {q: label(q, units) for q in ("area", "eui", "intensity")},
        "compliance": None
        if outlook is None
        else {
            "law": outlook.law,
            "covered": outlook.covered,
            "status": outlook.status,
            "reason": outlook.reason,
            "basis_year": outlook.basis_year,
            "annualised": outlook.annualised,
            "periods": [asdict(p) for p in outlook.periods],
        },
    }


def _building_csv(rows: list[Any], units: Any) -> None:
    import sys

    from bpsync import building_table as BT

    out = csv.writer(sys.stdout)
    headers = [c.heading(units) for c in BT.COLUMNS]
    headers[-2:] = ["Penalty now (USD/yr)", "Penalty next (USD/yr)"]
    out.writerow(["building_id", "property_id", *headers, "Score note", "Compliance basis"])
    for r in rows:
        v = BT.values(r, units)
        basis = r.outlook.basis_text if r.outlook else ""
        cells = ["" if v[k] is None else v[k] for k in BT.KEYS]
        out.writerow([r.building_id, r.property_id, *cells, r.score_note, basis])


def _building_table(rows: list[Any], units: Any, total: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from bpsync import building_table as BT

    t = Table(title=f"Buildings ({len(rows)} of {total})", header_style="bold")
    for c in BT.COLUMNS:
        t.add_column(c.heading(units), justify="right" if c.numeric else "left")
    notes = []
    for r in rows:
        cells = BT.cells(r, units)
        t.add_row(*(Text(cells[k]) for k in BT.KEYS))
        if r.score_note:
            notes.append(f"{r.building}: no svc score, {r.score_note}")
        if r.outlook is not None and r.outlook.basis_year is not None:
            notes.append(f"{r.building}: {r.outlook.law} {r.outlook.basis_text}")
    console = stdout()
    console.print(t)
    for note in notes:
        console.print(Text(f"  ⓘ {note}"), style="dim")
