"""Results: the summary of an import and the reject report.

The reject report sits next to the input (`<name>.rejects.csv`, or `<name>.rejects.xlsx` for a
workbook): the file's own header and each rejected row's original cells, plus a `Reason` column.
The user fixes those rows and imports the report itself; the same template matches it (the extra
column is ignored), and rows already stored are skipped, so nothing is sent twice.

The cells are the source file's, so they are treated as hostile: the workbook holds them as string
cells (never formulas), and the CSV puts a `'` before a cell a spreadsheet program would evaluate
(`=`, `+`, `-`, `@`, tab, CR), as the service's CSV reports do. Reading a report back
(`csv_unquote`) takes that `'` off again, so a fixed row imports with its original value."""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REASON_COLUMN = "Reason"

# Cells beginning with these run as formulas in spreadsheet programs (CSV injection): the rule of
# the service's CSV reports (bpservice.reporting.tabular), which bpsync does not import.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# A cell neutralised by `csv_safe`: one or more `'`, then a formula character. A cell that starts
# so in the source gets one more `'`, so reading it back is exact.
_QUOTED = re.compile(r"'+[=+\-@\t\r]")
# A plain number ("-12.5", "+3", "-1,234.5", "1e-3") is a number to every spreadsheet program,
# never a formula: it stays as it is (a negative consumption is a common reason for a reject).
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:[.,]\d+)*|[.,]\d+)(?:[eE][+-]?\d+)?")


def csv_safe(text: str) -> str:
    """A CSV cell that a spreadsheet program shows as text, never evaluates (a leading `'`)."""
    if _QUOTED.match(text) or (
        text.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text)
    ):
        return "'" + text
    return text


def csv_unquote(text: str) -> str:
    """The cell as it was before `csv_safe` (for a reject report read back)."""
    return text[1:] if _QUOTED.match(text) else text


def is_reject_report(headers: Sequence[str]) -> bool:
    """Whether a table with these header texts is a reject report of ours (its last column)."""
    return bool(headers) and headers[-1] == REASON_COLUMN


@dataclass
class RejectedRow:
    """One source row that was refused (locally or by the service), with every reason."""

    row: int | None
    values: tuple[str, ...]
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)


@dataclass
class ImportSummary:
    """What `bpsync import` prints (and `--json` emits)."""

    file: str
    template: str
    profile: str
    environment: str | None
    status: str  # complete, interrupted, no-op, dry-run
    accepted: int = 0
    rejected: int = 0  # source rows with at least one refused reading
    skipped: int = 0  # already stored with the same values, duplicate rows
    pending: int = 0  # not sent yet (interrupted)
    warnings: int = 0
    seconds: float = 0.0
    send_seconds: float = 0.0  # the sending phase alone (what the plan estimates)
    requests: int = 0
    reject_report: str | None = None
    # Every reject report written: the one above, or one per sheet of a workbook imported sheet
    # by sheet (then `reject_report` names them all, joined by "; ").
    reject_reports: list[str] = field(default_factory=list)
    message: str | None = None
    import_id: int | None = None
    plan: dict[str, Any] | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # template choice, period convention, ...
    # Every row read: with readings, refused, skipped by reason (ValidationResult.row_accounting).
    accounting: dict[str, Any] = field(default_factory=dict)
    # Corrected bills (issue 30, docs/corrections.md): rows applied as corrections and rebills
    # (not counted in `accepted`), stored readings they replaced, rows refused (a locked period),
    # and rows found but not applied (no --update); `replacements` lists old and new figures.
    update: bool = False
    corrections: int = 0
    rebills: int = 0
    replaced: int = 0
    refused: int = 0
    not_applied: int = 0
    corrections_listed: int = 0
    rebills_listed: int = 0
    replaced_listed: int = 0
    replacements: list[dict[str, Any]] = field(default_factory=list)
    file_arg: str | None = None  # the file as the user named it, for the command that applies

    @property
    def exit_code(self) -> int:
        """0 when all went; 13 (partial) when rows were rejected; 16 when corrections or rebills
        were found and not applied (no --update); 130 when stopped."""
        if self.rejected:
            return 13
        if self.status == "interrupted":
            return 130
        if self.not_applied:
            return NOT_APPLIED
        return 0

    def count_listed(self, rows: Sequence[Any]) -> None:
        """The dry run's corrections and rebills (journal rows of those codes)."""
        self.corrections_listed = sum(1 for r in rows if r.code == "correction")
        self.rebills_listed = sum(1 for r in rows if r.code == "rebill")
        self.replaced_listed = sum(len(x["old"]) for x in self.replacements)
        if not self.update:
            self.not_applied = len(rows)

    def count_replacements(self, counts: Mapping[str, int], info: Mapping[str, Any]) -> None:
        """An import's corrections and rebills, from the trail (`Trail.counts`)."""
        self.corrections, self.rebills = counts["corrections"], counts["rebills"]
        self.replaced, self.refused = counts["replaced"], counts["refused"]
        self.replacements = list(info.get("replacements", []))
        self.replaced_listed = sum(len(x["old"]) for x in self.replacements)
        kinds = [x["kind"] for x in self.replacements for _ in x["rows"]]
        self.corrections_listed = kinds.count("correction")
        self.rebills_listed = kinds.count("rebill")

    def apply_command(self) -> str:
        """The command that applies the corrections listed."""
        return f"bpsync import {shell_quote(self.file_arg or self.file)} --update"

    def as_dict(self) -> dict[str, Any]:
        out = {**asdict(self), "next_steps": next_steps(self.problems)}
        if self.not_applied:
            out["next_steps"].append(
                f"{self.not_applied} row(s) correct or rebill stored readings and were not "
                f"applied: run `{self.apply_command()}` to replace them."
            )
        return out


