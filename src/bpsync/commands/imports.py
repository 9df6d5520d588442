"""Commands of the import engine: `import`, `register import`, `templates`, `meters link`, `demo`.

They are attached to `bpsync.cli.root.app` by `bpsync.cli.entry` (see `attach` for the exact set);
the shared helpers (state, profile and client construction, the environment banner, exit codes,
JSON output) come from `bpsync.cli`, imported as a module so either side may import the other
first."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from bpsync.cli import output as cli
from bpsync.client import errors as E
from bpsync.config import ConfigError
from bpsync.ingest import (
    DEFAULT_HEADROOM,
    ImportSummary,
    IngestError,
    Interrupts,
    NoProgress,
    RichProgress,
    TemplateError,
    builtin_templates_dir,
    link_meter,
    list_templates,
    load_meter_map,
    load_template,
    meter_map_path,
    problems_table,
    render,
    save_template,
    unlink_meter,
)
from bpsync.paths import user_templates_dir

FileArg = Annotated[
    Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The file to import")
]


def _note(state: Any) -> Any:
    err = cli.stderr()
    return (lambda _m: None) if state.json else (lambda m: err.print(m, markup=False))


def _ingest_fail(exc: IngestError, state: Any) -> None:
    # "busy" is not the file's fault: a scheduler retries 15, while 6 means fix the input
    code = cli.EXIT.BUSY if exc.code == "import_busy" else cli.EXIT.INVALID
    cli.fail(str(exc), code, None, state.json)


@contextlib.contextmanager
def ctrl_c(interrupts: Interrupts | None) -> Iterator[None]:
    """Ctrl-C during `bpsync import` (this entry point's signal, not the engine's): the first
    stops sending after the requests in flight, a second cancels them."""
    loop = asyncio.get_running_loop()
    installed = False
    if interrupts is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, interrupts.request)  # main thread only
            installed = True
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


def show_summary(state: Any, summary: ImportSummary) -> None:
    if state.json:
        cli.print_json(summary.as_dict())
        return
    out = cli.stdout()
    problems_table(summary.problems, out)
    render(summary, out)
    if summary.plan and summary.status == "dry-run":
        p = summary.plan
        limits = p["limits"]  # type: ignore[index]
        out.print(
            f"Plan: {p.get('upload_calls', 0)} upload(s) of up to 5,000 readings, "
            f"{p['batch_calls']} batch call(s) and {p['single_calls']} single call(s); "
            f"bound by {p['bound_by']}; limits {limits['principal']['limit']}/"
            f"{limits['principal']['window']:.0f} s per {limits['principal']['kind']}, "
            f"{limits['bulk']['limit']}/{limits['bulk']['window']:.0f} s bulk, "
            f"{limits['headroom']:.0%} headroom. All as batches: "
            f"{p['alternatives_seconds']['all_batches']:.0f} s; all as single calls: "
            f"{p['alternatives_seconds']['all_singles']:.0f} s."
        )


# --- import --------------------------------------------------------------------------------------


def import_command(
    ctx: typer.Context,
    file: FileArg,
    template: Annotated[
        str, typer.Option("--template", "-t", help="Template name or .toml path, or auto")
    ] = "auto",
    sheet: Annotated[str | None, typer.Option(help="Workbook sheet to read")] = None,
    profile: cli.ProfileOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and plan, send nothing")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Finish an interrupted import of this file")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Re-check a file already imported against the service")
    ] = False,
    create_meters: Annotated[
        bool,
        typer.Option(
            "--create-meters", help="Create missing meters when building, type and unit are clear"
        ),
    ] = False,
    headroom: Annotated[
        float,
        typer.Option(min=0.0, max=0.9, help="Share of each rate limit left for other traffic"),
    ] = DEFAULT_HEADROOM,
    meter: Annotated[
        str | None,
        typer.Option(
            "--meter",
            help="Put every row in this meter (its external reference or id): single-meter "
            "exports with no meter column",
        ),
    ] = None,
    no_upload: cli.NoUploadOpt = False,
    update: Annotated[
        bool,
        typer.Option(
            "--update",
            help="Apply corrections and rebills: replace the stored readings the file's rows "
            "correct (deleted, then the new ones sent; kept in the trail, `bpsync history`)",
        ),
    ] = False,
    date_order: Annotated[
        DateOrderChoice | None,
        typer.Option(
            "--date-order",
            help="Read dates such as 03/04/2024 day-first (DMY) or month-first (MDY) where "
            "nothing in the file proves the order",
            case_sensitive=False,
        ),
    ] = None,
    save_template: Annotated[
        str | None,
        typer.Option(
            "--save-template",
            help="Keep the mapping inferred for this file as your template NAME",
            metavar="NAME",
        ),
    ] = None,
    as_json: cli.JsonOpt = False,
) -> None:
    """Import utility bills (CSV, XLSX, Green Button XML): validate, plan, send, report.

    Rows already stored are skipped, an interrupted import resumes, and rejected rows are
    written to <name>.rejects.csv (or .xlsx) next to the file. Exit 13 when rows were rejected,
    16 when rows correcting stored readings were found and not applied (use --update)."""
    state = cli._state(ctx, profile, as_json)
    try:
        profile_name = state.profile().name
    except ConfigError as exc:
        cli.fail(str(exc), cli.EXIT.CONFIG, exc, state.json)
    # A workbook's sheets are checked by a child process on the other core while the engine
    # loads (readers/sheet_precheck.py).
    from bpsync.ingest import precheck_sheets

    precheck_sheets(file)
    from bpsync.ingest import ImportOptions, import_file  # the engine loads when it is used

    order = date_order.value.upper() if date_order is not None else None
    if save_template:
        _keep_template(state, file, save_template, meter, order, sheet)

    options = ImportOptions(
        template=template,
        sheet=sheet,
        dry_run=dry_run,
        resume=resume,
        force=force,
        create_meters=create_meters,
        headroom=headroom,
        template_dirs=[user_templates_dir()],
        meter=meter,
        interrupts=Interrupts(),
        uploads=not no_upload,
        update=update,
        date_order=order,
    )
    interactive = not state.json and sys.stderr.isatty()
    progress = RichProgress(cli.stderr()) if interactive else NoProgress()

    async def action(client: Any) -> ImportSummary:
        with ctrl_c(options.interrupts):
            try:
                return await import_file(
                    client, profile_name, file, options, progress=progress, note=_note(state)
                )
            except IngestError as exc:
                _ingest_fail(exc, state)
                raise

    summary = cli.run(ctx, action)
    summary.file_arg = str(file)
    show_summary(state, summary)
    raise typer.Exit(summary.exit_code)


class DateOrderChoice(StrEnum):
    DMY = "DMY"
    MDY = "MDY"


def _keep_template(
    state: Any, file: Path, name: str, meter: str | None, order: str | None, sheet: str | None
) -> None:
    """`--save-template NAME`: the inferred mapping saved as a user template, before importing."""
    from bpsync.ingest import save_template, template_to_keep

    try:
        kept = template_to_keep(
            file,
            name,
            meter=meter,
            date_order=order,  # type: ignore[arg-type]
            sheet=sheet,
            template_dirs=[user_templates_dir()],
        )
        path = save_template(kept, user_templates_dir())
    except (TemplateError, IngestError) as exc:
        cli.fail(str(exc), cli.EXIT.INVALID, exc, state.json)
    cli.stderr().print(
        f"saved the inferred mapping as template {name!r} ({path}); "
        f"`bpsync templates show {name}` prints it",
        markup=False,
    )


# --- register ------------------------------------------------------------------------------------

register_app = typer.Typer(
    help="The portfolio register: properties, buildings, meters.", no_args_is_help=True
)


@register_app.command("import")
def register_import(
    ctx: typer.Context,
    file: FileArg,
    profile: cli.ProfileOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change")] = False,
    as_json: cli.JsonOpt = False,
) -> None:
    """Create or update properties, buildings and meters from a register workbook (idempotent:
    matched by internal_ref and by building name within a property) and link the meters'
    utility numbers and Portfolio Manager ids in the profile's meter map."""
    from bpsync.ingest import import_register, read_register  # loaded when used

    state = cli._state(ctx, profile, as_json)
    try:
        profile_name = state.profile().name
        register = read_register(file)
    except ConfigError as exc:
        cli.fail(str(exc), cli.EXIT.CONFIG, exc, state.json)
    except IngestError as exc:
        _ingest_fail(exc, state)
    if not register.ok:
        problems = [p.as_dict() for p in register.problems]
        if state.json:
            cli.print_json({"status": "invalid", "problems": problems})
        else:
            problems_table(problems, cli.stdout())
            cli.stderr().print("The register has errors: nothing was sent. Fix them and re-run.")
        raise typer.Exit(int(cli.EXIT.INVALID))
    outcome = cli.run(ctx, lambda c: import_register(c, register, profile_name, dry_run=dry_run))
    if state.json:
        cli.print_json({**outcome.as_dict(), "rules": register.rules})
    else:
        out = cli.stdout()
        for rule in register.rules:  # choices made by a documented rule are said, never silent
            out.print(f"note: {rule}", markup=False, highlight=False)
        verb = "would be " if dry_run else ""
        for what, plural in (
            ("property", "properties"),
            ("building", "buildings"),
            ("meter", "meters"),
        ):
            out.print(
                f"{plural}: {outcome.created[what]} {verb}created, {outcome.updated[what]} "
                f"{verb}updated, {outcome.unchanged[what]} unchanged"
            )
        if outcome.linked:
            out.print(f"linked {outcome.linked} external reference(s) in {outcome.meter_map}")
        for line in outcome.conflicts + outcome.failed:
            cli.stderr().print(f"[red]error:[/red] {escape(line)}", markup=True)
    raise typer.Exit(int(cli.EXIT.OK if outcome.ok else cli.EXIT.CONFLICT))


