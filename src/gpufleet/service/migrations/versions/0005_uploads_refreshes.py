"""uploads (a team's simulation input files) and catalog_refreshes (the offers of each refresh, for every
replica)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29 05:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "uploads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("format", sa.String(length=20), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("summary", sa.String(length=300), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_uploads_team_id"), ["team_id"], unique=False)
    op.create_table(
        "catalog_refreshes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("provider", sa.String(length=20), nullable=False),
        sa.Column("captured_at", sa.String(length=40), nullable=False),
        sa.Column("offer_rows", sa.Integer(), nullable=False),
        sa.Column("offers_csv", sa.Text(), nullable=False),
        sa.Column("created_unix_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("catalog_refreshes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_catalog_refreshes_provider"), ["provider"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("catalog_refreshes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_catalog_refreshes_provider"))
    op.drop_table("catalog_refreshes")
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_uploads_team_id"))
    op.drop_table("uploads")
