"""One import, end to end: reconcile → read/map/normalise/validate → journal → plan → submit →
results. `bpsync import`, `bpsync demo` and the benchmarks all go through `import_file`.

Order of work (dlt's rule: finish pending work before starting new work):
1. requests a previous run left in flight are reconciled against the service;
2. the same file content already imported into the same service and credential is a no-op
   (`force` re-checks it against the service); an unfinished import of it is resumed;
3. otherwise the file is read and checked against the organisation's meters and each meter's
   stored readings (fetched once per meter), and the whole load package (every row's starting
   fate) is journaled before anything is sent;
4. the pending rows are planned and sent; rejected rows go to the reject report."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.cells.values import cell_text
from bpsync.ingest.checks.collected import SKIP_CODES
from bpsync.ingest.lookup.fetch import (
    ArrivingStored,
    Portfolio,
    Recent,
    StoredUnavailable,
    feed_existing,
    fetch_named,
    fetch_portfolio,
    meters_to_check,
    prefetch_recent,
)
from bpsync.ingest.lookup.meter_map import load_meter_map
from bpsync.ingest.lookup.new_meters import create_meters, plan_meter_creation
from bpsync.ingest.memory import give_back_memory
from bpsync.ingest.problems import IngestError, Problem
from bpsync.ingest.run.prepare import Prepared, check, choose_template, named_meters, prepare
from bpsync.ingest.run.runtime import background, frozen_heap, quick_handoffs
from bpsync.ingest.run.sheets import fitting_sheets, import_sheets
from bpsync.ingest.send.import_records import ImportRecord, JournalRow, NewRow
from bpsync.ingest.send.interrupt import Interrupts
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.outline import dry_run_summary, duration_text
from bpsync.ingest.send.plan_calls import DEFAULT_HEADROOM, Plan, limits_from_state, make_plan
from bpsync.ingest.send.progress import NoProgress, Progress, SubmitStopped
from bpsync.ingest.send.reconcile import reconcile_in_flight
from bpsync.ingest.send.replace import apply_replacements, replacement_rows, replacing_plan
from bpsync.ingest.send.results import (
    ImportSummary,
    collect_rejects,
    reject_report_path,
    write_reject_report,
)
from bpsync.ingest.send.submit import Submitter, group_pending
from bpsync.ingest.send.trail import Trail, record_planned, who_am_i
from bpsync.ingest.understand.templates import load_template
from bpsync.paths import ensure_private_dir, state_dir

MAX_STORED_PROBLEMS = 2000


@dataclass
class ImportOptions:
    template: str = "auto"
    sheet: str | None = None
    dry_run: bool = False
    resume: bool = False
    force: bool = False
    create_meters: bool = False
    headroom: float = DEFAULT_HEADROOM
    concurrency: int = 4
    uploads: bool = True  # the CSV upload where the planner finds it faster (decisions C1)
    template_dirs: Sequence[Path] | None = None
    include_hidden: bool = False
    meter: str | None = None  # every row into this meter (REF_OR_ID): single-meter exports
    # Links given with the import (a watched folder's `[meters]`), over the profile's meter map.
    meter_links: Mapping[str, str] | None = None
    # Stop requests from the entry point (bpsync import's Ctrl-C); the engine installs no handler.
    interrupts: Interrupts | None = None
    today: dt.date | None = None
    reject_report: bool = True
    # Apply corrections and rebills: stored readings the file's rows replace are deleted and the
    # rows sent (issue 30, send/replace.py); without it they are listed and not applied.
    update: bool = False
    # "DMY" or "MDY": how dates such as 03/04 read where nothing in the file proves the order
    # (`--date-order`, a watched folder's `date_order`).
    date_order: str | None = None
    # Set for each sheet of a workbook imported sheet by sheet (run/sheets.py): its reject
    # report is named after the sheet.
    split_sheets: bool = False
    # Where the journal files this import; default: the base URL and the credential's
    # fingerprint. The demo names its data dir instead (its port changes between runs).
    target: str | None = None


def import_key(digest: str, options: ImportOptions) -> str:
    """What "already imported" is keyed on: the file's content and, when they are not the
    defaults, the template (its name and text) and the options that change the readings
    (issue 11 item 10). With the defaults it is the content hash, as before."""
    extra = []
    if options.template not in (None, "auto"):
        extra.append(f"template={options.template}")
        try:
            t = load_template(str(options.template), options.template_dirs)
            if t.path is not None:
                extra.append(hashlib.sha256(t.path.read_bytes()).hexdigest())
        except (IngestError, OSError):
            pass  # an unknown template fails later with its own message
    if options.meter:
        extra.append(f"meter={options.meter}")
    if options.include_hidden:
        extra.append("include_hidden")
    if options.date_order:
        extra.append(f"date_order={options.date_order}")
    if not extra:
        return digest
    return hashlib.sha256("\n".join([digest, *extra]).encode()).hexdigest()


class ImportBusyError(IngestError):
    def __init__(self) -> None:
        super().__init__(
            "another bpsync import to this service and credential is running; wait for it to "
            "finish (imports share the journal and the rate limits)",
            code="import_busy",
        )


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def target_of(client: AsyncServiceClient) -> str:
    """Where readings go: the service and the credential's fingerprint (never the secret)."""
    return f"{client.base.base_url}|{client.credentials.identity}"


