"""Initial service schema: the tables as `create_all` made them before migrations existed, so a
database from that time is adopted by stamping it at this revision (bpservice.db.migrate).

Revision ID: 0001
Revises:
Create Date: 2026-11-24 19:24:50.517984
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import bpservice.db.types

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_scope_seq", ["org_id", "environment", "seq"], unique=False)

    op.create_table(
        "organisations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "service_secrets",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.String(length=1000), nullable=True),
        sa.Column("redirect_uris", sa.JSON(), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("oauth_clients", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_clients_org_id"), ["org_id"], unique=False)

    op.create_table(
        "properties",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("street", sa.String(length=200), nullable=False),
        sa.Column("city", sa.String(length=120), nullable=False),
        sa.Column("state", sa.String(length=120), nullable=True),
        sa.Column("postal_code", sa.String(length=32), nullable=True),
        sa.Column("country", sa.String(length=2), nullable=False),
        sa.Column("latitude", sa.Float(), nullable=True),
        sa.Column("longitude", sa.Float(), nullable=True),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("internal_ref", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("archived_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("updated_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("properties", schema=None) as batch_op:
        batch_op.create_index(
            "ix_properties_scope_created", ["org_id", "environment", "created_at"], unique=False
        )

    op.create_table(
        "report_templates",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.String(length=1000), nullable=True),
        sa.Column("title", sa.String(length=200), nullable=True),
        sa.Column("columns", sa.JSON(), nullable=False),
        sa.Column("filters", sa.JSON(), nullable=True),
        sa.Column("sort", sa.String(length=64), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("updated_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("report_templates", schema=None) as batch_op:
        batch_op.create_index(
            "ix_report_templates_scope", ["org_id", "environment", "created_at"], unique=False
        )

    op.create_table(
        "reports",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("format", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("period_start", sa.Date(), nullable=False),
        sa.Column("period_end", sa.Date(), nullable=False),
        sa.Column("building_id", sa.String(length=32), nullable=True),
        sa.Column("property_id", sa.String(length=32), nullable=True),
        sa.Column("filters", sa.JSON(), nullable=True),
        sa.Column("template_id", sa.String(length=32), nullable=True),
        sa.Column("template", sa.JSON(), nullable=True),
        sa.Column("property_access", sa.JSON(), nullable=True),
        sa.Column("requested_by", sa.String(length=32), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("estimated_completion", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("started_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("completed_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("failed_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("failure_code", sa.String(length=64), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("file_size_bytes", sa.Integer(), nullable=True),
        sa.Column("filename", sa.String(length=200), nullable=True),
        sa.Column("content_type", sa.String(length=100), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("reports", schema=None) as batch_op:
        batch_op.create_index(
            "ix_reports_scope_created", ["org_id", "environment", "created_at"], unique=False
        )
        batch_op.create_index("ix_reports_status_created", ["status", "created_at"], unique=False)

    op.create_table(
        "users",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("property_access", sa.JSON(), nullable=True),
        sa.Column("mfa_enabled", sa.Boolean(), nullable=False),
        sa.Column("sso_provider", sa.String(length=64), nullable=True),
        sa.Column("password_hash", sa.String(length=256), nullable=True),
        sa.Column("last_login_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("invite_expires_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("activated_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("deactivated_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("updated_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("org_id", "email"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_org_id"), ["org_id"], unique=False)

    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("display_prefix", sa.String(length=32), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("last_used_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("revoked_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_hash"),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_org_id"), ["org_id"], unique=False)

    op.create_table(
        "buildings",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("property_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("primary_use_type", sa.String(length=32), nullable=False),
        sa.Column("use_types", sa.JSON(), nullable=True),
        sa.Column("gfa_m2", sa.Float(), nullable=False),
        sa.Column("nla_m2", sa.Float(), nullable=True),
        sa.Column("year_built", sa.Integer(), nullable=False),
        sa.Column("floors", sa.Integer(), nullable=False),
        sa.Column("occupancy_pct", sa.Float(), nullable=True),
        sa.Column("operating_hours_week", sa.Float(), nullable=True),
        sa.Column("renewable_capacity_kw", sa.Float(), nullable=True),
        sa.Column("car_park_area_m2", sa.Float(), nullable=True),
        sa.Column("data_quality_grade", sa.String(length=1), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("locked_through", sa.Date(), nullable=True),
        sa.Column("locked_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("updated_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.ForeignKeyConstraint(
            ["property_id"],
            ["properties.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("buildings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_buildings_property_id"), ["property_id"], unique=False)

    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("subject_id", sa.String(length=32), nullable=False),
        sa.Column("message", sa.String(length=1000), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.create_index("ix_notifications_user", ["user_id", "created_at"], unique=False)

    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("client_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("redirect_uri", sa.String(length=2048), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("code_challenge", sa.String(length=128), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("expires_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("used_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("family_id", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["oauth_clients.id"],
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("code_hash"),
    )
    op.create_table(
        "oauth_invitations",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("expires_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("used_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    with op.batch_alter_table("oauth_invitations", schema=None) as batch_op:
        batch_op.create_index("ix_invitations_user", ["user_id"], unique=False)

    op.create_table(
        "oauth_token_families",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("client_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("revoked_reason", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["oauth_clients.id"],
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("oauth_token_families", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_oauth_token_families_client_id"), ["client_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_oauth_token_families_user_id"), ["user_id"], unique=False
        )

    op.create_table(
        "report_files",
        sa.Column("report_id", sa.String(length=32), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["report_id"],
            ["reports.id"],
        ),
        sa.PrimaryKeyConstraint("report_id"),
    )
    op.create_table(
        "webhook_subscriptions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=True),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("secret", sa.String(length=256), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("owner_user_id", sa.String(length=32), nullable=False),
        sa.Column("created_by", sa.String(length=32), nullable=False),
        sa.Column("cursor_seq", sa.Integer(), nullable=False),
        sa.Column("failing_since", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("last_success_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("paused_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("disabled_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("disabled_reason", sa.String(length=200), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("updated_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.ForeignKeyConstraint(
            ["owner_user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhooks_scope", ["org_id", "environment", "created_at"], unique=False
        )

    op.create_table(
        "benchmark_summaries",
        sa.Column("building_id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("period_start", sa.Date(), nullable=True),
        sa.Column("period_end", sa.Date(), nullable=True),
        sa.Column("kwh_by_type", sa.JSON(), nullable=False),
        sa.Column("twelve_full_months", sa.Boolean(), nullable=False),
        sa.Column("data_quality_grade", sa.String(length=1), nullable=False),
        sa.Column("quality_points", sa.Float(), nullable=False),
        sa.Column("calculated_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["building_id"],
            ["buildings.id"],
        ),
        sa.PrimaryKeyConstraint("building_id"),
    )
    with op.batch_alter_table("benchmark_summaries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_benchmark_summaries_scope", ["org_id", "environment"], unique=False
        )

    op.create_table(
        "meters",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("building_id", sa.String(length=32), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("unit", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("latest_reading_date", sa.Date(), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["building_id"],
            ["buildings.id"],
        ),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["organisations.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("meters", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_meters_building_id"), ["building_id"], unique=False)

    op.create_table(
        "oauth_access_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("family_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("expires_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["family_id"],
            ["oauth_token_families.id"],
        ),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    with op.batch_alter_table("oauth_access_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_oauth_access_tokens_family_id"), ["family_id"], unique=False
        )

    op.create_table(
        "oauth_refresh_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("family_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("expires_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("used_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["family_id"],
            ["oauth_token_families.id"],
        ),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    with op.batch_alter_table("oauth_refresh_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_oauth_refresh_tokens_family_id"), ["family_id"], unique=False
        )

    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("subscription_id", sa.String(length=32), nullable=False),
        sa.Column("event_id", sa.String(length=32), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("event_created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("completed_at", bpservice.db.types.UTCDateTime(), nullable=True),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["subscription_id"], ["webhook_subscriptions.id"], ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("subscription_id", "event_id", name="uq_delivery_event"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_deliveries_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index(
            "ix_deliveries_subscription", ["subscription_id", "created_at"], unique=False
        )

    op.create_table(
        "meter_months",
        sa.Column("meter_id", sa.String(length=32), nullable=False),
        sa.Column("month", sa.Date(), nullable=False),
        sa.Column("building_id", sa.String(length=32), nullable=False),
        sa.Column("meter_type", sa.String(length=32), nullable=False),
        sa.Column("quantity", sa.Float(), nullable=False),
        sa.Column("kwh", sa.Float(), nullable=True),
        sa.Column("covered_days", sa.Integer(), nullable=False),
        sa.Column("month_days", sa.Integer(), nullable=False),
        sa.Column("readings", sa.Integer(), nullable=False),
        sa.Column("flagged", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["meter_id"],
            ["meters.id"],
        ),
        sa.PrimaryKeyConstraint("meter_id", "month"),
    )
    with op.batch_alter_table("meter_months", schema=None) as batch_op:
        batch_op.create_index(
            "ix_meter_months_building_month", ["building_id", "month"], unique=False
        )

    op.create_table(
        "readings",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("meter_id", sa.String(length=32), nullable=False),
        sa.Column("building_id", sa.String(length=32), nullable=False),
        sa.Column("org_id", sa.String(length=32), nullable=False),
        sa.Column("environment", sa.String(length=8), nullable=False),
        sa.Column("start_date", sa.Date(), nullable=False),
        sa.Column("end_date", sa.Date(), nullable=False),
        sa.Column("consumption", sa.Float(), nullable=False),
        sa.Column("unit", sa.String(length=16), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("cost_currency", sa.String(length=3), nullable=True),
        sa.Column("demand_kw", sa.Float(), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("anomaly_flags", sa.JSON(), nullable=False),
        sa.Column("created_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["meter_id"],
            ["meters.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("meter_id", "start_date", name="uq_readings_meter_start"),
    )
    with op.batch_alter_table("readings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_readings_building_id"), ["building_id"], unique=False)
        batch_op.create_index("ix_readings_meter_end", ["meter_id", "end_date"], unique=False)

    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("attempted_at", bpservice.db.types.UTCDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("succeeded", sa.Boolean(), nullable=False),
        sa.Column("failure_reason", sa.String(length=32), nullable=True),
        sa.Column("error_message", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(["delivery_id"], ["webhook_deliveries.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_attempts_delivery_id"), ["delivery_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_attempts_delivery_id"))

    op.drop_table("webhook_attempts")
    with op.batch_alter_table("readings", schema=None) as batch_op:
        batch_op.drop_index("ix_readings_meter_end")
        batch_op.drop_index(batch_op.f("ix_readings_building_id"))

    op.drop_table("readings")
    with op.batch_alter_table("meter_months", schema=None) as batch_op:
        batch_op.drop_index("ix_meter_months_building_month")

    op.drop_table("meter_months")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_deliveries_subscription")
        batch_op.drop_index("ix_deliveries_due")

    op.drop_table("webhook_deliveries")
    with op.batch_alter_table("oauth_refresh_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oauth_refresh_tokens_family_id"))

    op.drop_table("oauth_refresh_tokens")
    with op.batch_alter_table("oauth_access_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oauth_access_tokens_family_id"))

    op.drop_table("oauth_access_tokens")
    with op.batch_alter_table("meters", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_meters_building_id"))

    op.drop_table("meters")
    with op.batch_alter_table("benchmark_summaries", schema=None) as batch_op:
        batch_op.drop_index("ix_benchmark_summaries_scope")

    op.drop_table("benchmark_summaries")
    with op.batch_alter_table("webhook_subscriptions", schema=None) as batch_op:
        batch_op.drop_index("ix_webhooks_scope")

    op.drop_table("webhook_subscriptions")
    op.drop_table("report_files")
    with op.batch_alter_table("oauth_token_families", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oauth_token_families_user_id"))
        batch_op.drop_index(batch_op.f("ix_oauth_token_families_client_id"))

    op.drop_table("oauth_token_families")
    with op.batch_alter_table("oauth_invitations", schema=None) as batch_op:
        batch_op.drop_index("ix_invitations_user")

    op.drop_table("oauth_invitations")
    op.drop_table("oauth_codes")
    with op.batch_alter_table("notifications", schema=None) as batch_op:
        batch_op.drop_index("ix_notifications_user")

    op.drop_table("notifications")
    with op.batch_alter_table("buildings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_buildings_property_id"))

    op.drop_table("buildings")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_org_id"))

    op.drop_table("api_keys")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_org_id"))

    op.drop_table("users")
    with op.batch_alter_table("reports", schema=None) as batch_op:
        batch_op.drop_index("ix_reports_status_created")
        batch_op.drop_index("ix_reports_scope_created")

    op.drop_table("reports")
    with op.batch_alter_table("report_templates", schema=None) as batch_op:
        batch_op.drop_index("ix_report_templates_scope")

    op.drop_table("report_templates")
    with op.batch_alter_table("properties", schema=None) as batch_op:
        batch_op.drop_index("ix_properties_scope_created")

    op.drop_table("properties")
    with op.batch_alter_table("oauth_clients", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oauth_clients_org_id"))

    op.drop_table("oauth_clients")
    op.drop_table("service_secrets")
    op.drop_table("organisations")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_scope_seq")

    op.drop_table("events")
