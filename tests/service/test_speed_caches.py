"""The service's in-process caches (issue 24, "Speed and load"): a bearer token's principal is kept for
``auth_cache_ttl_s`` (a revoke in this process applies at once, one made elsewhere within the TTL), and a
catalog answer is kept per (catalog table, query)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import sqlalchemy as sa

from gpufleet.service import deps
from gpufleet.service.auth import Principal, PrincipalCache, revoke_token
from gpufleet.service.db import make_engine, make_sessionmaker
from gpufleet.service.ops import ResponseCache

from .fixtures import Env, make_env


def _token_id(env: Env, who: str) -> int:
    tokens = env.client.get("/api/v1/tokens", headers=env.h("a_admin")).json()
    return int(next(t["id"] for t in tokens if t["name"] == who))


def test_a_known_token_is_looked_up_once_per_ttl(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    from gpufleet.service.auth import authenticate_token_hash as real

    def counting(db: Any, digest: str) -> Principal:
        calls.append(digest)
        return real(db, digest)

    monkeypatch.setattr(deps, "authenticate_token_hash", counting)
    for _ in range(10):
        assert env.client.get("/api/v1/me", headers=env.h("a_viewer")).status_code == 200
    assert len(calls) == 1
    # an unknown token is never kept: each request asks the database and is refused
    for _ in range(3):
        assert env.client.get("/api/v1/me", headers={"Authorization": "Bearer gpf_nope"}).status_code == 401
    assert len(calls) == 4


def test_a_revoke_through_the_api_applies_at_once(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    assert c.get("/api/v1/me", headers=h).status_code == 200  # now cached
    tid = _token_id(env, "a_viewer")
    assert c.delete(f"/api/v1/tokens/{tid}", headers=env.h("a_admin")).status_code == 200
    assert c.get("/api/v1/me", headers=h).status_code == 401


def test_a_revoke_in_this_process_through_another_engine_applies_at_once(env: Env) -> None:
    # `gpufleet serve token revoke` run in process (or the dashboard) opens its own engine on the database
    c, h = env.client, env.h("a_viewer")
    assert c.get("/api/v1/me", headers=h).status_code == 200
    tid = _token_id(env, "a_viewer")
    engine = make_engine(env.url)
    with make_sessionmaker(engine)() as db:
        revoke_token(db, tid)
    engine.dispose()
    assert c.get("/api/v1/me", headers=h).status_code == 401


def test_a_revoke_by_another_process_applies_within_the_ttl(sqlite_url: str) -> None:
    ttl_s = 0.5
    for env in make_env(sqlite_url, auth_cache_ttl_s=ttl_s):
        c, h = env.client, env.h("a_viewer")
        assert c.get("/api/v1/me", headers=h).status_code == 200
        tid = _token_id(env, "a_viewer")
        # another process writes the revoke straight into the database: this process is not told
        engine = make_engine(env.url)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE tokens SET revoked_unix_s = 1 WHERE id = :i"), {"i": tid})
        engine.dispose()
        revoked_at = time.monotonic()
        while c.get("/api/v1/me", headers=h).status_code == 200:
            assert time.monotonic() - revoked_at <= ttl_s, "the revoked token still works past the TTL"
            time.sleep(0.05)
        assert c.get("/api/v1/me", headers=h).status_code == 401


def test_principal_cache_expires_and_forgets() -> None:
    now = [100.0]
    cache = PrincipalCache("sqlite://", ttl_s=5.0, clock=lambda: now[0])
    who = Principal(token_id=7, token_name="t", team_id=1, team_name="a", role="viewer")
    cache.put("h", who)
    assert cache.get("h") == who
    now[0] += 5.0
    assert cache.get("h") is None  # expired at the TTL
    cache.put("h", who)
    cache.forget_token(7)
    assert cache.get("h") is None
    off = PrincipalCache("sqlite://", ttl_s=0.0)
    off.put("h", who)
    assert off.get("h") is None  # TTL 0: nothing kept


def test_catalog_answers_are_cached_per_table_and_query(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpufleet.catalog.listing as listing
    import gpufleet.catalog.offers as offers

    calls: list[int] = []
    real = listing.query_offer_index

    def counting(table: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(table, **kw)

    monkeypatch.setattr(listing, "query_offer_index", counting)
    c, h = env.client, env.h("a_viewer")
    q = {"gpu": "H100", "limit": 5, "sort": "price"}
    first = c.get("/api/v1/catalog/offers", params=q, headers=h)
    again = c.get("/api/v1/catalog/offers", params=q, headers=h)
    assert first.status_code == again.status_code == 200
    assert first.content == again.content and len(calls) == 1
    # another team gets the same (shared) catalog's answer, from memory
    assert c.get("/api/v1/catalog/offers", params=q, headers=env.h("b_admin")).content == first.content
    assert len(calls) == 1
    # any other parameter is another query
    assert c.get("/api/v1/catalog/offers", params=q | {"offset": 1}, headers=h).status_code == 200
    assert c.get("/api/v1/catalog/offers", params=q | {"order": "desc"}, headers=h).status_code == 200
    assert len(calls) == 3
    # a new catalog table (a new catalog version) never gets the old answer
    from gpufleet.service.catalog_version import CatalogVersion

    table = offers.load_offers()
    fewer = CatalogVersion(
        version="refresh-1", table=table.take(table.column("provider") == "aws"), refreshes=()
    )
    monkeypatch.setattr(env.app.state.gpufleet.catalogs, "current", lambda: fewer)
    new = c.get("/api/v1/catalog/offers", params=q, headers=h)
    assert new.json()["catalog"]["version"] == "refresh-1"
    assert len(calls) == 4 and new.json()["page"]["total"] < first.json()["page"]["total"]
    assert {o["provider"] for o in new.json()["offers"]} == {"aws"}


def test_descending_page_past_the_end_is_empty(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    q = {"gpu": "A100", "provider": "aws", "limit": 10}
    total = c.get("/api/v1/catalog/offers", params=q, headers=h).json()["page"]["total"]
    assert total > 0
    for order in ("asc", "desc"):
        doc = c.get(
            "/api/v1/catalog/offers", params=q | {"order": order, "offset": total + 3}, headers=h
        ).json()
        assert doc["offers"] == [] and doc["page"]["total"] == total  # desc used to wrap around to rows
    last = c.get(
        "/api/v1/catalog/offers", params=q | {"order": "desc", "offset": total - 1}, headers=h
    ).json()
    first = c.get("/api/v1/catalog/offers", params=q | {"limit": 1}, headers=h).json()
    assert last["offers"] == first["offers"]


def test_response_cache_keeps_the_most_recent_entries() -> None:
    src = object()
    cache = ResponseCache(max_entries=2)
    cache.put(("a",), src, b"A")
    cache.put(("b",), src, b"B")
    assert cache.get(("a",), src) == b"A"  # "a" is now the most recent
    cache.put(("c",), src, b"C")  # evicts "b"
    assert (
        cache.get(("b",), src) is None and cache.get(("a",), src) == b"A" and cache.get(("c",), src) == b"C"
    )
    assert cache.get(("a",), object()) is None  # another source: not this answer
    assert len(cache) == 2 and cache.hits == 3
    off = ResponseCache(max_entries=0)
    off.put(("a",), src, b"A")
    assert off.get(("a",), src) is None
    small = ResponseCache(max_entries=100, max_bytes=10)
    small.put(("a",), src, b"AAAA")
    small.put(("b",), src, b"BBBB")
    small.put(("a",), src, b"AAAAA")  # replaced, not counted twice: 9 bytes
    assert small.get(("b",), src) == b"BBBB" and len(small) == 2
    small.put(("c",), src, b"CCCC")  # 13 bytes: the least recently used ("a") goes
    assert small.get(("a",), src) is None and len(small) == 2
    small.put(("d",), src, b"D" * 11)  # larger than the whole cache: not kept
    assert small.get(("d",), src) is None and len(small) == 2
