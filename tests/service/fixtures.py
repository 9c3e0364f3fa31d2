"""Fixtures of the service tests (registered by conftest.py when the service extra is installed): a database
(SQLite, or PostgreSQL from tests/service/pg.py), the app over it, tokens of two teams."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# starlette's TestClient asks for httpx2 (a fork); the httpx it uses works as before
warnings.filterwarnings("ignore", message=".*httpx2.*")

from fastapi.testclient import TestClient  # noqa: E402

from gpufleet.service.app import create_app  # noqa: E402
from gpufleet.service.auth import create_token  # noqa: E402
from gpufleet.service.db import make_engine, make_sessionmaker, upgrade  # noqa: E402
from gpufleet.service.settings import ServiceSettings  # noqa: E402

from . import pg  # noqa: E402

_db_counter = itertools.count()


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each service test gets its own data folder (team telemetry stores, refreshed prices): the default is
    the user's, where an earlier test's upload showed up as this test's findings (a test may set its own)."""
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "gpufleet-data"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pg.PgServer]:
    server, why = pg.start()
    if server is None:
        pytest.skip(f"PostgreSQL tests skipped: {why}")
    yield server
    server.stop()


def _fresh_pg_database(server: pg.PgServer) -> str:
    import sqlalchemy as sa

    name = f"gpufleet_test_{next(_db_counter)}"
    engine = sa.create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.url(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service.sqlite3'}"
    return _fresh_pg_database(request.getfixturevalue("pg_server"))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'service.sqlite3'}"


@dataclass
class Env:
    """A running app (in process) with tokens: team a (admin, editor, viewer) and team b (admin)."""

    client: TestClient
    url: str
    tokens: dict[str, str]
    app: Any

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


def make_env(url: str, *, run_jobs: bool = False, **settings: Any) -> Iterator[Env]:
    engine = make_engine(url)
    upgrade(engine)
    tokens = {}
    with make_sessionmaker(engine)() as db:
        for who, team, role in (
            ("a_admin", "a", "admin"),
            ("a_editor", "a", "editor"),
            ("a_viewer", "a", "viewer"),
            ("b_admin", "b", "admin"),
        ):
            tokens[who], _ = create_token(db, team=team, name=who, role=role)
    engine.dispose()
    # heavy routes on threads: tests replace library functions in this process (test_route_processes.py
    # runs them in worker processes); the tests' webhook receivers listen on 127.0.0.1 (the service's
    # default refuses loopback: .webhooks)
    defaults: dict[str, Any] = {
        "rate_limit_per_s": 0.0,
        "job_poll_s": 0.1,
        "route_processes": 0,
        "webhook_internal_hosts": True,
    }
    app = create_app(ServiceSettings(db_url=url, **(defaults | settings)), run_jobs=run_jobs)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Env(client=client, url=url, tokens=tokens, app=app)


@pytest.fixture
def env(sqlite_url: str) -> Iterator[Env]:
    yield from make_env(sqlite_url)


@pytest.fixture
def any_env(any_db_url: str) -> Iterator[Env]:
    yield from make_env(any_db_url)
