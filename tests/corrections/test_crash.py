"""A replacement killed at each step, then `--resume`: the service holds the old readings or the
new ones, never neither and never both. The process dying is `Crash` raised from the transport
(tests/importer/test_resume.py's approach): nothing in the client or importer catches it, so the
journal is left exactly as a SIGKILL at that request would leave it."""

from __future__ import annotations

import httpx
import pytest

from bpsync.client import AsyncServiceClient
from bpsync.ingest.run.import_file import ImportOptions, import_file
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.trail import Trail
from tests.corrections.conftest import PROFILE, bills, month, stored
from tests.corrections.test_update import TODAY, run
from tests.importer.helpers import Crash

pytestmark = pytest.mark.anyio

JAN, FEB = month(2024, 1), month(2024, 2)


class DieAt(httpx.AsyncBaseTransport):
    """Forwards to the service; the `n`-th request of `method` to a readings path dies before it
    is sent (`before=True`) or after the service answered (the answer never read)."""

    def __init__(self, method: str, before: bool, n: int = 1) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.method, self.before, self.n, self.seen = method, before, n, 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        hit = request.method == self.method and "/readings" in request.url.path
        if hit:
            self.seen += 1
        if hit and self.seen == self.n and self.before:
            raise Crash()
        response = await self.inner.handle_async_request(request)
        if hit and self.seen == self.n:
            await response.aread()
            await response.aclose()
            raise Crash()
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


STEPS = {
    "before the delete": ("DELETE", True, 1),
    "between the deletes": ("DELETE", False, 1),  # the first old reading gone, the second not
    "between delete and post": ("DELETE", False, 2),
    "after the post": ("POST", False, 1),
}


@pytest.mark.parametrize("step", list(STEPS))
async def test_killed_at_each_step_then_resume(service, org, tmp_path, step):
    m = org.meters[0]
    first = bills(tmp_path / "first.csv", [(m, *JAN, 1000, None, None), (m, *FEB, 900, None, None)])
    assert (await run(service, org, first)).accepted == 2
    old = stored(service, org, m)
    path = bills(tmp_path / "rebill.csv", [(m, JAN[0], FEB[1], 2000, 300.0, None)])
    new = [(JAN[0], FEB[1], 2000, 300.0, None)]

    method, before, n = STEPS[step]
    dying = DieAt(method, before, n)
    async with AsyncServiceClient(
        service.base_url, org.key, profile=PROFILE, transport=dying
    ) as client:
        with pytest.raises(Crash):
            await import_file(client, PROFILE, path, ImportOptions(today=TODAY, update=True))
    now = stored(service, org, m)
    # At the kill: the old readings, some of them (a delete in progress), or the new one.
    expected_now = {
        "before the delete": old,
        "between the deletes": old[1:],
        "between delete and post": [],
        "after the post": new,
    }[step]
    assert now == expected_now
    with Journal() as journal:
        [(import_id,)] = journal.connection.execute(
            "SELECT id FROM imports WHERE status = 'open'"
        ).fetchall()
        trail = Trail(journal).groups(import_id)
        statuses = [o.status for olds in trail.values() for o in olds]
    # Each old reading was marked in the journal before its DELETE went out.
    assert (
        statuses
        == {
            "before the delete": ["deleting", "planned"],
            "between the deletes": ["deleting", "planned"],
            "between delete and post": ["deleted", "deleting"],
            "after the post": ["deleted", "deleted"],
        }[step]
    )

    resumed = await run(service, org, path, update=True, resume=True)
    assert resumed.status == "complete" and resumed.pending == 0, resumed
    assert stored(service, org, m) == new
    with Journal() as journal:
        trail = Trail(journal).for_meter([m])
    assert sorted(t["status"] for t in trail) == ["deleted", "deleted"]
    assert all(t["new"][0]["status"] == "accepted" for t in trail)
    assert (await run(service, org, path, update=True)).status == "no-op"