# `bpsync import` without --update found corrections or rebills and left them (issue 30).
NOT_APPLIED = 16


def shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def reject_report_path(source: Path, sheet: str | None = None) -> Path:
    """`bills.xlsx` → `bills.rejects.xlsx`; any other input → `<name>.rejects.csv`. A workbook
    imported sheet by sheet has a report per sheet: `bills.Add Bills-Electricity.rejects.xlsx`."""
    suffix = ".xlsx" if source.suffix.lower() in (".xlsx", ".xlsm") else ".csv"
    part = "" if sheet is None else "." + re.sub(r'[\\/:*?"<>|]+', "_", sheet)
    return source.with_name(f"{source.stem}{part}.rejects{suffix}")


def collect_rejects(
    rows: Iterable[tuple[int | None, Sequence[str] | None, str | None, str | None]],
) -> list[RejectedRow]:
    """Group (source row, cells, code, reason) by source row, in row order; one row may carry
    several reasons (a wide row with two bad cells)."""
    by_row: dict[int | None, RejectedRow] = {}
    unnumbered: list[RejectedRow] = []
    for row, values, code, reason in rows:
        if row is None:
            unnumbered.append(RejectedRow(None, tuple(values or ()), [reason or ""], [code or ""]))
            continue
        item = by_row.get(row)
        if item is None:
            item = by_row[row] = RejectedRow(row, tuple(values or ()))
        elif not item.values and values:
            item.values = tuple(values)
        if reason and reason not in item.reasons:
            item.reasons.append(reason)
            item.codes.append(code or "")
    return [by_row[k] for k in sorted(by_row, key=lambda r: r or 0)] + unnumbered


def write_reject_report(
    path: Path, headers: Sequence[str], rejects: Sequence[RejectedRow], sheet: str | None = None
) -> Path:
    """Write the report (CSV as UTF-8 with a BOM so Excel reads accents; or a one-sheet xlsx).
    Written to a temporary file and renamed, so a half-written report never replaces a good one.
    A report of a report (the rows of an imported report refused again) has one `Reason` column:
    the new reasons replace the old ones."""
    keep = len(headers) - 1
    if is_reject_report(headers) and all(
        len(r.values) <= keep or _OUR_REASON.match(r.values[keep]) for r in rejects
    ):
        headers = headers[:keep]
        rejects = [replace(r, values=r.values[:keep]) for r in rejects]
    width = max([len(headers), *(len(r.values) for r in rejects)], default=0)
    header = [*headers, *("" for _ in range(width - len(headers))), REASON_COLUMN]
    body = [[*r.values, *("" for _ in range(width - len(r.values))), _reason(r)] for r in rejects]
    tmp = path.with_name(path.name + ".tmp")
    if path.suffix.lower() == ".xlsx":
        from openpyxl import Workbook

        wb = Workbook()
        ws = wb.active
        ws.title = (sheet or "Rejected rows")[:31]
        for line in (header, *body):
            ws.append(line)
            # openpyxl makes a str starting with "=" a formula (and "#N/A" an error): the type
            # is set after the value, so the cell is a string, exactly as the source had it.
            for cell in ws[ws.max_row]:
                if isinstance(cell.value, str):
                    cell.data_type = "s"
        wb.save(tmp)
    else:
        with tmp.open("w", encoding="utf-8-sig", newline="") as f:
            writer = csv.writer(f)
            for line in (header, *body):
                writer.writerow([csv_safe(x) if isinstance(x, str) else x for x in line])
    os.replace(tmp, path)
    return path


# What `_reason` writes for a numbered row (or nothing): a source's own "Reason" column is kept.
_OUR_REASON = re.compile(r"(?:row \d+: |$)")


