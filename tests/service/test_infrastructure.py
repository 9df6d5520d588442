"""Standard infrastructure (issues 13 and 18): migrations, column limits, the outbox fan-out, row
locks and shared rate limits. Tests marked `postgres` or `redis` need the servers named by
BPSERVICE_TEST_DB_URL / BPSERVICE_TEST_REDIS_URL (.ci/run starts both) and skip without them."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, func, select, text

from bpservice.app import create_app
from bpservice.db import migrate
from bpservice.db.models import Event
from bpservice.db.webhook_models import WebhookDelivery, WebhookSubscription
from bpservice.events import record_event
from bpservice.ids import new_id
from bpservice.settings import RateLimits, Settings
from bpservice.workers import webhooks
from tests.conftest import (
    TEST_DB_URL,
    TEST_REDIS_URL,
    FakeClock,
    LiveServer,
    Service,
    _bootstrap,
    fresh_database_url,
    service_settings,
)
from tests.service.conftest import PROPERTY, ok

needs_postgres = pytest.mark.skipif(
    TEST_DB_URL is None, reason="BPSERVICE_TEST_DB_URL (PostgreSQL) not set; .ci/run sets it"
)
needs_redis = pytest.mark.skipif(
    TEST_REDIS_URL is None, reason="BPSERVICE_TEST_REDIS_URL not set; .ci/run sets it"
)


# --- migrations -----------------------------------------------------------------------------------


def test_migrations_build_exactly_the_models_schema(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from bpservice.db.all_models import Base

    engine = create_engine(fresh_database_url(tmp_path / "m.db"))
    migrate.upgrade(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        assert context.get_current_revision() == migrate.head_revision()
    engine.dispose()


def test_serve_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    with pytest.raises(migrate.SchemaNotCurrent, match="bpservice admin migrate"):
        create_app(Settings(database_url=url, run_workers=False, migrate_on_start=False))
    engine = create_engine(url)
    migrate.upgrade(engine)
    with engine.begin() as conn:  # an older (or unknown) revision is refused too
        conn.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
    with pytest.raises(migrate.SchemaNotCurrent, match="newer"):
        create_app(Settings(database_url=url, run_workers=False, migrate_on_start=False))
    engine.dispose()


def test_admin_migrate_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from bpservice.cli import app

    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    first = runner.invoke(app, ["admin", "migrate", "--db", db, "--json"])
    assert first.exit_code == 0, first.output
    assert '"from": null' in first.output and migrate.head_revision() in first.output
    again = runner.invoke(app, ["admin", "migrate", "--db", db])
    assert again.exit_code == 0 and "already at revision" in again.output


# --- column limits = API limits, NUL in path ids ---------------------------------------------------


def test_longest_accepted_address_is_stored_whole(api: httpx.Client) -> None:
    address = {
        "street": "s" * 200,
        "city": "c" * 200,
        "state": "t" * 200,
        "postal_code": "p" * 200,
        "country": "GB",
    }
    created = ok(api.post("/v1/properties", json={**PROPERTY, "address": address}), 201)["data"]
    stored = ok(api.get(f"/v1/properties/{created['id']}"))["data"]["address"]
    assert {k: stored[k] for k in address} == address
    too_long = {**address, "city": "c" * 201}
    r = api.post("/v1/properties", json={**PROPERTY, "address": too_long})
    assert r.status_code == 422


def test_nul_in_a_path_id_is_a_404_not_a_500(api: httpx.Client) -> None:
    for path in ("/v1/properties/prop_%00x", "/v1/buildings/bld_%00/meters", "/v1/users/usr%00"):
        assert api.get(path).status_code == 404, path


# --- the outbox ------------------------------------------------------------------------------------


def _subscribe(service: Service, now: dt.datetime) -> str:
    with service.app.state.db.write() as session:
        sub = WebhookSubscription(
            id=new_id("webhook"),
            org_id=service.org_id,
            environment="test",
            url="http://127.0.0.1:9/",
            events=["*"],
            secret="whsec_test",
            status="paused",  # deliveries are made, none is sent
            owner_user_id=service.owner_user_id,
            created_by=service.owner_user_id,
            cursor_seq=webhooks.current_seq(session),
            created_at=now,
            updated_at=now,
        )
        session.add(sub)
        return sub.id


def _event(service: Service, session, name: str) -> None:  # type: ignore[no-untyped-def]
    record_event(
        session,
        org_id=service.org_id,
        environment="test",
        type="property.created",
        data={"name": name},
        now=service.clock(),
    )


@needs_postgres
def test_an_event_committed_out_of_order_is_still_delivered(service: Service) -> None:
    """Issue 18: an event numbered below one already fanned out, committed afterwards."""
    now = service.clock()
    sub_id = _subscribe(service, now)
    db = service.app.state.db
    early = db._write()
    early.begin()
    _event(service, early, "early")  # takes the lower seq, commits last
    early.flush()
    with db.write() as session:
        _event(service, session, "late")
    with db.write() as session:
        assert webhooks.fan_out(session, now) == 1
    early.commit()
    early.close()
    with db.write() as session:
        assert webhooks.fan_out(session, now) == 1
    with db.read() as session:
        names = sorted(
            session.scalars(
                select(WebhookDelivery.body).where(WebhookDelivery.subscription_id == sub_id)
            )
        )
        assert len(names) == 2 and '"early"' in names[0] + names[1]
        assert session.scalar(select(func.count()).where(Event.fanned_out.is_(False))) == 0


@needs_postgres
def test_concurrent_fan_outs_and_claims_never_share_a_delivery(service: Service) -> None:
    now = service.clock()
    _subscribe(service, now)
    db = service.app.state.db
    with db.write() as session:
        for i in range(300):
            _event(service, session, f"e{i}")
        session.execute(
            WebhookSubscription.__table__.update().values(status="enabled")  # send them
        )
    claimed: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(10):
            with db.write() as session:
                webhooks.fan_out(session, now)
            with db.write() as session:
                jobs = webhooks._claim(session, now, service.app.state.secret_box)
            with lock:
                claimed.extend(job.delivery_id for job in jobs)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 300 and len(set(claimed)) == 300


# --- shared rate limits --------------------------------------------------------------------------


@needs_redis
def test_a_limit_holds_across_instances(tmp_path: Path) -> None:
    """Two instances over one database and one Redis share the per-key bucket."""
    clock = FakeClock()
    first = service_settings(tmp_path / "a.db", clock, rate_limits=RateLimits(per_key=4))
    second = Settings(
        database_url=first.database_url,
        clock=clock,
        run_workers=False,
        rate_limits=RateLimits(per_key=4),
        redis_url=first.redis_url,
        redis_prefix=first.redis_prefix,
        migrate_on_start=False,
    )
    app_a, app_b = create_app(first), create_app(second)
    with LiveServer(app_a) as a, LiveServer(app_b) as b:
        service = _bootstrap(app_a, clock, a.url)
        headers = {"Authorization": f"Bearer {service.test_key}"}
        codes = []
        for url in (a.url, b.url, a.url, b.url, a.url, b.url):
            codes.append(httpx.get(url + "/v1/properties", headers=headers).status_code)
        assert codes == [200, 200, 200, 200, 429, 429]


# --- webhook deadline and fairness -----------------------------------------------------------------


def _dripping_server() -> tuple[str, threading.Event]:
    """A receiver that answers one byte of its status line every 0.2 s, forever."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(0.2)
            for byte in b"HTTP/1.1 200 OK\r\n" * 100:
                if stop.is_set():
                    return
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/hook", stop