# --- templates -----------------------------------------------------------------------------------

templates_app = typer.Typer(help="Mapping templates for imports.", no_args_is_help=True)


@templates_app.command("list")
def templates_list(ctx: typer.Context, as_json: cli.JsonOpt = False) -> None:
    """Shipped templates and the ones you saved."""
    state = cli._state(ctx, None, as_json)
    user_dir = user_templates_dir()
    rows = [
        {
            "name": t.name,
            "format": t.format,
            "layout": t.layout,
            "source": "yours" if t.path and t.path.parent == user_dir else "shipped",
            "description": t.description,
        }
        for t in list_templates([user_dir])
    ]
    if state.json:
        cli.print_json(rows)
    else:
        cli.table(
            rows,
            [(k, k) for k in ("name", "format", "layout", "source", "description")],
            f"Templates (shipped: {builtin_templates_dir()}; yours: {user_dir})",
        )


@templates_app.command("show")
def templates_show(ctx: typer.Context, name: str, as_json: cli.JsonOpt = False) -> None:
    """Print a template (TOML)."""
    state = cli._state(ctx, None, as_json)
    try:
        t = load_template(name, [user_templates_dir()])
    except (TemplateError, IngestError) as exc:
        cli.fail(str(exc), cli.EXIT.NOT_FOUND, None, state.json)
    if state.json:
        from bpsync.ingest import template_to_dict

        cli.print_json(
            {
                "name": t.name,
                "path": str(t.path) if t.path else None,
                "template": template_to_dict(t),
            }
        )
    else:
        if t.path:
            cli.stderr().print(f"# {t.path}", markup=False)
        sys.stdout.write(t.to_toml())


