"""A team's user catalog files are kept in memory for ``auth_cache_ttl_s`` (no database read and no thread
hand-off per catalog page or recommend): an upload or delete in this process applies at once, one written
by another process (a replica) within the TTL, and a read racing an upload is never kept."""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from gpufleet.service.catalog_cache import TeamCatalogCache
from gpufleet.service.db import Team, UserCatalog, make_engine, make_sessionmaker
from gpufleet.service.user_catalogs import CatalogFile, check_catalog

from .fixtures import Env, make_env

ONPREM = Path("tests/data/user_catalogs/onprem.yaml")
QUERY = "/api/v1/catalog/offers?gpu=H100-SXM&gpus=8&limit=1000"


@pytest.fixture
def short(tmp_path: Path) -> Iterator[Env]:
    yield from make_env(f"sqlite:///{tmp_path / 'c.sqlite3'}", auth_cache_ttl_s=0.6)


def _mine(env: Env, who: str = "a_viewer") -> bool:
    r = env.client.get(QUERY, headers=env.h(who))
    assert r.status_code == 200, r.text
    return any(o["instance_type"] == "dgx-h100" for o in r.json()["offers"])


def test_files_are_read_once_per_ttl_not_per_request(short: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    uc = importlib.import_module("gpufleet.service.user_catalogs")
    reads: list[int] = []
    real = uc.files_of

    def counted(sm: Any, team_id: int) -> Any:
        reads.append(team_id)
        return real(sm, team_id)

    monkeypatch.setattr(uc, "files_of", counted)
    now = [1000.0]
    monkeypatch.setattr(short.app.state.gpufleet.team_files, "_clock", lambda: now[0])
    for _ in range(5):
        assert not _mine(short)
    assert len(reads) == 1  # one read for five pages
    now[0] += 0.7  # past the TTL (0.6 s)
    assert not _mine(short)
    assert len(reads) == 2  # read again


def test_an_upload_or_delete_here_applies_at_once(short: Env) -> None:
    assert not _mine(short)  # kept: no catalog
    r = short.client.post(
        "/api/v1/catalogs",
        json={"name": "acme.yaml", "text": ONPREM.read_text()},
        headers=short.h("a_editor"),
    )
    assert r.status_code == 201, r.text
    assert _mine(short)  # not the kept empty list
    assert not _mine(short, "b_admin")  # another team: never team a's
    assert (
        short.client.delete(f"/api/v1/catalogs/{r.json()['id']}", headers=short.h("a_editor")).status_code
        == 200
    )
    assert not _mine(short)


def test_another_process_upload_is_seen_within_the_ttl(short: Env) -> None:
    assert not _mine(short)
    # written as another replica would: straight to the database, no cache of this process told
    name, offers, overrides = check_catalog("acme.yaml", ONPREM.read_text())
    engine = make_engine(short.url)
    with make_sessionmaker(engine)() as db:
        me = short.client.get("/api/v1/me", headers=short.h("a_viewer")).json()
        tid = db.scalars(select(Team.id).where(Team.name == me["team"])).one()
        db.add(
            UserCatalog(
                team_id=tid, name=name, text=ONPREM.read_text(), offers=offers, price_overrides=overrides
            )
        )
        db.commit()
    engine.dispose()
    time.sleep(0.7)
    assert _mine(short)


def test_a_read_that_raced_a_change_is_not_kept() -> None:
    now = [0.0]
    cache = TeamCatalogCache("sqlite:///x", 5.0, clock=lambda: now[0])
    files = (CatalogFile(name="a.yaml", text="x"),)
    gen = cache.generation(7)
    cache.forget(7)  # an upload committed while the read ran
    cache.put(7, files, gen)
    assert cache.get(7) is None
    cache.put(7, files, cache.generation(7))
    assert cache.get(7) == files
    now[0] = 5.0
    assert cache.get(7) is None  # past the TTL
    off = TeamCatalogCache("sqlite:///x", 0.0)
    off.put(7, files, 0)
    assert off.get(7) is None  # TTL 0: nothing kept


def test_a_repeated_catalog_page_needs_no_thread(short: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Token, team catalog files and answer from memory, and no dependency run on the thread pool (FastAPI
    runs a plain ``def`` dependency there: a hand-off per request)."""
    import starlette.concurrency

    fastapi_utils = importlib.import_module("fastapi.dependencies.utils")
    api = importlib.import_module("gpufleet.service.api")
    deps = importlib.import_module("gpufleet.service.deps")
    calls: list[str] = []
    real = starlette.concurrency.run_in_threadpool

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(func, "__name__", repr(func)))
        return await real(func, *args, **kwargs)

    assert not _mine(short)  # token, files and answer now kept
    for module in (fastapi_utils, api, deps):
        monkeypatch.setattr(module, "run_in_threadpool", counted)
    assert not _mine(short)
    assert calls == []
