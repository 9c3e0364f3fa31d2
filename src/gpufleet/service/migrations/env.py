"""Alembic environment: runs migrations on the engine :func:`gpufleet.service.db.upgrade` passes in."""

from __future__ import annotations

from alembic import context

from gpufleet.service.db import Base

config = context.config
engine = config.attributes["engine"]

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # ALTER TABLE on SQLite goes by copy
    )
    with context.begin_transaction():
        context.run_migrations()