def _with_detected_decimal(suggestion: Any, table: Any) -> Any:
    """Write the decimal separator the file's numbers show ("1.234,5" → ",") into the suggestion."""
    from dataclasses import replace

    from bpsync.ingest import resolve_columns, scan_decimal

    try:
        decimal, _ = scan_decimal(table, resolve_columns(table, suggestion.template))
    except IngestError:
        return suggestion  # incomplete or ambiguous: the suggestion says what is missing
    return replace(suggestion, template=replace(suggestion.template, decimal=decimal))


@templates_app.command("suggest")
def templates_suggest(
    ctx: typer.Context,
    file: FileArg,
    sheet: Annotated[str | None, typer.Option(help="Workbook sheet to read")] = None,
    save: Annotated[
        str | None, typer.Option("--save", help="Save the suggestion as a template NAME")
    ] = None,
    as_json: cli.JsonOpt = False,
) -> None:
    """Suggest a mapping for a file no template matches (its headers and values, as the import
    infers them)."""
    from bpsync.ingest import open_table, suggest_for_table

    state = cli._state(ctx, None, as_json)
    user_dir = user_templates_dir()
    try:
        templates = list_templates([user_dir])
        expected = set().union(*(t.expected_keys() for t in templates))
        table = open_table(file, sheet=sheet, expected=expected)
        # The import's own inference, so the suggestion is what `bpsync import` would do.
        suggestion = suggest_for_table(table, save or "suggested")
        suggestion = _with_detected_decimal(suggestion, table)
        if save and suggestion.missing:
            cli.fail(
                "the suggestion is incomplete, so it was not saved; still needed: "
                + "; ".join(suggestion.missing)
                + ". Write the template by hand from `bpsync templates show long_csv`.",
                cli.EXIT.INVALID,
                None,
                state.json,
            )
        saved = save_template(suggestion.template, user_dir) if save else None
    except (TemplateError, IngestError) as exc:
        cli.fail(str(exc), cli.EXIT.INVALID, None, state.json)
    if state.json:
        cli.print_json(
            {
                "matched": dict(suggestion.matched),
                "unmatched_headers": list(suggestion.unmatched_headers),
                "missing": list(suggestion.missing),
                "usable": suggestion.usable,
                "saved": str(saved) if saved else None,
                "toml": suggestion.template.to_toml(),
            }
        )
        return
    out = cli.stdout()
    out.print(table.describe(), markup=False)
    for fld, header in suggestion.matched.items():
        out.print(f"  {fld:<14} ← {header}", markup=False)
    if suggestion.unmatched_headers:
        out.print("not used: " + ", ".join(suggestion.unmatched_headers), markup=False)
    if suggestion.missing:
        out.print("still needed: " + "; ".join(suggestion.missing), markup=False)
    sys.stdout.write("\n" + suggestion.template.to_toml())
    if saved:
        cli.stderr().print(f"saved {saved}; edit it, then `bpsync import FILE -t {save}`")


