"""What a dry run says: the plan of calls, what was refused or skipped, and the corrections and
rebills it found (applied with `--update`, issue 30); and the short forms of a plan's calls and
duration that every summary uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bpsync.ingest.send.import_records import NewRow
from bpsync.ingest.send.plan_calls import Plan
from bpsync.ingest.send.results import ImportSummary

REPLACING = ("correction", "rebill")


def dry_run_summary(
    client: Any,
    profile: str,
    path: Path,
    template: str,
    plan: Plan,
    rows: list[NewRow],
    info: dict[str, Any],
    update: bool,
) -> ImportSummary:
    """What would be sent (`plan`) and what was refused, skipped or would replace stored
    readings (`rows`: the rows that are not plain new readings)."""
    rejected = {r.source_row for r in rows if r.status == "rejected"}
    replacing = [r for r in rows if r.code in REPLACING]
    summary = ImportSummary(
        file=path.name,
        template=template,
        profile=profile,
        environment=client.environment,
        status="dry-run",
        accepted=0,
        rejected=len(rejected),
        skipped=sum(1 for r in rows if r.status == "skipped" and r.code not in REPLACING),
        pending=plan.readings + (len(replacing) if update else 0),
        warnings=int(info["warnings"]),
        requests=int(info.get("lookup_requests", 0)),  # what the dry run itself cost
        plan=plan.as_dict(),
        problems=info["problems"],
        notes=list(info.get("notes", [])),
        accounting=dict(info.get("accounting", {})),
        replacements=list(info.get("replacements", [])),
        update=update,
    )
    summary.count_listed(replacing)
    message = (
        f"Dry run: {plan.readings} reading(s) for {plan.meter_count} meter(s) would be sent "
        f"in {calls_text(plan)}, about {duration_text(plan.estimate.seconds)}"
    )
    if replacing:
        verb = "would replace" if update else "replace"
        message += (
            f"; {summary.corrections_listed} correction(s) and {summary.rebills_listed} "
            f"rebill row(s) {verb} {summary.replaced_listed} stored reading(s)"
        )
    summary.message = message + "; nothing was sent."
    return summary


def calls_text(plan: Plan) -> str:
    parts = []
    if plan.uploads:
        parts.append(f"{len(plan.uploads)} upload")
    parts.append(f"{plan.batches} batch")
    return ", ".join(parts) + f" and {plan.singles} single call(s)"


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
