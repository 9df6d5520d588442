"""Schema migrations (Alembic): `bpservice admin migrate` runs them, `serve` checks them.

Migrations run once, explicitly, never as a side effect of every process starting. On PostgreSQL a
session advisory lock serialises concurrent `migrate` runs, so two operators (or two deploy jobs)
cannot race each other into a half-made schema. SQLite files may migrate on start (the demo and
`serve --db file` do), because one file has one owner."""

from __future__ import annotations

from importlib.resources import files

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

# Any constant works; it only has to be the same in every process.
MIGRATION_LOCK_ID = 0x6270_7379_6E63  # "bpsync"


class SchemaNotCurrent(RuntimeError):
    """The database is not at the schema this code expects."""


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("bpservice.db") / "migrations"))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


# Revision whose schema equals what `create_all` made before migrations existed.
LEGACY_REVISION = "0001"


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str]:
    """Bring the schema to `revision`; returns (revision before, revision after). A database made
    before migrations existed (tables, no alembic_version) is adopted at LEGACY_REVISION first."""
    config = _config()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        before = MigrationContext.configure(conn).get_current_revision()
        config.attributes["connection"] = conn
        if before is None and inspect(conn).has_table("organisations"):
            command.stamp(config, LEGACY_REVISION)
        command.upgrade(config, revision)
        after = MigrationContext.configure(conn).get_current_revision()
    assert after is not None
    return before, after


def check_current(engine: Engine) -> None:
    """Refuse to serve on an un-migrated, older or newer schema, with the command that fixes it."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    url = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise SchemaNotCurrent(
            f"The database {url} has no bpservice schema. "
            f"Run `bpservice admin migrate --db {url}` once, then start the service."
        )
    known = {rev.revision for rev in ScriptDirectory.from_config(_config()).walk_revisions()}
    if current in known:
        raise SchemaNotCurrent(
            f"The database {url} is at schema revision {current}; this version needs {head}. "
            f"Run `bpservice admin migrate --db {url}`, then start the service."
        )
    raise SchemaNotCurrent(
        f"The database {url} is at schema revision {current}, which this version of bpservice "
        "does not know (it is newer). Upgrade bpservice rather than serving an older version."
    )
