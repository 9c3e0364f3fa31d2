"""Memory under recommends (issue 24): identical recommends grow no cache, and the service bounds the
estimator memo caches (the library's defaults, 500,000 calls and 100,000 configs of ~8-10 KiB each, are
sized for one CLI run, not for a process that runs for weeks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufleet.errors import InputError
from gpufleet.recommend import candidates, perf

from .fixtures import Env, make_env

BODY = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Env]:
    url = f"sqlite:///{tmp_path / 'service.sqlite3'}"
    yield from make_env(url, estimate_cache_calls=60, estimate_cache_configs=40)


def _sizes(env: Env) -> tuple[int, ...]:
    st = env.app.state.gpufleet
    return (
        len(perf._CALLS),
        len(candidates._CONFIG_CACHE),
        len(candidates._COLUMNS),
        len(st.responses),
        len(st.metrics.requests),
        len(st.metrics.buckets),
    )


def test_identical_recommends_grow_no_cache(env: Env) -> None:
    def call() -> str:
        r = env.client.post("/api/v1/recommend", json=BODY, headers=env.h("a_viewer"))
        assert r.status_code == 200, r.text
        return r.text

    first = call()
    sizes = _sizes(env)
    assert sizes[0] > 0 and sizes[1] > 0  # the estimates are memoised
    for _ in range(3):
        assert call() == first
    assert _sizes(env) == sizes


def test_the_service_bounds_the_estimator_caches(small: Env) -> None:
    assert (perf._CALLS_MAX, candidates._CACHE_MAX) == (60, 40)
    answers = []
    for model in ("llama-3.1-8b", "qwen2.5-7b", "llama-3.1-8b"):
        r = small.client.post("/api/v1/recommend", json=BODY | {"model": model}, headers=small.h("a_viewer"))
        assert r.status_code == 200, r.text
        answers.append(r.text)
        assert len(perf._CALLS) <= 60
        assert len(candidates._CONFIG_CACHE) <= 40 and len(candidates._COLUMNS) <= 40
    assert answers[0] == answers[2]  # emptied caches give the same answer


def test_cache_bounds_must_be_positive() -> None:
    with pytest.raises(InputError, match="at least 1"):
        candidates.limit_estimate_caches(calls_max=0, configs_max=10)


def test_the_library_bounds_come_back_after_a_service_test() -> None:
    # tests/conftest.py _library_cache_bounds: the test above ran an app with 60 and 40
    assert (perf._CALLS_MAX, candidates._CACHE_MAX) == (500_000, 100_000)
