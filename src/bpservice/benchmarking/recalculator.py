"""Recalculation after readings change (the `bpservice.recalc` seam), inside the write transaction.

For each changed meter only the months its change touches are re-aggregated; then each affected
building's current period is rebuilt from its monthly rows (12 x meters rows), stored, and
announced: `benchmark.updated` always, `data_quality.changed` when the grade moved.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bpservice.benchmarking import aggregates as agg
from bpservice.benchmarking.engine import result_from
from bpservice.db.benchmark_models import BenchmarkSummary
from bpservice.db.models import Building, Meter
from bpservice.events import record_event
from bpservice.recalc import ReadingChange


def event_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The `benchmark.updated` payload: the headline numbers and one value per standard."""
    by = {s["standard"]: s for s in result["scores"]}
    scores: dict[str, Any] = {
        "svc": by["svc"]["score"],
        "energy_rating": by["energy_rating"]["score"],
        "energy_rating_eligible": by["energy_rating"]["eligible"],
        "stranding_year_1_5c": by["decarbonisation_pathway"]["stranding_year_1_5c"],
        "stranding_year_2c": by["decarbonisation_pathway"]["stranding_year_2c"],
        "regional_rating": by["regional_rating"].get("score"),
    }
    if "eu_epc" in by:
        scores["eu_epc"] = by["eu_epc"]["grade"]
    return {
        "building_id": result["building_id"],
        "reporting_period": result["reporting_period"],
        "data_quality_grade": result["data_quality_grade"],
        "eui_kwh_m2": result["eui_kwh_m2"],
        "carbon_intensity_kgco2e_m2": result["carbon_intensity_kgco2e_m2"],
        "scores": scores,
    }


class BenchmarkRecalculator:
    def readings_changed(
        self, session: Session, changes: list[ReadingChange], now: dt.datetime
    ) -> None:
        for building_id in self._refresh(session, changes):
            building = session.get(Building, building_id)
            if building is not None:
                self.recalculate(session, building, now)

    def months_changed(self, session: Session, changes: list[ReadingChange]) -> None:
        """A deferred delete (`?defer_recalculation=true`): the months are right at once (a
        building's own result is rebuilt from them on read); the summary, grade and events come
        with the building's next readings write, so an import replacing readings recalculates
        once, at its POST, not once per deleted reading."""
        self._refresh(session, changes)

    def _refresh(self, session: Session, changes: list[ReadingChange]) -> list[str]:
        """Re-aggregate the months the changes touch; the buildings affected."""
        spans: dict[str, tuple[dt.date, dt.date]] = {}
        for c in changes:
            start, end = spans.get(c.meter_id, (c.start_date, c.end_date))
            spans[c.meter_id] = (min(start, c.start_date), max(end, c.end_date))
        buildings: list[str] = []
        for meter_id, (start, end) in spans.items():
            meter = session.get(Meter, meter_id)
            if meter is None:
                continue
            agg.refresh_months(session, meter, start, end)
            if meter.building_id not in buildings:
                buildings.append(meter.building_id)
        session.flush()
        return buildings

    def recalculate(self, session: Session, building: Building, now: dt.datetime) -> None:
        # One recalculation of a building at a time (readings of two of its meters may be stored
        # at once on two instances): the second waits, then reads what the first committed.
        session.execute(select(Building.id).where(Building.id == building.id).with_for_update())
        current = agg.current(session, building.id)
        energy = current.energy
        summary = session.get(BenchmarkSummary, building.id)
        if summary is None:
            summary = BenchmarkSummary(
                building_id=building.id, org_id=building.org_id, environment=building.environment
            )
            session.add(summary)
        summary.period_start = energy.period.start if energy else None
        summary.period_end = energy.period.end if energy else None
        summary.kwh_by_type = dict(energy.kwh_by_type) if energy else {}
        summary.twelve_full_months = energy.twelve_full_months if energy else False
        summary.data_quality_grade = current.quality.grade
        summary.quality_points = current.quality.points
        summary.calculated_at = now
        previous = building.data_quality_grade
        building.data_quality_grade = current.quality.grade
        session.flush()
        scope = {"org_id": building.org_id, "environment": building.environment, "now": now}
        if previous != current.quality.grade:
            record_event(
                session,
                type="data_quality.changed",
                data={
                    "building_id": building.id,
                    "previous_grade": previous,
                    "grade": current.quality.grade,
                },
                **scope,
            )
        result = result_from(session, building, current, now, now)
        record_event(session, type="benchmark.updated", data=event_summary(result), **scope)
