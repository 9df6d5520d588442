"""Readings of a meter: submit one or a batch (at most 500), list by date range, delete; and the
CSV upload: readings of many meters in one request (at most 5,000)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bpsync.client.models import BatchResult, Reading, ReadingInput, ReadingSpan, UploadResult
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import M, Resource, build, segment

MAX_BATCH = 500
MAX_UPLOAD = 5000
UPLOAD_PATH = "/v1/readings/upload"
MAX_METER_IDS = 200
MAX_READINGS_PER_PAGE = 1000  # GET /v1/readings' page (C3)
UPLOAD_COLUMNS = (
    "meter_id",
    "start_date",
    "end_date",
    "consumption",
    "cost",
    "cost_currency",
    "demand_kw",
)


class Readings(Resource):
    @staticmethod
    def _base(building_id: str, meter_id: str) -> str:
        return f"/v1/buildings/{segment(building_id)}/meters/{segment(meter_id)}/readings"

    def list(
        self,
        building_id: str,
        meter_id: str,
        *,
        start_date: dt.date | str | None = None,
        end_date: dt.date | str | None = None,
        newest_first: bool = False,
        page: int = 1,
        per_page: int = 50,
    ) -> AsyncPaginator[Reading]:
        params = {
            "start_date": str(start_date) if start_date else None,
            "end_date": str(end_date) if end_date else None,
            "sort": "-start_date" if newest_first else None,
        }
        path = self._base(building_id, meter_id)
        return self._list(Reading, path, params, page=page, per_page=per_page)

    def list_many(
        self,
        meter_ids: Sequence[str],
        *,
        start_date: dt.date | str | None = None,
        end_date: dt.date | str | None = None,
        page: int = 1,
        per_page: int = MAX_READINGS_PER_PAGE,
    ) -> AsyncPaginator[Reading]:
        """Readings of up to 200 meters in one list (GET /v1/readings, decisions C3), by meter
        then start date, up to 1,000 a page; meters the caller cannot see are left out."""
        return self._many(Reading, meter_ids, start_date, end_date, page, per_page)

    def spans_many(
        self,
        meter_ids: Sequence[str],
        *,
        start_date: dt.date | str | None = None,
        end_date: dt.date | str | None = None,
        page: int = 1,
        per_page: int = MAX_READINGS_PER_PAGE,
    ) -> AsyncPaginator[ReadingSpan]:
        """`list_many` read as ReadingSpans (id, meter, period, consumption): an importer checking
        a file against tens of thousands of stored readings validates a third of each answer."""
        return self._many(ReadingSpan, meter_ids, start_date, end_date, page, per_page)

    def _many(
        self,
        model: type[M],
        meter_ids: Sequence[str],
        start_date: dt.date | str | None,
        end_date: dt.date | str | None,
        page: int,
        per_page: int,
    ) -> AsyncPaginator[M]:
        if not 1 <= len(meter_ids) <= MAX_METER_IDS:
            raise ValueError(f"meter_ids takes 1 to {MAX_METER_IDS} ids, not {len(meter_ids)}")
        params = {
            "filter[meter_id]": ",".join(meter_ids),
            "start_date": str(start_date) if start_date else None,
            "end_date": str(end_date) if end_date else None,
        }
        return self._list(
            model,
            "/v1/readings",
            params,
            page=page,
            per_page=per_page,
            max_per_page=MAX_READINGS_PER_PAGE,
        )

    async def create(
        self,
        building_id: str,
        meter_id: str,
        body: ReadingInput | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Reading:
        """Submit one reading. A failure with an unknown outcome raises AmbiguousWriteError: look
        for the date range with `list` before sending it again."""
        request = build(ReadingInput, body, fields)
        return await self._send(Reading, "POST", self._base(building_id, meter_id), request.body())

    async def create_batch(
        self, building_id: str, meter_id: str, readings: Iterable[ReadingInput | Mapping[str, Any]]
    ) -> BatchResult:
        """Submit up to 500 readings; the answer counts accepted and rejected ones and names each
        rejected reading by its `index` in `readings`."""
        items = [build(ReadingInput, r, {}).body() for r in readings]
        if not 1 <= len(items) <= MAX_BATCH:
            raise ValueError(f"a batch holds 1 to {MAX_BATCH} readings, not {len(items)}")
        path = self._base(building_id, meter_id) + "/batch"
        return await self._send(BatchResult, "POST", path, {"readings": items})

    async def upload(
        self, readings: Iterable[tuple[str, ReadingInput | Mapping[str, Any]]]
    ) -> UploadResult:
        """Submit up to 5,000 readings of any meters as one CSV upload (POST /v1/readings/upload,
        a bulk call): (meter id, reading) pairs. The answer counts accepted and rejected rows and
        names each rejected one by its `index` in `readings`."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(UPLOAD_COLUMNS)
        count = 0
        for meter_id, reading in readings:
            body = build(ReadingInput, reading, {}).body()
            writer.writerow(
                [meter_id] + [_csv_value(body.get(name)) for name in UPLOAD_COLUMNS[1:]]
            )
            count += 1
        if not 1 <= count <= MAX_UPLOAD:
            raise ValueError(f"an upload holds 1 to {MAX_UPLOAD} readings, not {count}")
        response = await self._client.request(
            "POST",
            UPLOAD_PATH,
            content=out.getvalue().encode(),
            content_type="text/csv",
        )
        return UploadResult.model_validate(response.json()["data"])

    async def delete(
        self, building_id: str, meter_id: str, reading_id: str, *, defer_recalculation: bool = False
    ) -> None:
        """Delete a reading (204; a locked one raises LockedError, `building_locked`). With
        `defer_recalculation` the building's benchmark is recalculated by the next readings write
        to it instead (decisions: an import replacing readings recalculates once, at its POST)."""
        path = f"{self._base(building_id, meter_id)}/{segment(reading_id)}"
        params = {"defer_recalculation": "true"} if defer_recalculation else None
        await self._client.request("DELETE", path, params=params)


def _csv_value(value: Any) -> str:
    """A JSON body's value as the upload writes it: numbers with repr (exact), dates ISO."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)