def _reason(r: RejectedRow) -> str:
    where = f"row {r.row}: " if r.row is not None else ""
    return where + "; ".join(x for x in r.reasons if x)


_SURROGATE = re.compile("[\ud800-\udfff]")


def readable(text: str) -> str:
    """Text a UTF-8 terminal can print: a file name that is not UTF-8 on disk reaches Python with
    surrogate escapes (os.fsdecode); each undecodable byte is shown as `\\xff`."""

    def one(m: re.Match[str]) -> str:
        c = ord(m.group())
        return f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}"

    return _SURROGATE.sub(one, text)


def render(summary: ImportSummary, console: Any) -> None:
    """The human summary (rich)."""
    from rich.markup import escape
    from rich.table import Table

    # File names, templates and messages are user text: "[fixed]" must print, not vanish.
    title = f"Import of {escape(readable(summary.file))}"
    t = Table(show_header=False, box=None, title=title)
    t.add_column(style="bold")
    t.add_column()
    env = summary.environment or "environment set by the OAuth app"
    env = "PRODUCTION" if env == "production" else env
    rows: list[tuple[str, object]] = [
        ("status", summary.status),
        ("template", summary.template),
        ("profile / environment", f"{summary.profile} / {env}"),
        ("accepted", summary.accepted),
        *_replacement_lines(summary),
        ("rejected rows", summary.rejected),
        ("skipped", _skipped(summary)),
        *_accounting_line(summary),
        ("warnings", summary.warnings),
    ]
    if summary.pending:
        rows.append(("not sent yet", summary.pending))
    rows.append(("time", f"{summary.seconds:.1f} s ({summary.requests} requests)"))
    if summary.reject_report:
        rows.append(("reject report", summary.reject_report))
    for k, v in rows:
        t.add_row(k, escape(readable(str(v))))
    console.print(t)
    if summary.status == "dry-run":  # the choices made (template, conventions) before sending
        for note in summary.notes:
            console.print(f"note: {readable(note)}", markup=False)
    if summary.message:
        console.print(readable(summary.message), markup=False)
    if summary.not_applied:
        console.print(
            f"{summary.not_applied} row(s) correct or rebill stored readings and were not "
            f"applied. To replace them: {readable(summary.apply_command())}",
            markup=False,
        )


def _replacement_lines(summary: ImportSummary) -> list[tuple[str, object]]:
    """The summary's corrections and rebills, counted apart from new readings."""
    if summary.status == "dry-run" or summary.not_applied:
        if not (summary.corrections_listed or summary.rebills_listed):
            return []
        verb = "to apply" if summary.update else "not applied (--update applies them)"
        return [
            ("corrections", f"{summary.corrections_listed} {verb}"),
            ("rebills", f"{summary.rebills_listed} {verb}"),
            ("stored readings replaced", summary.replaced_listed),
        ]
    if not (summary.corrections or summary.rebills or summary.refused):
        return []
    lines: list[tuple[str, object]] = [
        ("corrections", summary.corrections),
        ("rebills", summary.rebills),
        ("stored readings replaced", summary.replaced),
    ]
    if summary.refused:
        lines.append(("not replaced (locked)", summary.refused))
    return lines


def _skipped(summary: ImportSummary) -> str:
    if not summary.skipped_by_reason:
        return str(summary.skipped)
    detail = ", ".join(
        f"{n} {_SKIP_LABELS.get(code, code)}" for code, n in summary.skipped_by_reason.items()
    )
    return f"{summary.skipped} ({detail})"


def _accounting_line(summary: ImportSummary) -> list[tuple[str, object]]:
    """ "rows read 185: 0 with readings, 0 refused, 185 skipped (92 …, 93 …)": every row."""
    a = summary.accounting
    if not a:
        return []
    skipped = a.get("skipped", {})
    parts = [f"{a['with_readings']:,} with readings", f"{a['refused']:,} refused"]
    if skipped:
        detail = ", ".join(f"{n:,} {_SKIP_LABELS.get(c, c)}" for c, n in skipped.items())
        parts.append(f"{sum(skipped.values()):,} skipped ({detail})")
    if a.get("nothing_to_import"):
        parts.append(f"{a['nothing_to_import']:,} with nothing to import")
    return [("rows read", f"{a['rows_read']:,}: " + ", ".join(parts))]


_SKIP_LABELS = {
    "already_stored": "already there",
    "duplicate_row": "duplicate rows",
    "already_in_source": "already in Portfolio Manager (Meter Consumption ID)",
    "no_entry": "blank template rows",
    "no_usage": "months without usage",
    "total_row": "total rows",
    "first_read": "first reads (no earlier read to start their period)",
    "correction": "corrections not applied",
    "rebill": "rebills not applied",
}


