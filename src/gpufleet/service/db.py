"""The service's state: SQLAlchemy 2 models, the engine (SQLite in WAL mode, or PostgreSQL through psycopg 3)
and the schema upgrade (Alembic, the migrations shipped in ``service/migrations``).

Times are Unix seconds (``*_unix_s``, floats): the same on SQLite and PostgreSQL, with no time-zone
conversion to get wrong. Every object a team owns carries ``team_id``; queries filter on it (:mod:`.auth`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    orm,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

#: the Alembic revision this code expects (tests/service/test_migrations.py checks it is the head)
SCHEMA_REVISION = "0005"

ROLES: tuple[str, ...] = ("viewer", "editor", "admin")
JOB_STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "cancelled")


def now_unix_s() -> float:
    return time.time()


class Base(DeclarativeBase):
    pass


class Team(Base):
    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class Token(Base):
    """An API token: only the SHA-256 of its secret is kept; ``prefix`` (the first characters) lets a person
    tell tokens apart in listings."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(10))
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)
    revoked_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)


class Session(Base):
    """A dashboard session opened by signing in with a token; dies with the token."""

    __tablename__ = "sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("tokens.id", ondelete="CASCADE"), index=True)
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    csrf: Mapped[str] = mapped_column(String(64))
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)
    expires_unix_s: Mapped[float] = mapped_column(Float)


class Fleet(Base):
    """A fleet file a team uploaded (its text, as given)."""

    __tablename__ = "fleets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(Text)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class Job(Base):
    """Long work (a plan, a scenario set) queued, run by a worker process, and kept with its result."""

    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("team_id", "idempotency_key", name="uq_jobs_team_idempotency_key"),
        Index("ix_jobs_status_created", "status", "created_unix_s"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20), default="queued")
    params_json: Mapped[str] = mapped_column(Text)
    params_sha256: Mapped[str] = mapped_column(String(64))
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    progress_fraction: Mapped[float] = mapped_column(Float, default=0.0)
    progress_text: Mapped[str] = mapped_column(String(200), default="")
    result_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    result_html: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    time_limit_s: Mapped[float] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(100), nullable=True)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)
    started_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    heartbeat_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)

    def params_source(self) -> str:
        """The name a plan job's fleet was given (its file name), else the kind."""
        import json

        return str(json.loads(self.params_json).get("source") or self.kind)


class Webhook(Base):
    """Where a team's notifications go: a Slack-compatible incoming webhook (``{"text": ...}``) or a generic
    one (``{"event": ..., "job": {...}}``), for the events it lists."""

    __tablename__ = "webhooks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    format: Mapped[str] = mapped_column(String(10))
    events: Mapped[str] = mapped_column(String(200))  # comma-separated WEBHOOK_EVENTS
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)
    last_delivery_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)  # HTTP status; None: no answer
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: ``saving_found``: only a new saving of at least this much [USD/month] (None: any)
    min_saving_usd_per_month: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: ``price_change``: only a change of at least this share of the old price, 0.05 = 5 % (None: any)
    min_price_change_fraction: Mapped[float | None] = mapped_column(Float, nullable=True)


WEBHOOK_EVENTS: tuple[str, ...] = (
    "job_succeeded",
    "job_failed",
    "job_cancelled",
    "saving_found",
    "alert_fired",
    "price_change",
)


class Delivery(Base):
    """One notification sent to a webhook: its event, body, the outcome of its last try and how many tries."""

    __tablename__ = "deliveries"
    __table_args__ = (Index("ix_deliveries_team_created", "team_id", "created_unix_s"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    webhook_id: Mapped[int | None] = mapped_column(
        ForeignKey("webhooks.id", ondelete="SET NULL"), nullable=True, index=True
    )
    event: Mapped[str] = mapped_column(String(40))
    body_json: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="pending")  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    http_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)
    finished_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)


