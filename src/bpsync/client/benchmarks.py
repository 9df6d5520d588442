"""Benchmarks: a building's scores, its history per period, and the portfolio aggregate."""

from __future__ import annotations

from bpsync.client.models import BenchmarkHistory, BenchmarkResult, PortfolioBenchmark
from bpsync.client.resource import Resource, segment


class Benchmarks(Resource):
    async def building(self, building_id: str) -> BenchmarkResult:
        return await self._get(BenchmarkResult, f"/v1/buildings/{segment(building_id)}/benchmarks")

    async def history(
        self, building_id: str, *, periods: int | None = None, standard: str | None = None
    ) -> BenchmarkHistory:
        if periods is not None and not 1 <= periods <= 20:
            raise ValueError("periods must be within 1..20")
        path = f"/v1/buildings/{segment(building_id)}/benchmarks/history"
        return await self._get(BenchmarkHistory, path, {"periods": periods, "standard": standard})

    async def portfolio(
        self,
        *,
        type: str | None = None,
        country: str | None = None,
        min_grade: str | None = None,
    ) -> PortfolioBenchmark:
        params = {
            "filter[type]": type,
            "filter[country]": country,
            "filter[data_quality_grade]": min_grade,
        }
        return await self._get(PortfolioBenchmark, "/v1/benchmarks/portfolio", params)