def test_an_attempt_has_a_total_deadline(service: Service) -> None:
    """Issue 13: httpx timeouts are per read; a receiver dripping bytes must still be cut off."""
    import time

    url, stop = _dripping_server()
    deps = webhooks.DeliveryDeps(db=service.app.state.db, timeout=1.0, allow_private=True)
    job = webhooks._Job("dlv_x", url, "whsec_x", "evt_x", b"{}", "token")
    started = time.monotonic()
    with webhooks.http_client(deps) as client:
        outcome = webhooks._send(client, job, service.clock(), started, None, deps.timeout)
    stop.set()
    elapsed = time.monotonic() - started
    assert outcome.failure_reason == "timeout" and 0.9 <= elapsed < 2.5, (outcome, elapsed)


def test_claims_share_slots_between_organisations(service: Service) -> None:
    """Issue 13: one organisation's backlog cannot take every slot of a worker."""
    from bpservice import admin

    now = service.clock()
    db = service.app.state.db
    with db.write() as session:
        other = admin.bootstrap(session, now=now)
    subs = {}
    for org_id, owner in (
        (service.org_id, service.owner_user_id),
        (other["org_id"], other["owner_user_id"]),
    ):
        with db.write() as session:
            sub = WebhookSubscription(
                id=new_id("webhook"), org_id=org_id, environment="test", url="http://127.0.0.1:9/",
                events=["*"], secret="whsec_test", status="enabled", owner_user_id=owner,
                created_by=owner, cursor_seq=0, created_at=now, updated_at=now,
            )  # fmt: skip
            session.add(sub)
            subs[org_id] = sub.id
    with db.write() as session:
        for i, org_id in enumerate([service.org_id] * 12 + [other["org_id"]]):
            session.add(
                WebhookDelivery(
                    id=new_id("delivery"), subscription_id=subs[org_id], event_id=f"evt_{i}",
                    event_seq=i, event_type="property.created", event_created_at=now, body="{}",
                    status="pending", attempt_count=0, next_attempt_at=now, created_at=now,
                )
            )  # fmt: skip
    with db.write() as session:
        first = webhooks._claim(session, now, service.app.state.secret_box, limit=8, busy={})
    orgs = [job.org_id for job in first]
    assert orgs.count(other["org_id"]) == 1 and orgs.count(service.org_id) == webhooks.ORG_SHARE
    with db.write() as session:  # the busy organisation gets nothing more until a slot frees
        assert (
            webhooks._claim(
                session, now, service.app.state.secret_box, limit=8, busy={service.org_id: 4}
            )
            == []
        )
    with db.write() as session:
        again = webhooks._claim(
            session, now, service.app.state.secret_box, limit=8, busy={service.org_id: 3}
        )
    assert [job.org_id for job in again] == [service.org_id]


