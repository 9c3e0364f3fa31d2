"""Operability and limits: health, readiness, Prometheus metrics, security headers, the request-size limit,
the per-token rate limit, and the bind and database-URL rules."""

from __future__ import annotations

import pytest

from gpufleet.errors import InputError
from gpufleet.service.db import SCHEMA_REVISION
from gpufleet.service.ops import RateLimiter
from gpufleet.service.settings import check_bind, db_url_from, is_loopback

from .fixtures import Env, make_env


def test_health_and_readiness(env: Env) -> None:
    assert env.client.get("/healthz").json() == {"status": "ok"}
    assert env.client.get("/readyz").json() == {"status": "ready", "schema_revision": SCHEMA_REVISION}


def test_metrics_count_requests_by_route_template(env: Env) -> None:
    c = env.client
    for job_id in (1, 2, 3):
        c.get(f"/api/v1/jobs/{job_id}", headers=env.h("a_viewer"))
    text = c.get("/metrics").text
    assert 'gpufleet_http_requests_total{method="GET",route="/api/v1/jobs/{job_id}",status="404"} 3' in text
    assert (
        'gpufleet_http_request_duration_seconds_bucket{method="GET",route="/api/v1/jobs/{job_id}",'
        'le="+Inf"} 3' in text
    )
    assert 'gpufleet_jobs{status="queued"} 0' in text
    # histogram buckets are cumulative and end at the count
    lines = [
        ln
        for ln in text.splitlines()
        if ln.startswith("gpufleet_http_request_duration_seconds_bucket")
        and 'route="/api/v1/jobs/{job_id}"' in ln
    ]
    counts = [int(ln.rsplit(" ", 1)[1]) for ln in lines]
    assert counts == sorted(counts) and counts[-1] == 3


def test_security_headers_on_every_kind_of_response(env: Env) -> None:
    for path in ("/healthz", "/login", "/api/v1/me", "/nowhere"):
        h = env.client.get(path).headers
        assert h["x-content-type-options"] == "nosniff"
        assert h["x-frame-options"] == "DENY"
        assert (
            "script-src" not in h["content-security-policy"]
            and "default-src 'none'" in h["content-security-policy"]
        )
        assert h["referrer-policy"] == "no-referrer"


def test_oversized_bodies_are_413(sqlite_url: str) -> None:
    for env in make_env(sqlite_url, max_body_bytes=10_000):
        big = {"model": "x" * 20_000}
        r = env.client.post("/api/v1/recommend", json=big, headers=env.h("a_viewer"))
        assert r.status_code == 413 and "10,000 bytes" in r.json()["error"]["message"]

        def chunks() -> object:  # no Content-Length: counted as it streams
            for _ in range(20):
                yield b"x" * 1000

        r = env.client.post(
            "/api/v1/recommend",
            content=chunks(),
            headers=env.h("a_viewer") | {"content-type": "application/json"},
        )
        assert r.status_code == 413


def test_rate_limit_per_token(sqlite_url: str) -> None:
    for env in make_env(sqlite_url, rate_limit_per_s=1.0, rate_burst=3):
        codes = [env.client.get("/api/v1/me", headers=env.h("a_viewer")).status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
        assert env.client.get("/api/v1/me", headers=env.h("a_editor")).status_code == 200  # another token
        r = env.client.get("/api/v1/me", headers=env.h("a_viewer"))
        assert "Retry in" in r.json()["error"]["message"]


def test_rate_limiter_refills() -> None:
    lim = RateLimiter(1000.0, 1)
    lim.check(1)
    import time

    time.sleep(0.01)
    lim.check(1)  # refilled (10 tokens' worth) but capped at the burst


def test_public_bind_needs_public() -> None:
    check_bind("127.0.0.1", public=False)
    check_bind("::1", public=False)
    assert is_loopback("127.0.0.2")
    for host in ("0.0.0.0", "192.168.1.5", "example.com", "::"):
        with pytest.raises(InputError, match="--public"):
            check_bind(host, public=False)
    check_bind("0.0.0.0", public=True)


def test_db_url_from() -> None:
    assert db_url_from("postgresql://u:p@h:5432/d") == "postgresql+psycopg://u:p@h:5432/d"
    assert db_url_from("/tmp/x.sqlite3") == "sqlite:////tmp/x.sqlite3"
    assert db_url_from(None).endswith("service.sqlite3")
    with pytest.raises(InputError, match="not supported"):
        db_url_from("mysql://root@localhost/db")
