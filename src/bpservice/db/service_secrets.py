"""Secrets the service makes for itself (URL-signing key, form-signing key): created once in the
database on first use and then read by every instance, never one per process."""

from __future__ import annotations

import datetime as dt
import secrets
import threading
import weakref

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from bpservice.db.report_models import ServiceSecret
from bpservice.db.session import Database

_cache: weakref.WeakKeyDictionary[Database, dict[str, bytes]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def service_secret(db: Database, name: str, now: dt.datetime) -> bytes:
    """The 32-byte secret called `name`, made on first use; cached per database."""
    with _lock:
        known = _cache.setdefault(db, {})
        if name in known:
            return known[name]
        try:
            with db.write() as session:
                row = session.get(ServiceSecret, name)
                if row is None:
                    row = ServiceSecret(name=name, value=secrets.token_hex(32), created_at=now)
                    session.add(row)
                value = row.value
        except IntegrityError:  # another instance created it first; use theirs
            with db.read() as session:
                value = session.scalars(
                    select(ServiceSecret.value).where(ServiceSecret.name == name)
                ).one()
        known[name] = bytes.fromhex(value)
        return known[name]
