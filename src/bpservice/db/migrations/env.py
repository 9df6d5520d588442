"""Alembic environment: runs on the connection that bpservice.db.migrate hands over."""

from __future__ import annotations

from alembic import context

from bpservice.db.all_models import Base

config = context.config
connection = config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite alters tables by copying them; batch mode does that for us.
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
