"""Settling a file: where it goes (processed/YYYY-MM/ or failed/), its receipt, its reject report
or the explanation of why it could not be imported, its fate in the ledger, and the log line that
says so; and setting aside a file whose content was settled before (a duplicate)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bpsync.ingest import group_problems
from bpsync.watch import files
from bpsync.watch.ledger import Content, Ledger
from bpsync.watch.log import WatchLog
from bpsync.watch.rules import (
    ReceiptInput,
    Snapshot,
    Verdict,
    explanation_name,
    explanation_text,
    make_receipt,
    month_folder,
    receipt_name,
    reject_report_name,
    result_sentence,
    unique_name,
)
from bpsync.watch.service import Connection, FileOutcome
from bpsync.watch.status import LedgerEntry


@dataclass
class Settler:
    """Settles files for one watcher run (its ledger, log, status and counts)."""

    config: Any  # WatchConfig (processed_dir, failed_dir, profile)
    ledger: Ledger
    log: WatchLog
    result: Any  # RunResult: processed, failed, skipped
    publish: Callable[..., None]
    now: Callable[[], dt.datetime]

    async def set_aside(
        self, path: Path, snap: Snapshot, sha: str, first: Content, conn: Connection
    ) -> None:
        """Content settled before: nothing is sent; the file goes to processed/ with a receipt
        that names the first time."""
        now = self.now()
        folder = self.config.processed_dir / month_folder(now)
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / unique_name(path.name, lambda n: (folder / n).exists())
        when = first.settled_at.isoformat() if first.settled_at else "earlier"
        receipt = folder / receipt_name(dest.name)
        files.write_json(
            receipt,
            make_receipt(
                ReceiptInput(
                    status="duplicate",
                    file=path.name,
                    stored_as=str(dest),
                    sha256=sha,
                    size_bytes=snap.size,
                    profile=self.config.profile,
                    environment=conn.environment,
                    service=conn.service,
                    finished_at=now,
                    import_id=first.import_id,
                    duplicate_of={
                        "file": first.file_name,
                        "fate": first.state,
                        "settled_at": when,
                        "stored_as": str(first.dest_path) if first.dest_path else None,
                        "receipt": first.receipt_path,
                    },
                    message=(
                        f"The same content was imported before as {first.file_name} "
                        f"({first.state}, {when}): nothing was sent."
                    ),
                )
            ),
        )
        await asyncio.to_thread(files.move_file, path, dest)
        entry = self.ledger.record_skipped(
            sha256=sha,
            file_name=path.name,
            receipt_path=str(receipt),
            stored_as=str(dest),
            now=now,
        )
        self.result.skipped += 1
        self.log.info(
            "skipped",
            f"skipped {path.name}: same content as {first.file_name} ({first.state} {when}); "
            f"nothing sent → {dest}",
            file=path.name,
            fate="skipped",
            duplicate_of=first.file_name,
            stored_as=str(dest),
        )
        self.publish(entry, last_file=path.name, last_result="skipped: already imported")

    async def settle(
        self, content: Content, outcome: FileOutcome | Verdict, conn: Connection
    ) -> None:
        """Move the file to processed/ or failed/ with its receipt (and reject report or
        explanation), record its fate in the ledger, and say so."""
        ledger = self.ledger
        now = self.now()
        failed = isinstance(outcome, Verdict) or outcome.rejected > 0
        fate: Literal["processed", "failed"] = "failed" if failed else "processed"
        content = ledger.get(content.id)
        if content.dest_path is None:
            folder = (
                self.config.failed_dir if failed else self.config.processed_dir / month_folder(now)
            )
            folder.mkdir(parents=True, exist_ok=True)
            name = unique_name(content.file_name, lambda n: (folder / n).exists())
            content = ledger.set_destination(content.id, folder / name)
        assert content.dest_path is not None
        dest = content.dest_path
        dest.parent.mkdir(parents=True, exist_ok=True)

        receipt, report = await self._receipt(content, outcome, conn, dest, fate, now)
        accepted, rejected = receipt.accepted, receipt.rejected_rows
        import_id = receipt.import_id
        receipt_path = dest.parent / receipt_name(dest.name)
        files.write_json(receipt_path, make_receipt(receipt))
        if not dest.exists():
            original = content.original_path
            current = await asyncio.to_thread(files.snapshot, original)
            # The original leaves the folder when it still is what was imported; otherwise the
            # private copy (the bytes imported) is stored and the original is looked at again.
            source = original if current == content.original else content.work_path
            await asyncio.to_thread(files.move_file, source, dest)
        files.remove_tree(content.work_path.parent)
        entry = ledger.settle(
            content.id,
            fate=fate,
            accepted=accepted,
            rejected=rejected,
            import_id=import_id,
            receipt_path=str(receipt_path),
            now=now,
        )
        self._announce(content, outcome, receipt, report, entry, dest, receipt_path)

    async def _move_reports(self, content: Content, outcome: FileOutcome, dest: Path) -> list[Path]:
        """The import's reject reports moved beside the settled file, under its name: one, or
        one per sheet of a workbook imported sheet by sheet (`STEM.SHEET.rejects.xlsx`)."""
        work = content.work_path
        sources = outcome.reject_reports or [
            outcome.reject_report or work.with_name(reject_report_name(work.name))
        ]
        moved: list[Path] = []
        for source in sources:
            own = source.name.startswith(work.stem + ".")
            name = dest.stem + source.name[len(work.stem) :] if own else source.name
            target = dest.with_name(name) if own else dest.with_name(reject_report_name(dest.name))
            if source.is_file() and not target.exists():
                await asyncio.to_thread(files.move_file, source, target)
            if target.exists():
                moved.append(target)
        return moved

    async def _receipt(
        self,
        content: Content,
        outcome: FileOutcome | Verdict,
        conn: Connection,
        dest: Path,
        fate: Literal["processed", "failed"],
        now: dt.datetime,
    ) -> tuple[ReceiptInput, Path | None]:
        """The receipt's fields; the reject report moved beside the file, or the explanation of
        a file that could not be imported written there."""
        report: Path | None = None
        receipt = ReceiptInput(
            status=fate,
            file=content.file_name,
            stored_as=str(dest),
            sha256=content.sha256,
            size_bytes=content.original.size,
            profile=self.config.profile,
            environment=conn.environment,
            service=conn.service,
            finished_at=now,
            claimed_at=content.claimed_at,
        )
        if isinstance(outcome, Verdict):
            receipt.error = {"code": outcome.code, "message": outcome.reason}
            receipt.message = "The file could not be imported: nothing from it was sent."
            explanation = dest.parent / explanation_name(dest.name)
            files.write_atomic(
                explanation,
                explanation_text(
                    file=content.file_name,
                    sha256=content.sha256,
                    when=now,
                    profile=self.config.profile,
                    reason=outcome.reason,
                    code=outcome.code,
                ),
            )
        else:
            if outcome.rejected:
                moved = await self._move_reports(content, outcome, dest)
                report = moved[0] if moved else None
                receipt.reject_reports = [str(m) for m in moved]
            receipt.template = outcome.template
            receipt.import_id = outcome.import_id
            receipt.import_status = outcome.status
            receipt.accepted = outcome.accepted
            receipt.rejected_rows = outcome.rejected
            receipt.skipped = outcome.skipped
            receipt.warnings = outcome.warnings
            receipt.accepted_ids = outcome.accepted_ids
            receipt.reject_report = str(report) if report else None
            receipt.problems = outcome.problems
            receipt.accounting = outcome.accounting
            receipt.message = (
                f"{outcome.rejected} row(s) were rejected (see the reject report); the "
                f"{outcome.accepted} accepted reading(s) stay stored."
                if outcome.rejected
                else outcome.message
            )
        return receipt, report

    def _announce(
        self,
        content: Content,
        outcome: FileOutcome | Verdict,
        receipt: ReceiptInput,
        report: Path | None,
        entry: LedgerEntry,
        dest: Path,
        receipt_path: Path,
    ) -> None:
        fate = receipt.status
        accepted, rejected = receipt.accepted, receipt.rejected_rows
        if fate == "processed":
            self.result.processed += 1
            sentence = result_sentence(accepted, 0, receipt.skipped)
            self.log.info(
                "processed",
                f"processed {content.file_name}: {sentence} → {dest}",
                file=content.file_name,
                fate=fate,
                accepted=accepted,
                skipped=receipt.skipped,
                stored_as=str(dest),
                receipt=str(receipt_path),
            )
            self.publish(entry, last_file=content.file_name, last_result=sentence)
        elif isinstance(outcome, Verdict):
            self.result.failed += 1
            self.log.warning(
                "failed",
                f"failed {content.file_name}: {outcome.reason} → {dest}",
                file=content.file_name,
                fate=fate,
                code=outcome.code,
                stored_as=str(dest),
                receipt=str(receipt_path),
            )
            self.publish(
                entry,
                last_file=content.file_name,
                last_result=f"failed: {outcome.code}",
                last_error=outcome.reason,
            )
        else:
            self.result.failed += 1
            sentence = result_sentence(accepted, rejected, receipt.skipped)
            self.log.warning(
                "rejected",
                f"failed {content.file_name}: {sentence}; the accepted readings stay stored; "
                f"{_commonest_problem(receipt.problems)}"
                f"reject report {report or 'not written'} → {dest}",
                file=content.file_name,
                fate=fate,
                accepted=accepted,
                rejected=rejected,
                stored_as=str(dest),
                reject_report=str(report) if report else None,
                receipt=str(receipt_path),
            )
            self.publish(entry, last_file=content.file_name, last_result=sentence)


def _commonest_problem(problems: Sequence[dict[str, Any]] | None) -> str:
    """ "36 rows: … is not in the meter map; " — what most rejected rows share, for the log."""
    groups = [g for g in group_problems(problems or ()) if g.severity == "error"]
    if not groups:
        return ""
    top = max(groups, key=lambda g: len(g.rows))
    return f"{len(top.rows)} row(s): {top.shape}; "
