"""Buildings of a property, and the building-level reading lock (docs/decisions.md D23)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from bpsync.client.models import Building, BuildingCreate, BuildingUpdate, Lock
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment


class Buildings(Resource):
    def list(
        self, property_id: str, *, page: int = 1, per_page: int = 50
    ) -> AsyncPaginator[Building]:
        path = f"/v1/properties/{segment(property_id)}/buildings"
        return self._list(Building, path, page=page, per_page=per_page)

    async def get(self, property_id: str, building_id: str) -> Building:
        path = f"/v1/properties/{segment(property_id)}/buildings/{segment(building_id)}"
        return await self._get(Building, path)

    async def create(
        self,
        property_id: str,
        body: BuildingCreate | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Building:
        request = build(BuildingCreate, body, fields)
        path = f"/v1/properties/{segment(property_id)}/buildings"
        return await self._send(Building, "POST", path, request.body())

    async def update(
        self,
        property_id: str,
        building_id: str,
        body: BuildingUpdate | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Building:
        request = build(BuildingUpdate, body, fields)
        path = f"/v1/properties/{segment(property_id)}/buildings/{segment(building_id)}"
        return await self._send(Building, "PATCH", path, request.body(partial=True))

    async def get_lock(self, building_id: str) -> Lock:
        return await self._get(Lock, f"/v1/buildings/{segment(building_id)}/lock")

    async def lock(self, building_id: str, locked_through: dt.date | str) -> Lock:
        """Lock the building's readings through a date. Setting the same date again changes
        nothing, so the call is safe to retry."""
        day = dt.date.fromisoformat(str(locked_through))
        path = f"/v1/buildings/{segment(building_id)}/lock"
        body = {"locked_through": day.isoformat()}
        return await self._send(Lock, "POST", path, body, idempotent=True)
