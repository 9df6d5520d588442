"""Workbooks whose readings span several sheets (Portfolio Manager's "Add Bills" template keeps
electricity and other meters on two sheets of one layout): each sheet the chosen template fits
is imported in turn, as `--sheet` would, and the summaries are added up, so the plain command
imports the whole workbook."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bpsync.ingest.problems import IngestError
from bpsync.ingest.readers import detect_format, open_table
from bpsync.ingest.readers.xlsx import list_sheets
from bpsync.ingest.send.results import ImportSummary
from bpsync.ingest.understand.templates import list_templates, match_template

# The order summaries' states win in, worst first.
_STATUS = ("interrupted", "dry-run", "complete", "no-op")


def fitting_sheets(
    path: Path, template: str, template_dirs: Sequence[Path] | None, include_hidden: bool
) -> list[str]:
    """The visible sheets the best-fitting template reads, when it reads more than one (then
    each is imported); [] for one sheet, another format, or a template named by the user."""
    if template not in (None, "auto") or detect_format(path) != "xlsx":
        return []
    sheets = [s for s, state in list_sheets(path) if state == "visible" or include_hidden]
    if len(sheets) < 2:  # nothing to choose between: the import reads the one it finds
        return []
    templates = [t for t in list_templates(template_dirs) if t.format != "greenbutton"]
    expected = set().union(*(t.expected_keys() for t in templates))
    found: list[tuple[str, str, float]] = []
    for sheet in sheets:
        try:
            table = open_table(path, fmt="xlsx", sheet=sheet, expected=expected)
        except IngestError:
            continue
        match = match_template(table.headers, templates, fmt="xlsx")
        if match is not None:
            found.append((sheet, match.template.name, match.score))
    if len(found) < 2:
        return []
    best = max(found, key=lambda f: f[2])[1]
    sheets = [sheet for sheet, name, _ in found if name == best]
    return sheets if len(sheets) > 1 else []


async def import_sheets(
    one: Callable[[Any], Awaitable[ImportSummary]], options: Any, sheets: Sequence[str]
) -> ImportSummary:
    """Each sheet imported by `one(options with that sheet)`, then one summary of them all."""
    summaries = [await one(replace(options, sheet=sheet, split_sheets=True)) for sheet in sheets]
    return merged(summaries, sheets)


def merged(summaries: Sequence[ImportSummary], sheets: Sequence[str]) -> ImportSummary:
    """The sheets' summaries as one: counts added, notes and messages said per sheet."""
    first = summaries[0]
    status = min((s.status for s in summaries), key=_rank)
    out = replace(
        first,
        status=status,
        accepted=sum(s.accepted for s in summaries),
        rejected=sum(s.rejected for s in summaries),
        skipped=sum(s.skipped for s in summaries),
        pending=sum(s.pending for s in summaries),
        warnings=sum(s.warnings for s in summaries),
        seconds=sum(s.seconds for s in summaries),
        send_seconds=sum(s.send_seconds for s in summaries),
        requests=sum(s.requests for s in summaries),
        problems=[p for s in summaries for p in s.problems],
        notes=[
            f"sheet {sheet!r}: {n}"
            for s, sheet in zip(summaries, sheets, strict=True)
            for n in s.notes
        ],
        skipped_by_reason=_added(s.skipped_by_reason for s in summaries),
        accounting=_accounting([s.accounting for s in summaries]),
        reject_report="; ".join(s.reject_report for s in summaries if s.reject_report) or None,
        reject_reports=[r for s in summaries for r in s.reject_reports],
        message=" ".join(
            f"Sheet {sheet!r}: {s.message}"
            for s, sheet in zip(summaries, sheets, strict=True)
            if s.message
        )
        or None,
        plan=None if len(summaries) > 1 else first.plan,
        import_id=None,
        not_applied=sum(s.not_applied for s in summaries),
        corrections=sum(s.corrections for s in summaries),
        rebills=sum(s.rebills for s in summaries),
        replaced=sum(s.replaced for s in summaries),
        refused=sum(s.refused for s in summaries),
    )
    out.notes.insert(
        0,
        f"the workbook's sheets {', '.join(map(repr, sheets))} share one layout: each was imported",
    )
    return out


def _rank(status: str) -> int:
    return _STATUS.index(status) if status in _STATUS else 0


def _added(counts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _accounting(parts: list[dict[str, Any]]) -> dict[str, Any]:
    parts = [p for p in parts if p]
    if not parts:
        return {}
    return {
        "rows_read": sum(p["rows_read"] for p in parts),
        "with_readings": sum(p["with_readings"] for p in parts),
        "refused": sum(p["refused"] for p in parts),
        "skipped": _added(p.get("skipped", {}) for p in parts),
        "nothing_to_import": sum(p.get("nothing_to_import", 0) for p in parts),
    }
