"""Engine and sessions. SQLite gets WAL, foreign keys, a busy timeout, and write transactions that
start with BEGIN IMMEDIATE so two writers never both read "no overlap" and then both insert.

SQLite has one writer at a time. Within a process, writers queue on one lock instead of polling the
file lock (the driver's busy handler sleeps in growing steps, which made four concurrent writers
slower in total than one). Other processes on the same file still meet the busy timeout.

Requests (the API's session dependencies) take a slot first, on the event loop: a write slot
(SQLite: one; PostgreSQL: `DatabaseLimits.write_slots`) or a read slot. Waiting for a slot holds
no worker thread, and the connection pool has room for every slot, so whoever holds a slot (the
SQLite lock, a connection, a PostgreSQL row lock) can always get a thread to finish and commit.
Before, 40 writers waiting for SQLite's lock held all 40 threads while the holder needed one to
commit, and everything failed after 30 s. A request that finds its queue full, or waits longer
than `wait_seconds` (for its slot, the lock, or a row lock), gets `DatabaseBusy`: 503 with
Retry-After, never 500."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from bpservice.db.all_models import Base
from bpservice.settings import DatabaseLimits

# How long writers outside a request (workers, the CLI) wait for SQLite's lock.
WRITER_WAIT_SECONDS = 30.0
_WRITER_WAIT_MS = int(WRITER_WAIT_SECONDS * 1000)
# The busy timeout a pooled SQLite connection has now (in its pool record's info).
_BUSY_TIMEOUT = "bpservice_busy_timeout_ms"
# Write slots on a server database when DatabaseLimits.write_slots is None.
SERVER_WRITE_SLOTS = 8
# Connections beyond the slots, for sessions opened outside the dependencies (the edge's token
# lookup, the authorization server's pages, workers): they never hold a slot, so they can always
# get one of these back from a request that is running.
POOL_RESERVE = 4

T = TypeVar("T")


class DatabaseBusy(Exception):
    """No database slot (or lock) within the wait: the request did nothing and may be retried."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


