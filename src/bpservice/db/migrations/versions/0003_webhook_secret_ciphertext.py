"""Room for encrypted webhook secrets (a 256-character secret is ~440 characters sealed)

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.alter_column(
            "secret", type_=sa.String(length=512), existing_type=sa.String(length=256)
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.alter_column(
            "secret", type_=sa.String(length=256), existing_type=sa.String(length=512)
        )