def _lock_for(target: str) -> FileLock:
    folder = ensure_private_dir(state_dir() / "locks")
    name = hashlib.sha256(target.encode()).hexdigest()[:16]
    return FileLock(str(folder / f"import-{name}.lock"), timeout=0)


def _reason(p: Problem) -> str:
    column = ""
    if p.where.column:
        letter = f" ({p.where.letter})" if p.where.letter else ""
        column = f"column {p.where.column!r}{letter}: "
    value = f" (value {p.value!r})" if p.value not in (None, "") else ""
    return f"{column}{p.reason}{value}"


async def import_file(
    client: AsyncServiceClient,
    profile: str,
    path: str | Path,
    options: ImportOptions | None = None,
    *,
    journal: Journal | None = None,
    progress: Progress | None = None,
    note: Callable[[str], None] | None = None,
) -> ImportSummary:
    """Import one file into the service `client` points at; see the module docstring."""
    options = options or ImportOptions()
    note = note or (lambda _msg: None)
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise IngestError(f"{path}: no such file", code="no_file")
    if options.sheet is None and not options.split_sheets:
        args = (path, options.template, options.template_dirs, options.include_hidden)
        sheets = await asyncio.to_thread(fitting_sheets, *args)
        if sheets:  # one layout on several sheets: each is imported (run/sheets.py)

            async def one(opts: ImportOptions) -> ImportSummary:
                return await import_file(
                    client, profile, path, opts, journal=journal, progress=progress, note=note
                )

            return await import_sheets(one, options, sheets)
    started = time.monotonic()
    own_journal = journal is None
    journal = journal or Journal()
    target = options.target or target_of(client)
    lock = _lock_for(target)
    try:
        lock.acquire()
    except Timeout:
        raise ImportBusyError() from None
    try:
        digest = import_key(await asyncio.to_thread(file_hash, path), options)
        flights, found = await reconcile_in_flight(client, journal, target)
        if flights:
            note(
                f"reconciled {flights} request(s) left in flight by an earlier run: "
                f"{found} reading(s) were already stored"
            )
        previous = journal.latest(target, digest, options.sheet)
        if previous and previous.status == "complete" and not options.force:
            rejected = {r.source_row for r in journal.rows(previous.id, "rejected")}
            unapplied = journal.code_counts(previous.id, "skipped")
            unapplied = {k: v for k, v in unapplied.items() if k in ("correction", "rebill")}
            if not rejected and not (options.update and unapplied):
                return _noop(journal, previous, client, started)
            # What made rows fail is often fixed outside the file (a meter link, the folder's
            # [meters], a meter created since): try again; stored readings are skipped. With
            # --update, corrections an earlier import listed are applied now.
            note(
                f"the earlier import of this content left {len(rejected)} row(s) rejected and "
                f"{sum(unapplied.values())} correction(s) not applied: importing it again "
                "(readings already stored are skipped)"
            )
        if previous and previous.status == "open" and not options.force:
            record = previous
            note(f"resuming the unfinished import of {path.name} from {previous.created_at}")
        else:
            if options.resume:
                note("nothing to resume for this file: importing it")
            with frozen_heap():  # the process's older objects, not re-scanned by every collection
                made = await _new_import(
                    client, journal, profile, path, digest, target, options, note
                )
            if isinstance(made, ImportSummary):
                made.seconds = time.monotonic() - started
                return made
            record = made
            if previous and previous.status == "open":
                journal.set_status(previous.id, "superseded")
        return await _send(client, journal, record, target, path, options, progress, started, note)
    finally:
        lock.release()
        if own_journal:
            journal.close()


