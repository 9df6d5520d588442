"""What issue 32's cheaper request must keep: the key is looked up on every request, so a key
revoked through one instance is refused by every instance on the very next request, with the
scopes its row grants."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from fastapi.testclient import TestClient
from sqlalchemy import event

from bpservice import admin
from bpservice.app import create_app
from bpservice.auth import Principal
from bpservice.db.session import Database
from bpservice.domain.vocab import SCOPES
from bpservice.settings import DatabaseLimits, Settings
from tests.conftest import FakeClock, Service, service_settings
from tests.service.conftest import BUILDING, Tree, create_property, monthly, ok


def test_a_revoked_key_is_refused_by_every_instance_on_the_next_request(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'svc.db'}", run_workers=False)
    first, second = create_app(settings), create_app(settings)
    with first.state.db.write() as session:
        info = admin.bootstrap(session)
        scoped = admin.create_api_key(
            session, info["org_id"], environment="test", scopes=["properties:read"]
        )
    headers = {"Authorization": f"Bearer {scoped.key}"}
    with TestClient(first, headers=headers) as a, TestClient(second, headers=headers) as b:
        for client in (a, b):
            assert client.get("/v1/properties").status_code == 200
            # the scopes come from the key's row: the lookup did not widen them
            refused = client.get("/v1/buildings/bld_x/meters")
            assert refused.json()["error"]["code"] == "insufficient_scope"
        with first.state.db.write() as session:
            admin.revoke_api_key(session, scoped.id)
        for client in (b, a):
            r = client.get("/v1/properties")
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        # the organisation's other keys still work
        other = {"Authorization": f"Bearer {info['test_key']}"}
        assert b.get("/v1/properties", headers=other).status_code == 200


def _statements_during(engine: Any, send: Callable[[], httpx.Response]) -> list[str]:
    """The queries (SELECTs from a table) the service runs while `send` is answered."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().startswith("SELECT") and "FROM" in statement.split():
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        assert send().status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen


def test_the_hot_reads_run_one_query_after_the_key_lookup(service: Service) -> None:
    """Issue 32's cheaper GETs: a meter, a property page (its total and building totals
    included) and a readings page (after the meter's check) each cost the key's lookup plus one
    query, or two for the readings; the page still tells the list's total."""
    engine = service.app.state.db.engine
    with service.client() as api:
        tree = Tree(api)
        service.clock.advance(1)  # listed after the tree's property
        create_property(api, name="Second")
        ok(api.post(tree.batch, json={"readings": monthly(2025, range(1, 4))}), 201)
        meter = f"/v1/buildings/{tree.bid}/meters/{tree.mid}"
        for path, queries in (
            (meter, 1),
            ("/v1/properties?per_page=1", 1),
            (tree.readings + "?per_page=1", 2),
        ):
            seen = _statements_during(engine, lambda path=path: api.get(path))
            assert len(seen) == 1 + queries, (path, seen)
            assert "api_keys" in seen[0]
        listed = ok(api.get("/v1/properties", params={"per_page": 1}))
        assert listed["meta"] == {"total": 2, "page": 1, "per_page": 1, "total_pages": 2}
        assert listed["data"][0]["id"] == tree.pid and listed["data"][0]["building_count"] == 1
        assert listed["data"][0]["total_gfa_m2"] == BUILDING["gfa_m2"]
        page = ok(api.get(tree.readings, params={"per_page": 1, "page": 3}))
        assert page["meta"]["total"] == 3 and page["data"][0]["start_date"] == "2025-03-01"


def test_the_meter_reads_answer_the_same_404s(tmp_path: Path, clock: FakeClock) -> None:
    """One query finds the building and its meter: a building that does not exist, or that the
    caller may not see (another organisation, or a property outside a user's access), is not
    found as a building; a meter of another building is not found as a meter."""
    restricted: dict[str, Principal] = {}
    app = create_app(
        service_settings(tmp_path / "svc.db", clock),
        token_resolvers=[lambda _session, token, _now: restricted.get(token)],
    )
    with app.state.db.write() as session:
        info = admin.bootstrap(session, now=clock())
    with TestClient(app, headers={"Authorization": f"Bearer {info['test_key']}"}) as api:
        seen, hidden = Tree(api), Tree(api)
        ok(api.post(hidden.batch, json={"readings": monthly(2025, range(1, 3))}), 201)
        restricted["limited-user-token"] = Principal(
            kind="user",
            org_id=info["org_id"],
            environment="test",
            scopes=frozenset(SCOPES),
            identity="usr_limited",
            user_id=info["owner_user_id"],
            user_role="admin",
            property_access=frozenset({seen.pid}),
        )
        other = _other_organisation_key(app, clock)
        cases = [
            ("bld_missing", hidden.mid, None, "building"),
            (seen.bid, hidden.mid, None, "meter"),
            (hidden.bid, "mtr_missing", None, "meter"),
            (hidden.bid, hidden.mid, other, "building"),
            (hidden.bid, hidden.mid, "limited-user-token", "building"),
        ]
        for building_id, meter_id, token, resource in cases:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            for suffix in ("", "/readings"):
                path = f"/v1/buildings/{building_id}/meters/{meter_id}{suffix}"
                r = api.get(path, headers=headers)
                assert r.status_code == 404, (path, token, r.text)
                assert r.json()["error"]["resource"] == resource, (path, token)
        limited = {"Authorization": "Bearer limited-user-token"}
        assert ok(api.get(f"/v1/buildings/{seen.bid}/meters/{seen.mid}", headers=limited))
        listed = ok(api.get("/v1/properties", headers=limited))
        assert [p["id"] for p in listed["data"]] == [seen.pid] and listed["meta"]["total"] == 1


def _other_organisation_key(app: Any, clock: FakeClock) -> str:
    with app.state.db.write() as session:
        return admin.bootstrap(session, owner_email="eve@other.example", now=clock())["test_key"]


def test_a_pooled_connection_gets_the_writers_wait_back_after_a_request_write(
    tmp_path: Path,
) -> None:
    """SQLite's busy timeout is set only when it changes (not on every BEGIN): a connection that
    served a request's write (its shorter wait) waits the writers' 30 s again for a worker."""
    db = Database(
        f"sqlite:///{tmp_path / 'svc.db'}", DatabaseLimits(read_slots=1, wait_seconds=2.5)
    )
    db.create_all()

    def busy_timeout(session: Any) -> int:
        return session.connection().exec_driver_sql("PRAGMA busy_timeout").scalar()

    async def request_write() -> int:
        async with db.request_write() as session:
            return busy_timeout(session)

    try:
        for _ in range(3):  # the same pooled connections again and again
            assert anyio.run(request_write) == 2500
            with db.write() as session:
                assert busy_timeout(session) == 30_000
            with db.read() as session:
                assert busy_timeout(session) == 30_000
    finally:
        db.dispose()
