"""Outbox fan-out flag, delivery claim tokens, address columns as long as the API allows

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("fanned_out", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.create_index("ix_events_fan_out", ["fanned_out", "seq"], unique=False)
    # Events the old cursor had passed for every live subscription were fanned out already; the
    # rest are fanned out again, where ON CONFLICT DO NOTHING skips deliveries that exist.
    op.execute(
        """
        UPDATE events SET fanned_out = TRUE
        WHERE seq <= COALESCE(
            (SELECT MIN(cursor_seq) FROM webhook_subscriptions
             WHERE status IN ('enabled', 'paused')),
            (SELECT MAX(seq) FROM events))
        """
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claim_token", sa.String(length=32), nullable=True))
    with op.batch_alter_table("properties", schema=None) as batch_op:
        for column, old in (("city", 120), ("state", 120), ("postal_code", 32)):
            batch_op.alter_column(
                column, type_=sa.String(length=200), existing_type=sa.String(length=old)
            )


def downgrade() -> None:
    with op.batch_alter_table("properties", schema=None) as batch_op:
        for column, old in (("city", 120), ("state", 120), ("postal_code", 32)):
            batch_op.alter_column(
                column, type_=sa.String(length=old), existing_type=sa.String(length=200)
            )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_column("claim_token")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_fan_out")
        batch_op.drop_column("fanned_out")