# --- meters link ---------------------------------------------------------------------------------


def meters_link(
    ctx: typer.Context,
    reference: Annotated[
        str | None, typer.Argument(help="External reference: utility meter number, PM meter id")
    ] = None,
    meter_id: Annotated[str | None, typer.Argument(help="The service's meter id (mtr_…)")] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Forget REFERENCE")] = False,
    profile: cli.ProfileOpt = None,
    as_json: cli.JsonOpt = False,
) -> None:
    """Link an external meter reference to a meter in this profile's meter map (no arguments:
    list the map)."""
    state = cli._state(ctx, profile, as_json)
    try:
        name = state.profile().name
        if reference is None:
            links = load_meter_map(name)
            if state.json:
                cli.print_json({"profile": name, "links": links})
            else:
                cli.table(
                    [{"reference": k, "meter": v} for k, v in sorted(links.items())],
                    [("reference", "reference"), ("meter", "meter")],
                    f"Meter map of {name} ({meter_map_path(name)})",
                )
            return
        if remove:
            if not unlink_meter(name, reference):
                cli.fail(
                    f"{reference!r} is not in the meter map", cli.EXIT.NOT_FOUND, None, state.json
                )
            message = f"unlinked {reference}"
        elif meter_id is None:
            cli.fail("give the meter id (mtr_…) or --remove", cli.EXIT.USAGE, None, state.json)
        else:
            link_meter(name, reference, meter_id)
            message = f"linked {reference} → {meter_id}"
    except (ConfigError, ValueError) as exc:
        cli.fail(str(exc), cli.exit_code(exc), None, state.json)
    if state.json:
        cli.print_json(
            {"profile": name, "reference": reference, "meter_id": meter_id, "removed": remove}
        )
    else:
        cli.stdout().print(message, markup=False)


# --- demo ----------------------------------------------------------------------------------------


def demo_command(
    ctx: typer.Context,
    no_tui: Annotated[
        bool, typer.Option("--no-tui", help="Do not open the terminal app afterwards")
    ] = False,
    port: Annotated[int, typer.Option(help="Loopback port (0: any free port)")] = 0,
) -> None:
    """Start a local service with a sandbox organisation, import the sample register and bills
    through the real import engine, print the portfolio's benchmarks, then open the terminal app.
    Re-running reuses the same data (imports are no-ops)."""
    from bpsync.commands.demo import run_demo

    state = cli._state(ctx, None, False)
    cli._logging(state.verbose)
    try:
        code = run_demo(
            open_tui=not no_tui and sys.stdin.isatty() and sys.stdout.isatty(),
            port=port,
            out=cli.stdout(),
            err=cli.stderr(),
        )
    except (E.BPSyncError, ConfigError, IngestError) as exc:
        cli.fail(
            str(exc), cli.exit_code(exc) if not isinstance(exc, IngestError) else cli.EXIT.INVALID
        )
    except KeyboardInterrupt:
        cli.fail("interrupted", cli.EXIT.ERROR)
    raise typer.Exit(code)


def attach(app: typer.Typer, meters_app: typer.Typer) -> None:
    """Wire every command into `bpsync` (what the lead's lines in cli.py do)."""
    app.command("import")(import_command)
    app.add_typer(register_app, name="register")
    app.add_typer(templates_app, name="templates")
    meters_app.command("link")(meters_link)
    app.command("demo")(demo_command)
