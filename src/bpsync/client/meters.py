"""Meters of a building, and every meter of the organisation in one list (decisions C2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bpsync.client.models import Meter, MeterCreate
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment

MAX_IDS = 200


class Meters(Resource):
    def list(self, building_id: str, *, page: int = 1, per_page: int = 50) -> AsyncPaginator[Meter]:
        path = f"/v1/buildings/{segment(building_id)}/meters"
        return self._list(Meter, path, page=page, per_page=per_page)

    def list_all(
        self,
        *,
        ids: Sequence[str] | None = None,
        building_id: str | None = None,
        page: int = 1,
        per_page: int = 200,
    ) -> AsyncPaginator[Meter]:
        """Meters of the whole organisation (GET /v1/meters), or only those with `ids` (at most
        200 a call; unknown ids are left out)."""
        if ids is not None and not 1 <= len(ids) <= MAX_IDS:
            raise ValueError(f"ids takes 1 to {MAX_IDS} meter ids, not {len(ids)}")
        params = {
            "filter[id]": ",".join(ids) if ids is not None else None,
            "filter[building_id]": building_id,
        }
        return self._list(Meter, "/v1/meters", params, page=page, per_page=per_page)

    async def get(self, building_id: str, meter_id: str) -> Meter:
        return await self._get(
            Meter, f"/v1/buildings/{segment(building_id)}/meters/{segment(meter_id)}"
        )

    async def create(
        self, building_id: str, body: MeterCreate | Mapping[str, Any] | None = None, **fields: Any
    ) -> Meter:
        request = build(MeterCreate, body, fields)
        path = f"/v1/buildings/{segment(building_id)}/meters"
        return await self._send(Meter, "POST", path, request.body())
