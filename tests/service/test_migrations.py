"""The schema is built by the shipped Alembic migrations, on SQLite and PostgreSQL: from empty to the head the
code expects, matching the SQLAlchemy models exactly; down to empty and up again. The pattern for the next
revision: ``test_each_revision_upgrades_its_predecessor_keeping_rows`` walks every revision in order with data
in the tables, so a new migration that drops or mangles rows fails it."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from gpufleet.service.db import (
    SCHEMA_REVISION,
    Base,
    alembic_config,
    current_revision,
    make_engine,
    upgrade,
)


def test_upgrade_from_empty_reaches_the_head_and_matches_the_models(any_db_url: str) -> None:
    engine = make_engine(any_db_url)
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == SCHEMA_REVISION
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    assert head == SCHEMA_REVISION, "a new migration: set db.SCHEMA_REVISION to it"
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], f"the models and the migrations differ (write a migration): {diff}"
    upgrade(engine)  # again: nothing to do
    assert current_revision(engine) == SCHEMA_REVISION
    engine.dispose()


def test_downgrade_to_empty_and_up_again(any_db_url: str) -> None:
    engine = make_engine(any_db_url)
    upgrade(engine)
    command.downgrade(alembic_config(engine), "base")
    assert set(sa.inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(engine)
    assert {"teams", "tokens", "sessions", "fleets", "jobs"} <= set(sa.inspect(engine).get_table_names())
    engine.dispose()


def test_each_revision_upgrades_its_predecessor_keeping_rows(any_db_url: str) -> None:
    engine = make_engine(any_db_url)
    cfg = alembic_config(engine)
    revisions = list(reversed(list(ScriptDirectory.from_config(cfg).walk_revisions())))
    assert revisions[0].down_revision is None
    for rev in revisions:
        upgrade(engine, rev.revision)
        with engine.begin() as conn:  # a row in the first table of every revision, kept by the next
            conn.execute(
                sa.text("INSERT INTO teams (name, created_unix_s) VALUES (:n, 1.0)"), {"n": rev.revision}
            )
        with engine.connect() as conn:
            names = set(conn.execute(sa.text("SELECT name FROM teams")).scalars())
        assert {r.revision for r in revisions[: revisions.index(rev) + 1]} <= names
    engine.dispose()


def test_sqlite_runs_in_wal_mode(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(sa.text("PRAGMA foreign_keys")).scalar() == 1
    engine.dispose()


def test_0003_upgrades_a_0002_database_keeping_its_webhooks(any_db_url: str) -> None:
    """0003 adds the scheduler, price-change and delivery tables, and two threshold columns to webhooks:
    a webhook made under 0002 keeps its fields, with no threshold (every event passes)."""
    engine = make_engine(any_db_url)
    upgrade(engine, "0002")
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO teams (id, name, created_unix_s) VALUES (1, 'a', 1.0)"))
        conn.execute(
            sa.text(
                "INSERT INTO webhooks (team_id, url, format, events, created_unix_s) "
                "VALUES (1, 'http://127.0.0.1:9/x', 'slack', 'job_failed', 2.0)"
            )
        )
    upgrade(engine, "0003")
    assert current_revision(engine) == "0003"
    assert {"schedules", "schedule_runs", "price_changes", "deliveries"} <= set(
        sa.inspect(engine).get_table_names()
    )
    with engine.connect() as conn:
        row = conn.execute(
            sa.text("SELECT url, events, min_saving_usd_per_month, min_price_change_fraction FROM webhooks")
        ).one()
    assert tuple(row) == ("http://127.0.0.1:9/x", "job_failed", None, None)
    command.downgrade(alembic_config(engine), "0002")
    assert "schedules" not in sa.inspect(engine).get_table_names()
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT url FROM webhooks")).scalar() == "http://127.0.0.1:9/x"
    engine.dispose()


def test_0005_upgrades_a_0004_database_keeping_its_user_catalogs(any_db_url: str) -> None:
    """0005 adds the uploads and catalog_refreshes tables; a 0004 database keeps its rows, and a downgrade
    drops only the new tables."""
    engine = make_engine(any_db_url)
    upgrade(engine, "0004")
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO teams (id, name, created_unix_s) VALUES (1, 'a', 1.0)"))
        conn.execute(
            sa.text(
                "INSERT INTO user_catalogs (team_id, name, text, offers, price_overrides, created_unix_s) "
                "VALUES (1, 'acme.yaml', 'offers: []', 0, 0, 2.0)"
            )
        )
    upgrade(engine, "0005")
    assert {"uploads", "catalog_refreshes"} <= set(sa.inspect(engine).get_table_names())
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO uploads (team_id, kind, name, format, size_bytes, sha256, summary, text, "
                "created_unix_s) VALUES (1, 'trace', 't.csv', 'azure', 3, 'x', 's', 'a,b', 3.0)"
            )
        )
        assert conn.execute(sa.text("SELECT name FROM user_catalogs")).scalar() == "acme.yaml"
    command.downgrade(alembic_config(engine), "0004")
    names = set(sa.inspect(engine).get_table_names())
    assert "uploads" not in names and "catalog_refreshes" not in names and "user_catalogs" in names
    engine.dispose()