class Schedule(Base):
    """Work run on a cron schedule (UTC): a job of ``kind`` with ``params``, owned by a team; a ``global``
    one (catalog refreshes, made by an admin) is listed to every team."""

    __tablename__ = "schedules"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    scope: Mapped[str] = mapped_column(String(10))  # team | global
    name: Mapped[str] = mapped_column(String(100))
    cron: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(40))
    params_json: Mapped[str] = mapped_column(Text)
    time_limit_s: Mapped[float] = mapped_column(Float)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    next_due_unix_s: Mapped[float] = mapped_column(Float, index=True)
    last_due_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_job_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class ScheduleRun(Base):
    """The claim of one due time of a schedule: the unique key (schedule, due time) lets exactly one
    scheduler, of any replica, enqueue it."""

    __tablename__ = "schedule_runs"
    __table_args__ = (UniqueConstraint("schedule_id", "due_unix_s", name="uq_schedule_runs_due"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("schedules.id", ondelete="CASCADE"))
    due_unix_s: Mapped[float] = mapped_column(Float)
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    claimed_by: Mapped[str] = mapped_column(String(100))
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class PriceChange(Base):
    """A price that changed between two refreshes of a provider (one row per offer and price kind)."""

    __tablename__ = "price_changes"
    __table_args__ = (Index("ix_price_changes_captured", "captured_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    captured_at: Mapped[str] = mapped_column(String(40))  # the new refresh's capture time (ISO 8601 UTC)
    previous_captured_at: Mapped[str] = mapped_column(String(40))
    provider: Mapped[str] = mapped_column(String(20))
    region: Mapped[str] = mapped_column(String(60))
    zone: Mapped[str | None] = mapped_column(String(60), nullable=True)
    instance_type: Mapped[str] = mapped_column(String(100))
    price_kind: Mapped[str] = mapped_column(String(20))  # on_demand | spot
    old_price_usd_per_hour: Mapped[float] = mapped_column(Float)
    new_price_usd_per_hour: Mapped[float] = mapped_column(Float)
    change_fraction: Mapped[float] = mapped_column(Float)  # (new - old) / old
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class UserCatalog(Base):
    """A team's own catalog (the CLI's ``--catalog`` format: offers and price overrides), kept as uploaded.
    Negotiated prices are confidential: only the owning team reads it, and its recommend and plan use it."""

    __tablename__ = "user_catalogs"
    __table_args__ = (UniqueConstraint("team_id", "name", name="uq_user_catalogs_team_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))  # a safe file name: its suffix tells YAML from JSON
    text: Mapped[str] = mapped_column(Text)
    offers: Mapped[int] = mapped_column(Integer)  # machines it adds
    price_overrides: Mapped[int] = mapped_column(Integer)  # prices it replaces or discounts
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class Upload(Base):
    """An input file a team uploaded for its simulation jobs (a request trace, a batch job file, a batch fleet
    file), kept as text after the simulator's own reader accepted it. Its name is shown, never used as a
    path: a job writes the text to a file of its own naming in a private temporary folder."""

    __tablename__ = "uploads"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(20))  # trace | jobs | batch_fleet
    name: Mapped[str] = mapped_column(String(200))  # the uploaded file name, reduced to a safe name
    format: Mapped[str] = mapped_column(String(20))  # the layout the reader detected (azure, generic, ...)
    size_bytes: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    summary: Mapped[str] = mapped_column(String(300))  # what the reader found, e.g. "1,200 requests"
    text: Mapped[str] = mapped_column(Text)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


class CatalogRefresh(Base):
    """The offers of one succeeded ``catalog_refresh`` job (the offer-table CSV of its provider), so that
    every replica answers from the latest prices: the highest id is the catalog version."""

    __tablename__ = "catalog_refreshes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    provider: Mapped[str] = mapped_column(String(20), index=True)
    captured_at: Mapped[str] = mapped_column(String(40))  # ISO 8601 UTC, the refresh's capture time
    offer_rows: Mapped[int] = mapped_column(Integer)
    offers_csv: Mapped[str] = mapped_column(Text)
    created_unix_s: Mapped[float] = mapped_column(Float, default=now_unix_s)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer (API threads + job workers)
    cur.execute("PRAGMA synchronous=NORMAL")  # durable at each WAL checkpoint; the WAL default
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")  # wait up to 10 s for the write lock instead of failing
    cur.close()


#: connections kept open per process, and opened beyond them at peaks: the server's 40 worker threads, the
#: job workers and their heartbeats
POOL_SIZE = 48
POOL_OVERFLOW = 16


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created, and the file is put in WAL mode."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # one connection per server thread (anyio's pool runs 40): SQLAlchemy's default of 5 + 10 made
        # requests wait 30 s for a connection, then fail, under 200 clients (benchmarks/bench_service.py)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 10},
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)


def make_sessionmaker(engine: Engine) -> sessionmaker[orm.Session]:
    return sessionmaker(engine, expire_on_commit=False)


def alembic_config(engine: Engine) -> Any:
    """The Alembic configuration of the shipped migrations, bound to ``engine``."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database schema to ``revision`` (creating it from empty)."""
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        rev: str | None = MigrationContext.configure(conn).get_current_revision()
        return rev
