"""`bpsync export`: Portfolio Manager's upload workbooks written from what the service holds
(issue 31; docs/pm-round-trip.md). `pm-bills` writes "Add Bills to Existing Meters" from the
stored readings, `pm-meters` writes "Create Meters" for meters PM does not have yet. The work is
in `bpsync.pm_export`, imported when a command runs (it loads openpyxl)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from bpsync.cli.output import EXIT, JsonOpt, ProfileOpt, _parse_date, _state, fail, print_json
from bpsync.cli.output import run as run_with_client
from bpsync.cli.output import stdout as out_console
from bpsync.cli.root import app

if TYPE_CHECKING:
    from bpsync.client.service import AsyncServiceClient
    from bpsync.pm_export.export import Outcome, Scope

Action = Callable[["AsyncServiceClient", str], Awaitable["Outcome"]]

export_app = typer.Typer(
    help="Write Portfolio Manager upload workbooks from the service's data.", no_args_is_help=True
)
app.add_typer(export_app, name="export")

PropertyOpt = Annotated[
    list[str] | None,
    typer.Option("--property", help="Only this property (prp_…); repeat for more"),
]
BuildingOpt = Annotated[
    list[str] | None,
    typer.Option("--building", help="Only this building (bld_…); repeat for more"),
]
MeterOpt = Annotated[
    list[str] | None, typer.Option("--meter", help="Only this meter (mtr_…); repeat for more")
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite the output file")]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Say what would be written; write nothing")
]


def _scope(
    properties: list[str] | None, buildings: list[str] | None, meters: list[str] | None
) -> Scope:
    from bpsync.pm_export.export import Scope

    return Scope(tuple(properties or ()), tuple(buildings or ()), tuple(meters or ()))


def _output(path: Path | None, default: str, force: bool, dry_run: bool, as_json: bool) -> Path:
    target = (path or Path(default)).absolute()  # the summary names the file wherever it is read
    if target.suffix.lower() != ".xlsx":
        fail(f"{target}: the output must be an .xlsx file", EXIT.USAGE, None, as_json)
    if not dry_run and not force and target.exists():
        fail(f"{target} exists; give --force to overwrite it", EXIT.CONFLICT, None, as_json)
    if not target.parent.is_dir():
        fail(f"{target.parent}: no such folder", EXIT.NOT_FOUND, None, as_json)
    return target


def _run(ctx: typer.Context, as_json: bool, action: Action) -> Outcome:
    """Run an export with the profile's client; a scope or ledger problem is one line, no trace."""
    from bpsync.pm_export.export import ScopeError

    state = _state(ctx, None, as_json)

    async def guarded(client: AsyncServiceClient) -> Outcome:
        try:
            return await action(client, state.profile().name)
        except ScopeError as exc:
            fail(str(exc), EXIT.NOT_FOUND, None, state.json)
        except OSError as exc:
            fail(f"cannot write the workbook: {exc}", EXIT.ERROR, None, state.json)

    return run_with_client(ctx, guarded)


def _summary(outcome: Outcome, what: str, as_json: bool, dry_run: bool) -> None:
    from bpsync.pm_export.rows import BillsPlan

    plan = outcome.plan
    if as_json:
        print_json({**outcome.as_dict(), "dry_run": dry_run})
    else:
        out = out_console()
        count = plan.readings if isinstance(plan, BillsPlan) else plan.meters
        if outcome.path is not None:
            out.print(f"wrote {count} {what} to {escape(str(outcome.path))}")
        elif dry_run and count:
            out.print(f"would write {count} {what} (dry run: nothing written)")
        else:
            out.print(f"nothing new to write: no file written ({what}: 0)")
        for sheet, rows in plan.sheets.items():
            if rows:
                out.print(f"  {escape(sheet)}: {len(rows)}")
        skipped = getattr(plan, "already_exported", 0)
        if skipped:
            out.print(f"skipped {skipped} reading(s) exported before (--all writes them again)")
        in_pm = getattr(plan, "in_pm", 0)
        if in_pm:
            out.print(f"skipped {in_pm} meter(s) already in Portfolio Manager (PM Meter ID linked)")
        for note in plan.notes:
            out.print(f"note: {escape(note)}")
        if plan.left_out:
            out.print(f"[bold]left out {len(plan.left_out)} meter(s):[/bold]")
            for x in plan.left_out:
                held = f", {x.readings} reading(s)" if x.readings else ""
                out.print(
                    f"  {escape(x.meter)} ({escape(x.meter_id)}, {escape(x.building)}{held}): "
                    f"{escape(x.reason)}"
                )
                if x.fix:
                    out.print(f"    fix: {escape(x.fix)}")
    # Something in scope that holds data was left out: say so to scripts too.
    if any(x.readings or what == "meter(s)" for x in plan.left_out):
        raise typer.Exit(int(EXIT.PARTIAL))


@export_app.command("pm-bills")
def pm_bills(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The workbook to write (.xlsx)")
    ] = None,
    start: Annotated[
        str | None, typer.Option("--from", help="Readings starting on or after (YYYY-MM-DD)")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--to", help="Readings ending on or before (YYYY-MM-DD)")
    ] = None,
    properties: PropertyOpt = None,
    buildings: BuildingOpt = None,
    meters: MeterOpt = None,
    everything: Annotated[
        bool, typer.Option("--all", help="Also readings exported before")
    ] = False,
    force: ForceOpt = False,
    dry_run: DryRunOpt = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write PM's "Add Bills to Existing Meters" workbook from the stored readings of the meters
    linked to a PM Meter ID. Readings exported before are skipped (unless --all); meters without
    a PM Meter ID are listed with the command that links them (exit 13 when they hold readings)."""
    state = _state(ctx, profile, as_json)
    first = _parse_date(start, "--from") if start else None
    last = _parse_date(end, "--to") if end else None
    if first and last and last < first:
        fail("--to is before --from", EXIT.USAGE, None, state.json)
    default = f"pm_bills_{dt.date.today().isoformat()}.xlsx"
    target = _output(output, default, force, dry_run, state.json)
    scope = _scope(properties, buildings, meters)

    async def action(client: AsyncServiceClient, profile_name: str) -> Outcome:
        from bpsync.pm_export.export import export_bills

        return await export_bills(
            client,
            profile_name,
            target,
            scope=scope,
            start=first,
            end=last,
            everything=everything,
            dry_run=dry_run,
        )

    _summary(_run(ctx, as_json, action), "reading(s)", state.json, dry_run)


@export_app.command("pm-meters")
def pm_meters(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The workbook to write (.xlsx)")
    ] = None,
    properties: PropertyOpt = None,
    buildings: BuildingOpt = None,
    meters: MeterOpt = None,
    force: ForceOpt = False,
    dry_run: DryRunOpt = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write PM's "Create Meters" workbook for the meters without a PM Meter ID (type, unit, first
    bill date), so a new building's meters are made in PM in one upload."""
    state = _state(ctx, profile, as_json)
    default = f"pm_meters_{dt.date.today().isoformat()}.xlsx"
    target = _output(output, default, force, dry_run, state.json)
    scope: Scope = _scope(properties, buildings, meters)

    async def action(client: AsyncServiceClient, profile_name: str) -> Outcome:
        from bpsync.pm_export.export import export_meters

        return await export_meters(client, profile_name, target, scope=scope, dry_run=dry_run)

    _summary(_run(ctx, as_json, action), "meter(s)", state.json, dry_run)
