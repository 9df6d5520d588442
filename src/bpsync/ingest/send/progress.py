"""What a run of the submitter reports: its progress (a bar on stderr, or nothing), its counts,
and why it stopped before every row was sent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Progress(Protocol):
    def start(self, total: int, description: str) -> None: ...

    def advance(self, accepted: int, rejected: int, skipped: int) -> None: ...

    def close(self) -> None: ...


class NoProgress:
    def start(self, total: int, description: str) -> None:
        pass

    def advance(self, accepted: int, rejected: int, skipped: int) -> None:
        pass

    def close(self) -> None:
        pass


class RichProgress:
    """A progress bar on stderr: done/total, accepted · rejected · already there, rate, ETA."""

    def __init__(self, console: object | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RProgress

        self._bar = RProgress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]{task.fields[accepted]} ok[/] · [red]{task.fields[rejected]} "
                "rejected[/] · {task.fields[skipped]} already there"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._task: int | None = None
        self._counts = [0, 0, 0]

    def start(self, total: int, description: str) -> None:
        self._bar.start()
        self._task = self._bar.add_task(description, total=total, accepted=0, rejected=0, skipped=0)

    def advance(self, accepted: int, rejected: int, skipped: int) -> None:
        if self._task is None:
            return
        for i, n in enumerate((accepted, rejected, skipped)):
            self._counts[i] += n
        a, r, s = self._counts
        self._bar.update(
            self._task,  # type: ignore[arg-type]
            advance=accepted + rejected + skipped,
            accepted=a,
            rejected=r,
            skipped=s,
        )

    def close(self) -> None:
        self._bar.stop()


class SubmitStopped(Exception):
    """The import stopped before every row was sent (Ctrl-C, or the service became unreachable,
    refused the credentials, or asked to wait longer than the client will). Rows not yet answered
    stay pending in the journal; `--resume` continues."""

    def __init__(self, reason: str, cause: BaseException | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause


@dataclass
class SubmitStats:
    accepted: int = 0
    rejected: int = 0
    already_there: int = 0
    requests: int = 0
    upload_calls: int = 0
    batch_calls: int = 0
    single_calls: int = 0
    reconciled: int = 0  # requests whose outcome was unknown and were looked up
    seconds: float = 0.0
    stopped: str | None = None
    reconcile_requests: int = 0

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)
