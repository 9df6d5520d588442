"""`benchmarks` and `reports`: scores, history and documents."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

from bpsync.cli.output import (
    AllOpt,
    JsonOpt,
    PageOpt,
    PerPageOpt,
    _parse_date,
    _state,
    cell_text,
    details,
    item_command,
    listing,
    print_json,
    run,
    show,
    stderr,
    stdout,
    table,
)
from bpsync.cli.root import app

if TYPE_CHECKING:  # the client loads when a command runs, not at start-up
    from bpsync.client.service import AsyncServiceClient

# --- benchmarks ----------------------------------------------------------------------------------

benchmarks_app = typer.Typer(
    help="Benchmark scores: building, history, portfolio.", no_args_is_help=True
)
app.add_typer(benchmarks_app, name="benchmarks")


@benchmarks_app.command("building")
def benchmarks_building(ctx: typer.Context, building_id: str, as_json: JsonOpt = False) -> None:
    """A building's scores against every standard."""
    state = _state(ctx, None, as_json)
    result = run(ctx, lambda c: c.benchmarks.building(building_id))
    if state.json:
        print_json(result)
        return
    details(
        result,
        [
            "building_id",
            "reporting_period",
            "data_quality_grade",
            "eui_kwh_m2",
            "carbon_intensity_kgco2e_m2",
        ],
    )
    rows = []
    for s in result.scores:
        data = s.model_dump(exclude_none=True)
        standard = data.pop("standard")
        data.pop("calculated_at", None)
        rows.append(
            {
                "standard": standard,
                "result": ", ".join(f"{k}={cell_text(v)}" for k, v in data.items()),
            }
        )
    table(rows, [("standard", "standard"), ("result", "result")], "Scores")


@benchmarks_app.command("history")
def benchmarks_history(
    ctx: typer.Context,
    building_id: str,
    periods: Annotated[int, typer.Option(min=1, max=20)] = 4,
    standard: Annotated[str | None, typer.Option(help="svc or energy_rating")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Scores per reporting period, newest first."""
    state = _state(ctx, None, as_json)
    result = run(
        ctx, lambda c: c.benchmarks.history(building_id, periods=periods, standard=standard)
    )
    if state.json:
        print_json(result)
        return
    table(
        result.history,
        [
            ("from", "period.start"),
            ("to", "period.end"),
            ("EUI kWh/m²", "eui_kwh_m2"),
            ("svc", "svc_score"),
            ("energy rating", "energy_rating_score"),
        ],
        f"History of {building_id}",
    )


@benchmarks_app.command("portfolio")
def benchmarks_portfolio(
    ctx: typer.Context,
    type_: Annotated[str | None, typer.Option("--type", help="Use type")] = None,
    country: Annotated[str | None, typer.Option()] = None,
    min_grade: Annotated[str | None, typer.Option(help="Minimum data quality grade")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The portfolio aggregate."""
    state = _state(ctx, None, as_json)
    show(
        state,
        run(
            ctx, lambda c: c.benchmarks.portfolio(type=type_, country=country, min_grade=min_grade)
        ),
    )


# --- reports -------------------------------------------------------------------------------------

reports_app = typer.Typer(
    help="Reports: types, create, status, list, download.", no_args_is_help=True
)
app.add_typer(reports_app, name="reports")
REPORT_COLUMNS = [
    ("id", "id"),
    ("type", "type"),
    ("format", "format"),
    ("status", "status"),
    ("created", "created_at"),
    ("size", "file_size_bytes"),
]


@reports_app.command("types")
def reports_types(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The report types and their formats."""
    state = _state(ctx, None, as_json)
    items = run(ctx, lambda c: c.reports.types())
    if state.json:
        print_json(items)
    else:
        table(
            items,
            [
                ("type", "type"),
                ("formats", "formats"),
                ("scope", "scope"),
                ("description", "description"),
            ],
            "Report types",
        )


@reports_app.command("create")
def reports_create(
    ctx: typer.Context,
    type_: Annotated[str, typer.Option("--type", help="See `bpsync reports types`")],
    format_: Annotated[str, typer.Option("--format", help="pdf, xlsx, csv or json")],
    start: Annotated[str, typer.Option(help="Reporting period start")],
    end: Annotated[str, typer.Option(help="Reporting period end")],
    building: Annotated[
        str | None, typer.Option(help="Building id (building-scoped types)")
    ] = None,
    filter_type: Annotated[str | None, typer.Option(help="Use type (organisation types)")] = None,
    filter_country: Annotated[str | None, typer.Option(help="Country (organisation types)")] = None,
    template: Annotated[str | None, typer.Option(help="Template id (custom)")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until it is complete")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ask for a report; with --wait, poll until it is ready."""
    state = _state(ctx, None, as_json)
    filters = {k: v for k, v in {"type": filter_type, "country": filter_country}.items() if v}
    body = {
        "type": type_,
        "format": format_,
        "reporting_period": {
            "start": _parse_date(start, "--start"),
            "end": _parse_date(end, "--end"),
        },
        "building_id": building,
        "filters": filters or None,
        "template_id": template,
    }

    async def create(c: AsyncServiceClient) -> Any:
        report = await c.reports.create(body)
        return await c.reports.wait(report.id) if wait else report

    show(state, run(ctx, create))


item_command(
    reports_app,
    "status",
    ["report_id"],
    lambda c, i: c.reports.get(i),
    "A report's status (and a fresh download URL when complete).",
)


@reports_app.command("list")
def reports_list(
    ctx: typer.Context,
    status_: Annotated[str | None, typer.Option("--status")] = None,
    type_: Annotated[str | None, typer.Option("--type")] = None,
    page: PageOpt = 1,
    per_page: PerPageOpt = 50,
    fetch_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Reports, newest first."""
    listing(
        ctx,
        as_json,
        fetch_all,
        REPORT_COLUMNS,
        "Reports",
        lambda c: c.reports.list(status=status_, type=type_, page=page, per_page=per_page),
    )


@reports_app.command("templates")
def reports_templates(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Saved templates for custom reports."""
    listing(
        ctx,
        as_json,
        True,
        [("id", "id"), ("name", "name"), ("columns", "columns")],
        "Templates",
        lambda c: c.reports.templates(),
    )


@reports_app.command("download")
def reports_download(
    ctx: typer.Context,
    report_id: str,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="File, or folder (an existing one, or a path ending in / that is created)",
        ),
    ] = ".",
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the report first")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Download a report's file, with a progress bar."""
    state = _state(ctx, None, as_json)

    async def download(c: AsyncServiceClient) -> Path:
        if wait:
            await c.reports.wait(report_id)
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=stderr(),
            transient=True,
            disable=state.json,
        ) as bar:
            task = bar.add_task(report_id, total=None)
            path = await c.reports.download(
                report_id,
                output,
                progress=lambda n, total: bar.update(task, completed=n, total=total),
            )
        return path

    path = run(ctx, download)
    if state.json:
        print_json({"report_id": report_id, "path": str(path), "bytes": path.stat().st_size})
    else:
        stdout().print(f"saved {path} ({path.stat().st_size:,} bytes)")
