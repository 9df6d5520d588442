"""Meters of a building."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpsync.client.models import Meter, MeterCreate
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment


class Meters(Resource):
    def list(self, building_id: str, *, page: int = 1, per_page: int = 50) -> AsyncPaginator[Meter]:
        path = f"/v1/buildings/{segment(building_id)}/meters"
        return self._list(Meter, path, page=page, per_page=per_page)

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