def test_report_queue_takes_organisations_in_turn(service: Service) -> None:
    """Issue 13: 20 queued reports of one organisation must not hold back another's."""
    from bpservice import admin
    from bpservice.db.report_models import Report
    from bpservice.workers import reports

    db = service.app.state.db
    now = service.clock()
    with db.write() as session:
        other = admin.bootstrap(session, now=now)
    with db.write() as session:
        for i, org_id in enumerate([service.org_id] * 5 + [other["org_id"]]):
            session.add(
                Report(
                    id=f"rpt_fair{i}", org_id=org_id, environment="test", type="portfolio_summary",
                    format="json", status="processing", period_start=dt.date(2024, 1, 1),
                    period_end=dt.date(2024, 12, 31), requested_by=service.owner_user_id,
                    created_at=now + dt.timedelta(seconds=i),
                    estimated_completion=now, attempts=0,
                )
            )  # fmt: skip
    order = []
    for step in range(3):
        order.append(reports._claim(db, now + dt.timedelta(seconds=10 + step)))
    assert order == ["rpt_fair0", "rpt_fair5", "rpt_fair1"]


def test_a_database_from_before_migrations_is_adopted(tmp_path: Path) -> None:
    """A SQLite file made by `create_all` before migrations existed (the embedded default on
    users' machines) upgrades in place; events the old cursor had passed stay fanned out."""
    url = f"sqlite:///{tmp_path / 'legacy.db'}"
    engine = create_engine(url)
    migrate.upgrade(engine, migrate.LEGACY_REVISION)
    now = "2026-01-01 00:00:00"
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE alembic_version"))  # as create_all left it
        conn.execute(text(f"INSERT INTO organisations VALUES ('org_1', 'Org', '{now}')"))
        conn.execute(
            text(
                "INSERT INTO users (id, org_id, email, role, status, mfa_enabled, created_at, "
                f"updated_at) VALUES ('usr_1', 'org_1', 'o@x.io', 'owner', 'active', 0, '{now}', "
                f"'{now}')"
            )
        )
        for seq in (1, 2, 3):
            conn.execute(
                text(
                    "INSERT INTO events (seq, id, org_id, environment, type, created_at, data) "
                    f"VALUES ({seq}, 'evt_{seq}', 'org_1', 'test', 'property.created', '{now}', "
                    "'{}')"
                )
            )
        conn.execute(
            text(
                "INSERT INTO webhook_subscriptions (id, org_id, environment, url, events, secret, "
                "status, owner_user_id, created_by, cursor_seq, created_at, updated_at) VALUES "
                f"('whk_1', 'org_1', 'test', 'http://x/', '[\"*\"]', 's', 'enabled', 'usr_1', "
                f"'usr_1', 2, '{now}', '{now}')"
            )
        )
    assert migrate.upgrade(engine) == (None, migrate.head_revision())
    migrate.check_current(engine)
    with engine.connect() as conn:
        flags = dict(conn.execute(text("SELECT id, fanned_out FROM events")).all())
    assert flags == {"evt_1": 1, "evt_2": 1, "evt_3": 0}
    engine.dispose()


