"""Benchmarks: routes are added by the service part 2 work (docs/decisions-benchmarks.md)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["benchmarks"])
