"""The heavy synchronous routes (recommend, migrate, regions, estimate/*) have a time limit: past it a 504
with a one-paragraph message; their work runs on a pool of its own, so a stuck recommend holds none of the
threads of the other routes, and a request that timed out while queued never starts."""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .fixtures import Env, make_env

WORKLOAD = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Env]:
    url = f"sqlite:///{tmp_path / 'service.sqlite3'}"
    yield from make_env(url, request_time_limit_s=0.5, heavy_route_workers=1)


class Slow:
    """A library call that blocks until released (counts its starts)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.started += 1
        self.release.wait(10.0)
        raise AssertionError("a timed-out answer must be discarded")


def test_a_slow_recommend_gets_a_504_and_holds_no_server_thread(
    limited: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, slow = limited, Slow()
    monkeypatch.setattr(importlib.import_module("gpufleet.recommend.api"), "recommend", slow)
    try:
        t0 = time.monotonic()
        r = env.client.post("/api/v1/recommend", json=WORKLOAD, headers=env.h("a_viewer"))
        took_s = time.monotonic() - t0
        assert r.status_code == 504, r.text
        err = r.json()["error"]
        assert err["type"] == "TimedOut"
        msg = err["message"]
        assert "POST /api/v1/recommend" in msg and "0.5 s" in msg  # what, and the limit
        assert "Narrow the request" in msg and "POST /api/v1/plan" in msg  # how to fix
        assert "--request-time-limit" in msg
        assert took_s < 5.0
        # the one heavy thread is still stuck: a second recommend waits in the queue, times out, never starts
        r = env.client.post("/api/v1/recommend", json=WORKLOAD, headers=env.h("a_viewer"))
        assert r.status_code == 504
        # other routes answer meanwhile (their thread pool is not the heavy one)
        assert env.client.get("/api/v1/me", headers=env.h("a_viewer")).status_code == 200
        assert env.client.get("/api/v1/catalog/offers?limit=1", headers=env.h("a_viewer")).status_code == 200
        assert env.app.state.gpufleet.heavy.timed_out == 2
    finally:
        slow.release.set()
    time.sleep(0.3)
    assert slow.started == 1  # the queued request was dropped


def test_estimates_migrate_and_regions_are_limited_too(limited: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env, slow = limited, Slow()
    monkeypatch.setattr(importlib.import_module("gpufleet.estimate.memory"), "estimate_memory", slow)
    monkeypatch.setattr(importlib.import_module("gpufleet.recommend.api"), "migrate", slow)
    monkeypatch.setattr(importlib.import_module("gpufleet.fleet.regions"), "analyze_regions", slow)
    body = {"model": "llama-3.1-8b", "gpu": "H100"}
    calls = (("/api/v1/estimate/memory", body), ("/api/v1/migrate", WORKLOAD), ("/api/v1/regions", WORKLOAD))
    try:
        for path, b in calls:
            r = env.client.post(path, json=b, headers=env.h("a_viewer"))
            assert r.status_code == 504, (path, r.text)
            assert f"POST {path}" in r.json()["error"]["message"]
    finally:
        slow.release.set()


def test_a_request_within_the_limit_is_answered(limited: Env) -> None:
    r = limited.client.post(
        "/api/v1/estimate/memory",
        json={"model": "llama-3.1-8b", "gpu": "H100"},
        headers=limited.h("a_viewer"),
    )
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == "estimate_memory"
