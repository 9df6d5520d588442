"""Properties: list (filters, sort), get, create, update, archive."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpsync.client.models import Property, PropertyArchived, PropertyCreate, PropertyUpdate
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment


class Properties(Resource):
    def list(
        self,
        *,
        type: str | None = None,
        country: str | None = None,
        status: str | None = None,
        sort: str | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> AsyncPaginator[Property]:
        params = {"filter[type]": type, "filter[country]": country, "filter[status]": status}
        params["sort"] = sort
        return self._list(Property, "/v1/properties", params, page=page, per_page=per_page)

    async def get(self, property_id: str) -> Property:
        return await self._get(Property, f"/v1/properties/{segment(property_id)}")

    async def create(
        self, body: PropertyCreate | Mapping[str, Any] | None = None, **fields: Any
    ) -> Property:
        request = build(PropertyCreate, body, fields)
        return await self._send(Property, "POST", "/v1/properties", request.body())

    async def update(
        self,
        property_id: str,
        body: PropertyUpdate | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Property:
        request = build(PropertyUpdate, body, fields)
        path = f"/v1/properties/{segment(property_id)}"
        return await self._send(Property, "PATCH", path, request.body(partial=True))

    async def archive(self, property_id: str) -> PropertyArchived:
        path = f"/v1/properties/{segment(property_id)}/archive"
        return await self._send(PropertyArchived, "POST", path)