def _noop(
    journal: Journal, record: ImportRecord, client: AsyncServiceClient, started: float
) -> ImportSummary:
    counts = journal.counts(record.id)
    rejects = {r.source_row for r in journal.rows(record.id, "rejected")}
    summary = ImportSummary(
        file=record.file_name,
        template=record.template,
        profile=record.profile,
        environment=client.environment,
        status="no-op",
        accepted=counts["accepted"],
        rejected=len(rejects),
        skipped=counts["skipped"],
        warnings=int(record.info.get("warnings", 0)),
        accounting=dict(record.info.get("accounting", {})),
        seconds=time.monotonic() - started,
        import_id=record.id,
        message=(
            f"This file's content was already imported on {record.finished_at or record.created_at}"
            f" ({counts['accepted']} accepted, {len(rejects)} rows rejected): nothing to send. "
            "Use --force to check it against the service again."
        ),
    )
    unapplied = journal.code_counts(record.id, "skipped")
    summary.not_applied = unapplied.get("correction", 0) + unapplied.get("rebill", 0)
    summary.skipped -= summary.not_applied
    summary.replacements = list(record.info.get("replacements", []))
    report = record.info.get("reject_report")
    if rejects and report:
        summary.reject_report = report
        summary.reject_reports = [report]
    return summary


async def _lookup(
    client: AsyncServiceClient,
    path: Path,
    options: ImportOptions,
    meter_map: dict[str, str],
    asking: asyncio.Event,
) -> Portfolio:
    """Only the meters the file names, in list calls (C2); the whole organisation when meters
    are named by building and name, meters may be created, or the service has no such list.
    `asking` is set once the file's meter names are known (or are not needed)."""
    try:
        if not options.create_meters:
            named = await asyncio.to_thread(
                named_meters,
                path,
                options.template,
                template_dirs=options.template_dirs,
                sheet=options.sheet,
                include_hidden=options.include_hidden,
                meter=options.meter,
            )
            asking.set()
            if named is not None:
                found = await fetch_named(client, named[0], named[1], meter_map)
                if found is not None:
                    return found
        asking.set()
        return await fetch_portfolio(client, meter_map)
    finally:
        asking.set()


async def _new_import(
    client: AsyncServiceClient,
    journal: Journal,
    profile: str,
    path: Path,
    digest: str,
    target: str,
    options: ImportOptions,
    note: Callable[[str], None],
) -> ImportRecord | ImportSummary:
    meter_map = {**load_meter_map(profile), **(options.meter_links or {})}
    read = _reader(path, options)
    with quick_handoffs():
        # The file is read and mapped while its meters are looked up: the reader waits for
        # them only where meters are resolved (the normaliser).
        asking = asyncio.Event()
        async with background(_lookup(client, path, options, meter_map, asking)) as lookup:
            found = _catalog_when_found(lookup)
            # The file's meter names first, on their own: the service's answers are what the
            # import waits for longest, and a read beside the search for names slowed it (an
            # XLSX's by 0.15-0.2 s). The read then runs while the service answers.
            await asking.wait()
            async with background(asyncio.to_thread(read, found.result)) as reading:
                portfolio = await lookup
                # The stored readings newer bills are checked against, fetched while the file
                # is read (the named meters only: a whole organisation's would be mostly other
                # files' meters).
                recent = Recent.reaching_back(portfolio.latest if portfolio.named else {})
                async with background(prefetch_recent(client, recent)) as prefetch:
                    return await _read_and_check(
                        client, journal, profile, path, digest, target, options, note,
                        meter_map, portfolio, (recent, prefetch), reading, read,
                    )  # fmt: skip