@dataclass
class ProblemGroup:
    """Problems with the same severity, code, column and reason (but for the value): one line
    for 38 rows whose meter is not in the map, not 38 identical lines."""

    severity: str
    code: str
    column: str
    reason: str  # the first problem's reason
    shape: str  # the reason with the value left out ("… is not in the meter map")
    rows: list[int] = field(default_factory=list)
    values: list[str] = field(default_factory=list)  # distinct, in order of appearance

    @property
    def where(self) -> str:
        if len(self.rows) == 1:
            return str(self.rows[0])
        return f"{_ranges(self.rows)} ({len(self.rows)} rows)"

    @property
    def text(self) -> str:
        if len(self.rows) <= 1:
            return self.reason + (f" (value {self.values[0]!r})" if self.values else "")
        shown = ", ".join(repr(v) for v in self.values[:5])
        more = f" and {len(self.values) - 5} more" if len(self.values) > 5 else ""
        kinds = f"{len(self.values)} distinct values: " if len(self.values) > 1 else "value "
        return f"{self.shape} ({kinds}{shown}{more})" if self.values else self.reason


def group_problems(problems: Iterable[Mapping[str, Any]]) -> list[ProblemGroup]:
    """Group problems whose reasons differ only by the cell's value, in order of first row."""
    groups: dict[tuple[str, str, str, str], ProblemGroup] = {}
    for p in problems:
        value = str(p["value"]) if p.get("value") not in (None, "") else None
        reason = str(p.get("reason") or "")
        shape = reason.replace(repr(value), "…") if value is not None else reason
        column = str(p.get("column") or "")
        if p.get("column_letter"):
            column = f"{column} ({p['column_letter']})"
        key = (str(p.get("severity")), str(p.get("code")), column, shape)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ProblemGroup(key[0], key[1], column, reason, shape)
        if p.get("row") is not None:
            group.rows.append(int(p["row"]))
        if value is not None and value not in group.values:
            group.values.append(value)
    return list(groups.values())


def _ranges(rows: Sequence[int]) -> str:
    """[2, 3, 4, 7, 9, 10] → "2-4, 7, 9-10" (at most four runs, then "…")."""
    runs: list[list[int]] = []
    for r in sorted(set(rows)):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in runs[:4]]
    return ", ".join(parts) + (", …" if len(runs) > 4 else "")


# What fixes the commonest problems: said once under the table, with the command to type.
_NEXT_STEPS: tuple[tuple[str, str, str], ...] = (
    (
        "unknown_meter",
        "not in the meter map",
        "The file names meters by an external reference (a utility meter number) that this "
        "profile has not linked yet. Create the buildings and meters from a register with "
        "`bpsync register import REGISTER.xlsx` (it links their references), or link each one "
        "with `bpsync meters link REFERENCE METER_ID` (`bpsync meters list BUILDING_ID` shows "
        "the ids); then import this file again.",
    ),
    (
        "unknown_meter",
        "no meter named",
        "The file names meters by building and meter name, and no meter has that name: create "
        "them with `bpsync register import REGISTER.xlsx`, or import with `--create-meters`.",
    ),
    (
        "unknown_meter",
        "does not exist in this organisation",
        "The meter ids are not in the organisation and environment this profile reaches: check "
        "`bpsync status` (a sandbox key cannot see production meters, and the reverse).",
    ),
)


def next_steps(problems: Iterable[Mapping[str, Any]]) -> list[str]:
    """The sentences (with commands) that fix the problems seen, each once."""
    seen: list[str] = []
    for p in problems:
        for code, needle, step in _NEXT_STEPS:
            if p.get("code") == code and needle in str(p.get("reason")) and step not in seen:
                seen.append(step)
    return seen


def problems_table(problems: Sequence[Mapping[str, Any]], console: Any, limit: int = 30) -> None:
    """Errors and warnings, as the user sees them in Excel (row, column letter); problems that
    differ only by value share a line, and the commands that fix them follow the table."""
    from rich.markup import escape
    from rich.table import Table

    if not problems:
        return
    groups = group_problems(problems)
    t = Table(title=f"Problems ({len(problems)})", header_style="bold")
    for col in ("row", "column", "severity", "code", "reason"):
        t.add_column(col, overflow="fold")
    for g in groups[:limit]:
        t.add_row(g.where, escape(readable(g.column)), g.severity, g.code, escape(readable(g.text)))
    console.print(t)
    if len(groups) > limit:
        console.print(
            f"… and {len(groups) - limit} more kinds of problem (see --json or the reject report)"
        )
    for step in next_steps(problems):
        console.print(f"next step: {step}", markup=False)