# SQLite's answers when another connection holds the lock past the busy timeout.
_SQLITE_BUSY = ("database is locked", "database is busy", "database table is locked")
# PostgreSQL: lock_timeout ran out (lock_not_available), a deadlock was broken, or a
# serialization failure; each rolls the transaction back, and the same request may then succeed.
_PG_RETRYABLE = ("55P03", "40P01", "40001")


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` says the database was busy (a retry may succeed), not that the request or the
    service is wrong: a pool, lock or row-lock wait that ran out."""
    if isinstance(exc, DatabaseBusy | PoolTimeout):
        return True
    if isinstance(exc, DBAPIError):
        orig = exc.orig
        if isinstance(orig, sqlite3.OperationalError):
            return any(text in str(orig).lower() for text in _SQLITE_BUSY)
        return getattr(orig, "sqlstate", None) in _PG_RETRYABLE
    return False


def make_engine(
    url: str,
    *,
    pool_size: int | None = None,
    max_overflow: int = 0,
    pool_timeout: float = 30.0,
) -> Engine:
    """The engine; `pool_size` (with `max_overflow` more) caps its connections, and a wait for
    one ends after `pool_timeout` seconds."""
    kwargs: dict[str, Any] = {}
    memory = url in ("sqlite://", "sqlite:///:memory:")
    if pool_size is not None and not memory:
        kwargs |= {
            "pool_size": pool_size,
            "max_overflow": max_overflow,
            "pool_timeout": pool_timeout,
        }
    if not url.startswith("sqlite"):
        engine = create_engine(url, pool_pre_ping=True, **kwargs)

        @event.listens_for(engine, "begin")
        def _on_pg_begin(conn: Any) -> None:
            wait_ms = conn.get_execution_options().get("lock_wait_ms")
            if wait_ms is not None:
                # A row lock held too long (FOR UPDATE on a meter) ends the wait with 55P03.
                conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(wait_ms)}")

        return engine
    kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    if memory:
        kwargs["poolclass"] = StaticPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={_WRITER_WAIT_MS}")
        cur.close()
        record.info[_BUSY_TIMEOUT] = _WRITER_WAIT_MS

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        options = conn.get_execution_options()
        # A pooled connection must not keep a request's shorter wait: the wait is set whenever
        # it differs from the one this connection last had (its pool record remembers it), on
        # the driver's connection like the settings above (a setting, not a statement of the
        # service's: the statement counters of tests/service see the same BEGIN and queries
        # whichever pooled connection a request gets).
        wait_ms = int(options.get("lock_wait_ms", _WRITER_WAIT_MS))
        if conn.info.get(_BUSY_TIMEOUT) != wait_ms:
            conn.connection.dbapi_connection.execute(f"PRAGMA busy_timeout={wait_ms}")
            conn.info[_BUSY_TIMEOUT] = wait_ms
        if options.get("sqlite_single_statement", False):
            return  # Database.read_statement: the statement is its own transaction
        immediate = options.get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


@dataclass
class _Queue:
    free: int
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)


class Gate:
    """At most `slots` holders; at most `queue` more waiting, first come first served, each for at
    most `wait_seconds`. Waiting is on the event loop: no thread is held. One state per event
    loop (an app can be driven by more than one loop, e.g. in tests)."""

    def __init__(self, name: str, slots: int, queue: int, wait_seconds: float) -> None:
        self.name = name
        self.slots = slots
        self.queue = queue
        self.wait_seconds = wait_seconds
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    def _state(self) -> _Queue:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _Queue(self.slots)
        return state

    async def acquire(self) -> None:
        """Take a slot, or raise DatabaseBusy (queue full, or no slot within the wait)."""
        state = self._state()
        if state.free > 0 and not state.waiters:
            state.free -= 1
            return
        if len(state.waiters) >= self.queue:
            raise DatabaseBusy(f"Too many {self.name} requests are waiting for the database.")
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        state.waiters.append(waiter)
        try:
            async with asyncio.timeout(self.wait_seconds):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted just as the wait ended: pass the slot on
            else:
                waiter.cancel()
                with suppress(ValueError):  # a release may have dropped it already
                    state.waiters.remove(waiter)
            if isinstance(exc, TimeoutError):
                raise DatabaseBusy(
                    f"No {self.name} slot became free within {self.wait_seconds:g} s."
                ) from None
            raise

    def release(self) -> None:
        state = self._state()
        while state.waiters:
            waiter = state.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        state.free += 1

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()


async def _in_thread(func: Callable[..., T], *args: Any) -> T:
    """Run a blocking call in a thread outside the default limiter: a request holding a slot
    never waits for one of the 40 threads to open or end its transaction (FastAPI does the same
    for a dependency's exit). The gates bound how many such calls run at once."""
    return await anyio.to_thread.run_sync(func, *args, limiter=anyio.CapacityLimiter(1))


class Database:
    """Owns the engine and hands out read and write sessions: `read`/`write` for code that runs
    in its own thread (workers, the CLI), `request_read`/`request_write` for requests."""

    def __init__(self, url: str, limits: DatabaseLimits | None = None) -> None:
        self.url = url
        is_sqlite = url.startswith("sqlite")
        limits = limits or DatabaseLimits()
        if limits.write_slots is None:
            limits = replace(limits, write_slots=1 if is_sqlite else SERVER_WRITE_SLOTS)
        assert limits.write_slots is not None
        self.limits = limits
        self.engine = make_engine(
            url,
            pool_size=limits.write_slots + limits.read_slots + POOL_RESERVE,
            max_overflow=POOL_RESERVE,
            # Holders of a slot always find a connection; should that ever fail, 503 in time.
            pool_timeout=limits.wait_seconds,
        )
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._single_statement = self.engine.execution_options(sqlite_single_statement=True)
        self._write = sessionmaker(
            self.engine.execution_options(sqlite_immediate=True), expire_on_commit=False
        )
        wait_ms = max(1, int(limits.wait_seconds * 1000))
        self._request_write = sessionmaker(
            self.engine.execution_options(sqlite_immediate=True, lock_wait_ms=wait_ms),
            expire_on_commit=False,
        )
        # A plain lock: acquired and released in different threads.
        self._writer = threading.Lock() if self.is_sqlite else None
        self.write_gate = Gate("write", limits.write_slots, limits.write_queue, limits.wait_seconds)
        self.read_gate = Gate("read", limits.read_slots, limits.read_queue, limits.wait_seconds)

    def create_all(self) -> None:
        """Tables straight from the models, without migrations (only for throw-away databases)."""
        Base.metadata.create_all(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()

    def _busy(self, exc: BaseException) -> DatabaseBusy:
        if isinstance(exc, DatabaseBusy):
            exc.retry_after = self.limits.retry_after_seconds
            return exc
        return DatabaseBusy("The database is busy.", self.limits.retry_after_seconds)

    # --- for code in its own thread ----------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Session]:
        try:
            with self._read() as session:
                yield session
        except Exception as exc:
            if is_busy(exc):
                raise self._busy(exc) from exc
            raise

    @contextmanager
    def read_statement(self) -> Iterator[Connection]:
        """A bare connection for one read statement (the key's lookup, on every request): no
        session to set up, and on SQLite no BEGIN, a single statement being a transaction of
        its own (more statements would each be one: use `read` for those)."""
        try:
            with self._single_statement.connect() as connection:
                yield connection
        except Exception as exc:
            if is_busy(exc):
                raise self._busy(exc) from exc
            raise

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits on success and rolls back on any error."""
        try:
            if self._writer is None:
                with self._write() as session, session.begin():
                    yield session
                return
            # Wait as long as the busy timeout would have (a request meeting this: 503).
            if not self._writer.acquire(timeout=WRITER_WAIT_SECONDS):
                raise DatabaseBusy("The database is locked.")
            try:
                with self._write() as session, session.begin():
                    yield session
            finally:
                self._writer.release()
        except Exception as exc:
            if is_busy(exc):
                raise self._busy(exc) from exc
            raise

    # --- for requests, on the event loop ------------------------------------------------------

    @asynccontextmanager
    async def request_read(self) -> AsyncIterator[Session]:
        """A read session for a request, once a read slot is free (SQLite WAL readers never wait
        for the writer). Closed, returning its connection, in a thread of its own, unless the
        endpoint closed it already in its thread (the hot GETs do: one thread trip fewer)."""
        try:
            async with self.read_gate.slot():
                session = self._read()  # no I/O until the endpoint's first query
                try:
                    yield session
                finally:
                    if session.in_transaction():
                        with anyio.CancelScope(shield=True):
                            await _in_thread(session.close)
                    else:
                        # Closed by the endpoint in its own thread (`with session:`), or never
                        # used: no connection to give back, so no I/O and no trip to a thread.
                        session.close()
        except Exception as exc:
            if is_busy(exc):
                raise self._busy(exc) from exc
            raise

    @asynccontextmanager
    async def request_write(self) -> AsyncIterator[Session]:
        """A write transaction for a request: a write slot (waited for on the event loop), then
        SQLite's lock and BEGIN IMMEDIATE, or PostgreSQL's BEGIN with a lock_timeout; commits on
        success and rolls back on any error. Every wait is bounded by `wait_seconds`."""
        deadline = time.monotonic() + self.limits.wait_seconds
        try:
            async with self.write_gate.slot():
                session = await self._open_write_shielded(deadline)
                try:
                    yield session
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await _in_thread(self._end_write, session, False)
                    raise
                with anyio.CancelScope(shield=True):
                    await _in_thread(self._end_write, session, True)
        except Exception as exc:
            if is_busy(exc):
                raise self._busy(exc) from exc
            raise

    async def _open_write_shielded(self, deadline: float) -> Session:
        """`_open_write` in a thread; a request cancelled meanwhile does not leak what the thread
        opens (SQLite's lock, kept, would refuse every later write)."""
        opening = asyncio.ensure_future(_in_thread(self._open_write, deadline))
        try:
            return await asyncio.shield(opening)
        except BaseException:

            def end(done: asyncio.Future[Session]) -> None:
                if not done.cancelled() and done.exception() is None:
                    threading.Thread(
                        target=self._end_write, args=(done.result(), False), daemon=True
                    ).start()

            opening.add_done_callback(end)
            raise

    def _open_write(self, deadline: float) -> Session:
        if self._writer is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not self._writer.acquire(timeout=left):
                raise DatabaseBusy(
                    f"The database stayed locked for {self.limits.wait_seconds:g} s."
                )
        session = self._request_write()
        try:
            session.connection()  # BEGIN IMMEDIATE now, with the lock held
        except BaseException:
            session.close()
            if self._writer is not None:
                self._writer.release()
            raise
        return session

    def _end_write(self, session: Session, commit: bool) -> None:
        try:
            if commit:
                session.commit()
        finally:
            try:
                session.close()  # rolls back whatever did not commit
            finally:
                if self._writer is not None:
                    self._writer.release()