async def _check_as_stored_arrive(
    client: AsyncServiceClient,
    portfolio: Portfolio,
    prepared: Prepared,
    prefetched: tuple[Recent, asyncio.Task[Recent | None]],
    today: dt.date,
) -> tuple[Any, ArrivingStored]:
    """`check` in a thread while the stored readings it needs arrive (`feed_existing`): meters
    without any are checked at once, the others as their readings come in. A failed fetch
    ends the check and is raised here."""
    recent, prefetch = prefetched
    ranges = prepared.collected.meter_ranges()
    building_of, latest = portfolio.building_of, portfolio.latest
    needed = meters_to_check(ranges, building_of, latest)
    # The prefetch's order, then the rest.
    first = {m: rank for rank, m in enumerate(recent.order())}
    arriving = ArrivingStored(sorted(needed, key=lambda m: first.get(m, len(first))))
    feed = feed_existing(client, building_of, ranges, latest, recent, prefetch, arriving)
    async with background(feed) as feeding:
        try:
            result = await asyncio.to_thread(check, prepared, existing=arriving, today=today)
            give_back_memory()
        except StoredUnavailable:
            await feeding  # raises why the readings could not be fetched
            raise
        await feeding
    return result, arriving


def _reader(path: Path, options: ImportOptions) -> Callable[[Any], Prepared]:
    """`prepare` of the file with a catalog, or a function giving it when it is first needed."""

    def read(catalog: Any) -> Prepared:
        try:
            return prepare(
                path,
                options.template,
                catalog=catalog,
                template_dirs=options.template_dirs,
                sheet=options.sheet,
                include_hidden=options.include_hidden,
                meter=options.meter,
                date_order=options.date_order,  # type: ignore[arg-type]
            )
        finally:
            give_back_memory()  # what reading freed, before the checks allocate theirs

    return read


def _catalog_when_found(lookup: asyncio.Task[Portfolio]) -> concurrent.futures.Future[Any]:
    """The lookup's catalog for the reading thread to wait on: its failure or cancellation
    reaches the thread too, so the thread never waits for a lookup that has ended."""
    found: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def settle(task: asyncio.Task[Portfolio]) -> None:
        if task.cancelled():
            found.cancel()
        elif task.exception() is not None:
            found.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            found.set_result(task.result().catalog)

    lookup.add_done_callback(settle)
    return found


