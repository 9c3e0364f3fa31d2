"""user_catalogs: each team's own catalogs (negotiated prices, own machines), kept as uploaded

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 02:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_catalogs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("offers", sa.Integer(), nullable=False),
        sa.Column("price_overrides", sa.Integer(), nullable=False),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("team_id", "name", name="uq_user_catalogs_team_name"),
    )
    with op.batch_alter_table("user_catalogs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_catalogs_team_id"), ["team_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("user_catalogs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_catalogs_team_id"))

    op.drop_table("user_catalogs")
