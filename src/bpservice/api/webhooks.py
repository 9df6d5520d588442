"""Webhooks: routes are added by the service part 2 work (docs/decisions-webhooks.md)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["webhooks"])
