"""webhooks: where each team is notified of its jobs

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28 23:45:03.559475
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("format", sa.String(length=10), nullable=False),
        sa.Column("events", sa.String(length=200), nullable=False),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.Column("last_delivery_unix_s", sa.Float(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_webhooks_team_id"), ["team_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhooks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhooks_team_id"))

    op.drop_table("webhooks")