@needs_postgres
def test_overlap_queries_use_index_seeks_on_postgresql(service: Service, api: httpx.Client) -> None:
    """The PostgreSQL counterpart of test_core_storage's EXPLAIN QUERY PLAN check."""
    from sqlalchemy import event, insert

    from bpservice.db.models import Reading
    from bpservice.db.readings import readings_near
    from tests.service.conftest import Tree

    tree = Tree(api)
    db = service.app.state.db
    start = dt.date(1990, 1, 1)
    rows = [
        {
            "id": f"rdg_{i:024d}",
            "meter_id": tree.mid,
            "building_id": tree.bid,
            "org_id": service.org_id,
            "environment": "test",
            "start_date": start + dt.timedelta(days=i),
            "end_date": start + dt.timedelta(days=i),
            "consumption": 1.0,
            "unit": "kWh",
            "source": "api",
            "anomaly_flags": [],
            "created_at": service.clock(),
        }
        for i in range(5000)
    ]
    with db.write() as session:
        session.execute(insert(Reading), rows)
    with db.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE readings")
        conn.commit()
    statements: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        if "FROM readings" in statement:
            statements.append((statement, params))

    event.listen(db.engine, "before_cursor_execute", capture)
    with db.write() as session:
        readings_near(session, tree.mid, dt.date(2000, 1, 1), dt.date(2000, 3, 1))
        event.remove(db.engine, "before_cursor_execute", capture)
        plans = [
            " ".join(
                row[0] for row in session.connection().exec_driver_sql("EXPLAIN " + sql, params)
            )
            for sql, params in statements
        ]
    assert len(plans) == 2
    for plan in plans:
        assert "Index" in plan and "Seq Scan on readings" not in plan, plan


def test_an_unreachable_redis_refuses_requests_instead_of_ignoring_limits(tmp_path: Path) -> None:
    """Fail closed: with the shared counts unreachable, no limit could be enforced."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'r.db'}",
        run_workers=False,
        redis_url="redis://127.0.0.1:1/0",  # nothing listens on port 1
    )
    app = create_app(settings)
    with LiveServer(app) as server:
        r = httpx.get(server.url + "/v1/properties", headers={"Authorization": "Bearer x"})
    assert r.status_code == 503 and r.json()["error"]["code"] == "service_unavailable"
    assert r.headers["Retry-After"] == "1" and r.json()["error"]["retry_after"] == 1


def test_a_busy_database_at_the_keys_lookup_answers_503_not_500(tmp_path: Path) -> None:
    """The edge looks the bearer up before any dependency runs: a database that stayed busy there
    (a pool or lock wait that ran out) is overload, 503 with Retry-After, as in the endpoints."""
    from bpservice.db.session import DatabaseBusy

    def busy(session: object, token: str, now: object) -> None:
        raise DatabaseBusy("No read slot became free within 10 s.")

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'b.db'}", run_workers=False)
    app = create_app(settings, token_resolvers=[busy])
    with LiveServer(app) as server:
        r = httpx.get(server.url + "/v1/properties", headers={"Authorization": "Bearer x"})
    assert r.status_code == 503, r.text
    assert r.headers["Retry-After"] == "1"
    assert r.json()["error"] == {
        "code": "service_unavailable",
        "message": "The service is busy: No read slot became free within 10 s. Retry in 1 s.",
        "retry_after": 1,
    }
