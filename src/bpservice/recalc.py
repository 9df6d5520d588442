"""The seam where benchmark recalculation runs after readings change.

Writers of readings call `Recalculator.readings_changed` inside their transaction with the periods
that changed; the benchmark engine (a later part) implements it. Work must grow with the changed
period, not with the whole history."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session


@dataclass(frozen=True)
class ReadingChange:
    org_id: str
    environment: str
    building_id: str
    meter_id: str
    start_date: dt.date
    end_date: dt.date


class Recalculator(Protocol):
    def readings_changed(
        self, session: Session, changes: list[ReadingChange], now: dt.datetime
    ) -> None: ...

    def months_changed(self, session: Session, changes: list[ReadingChange]) -> None:
        """Only the stored months of the changed periods (a deferred delete): the building's
        summary, grade and `benchmark.updated` wait for its next readings write."""
        ...


class NoRecalculation:
    def readings_changed(
        self, session: Session, changes: list[ReadingChange], now: dt.datetime
    ) -> None:
        return None

    def months_changed(self, session: Session, changes: list[ReadingChange]) -> None:
        return None
