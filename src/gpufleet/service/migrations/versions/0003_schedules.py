"""scheduler, price changes, notification deliveries: schedules and their claimed runs, the price changes
of each refresh, every webhook delivery; thresholds on webhooks (new columns, NULL = any)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 01:49:49.947390
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "price_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("captured_at", sa.String(length=40), nullable=False),
        sa.Column("previous_captured_at", sa.String(length=40), nullable=False),
        sa.Column("provider", sa.String(length=20), nullable=False),
        sa.Column("region", sa.String(length=60), nullable=False),
        sa.Column("zone", sa.String(length=60), nullable=True),
        sa.Column("instance_type", sa.String(length=100), nullable=False),
        sa.Column("price_kind", sa.String(length=20), nullable=False),
        sa.Column("old_price_usd_per_hour", sa.Float(), nullable=False),
        sa.Column("new_price_usd_per_hour", sa.Float(), nullable=False),
        sa.Column("change_fraction", sa.Float(), nullable=False),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("price_changes", schema=None) as batch_op:
        batch_op.create_index("ix_price_changes_captured", ["captured_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_price_changes_job_id"), ["job_id"], unique=False)

    op.create_table(
        "schedules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=10), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("cron", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("time_limit_s", sa.Float(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("next_due_unix_s", sa.Float(), nullable=False),
        sa.Column("last_due_unix_s", sa.Float(), nullable=True),
        sa.Column("last_job_id", sa.Integer(), nullable=True),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_schedules_next_due_unix_s"), ["next_due_unix_s"], unique=False)
        batch_op.create_index(batch_op.f("ix_schedules_team_id"), ["team_id"], unique=False)

    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=True),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("body_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.Column("finished_unix_s", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_deliveries_team_created", ["team_id", "created_unix_s"], unique=False)
        batch_op.create_index(batch_op.f("ix_deliveries_webhook_id"), ["webhook_id"], unique=False)

    op.create_table(
        "schedule_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("due_unix_s", sa.Float(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("claimed_by", sa.String(length=100), nullable=False),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["schedule_id"], ["schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("schedule_id", "due_unix_s", name="uq_schedule_runs_due"),
    )
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("min_saving_usd_per_month", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("min_price_change_fraction", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.drop_column("min_price_change_fraction")
        batch_op.drop_column("min_saving_usd_per_month")

    op.drop_table("schedule_runs")
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deliveries_webhook_id"))
        batch_op.drop_index("ix_deliveries_team_created")

    op.drop_table("deliveries")
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_schedules_team_id"))
        batch_op.drop_index(batch_op.f("ix_schedules_next_due_unix_s"))

    op.drop_table("schedules")
    with op.batch_alter_table("price_changes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_price_changes_job_id"))
        batch_op.drop_index("ix_price_changes_captured")

    op.drop_table("price_changes")
