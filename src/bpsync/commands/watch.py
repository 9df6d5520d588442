"""`bpsync watch DIR`: the headless folder watcher (docs/watch.md), attached to `bpsync.cli.app`
by `attach(app)`."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bpsync import logs
from bpsync.cli import output as cli
from bpsync.config import ConfigError
from bpsync.ingest import DEFAULT_HEADROOM, IngestError, load_template
from bpsync.paths import user_templates_dir
from bpsync.watch.log import WatchLog
from bpsync.watch.rules import DEFAULT_IGNORE, read_folder_rules
from bpsync.watch.summary import watch_status_lines

if TYPE_CHECKING:  # the watcher and the engine load when a folder is watched, not at start-up
    from bpsync.watch.core import RunResult

__all__ = ["attach", "exit_code_of", "watch_command", "watch_status_lines"]

# --once ends on the first pause; its exit code says why (cli.EXIT, docs/client.md).
_PAUSE_EXIT = {
    "unreachable": cli.EXIT.CONNECTION,
    "credentials": cli.EXIT.AUTH,
    "permission": cli.EXIT.PERMISSION,
    "rate_limited": cli.EXIT.RATE_LIMITED,
    "service_error": cli.EXIT.SERVER,
    "config": cli.EXIT.CONFIG,
    "local_io": cli.EXIT.ERROR,
    "busy": cli.EXIT.BUSY,
}


def exit_code_of(result: RunResult, once: bool) -> int:
    """0 when all went well; --once: the pause's code, 1 when a file could not be handled (a
    local error such as a full disk: it stays for the next run), or 13 when a file went to
    failed/. A scheduler sees non-zero whenever any file did not go through."""
    if result.error:
        return int(cli.EXIT.ERROR)
    if result.stopped is not None:
        return int(_PAUSE_EXIT.get(result.stopped.code, cli.EXIT.ERROR))
    if once and result.errored:
        return int(cli.EXIT.ERROR)
    if once and result.failed:
        return int(cli.EXIT.PARTIAL)
    return int(cli.EXIT.OK)


def note_logger(log: WatchLog) -> Callable[[str], None]:
    """The import engine's notes: resuming and reconciling are news; the rest is detail."""

    def note(message: str) -> None:
        important = "resum" in message or "reconcil" in message
        (log.info if important else log.debug)("import_note", message)

    return note


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """SIGTERM and SIGINT ask the watcher to stop (the first: finish the file in flight; the
    second: cancel it). Only in the main thread; the previous handlers come back afterwards."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop()

    previous: dict[int, object] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, old)  # type: ignore[arg-type]


def watch_command(
    ctx: typer.Context,
    folder: Annotated[
        Path,
        typer.Argument(
            exists=True, file_okay=False, dir_okay=True, help="The folder bills are dropped into"
        ),
    ],
    template: Annotated[
        str,
        typer.Option("--template", "-t", help="Template name or .toml path, or auto (by header)"),
    ] = "auto",
    profile: cli.ProfileOpt = None,
    once: Annotated[
        bool, typer.Option("--once", help="Process what is there, then exit (cron, timers)")
    ] = False,
    poll: Annotated[
        bool, typer.Option("--poll", help="Poll instead of OS events (NFS/SMB network shares)")
    ] = False,
    log_json: Annotated[bool, typer.Option("--log-json", help="Log JSON lines")] = False,
    stable_seconds: Annotated[
        float,
        typer.Option(min=0.0, help="Seconds a file's size and mtime must hold still"),
    ] = 5.0,
    rescan_seconds: Annotated[
        float, typer.Option(min=0.1, help="Seconds between full rescans of the folder")
    ] = 60.0,
    processed_dir: Annotated[
        Path, typer.Option(help="Where processed files go (relative: inside the folder)")
    ] = Path("processed"),
    failed_dir: Annotated[
        Path, typer.Option(help="Where failed files go (relative: inside the folder)")
    ] = Path("failed"),
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", help="Another file pattern to ignore (repeatable)"),
    ] = None,
    poll_interval: Annotated[
        float, typer.Option(min=0.1, help="Seconds between polls with --poll")
    ] = 1.0,
    max_backoff: Annotated[
        float, typer.Option(min=1.0, help="Longest wait between retries while paused")
    ] = 300.0,
    stop_grace: Annotated[
        float, typer.Option(min=0.0, help="Seconds a stop waits for the file in flight")
    ] = 60.0,
    headroom: Annotated[
        float,
        typer.Option(min=0.0, max=0.9, help="Share of each rate limit left for other traffic"),
    ] = DEFAULT_HEADROOM,
    no_upload: cli.NoUploadOpt = False,
) -> None:
    """Watch FOLDER and import every bill file dropped into it, unattended.

    Each complete file is imported once (by content), then moved to processed/YYYY-MM/ with a
    receipt, or to failed/ with the reject report or an explanation. While the service is
    unreachable or the credentials are refused, files wait and are retried. Stop with SIGTERM or
    Ctrl-C: the file in flight is finished first."""
    state = cli._state(ctx, profile, False)
    cli._logging(state.verbose)
    if not state.verbose:
        # watchdog logs harmless races while an observer stops; a dead observer is noticed and
        # restarted by the watcher, which says so in its own log.
        logging.getLogger("watchdog").addHandler(logging.NullHandler())
        logging.getLogger("watchdog").propagate = False
    try:
        profile_name = state.profile().name
    except ConfigError as exc:
        cli.fail(str(exc), cli.EXIT.CONFIG, exc)
    if template != "auto":
        try:
            load_template(template, [user_templates_dir()])
        except IngestError as exc:
            cli.fail(str(exc), cli.EXIT.INVALID)
    from bpsync.watch.core import WatchConfig, Watcher, WatcherBusyError
    from bpsync.watch.service import ServiceImporter

    try:
        config = WatchConfig(
            folder=folder,
            profile=profile_name,
            processed_dir=processed_dir,
            failed_dir=failed_dir,
            stable_seconds=stable_seconds,
            rescan_seconds=rescan_seconds,
            poll=poll,
            poll_interval=poll_interval,
            once=once,
            ignore=(*DEFAULT_IGNORE, *(ignore or ())),
            backoff_cap=max_backoff,
            stop_grace=stop_grace,
        )
        rules = read_folder_rules(config.folder)  # .bpsync-folder.toml: meter, template
    except (ValueError, ConfigError) as exc:
        cli.fail(str(exc), cli.EXIT.USAGE)
    log = WatchLog(sys.stderr, json_lines=log_json, verbose=state.verbose)
    logs.setup(state.verbose, sink=logs.ToWatchLog(log))  # the client's retries, in this log
    importer = ServiceImporter(
        profile_name,
        _import_options(rules, template, headroom, no_upload),
        note=note_logger(log),
    )
    watcher = Watcher(config, importer, log=log)
    try:
        with stop_on_signals(watcher.stop):
            result = watcher.run()
    except WatcherBusyError as exc:
        cli.fail(str(exc), cli.EXIT.BUSY)
    except OSError as exc:
        cli.fail(f"cannot watch {folder}: {exc}", cli.EXIT.ERROR)
    raise typer.Exit(exit_code_of(result, once))


def attach(app: typer.Typer) -> None:
    """Wire `watch` into `bpsync`."""
    app.command("watch")(watch_command)


def _import_options(rules: Any, template: str, headroom: float, no_upload: bool) -> Any:
    """The imports' options: the command line's, with the folder's rules (.bpsync-folder.toml:
    meter, template, [meters], `update = true` (issue 30), `date_order` (issue 27 item 5))."""
    from bpsync.ingest import ImportOptions

    return ImportOptions(
        template=rules.template if rules.template and template == "auto" else template,
        headroom=headroom,
        template_dirs=[user_templates_dir()],
        meter=rules.meter,
        meter_links=rules.meter_links,
        uploads=not no_upload,
        update=rules.update,
        date_order=rules.date_order,
    )
