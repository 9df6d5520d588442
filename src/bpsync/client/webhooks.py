"""Webhook subscriptions and their delivery history (paths: docs/decisions.md (webhooks section))."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpsync.client.errors import ConflictError
from bpsync.client.models import (
    Delivery,
    Webhook,
    WebhookCreate,
    WebhookCreated,
    WebhookStatus,
    WebhookUpdate,
)
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment


class Webhooks(Resource):
    def list(
        self, *, status: str | None = None, page: int = 1, per_page: int = 50
    ) -> AsyncPaginator[Webhook]:
        params = {"filter[status]": status}
        return self._list(Webhook, "/v1/webhooks", params, page=page, per_page=per_page)

    async def get(self, webhook_id: str) -> Webhook:
        return await self._get(Webhook, f"/v1/webhooks/{segment(webhook_id)}")

    async def create(
        self, body: WebhookCreate | Mapping[str, Any] | None = None, **fields: Any
    ) -> WebhookCreated:
        """Subscribe `url` to `events` (or `["*"]`). Without `secret` the service generates one
        and returns it once, in `WebhookCreated.secret` (a masked `Secret`)."""
        request = build(WebhookCreate, body, fields)
        return await self._send(WebhookCreated, "POST", "/v1/webhooks", request.body())

    async def update(
        self, webhook_id: str, body: WebhookUpdate | Mapping[str, Any] | None = None, **fields: Any
    ) -> Webhook:
        request = build(WebhookUpdate, body, fields)
        path = f"/v1/webhooks/{segment(webhook_id)}"
        return await self._send(Webhook, "PATCH", path, request.body(partial=True))

    async def pause(self, webhook_id: str) -> Webhook:
        """Make sure deliveries are paused (a subscription already paused is returned as is)."""
        return await self._transition(webhook_id, "pause", WebhookStatus.PAUSED)

    async def resume(self, webhook_id: str) -> Webhook:
        """Make sure deliveries are enabled (an enabled subscription is returned as is)."""
        return await self._transition(webhook_id, "resume", WebhookStatus.ENABLED)

    async def _transition(self, webhook_id: str, action: str, target: WebhookStatus) -> Webhook:
        # Retrying a state change cannot duplicate anything; a retry whose first attempt went
        # through answers 409 invalid_state, which is then the state we wanted.
        path = f"/v1/webhooks/{segment(webhook_id)}/{action}"
        try:
            return await self._send(Webhook, "POST", path, idempotent=True)
        except ConflictError as exc:
            if exc.code != "invalid_state":
                raise
            current = await self.get(webhook_id)
            if current.status != target:
                raise
            return current

    async def delete(self, webhook_id: str) -> None:
        await self._client.request("DELETE", f"/v1/webhooks/{segment(webhook_id)}")

    def deliveries(
        self,
        webhook_id: str,
        *,
        status: str | None = None,
        event_id: str | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> AsyncPaginator[Delivery]:
        path = f"/v1/webhooks/{segment(webhook_id)}/deliveries"
        params = {"filter[status]": status, "filter[event_id]": event_id}
        return self._list(Delivery, path, params, page=page, per_page=per_page)

    async def delivery(self, webhook_id: str, delivery_id: str) -> Delivery:
        path = f"/v1/webhooks/{segment(webhook_id)}/deliveries/{segment(delivery_id)}"
        return await self._get(Delivery, path)
