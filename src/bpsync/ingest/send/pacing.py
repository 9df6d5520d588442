"""Pacing the submitter on top of the client's own: leave a `headroom` share of every learned
bucket to other traffic of the same key (the watcher, the terminal app), and stop for a new plan
when the service's limits turn out other than the plan assumed."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

from bpsync.client.service import AsyncServiceClient
from bpsync.ingest.send.plan_calls import Limits


@dataclass
class Pacer:
    """The waits between one import's calls, and whether its plan still holds."""

    client: AsyncServiceClient
    limits: Limits  # what the plan assumed
    headroom: float
    stop: asyncio.Event
    replanned: str | None = None  # why the run stopped for a new plan (the limits differ)
    settled: bool = False  # every bucket the plan assumed has been checked against the service

    async def check_assumptions(self) -> None:
        """After a call: when the service's headers show limits other than the plan assumed (a
        first import, before anything was learned, or changed limits), stop at the next call
        boundary so the importer plans the rest again. Checked until every bucket the plan
        counts on has been learned."""
        limiter = self.client.limiter
        if limiter is None or self.settled or self.replanned:
            return
        snapshot = await asyncio.to_thread(limiter.snapshot)
        assumed = self.limits
        pending = False
        for budget in (assumed.principal, assumed.bulk):
            b = snapshot.get(budget.kind)
            if b is None:
                pending = True
                continue
            if b.limit != budget.limit or abs(b.window - budget.window) > 0.5:
                self.replanned = (
                    f"the service's {budget.kind} limit is {b.limit} per {b.window:.0f} s; the "
                    f"plan assumed {budget.limit} per {budget.window:.0f} s"
                )
                self.stop.set()
                return
        self.settled = not pending

    async def gate(self, kinds: list[str]) -> None:
        """Leave `headroom` of each learned bucket to other traffic: wait for the next window
        when this import has used its share of the current one."""
        limiter = self.client.limiter
        if limiter is None or self.headroom <= 0:
            return
        while True:
            snapshot = await asyncio.to_thread(limiter.snapshot)
            now = limiter.clock()
            wait = 0.0
            for kind in kinds:
                b = snapshot.get(kind)
                if b is None:
                    continue
                reserve = b.limit - max(1, math.floor(b.limit * (1 - self.headroom)))
                if b.remaining <= reserve:
                    wait = max(wait, b.reset - now + 0.02)
            if wait <= 0:
                return
            await self.client.base.sleep(wait)

    def kinds(self, batch: bool) -> list[str]:
        kind = self.client.credentials.kind
        return [kind, "bulk"] if batch else [kind]
