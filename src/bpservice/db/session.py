"""Engine and sessions. SQLite gets WAL, foreign keys, a busy timeout, and write transactions that
start with BEGIN IMMEDIATE so two writers never both read "no overlap" and then both insert.

SQLite has one writer at a time. Within a process, writers queue on one lock instead of polling the
file lock (the driver's busy handler sleeps in growing steps, which made four concurrent writers
slower in total than one). Other processes on the same file still meet the busy timeout."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from bpservice.db.all_models import Base

WRITER_WAIT_SECONDS = 30.0


def make_engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": 30}}
    if url in ("sqlite://", "sqlite:///:memory:"):
        kwargs["poolclass"] = StaticPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """Owns the engine and hands out read and write sessions."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(
            self.engine.execution_options(sqlite_immediate=True), expire_on_commit=False
        )
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        # A plain lock: FastAPI may enter a write dependency in one thread and leave it in another.
        self._writer = threading.Lock() if self.is_sqlite else None

    def create_all(self) -> None:
        """Tables straight from the models, without migrations (only for throw-away databases)."""
        Base.metadata.create_all(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits on success and rolls back on any error."""
        if self._writer is None:
            with self._write() as session, session.begin():
                yield session
            return
        # Wait as long as the busy timeout would have, then fail the same way.
        if not self._writer.acquire(timeout=WRITER_WAIT_SECONDS):
            raise OperationalError("BEGIN IMMEDIATE", {}, TimeoutError("database is locked"))
        try:
            with self._write() as session, session.begin():
                yield session
        finally:
            self._writer.release()