async def _read_and_check(
    client: AsyncServiceClient,
    journal: Journal,
    profile: str,
    path: Path,
    digest: str,
    target: str,
    options: ImportOptions,
    note: Callable[[str], None],
    meter_map: dict[str, str],
    portfolio: Portfolio,
    prefetched: tuple[Recent, asyncio.Task[Recent | None]],
    reading: asyncio.Task[Prepared],
    read: Callable[[Any], Prepared],
) -> ImportRecord | ImportSummary:
    """The rest of `_new_import` once the meters are known (its meter map read once, there):
    the file as `reading` prepared it, checked, recorded (or planned)."""
    prepared: Any = await reading
    note(prepared.describe())  # type: ignore[attr-defined]
    for n in prepared.notes:  # type: ignore[attr-defined]
        note(n)
    created: list[str] = []
    if options.create_meters:
        creation = await asyncio.to_thread(
            plan_meter_creation,
            prepared.table,  # type: ignore[attr-defined]
            prepared.template,  # type: ignore[attr-defined]
            portfolio,
        )
        for why in creation.unclear:
            note(f"cannot create a meter: {why}")
        if creation.create and options.dry_run:
            for m in creation.create:
                note(f"would create meter {m.building_name} / {m.name} ({m.type}, {m.unit})")
        elif creation.create:
            created = await create_meters(client, creation.create)
            for m, mid in zip(creation.create, created, strict=True):
                note(f"created meter {m.building_name} / {m.name} ({m.type}, {m.unit}): {mid}")
            portfolio = await fetch_portfolio(client, meter_map)
            prepared = await asyncio.to_thread(read, portfolio.catalog)
    collected = prepared.collected  # type: ignore[attr-defined]
    today = options.today or dt.datetime.now(dt.UTC).date()
    result, existing = await _check_as_stored_arrive(client, portfolio, prepared, prefetched, today)

    rows: list[NewRow] = []
    # A dry run plans from counts: 100,000 readings need not become rows nobody stores.
    for meter in () if options.dry_run else result.meters():
        for c in result.candidates(meter):
            assert c.meter_id is not None
            rows.append(
                NewRow(
                    c.row,
                    "pending",
                    c.meter_id,
                    portfolio.building_of[c.meter_id],
                    c.meter_key,
                    c.start,
                    c.end,
                    c.consumption,
                    c.payload(),
                )
            )
    for p in result.problems:
        if p.is_error:
            rows.append(
                NewRow(
                    p.where.row,
                    "rejected",
                    meter_key=p.meter,
                    code=p.code,
                    reason=_reason(p),
                    row_values=p.row_values or None,
                )
            )
        elif p.code in SKIP_CODES:  # skipped with a stated reason (row accounting)
            rows.append(
                NewRow(p.where.row, "skipped", meter_key=p.meter, code=p.code, reason=p.reason)
            )
    replacing = replacement_rows(result, portfolio.building_of, len(rows), options.update)
    rows += replacing.rows
    shown = [p.as_dict() for p in result.problems if p.severity != "notice"]
    info = {
        "warnings": len(result.warnings),
        "rows_read": collected.rows_read,
        "accounting": result.row_accounting(),
        "notes": list(prepared.notes),  # type: ignore[attr-defined]
        "problems": shown[:MAX_STORED_PROBLEMS],
        "problem_count": len(shown),
        "created_meters": created,
        "lookup_requests": portfolio.requests + existing.requests,
        "replacements": replacing.listed[:MAX_STORED_PROBLEMS],
    }
    table = prepared.table  # type: ignore[attr-defined]
    template = prepared.template.name  # type: ignore[attr-defined]
    if options.dry_run:
        pending = result.counts_by_meter_id()
        plan = _plan(client, pending, options)
        return dry_run_summary(client, profile, path, template, plan, rows, info, options.update)
    import_id = journal.create_import(
        target=target,
        file_hash=digest,
        path=path,
        sheet=options.sheet,
        template=template,
        profile=profile,
        environment=client.environment,
        headers=[h.text for h in table.headers],
        info=info,
        rows=rows,
        also=lambda db, iid: record_planned(
            db, iid, replacing.planned, who_am_i(profile), path.name
        ),
    )
    return journal.get(import_id)


def _plan(client: AsyncServiceClient, sizes: Mapping[str, int], options: ImportOptions) -> Plan:
    """The plan for `sizes` (meter id → readings to send), meters with most readings first
    (they decide the critical path)."""
    limiter = client.limiter
    snapshot = limiter.snapshot() if limiter is not None else {}
    now = limiter.clock() if limiter is not None else time.time()
    limits = limits_from_state(
        snapshot,
        now,
        client.credentials.kind,
        headroom=options.headroom,
        concurrency=options.concurrency,
    )
    ordered = dict(sorted(sizes.items(), key=lambda kv: -kv[1]))
    return make_plan(ordered, limits, uploads=options.uploads)


def _sizes(groups: Mapping[str, Sequence[object]]) -> dict[str, int]:
    return {meter: len(rows) for meter, rows in groups.items()}


