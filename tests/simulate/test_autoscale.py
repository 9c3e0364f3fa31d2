"""Autoscaling replay end to end on the shipped traces, determinism, and the latency property."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.report.json_report import to_jsonable
from gpufleet.simulate.autoscale import AutoscaleResult, Deployment, deployment_for, simulate_autoscale
from gpufleet.simulate.cluster import replay
from gpufleet.simulate.policies import POLICIES, StaticPolicy, make_policy
from gpufleet.simulate.serving import constant_service
from gpufleet.simulate.traces import RequestTrace, make_trace, scale_rate


def test_azure_conversation_replays_under_kpa(azure_conv: RequestTrace, l4_8b: Deployment) -> None:
    r = simulate_autoscale(azure_conv, l4_8b, make_policy("kpa"), compare_static_peak=True)
    assert r.unfinished == 0 and r.requests == len(azure_conv)
    assert r.static_peak is not None and r.static_peak.meets_slo
    assert r.static_peak.ttft_p95_s <= r.slo_ttft_s
    assert r.replica_hours > 0 and r.cost_usd > 0 and r.scale_events
    assert 0 < r.slo_attainment <= 1
    assert r.ttft.p50_s <= r.ttft.p95_s <= r.ttft.p99_s


def test_mooncake_replays_with_long_contexts(mooncake: RequestTrace) -> None:
    dep = deployment_for(mooncake, model="llama-3.1-8b", gpu="h100")
    r = simulate_autoscale(mooncake, dep, make_policy("queue"), compare_static_peak=False)
    assert r.unfinished == 0 and r.requests == 5_719
    assert r.ttft.p50_s > 0.05  # 7k-token prompts take real prefill time


def _first(trace: RequestTrace, n: int) -> RequestTrace:
    """The first ``n`` requests of ``trace``."""
    return make_trace(
        name="short",
        layout="azure",
        arrival_s=trace.arrival_s[:n],
        input_tokens=trace.input_tokens[:n],
        output_tokens=trace.output_tokens[:n],
    )


def test_every_policy_runs(azure_conv: RequestTrace, l4_8b: Deployment) -> None:
    short = _first(azure_conv, 1500)
    for name in POLICIES:
        params = {"schedule": ((0.0, 3), (19.0, 4))} if name == "scheduled" else {}
        r = simulate_autoscale(short, l4_8b, make_policy(name, **params), compare_static_peak=False)
        assert r.unfinished == 0, name


def test_same_seed_same_result_with_spot_interruptions(azure_conv: RequestTrace, l4_8b: Deployment) -> None:
    tr = scale_rate(
        make_trace(
            name="s",
            layout="azure",
            arrival_s=azure_conv.arrival_s[:3000],
            input_tokens=azure_conv.input_tokens[:3000],
            output_tokens=azure_conv.output_tokens[:3000],
        ),
        0.25,
    )

    def run(seed: int) -> AutoscaleResult:
        return simulate_autoscale(
            tr, l4_8b, make_policy("kpa"), spot_share=1.0, seed=seed, compare_static_peak=False
        )

    # most seeds draw no interruption inside this 40-minute window, and which do depends on the replica
    # count the estimator's L4 speed gives (it moves with each calibration refit): take the first that does
    seed = next((s for s in range(64) if run(s).interruptions > 0), None)
    assert seed is not None, "no seed in 0-63 draws a spot interruption"
    runs = [run(seed) for _ in range(2)]
    assert runs[0].interruptions > 0
    assert json.dumps(to_jsonable(runs[0])) == json.dumps(to_jsonable(runs[1]))
    other = run(seed + 1)
    assert json.dumps(to_jsonable(other)) != json.dumps(to_jsonable(runs[0]))


_FIFO = constant_service(step_s=1.0)  # one sequence per replica: a FIFO c-server queue


@settings(max_examples=40)
@given(
    gaps=st.lists(st.floats(0.0, 3.0), min_size=2, max_size=60),
    work=st.lists(st.floats(0.0, 10.0), min_size=60, max_size=60),
    n=st.integers(1, 4),
)
def test_more_replicas_never_raise_any_latency_fifo(gaps: list[float], work: list[float], n: int) -> None:
    k = len(gaps)
    tr = make_trace(
        name="h",
        layout="synthetic",
        arrival_s=np.cumsum(gaps),
        input_tokens=np.zeros(k),
        output_tokens=1.0 + np.asarray(work[:k]),
    )

    def e2e(c: int) -> np.ndarray:
        raw = replay(tr, _FIFO, StaticPolicy(replicas=c), min_replicas=c, max_replicas=c)
        return raw.done_s - tr.arrival_s

    assert np.all(e2e(n + 1) <= e2e(n) + 1e-9)


def test_more_batching_replicas_never_raise_tail_latency_on_azure(
    azure_conv: RequestTrace, l4_8b: Deployment
) -> None:
    # with continuous batching, per-request monotonicity does not hold (grouped prefills: hypothesis finds
    # 5-request bursts where one more replica raises p95 TTFT); on a real trace the tail and mean do not rise
    prev = (np.inf, np.inf)
    for c in range(6, 11):
        raw = replay(azure_conv, l4_8b.service, StaticPolicy(replicas=c), min_replicas=c, max_replicas=c)
        cur = (
            float(np.percentile(raw.first_token_s - azure_conv.arrival_s, 95)),
            float(np.mean(raw.done_s - azure_conv.arrival_s)),
        )
        assert cur[0] <= prev[0] + 1e-9 and cur[1] <= prev[1] + 1e-9, c
        prev = cur


def test_autoscalers_start_warm_at_their_own_target(azure_conv: RequestTrace, l4_8b: Deployment) -> None:
    from gpufleet.simulate.autoscale import concurrency_target, warm_start_replicas

    cap = l4_8b.service.max_batch
    assert concurrency_target(make_policy("kpa"), cap) == pytest.approx(0.7 * cap)
    assert concurrency_target(make_policy("kpa", target_concurrency=4), cap) == 4
    assert concurrency_target(make_policy("ray", target_ongoing_requests=6), cap) == 6
    assert concurrency_target(make_policy("hpa", target=5), cap) == 5
    assert concurrency_target(make_policy("hpa", metric="kv_usage", target=0.5), cap) == pytest.approx(
        0.7 * cap
    )
    low = warm_start_replicas(azure_conv, l4_8b.service, target_per_replica=4)
    high = warm_start_replicas(azure_conv, l4_8b.service, target_per_replica=14)
    assert low >= high >= 1
    short = make_trace(
        name="short",
        layout="azure",
        arrival_s=azure_conv.arrival_s[:600],
        input_tokens=azure_conv.input_tokens[:600],
        output_tokens=azure_conv.output_tokens[:600],
    )
    r = simulate_autoscale(short, l4_8b, make_policy("kpa", target_concurrency=4), compare_static_peak=False)
    assert r.series_replicas[0] == low


def test_a_replay_that_serves_nothing_is_refused_with_the_reason(
    azure_conv: RequestTrace, l4_8b: Deployment
) -> None:
    """Found by the API fuzz test at 1,500 examples: HPA from zero replicas never starts one (it scales on
    the load of running replicas), and the result carried NaN percentiles with exit 0. Now refused."""
    from gpufleet.errors import InfeasibleError

    short = _first(azure_conv, 200)
    with pytest.raises(InfeasibleError, match=r"policy hpa started at 0 replicas.*min replicas >= 1"):
        simulate_autoscale(short, l4_8b, make_policy("hpa"), min_replicas=0, initial_replicas=0)
    too_long = make_trace(
        name="too-long",
        layout="azure",
        arrival_s=[0.0, 5.0],
        input_tokens=[10_000_000, 10_000_000],
        output_tokens=[10, 10],
    )
    with pytest.raises(InfeasibleError, match="more KV cache than one replica"):
        simulate_autoscale(too_long, l4_8b, make_policy("kpa"), compare_static_peak=False)
    # KPA activates from zero on queued requests: the same start serves
    r = simulate_autoscale(short, l4_8b, make_policy("kpa"), min_replicas=0, initial_replicas=0)
    assert r.unfinished == 0 and np.isfinite(r.ttft.p95_s)
