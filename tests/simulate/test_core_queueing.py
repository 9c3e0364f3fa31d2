"""The serving core against queueing theory: an exact FIFO c-server recursion and Erlang C (M/M/c)."""

from __future__ import annotations

import heapq
import math

import numpy as np

from gpufleet.simulate.cluster import replay
from gpufleet.simulate.policies import StaticPolicy
from gpufleet.simulate.serving import constant_service
from gpufleet.simulate.traces import RequestTrace, make_trace


def _mmc_trace(n: int, lam: float, mu: float, seed: int) -> RequestTrace:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1.0 / lam, n))
    work = rng.exponential(1.0 / mu, n)
    # one decode step of 1 s per token of work; the first token comes from a zero-time prefill
    return make_trace(
        name="mmc", layout="synthetic", arrival_s=t, input_tokens=np.zeros(n), output_tokens=1 + work
    )


def _waits(trace: RequestTrace, c: int) -> np.ndarray:
    raw = replay(
        trace, constant_service(step_s=1.0), StaticPolicy(replicas=c), min_replicas=c, max_replicas=c
    )
    return raw.admit_s - trace.arrival_s


def _fifo_recursion(trace: RequestTrace, c: int) -> np.ndarray:
    """Kiefer-Wolfowitz: each customer takes the earliest-free of c servers, in arrival order."""
    free = [0.0] * c
    out = np.empty(len(trace))
    work = trace.output_tokens - 1.0
    for i, t in enumerate(trace.arrival_s):
        f = heapq.heappop(free)
        start = max(f, t)
        out[i] = start - t
        heapq.heappush(free, start + work[i])
    return out


def erlang_c_mean_wait(c: int, lam: float, mu: float) -> float:
    """Wq = C(c, a) / (c mu - lam), a = lam / mu (Erlang C; e.g. Kleinrock, Queueing Systems I, 3.4)."""
    a = lam / mu
    rho = a / c
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / math.factorial(c) / (1.0 - rho)
    return tail / (head + tail) / (c * mu - lam)


def test_core_is_an_exact_fifo_c_server_queue() -> None:
    trace = _mmc_trace(20_000, lam=2.1, mu=1.0, seed=3)
    np.testing.assert_allclose(_waits(trace, 3), _fifo_recursion(trace, 3), atol=1e-6)


def test_mmc_mean_wait_matches_erlang_c() -> None:
    # 150k customers at rho = 0.6: the sample mean's standard error (batch means) is ~1.5 %; the 2 % check
    # on the 2-million-customer run is in benchmarks/bench_simulate.py (too slow for a unit test)
    c, lam, mu = 3, 1.8, 1.0
    waits = _waits(_mmc_trace(150_000, lam=lam, mu=mu, seed=11), c)
    expected = erlang_c_mean_wait(c, lam, mu)
    batches = waits[: len(waits) // 50 * 50].reshape(50, -1).mean(axis=1)
    stderr = batches.std(ddof=1) / math.sqrt(len(batches))
    assert abs(waits.mean() - expected) <= 3 * stderr
    assert abs(waits.mean() / expected - 1) < 0.05