async def _send(
    client: AsyncServiceClient,
    journal: Journal,
    record: ImportRecord,
    target: str,
    path: Path,
    options: ImportOptions,
    progress: Progress | None,
    started: float,
    note: Callable[[str], None] = lambda _: None,
) -> ImportSummary:
    replacing = False
    if not options.dry_run:  # the stored readings replaced go first (send/replace.py)
        replacing = (await apply_replacements(client, journal, record.id, note)).groups > 0
    groups = group_pending(journal.rows(record.id, "pending"))
    plan = _plan(client, _sizes(groups), options)
    if replacing:
        plan = replacing_plan(plan, _sizes(groups), options.uploads)
    summary = ImportSummary(
        file=record.file_name,
        template=record.template,
        profile=record.profile,
        environment=client.environment,
        status="complete",
        warnings=int(record.info.get("warnings", 0)),
        accounting=dict(record.info.get("accounting", {})),
        import_id=record.id,
        plan=plan.as_dict(),
        problems=list(record.info.get("problems", [])),
    )
    if options.dry_run:
        summary.status = "dry-run"
        summary.pending = plan.readings
        summary.message = (
            f"Dry run of the unfinished import: {plan.readings} reading(s) left, about "
            f"{duration_text(plan.estimate.seconds)}; nothing was sent."
        )
        return summary
    stopped: str | None = None
    for attempt in range(MAX_REPLANS + 1):
        submitter = Submitter(
            client,
            journal,
            record.id,
            target,
            groups,
            plan,
            progress=progress or NoProgress(),
            concurrency=options.concurrency,
            headroom=options.headroom,
            interrupts=options.interrupts,
        )
        try:
            stats = await submitter.run()
            stopped = stats.stopped
        except SubmitStopped as exc:
            stopped = exc.reason
        summary.send_seconds += submitter.stats.seconds
        if stopped != "re-plan":
            break
        groups = group_pending(journal.rows(record.id, "pending"))
        if not groups or attempt == MAX_REPLANS:
            stopped = None if not groups else stopped
            break
        # The service's limits differ from the plan's: plan what is left with what it said.
        why = f"re-planned the {sum(len(g) for g in groups.values())} reading(s) left: "
        why += str(submitter.replanned)
        note(why)
        summary.notes.append(why)
        plan = _plan(client, _sizes(groups), options)
        stopped = None
    counts = journal.counts(record.id)
    summary.count_replacements(Trail(journal).counts(record.id), record.info)
    summary.accepted = counts["accepted"] - summary.corrections - summary.rebills
    summary.skipped = counts["skipped"]
    summary.pending = counts["pending"] + counts["sent"] + counts["waiting"]
    summary.skipped_by_reason = journal.code_counts(record.id, "skipped")
    summary.not_applied = sum(summary.skipped_by_reason.get(k, 0) for k in ("correction", "rebill"))
    summary.skipped -= summary.not_applied
    summary.requests = journal.request_count(record.id) + int(record.info.get("lookup_requests", 0))
    rejected = journal.rows(record.id, "rejected")
    if rejected and options.reject_report:
        summary.reject_report = str(await _report(journal, record, path, rejected, options))
        summary.reject_reports = [summary.reject_report]
    summary.rejected = len({r.source_row for r in rejected})
    info = dict(record.info)
    if summary.reject_report:
        info["reject_report"] = summary.reject_report
    if summary.pending:
        summary.status = "interrupted"
        summary.message = (
            f"Stopped ({stopped or 'interrupted'}): {summary.pending} reading(s) not sent yet. "
            f"Run `bpsync import {path.name} --resume` to send the rest."
        )
        journal.set_status(record.id, "open", info)
    else:
        journal.set_status(record.id, "complete", info)
    summary.seconds = time.monotonic() - started
    return summary


MAX_REPLANS = 2


async def _report(
    journal: Journal,
    record: ImportRecord,
    path: Path,
    rejected: list[JournalRow],
    options: ImportOptions,
) -> Path:
    """Write the reject report; rows the service refused get their original cells from the file
    (local problems carry them already). The journal is used here, on the event loop's thread
    that owns its connection; only reading the file and writing the report go to a thread."""
    missing = {r.source_row for r in rejected if not r.row_values and r.source_row is not None}
    if missing:
        cells = await asyncio.to_thread(_source_cells, record, path, missing, options)
        if cells:
            journal.set_row_values(
                record.id,
                {r.seq: cells[r.source_row] for r in rejected if r.source_row in cells},
            )
            rejected = journal.rows(record.id, "rejected")
    rejects = collect_rejects((r.source_row, r.row_values, r.code, r.reason) for r in rejected)
    out = reject_report_path(path, record.sheet if options.split_sheets else None)
    return await asyncio.to_thread(write_reject_report, out, record.headers, rejects)


def _source_cells(
    record: ImportRecord, path: Path, rows: set[int], options: ImportOptions
) -> dict[int, tuple[str, ...]]:
    """The original cells of source `rows`, read from the file when it still is the content
    journaled (its key as `import_file` computed it: the template and options count too)."""
    if not path.is_file() or import_key(file_hash(path), options) != record.file_hash:
        return {}
    table, _ = choose_template(
        path, record.template, sheet=record.sheet, template_dirs=options.template_dirs
    )
    cells: dict[int, tuple[str, ...]] = {}
    for row in table.rows():
        if row.number in rows:
            cells[row.number] = tuple(cell_text(c) for c in row.cells)
            if len(cells) == len(rows):
                break
    return cells
