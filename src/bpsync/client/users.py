"""Users of the organisation: list, get, invite, update role/access, deactivate, reactivate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpsync.client.models import User, UserDeactivated, UserInvite, UserUpdate
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment


class Users(Resource):
    def list(
        self,
        *,
        role: str | None = None,
        status: str | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> AsyncPaginator[User]:
        params = {"filter[role]": role, "filter[status]": status}
        return self._list(User, "/v1/users", params, page=page, per_page=per_page)

    async def get(self, user_id: str) -> User:
        return await self._get(User, f"/v1/users/{segment(user_id)}")

    async def invite(
        self, body: UserInvite | Mapping[str, Any] | None = None, **fields: Any
    ) -> User:
        request = build(UserInvite, body, fields)
        return await self._send(User, "POST", "/v1/users/invite", request.body())

    async def update(
        self, user_id: str, body: UserUpdate | Mapping[str, Any] | None = None, **fields: Any
    ) -> User:
        request = build(UserUpdate, body, fields)
        path = f"/v1/users/{segment(user_id)}"
        return await self._send(User, "PATCH", path, request.body(partial=True))

    async def deactivate(self, user_id: str) -> UserDeactivated:
        path = f"/v1/users/{segment(user_id)}/deactivate"
        return await self._send(UserDeactivated, "POST", path)

    async def reactivate(self, user_id: str) -> User:
        return await self._send(User, "POST", f"/v1/users/{segment(user_id)}/reactivate")
