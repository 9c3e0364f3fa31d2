"""Paged KV (grow per token, recompute preemption of the newest request) and the decision-time metrics."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.errors import InputError
from gpufleet.report.json_report import to_jsonable
from gpufleet.simulate.autoscale import Deployment, simulate_autoscale
from gpufleet.simulate.cluster import KV_BLOCK_TOKENS, replay
from gpufleet.simulate.policies import Metrics, StaticPolicy, make_policy
from gpufleet.simulate.serving import ServiceModel, constant_service
from gpufleet.simulate.traces import RequestTrace, make_trace


def _head(trace: RequestTrace, n: int) -> RequestTrace:
    return make_trace(
        name="head",
        layout="azure",
        arrival_s=trace.arrival_s[:n],
        input_tokens=trace.input_tokens[:n],
        output_tokens=trace.output_tokens[:n],
    )


def _tight(service: ServiceModel, kv_tokens: float) -> ServiceModel:
    return dataclasses.replace(service, kv_capacity_tokens=kv_tokens)


def test_a_tight_pool_preempts_and_still_serves_everything(
    azure_conv: RequestTrace, l4_8b: Deployment
) -> None:
    tr = _head(azure_conv, 2000)
    svc = _tight(l4_8b.service, 12_000.0)
    raw = replay(tr, svc, StaticPolicy(replicas=2), min_replicas=2, max_replicas=2)
    assert raw.preemptions > 0
    assert raw.rejected == int(np.sum(tr.input_tokens + tr.output_tokens > 12_000.0))
    served = np.isfinite(raw.done_s)
    assert served.sum() == len(tr) - raw.rejected
    # a preempted request keeps its first token: TTFT <= end-to-end, and finishing takes its decode steps
    assert np.all(raw.first_token_s[served] <= raw.done_s[served])
    assert np.all(raw.admit_s[served] >= tr.arrival_s[served])
    # reserving input + output never preempts
    res = replay(tr, svc, StaticPolicy(replicas=2), min_replicas=2, max_replicas=2, kv_mode="reserve")
    assert res.preemptions == 0


def test_paged_equals_reserve_when_kv_is_never_the_limit(azure_conv: RequestTrace, l4_8b: Deployment) -> None:
    tr = _head(azure_conv, 1500)
    svc = dataclasses.replace(l4_8b.service, kv_capacity_tokens=1e12, engine_max_seqs=0)
    runs = [
        replay(tr, svc, StaticPolicy(replicas=3), min_replicas=3, max_replicas=3, kv_mode=m)
        for m in ("paged", "reserve")
    ]
    assert runs[0].preemptions == 0
    np.testing.assert_array_equal(runs[0].done_s, runs[1].done_s)
    np.testing.assert_array_equal(runs[0].first_token_s, runs[1].first_token_s)


@settings(max_examples=30, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0, 0.5), min_size=3, max_size=40),
    prompts=st.lists(st.integers(1, 300), min_size=40, max_size=40),
    outputs=st.lists(st.integers(1, 300), min_size=40, max_size=40),
    kv=st.integers(320, 2000),
)
def test_paged_kv_always_finishes_what_fits(
    gaps: list[float], prompts: list[int], outputs: list[int], kv: int
) -> None:
    k = len(gaps)
    tr = make_trace(
        name="p",
        layout="synthetic",
        arrival_s=np.cumsum(gaps),
        input_tokens=np.asarray(prompts[:k], dtype=float),
        output_tokens=np.asarray(outputs[:k], dtype=float),
    )
    svc = dataclasses.replace(
        constant_service(step_s=0.01, servers_batch=8, kv_capacity_tokens=float(kv), prefill_s=0.02),
        engine_max_seqs=64,
    )
    raw = replay(tr, svc, StaticPolicy(replicas=1), min_replicas=1, max_replicas=1)
    fits = tr.input_tokens + tr.output_tokens <= kv
    assert raw.rejected == int(np.sum(~fits))
    assert np.all(np.isfinite(raw.done_s[fits])) and np.all(np.isnan(raw.done_s[~fits]))
    # no request finishes faster than its own decode steps after its first token
    assert np.all(raw.done_s[fits] - raw.first_token_s[fits] >= (tr.output_tokens[fits] - 1) * 0.01 - 1e-9)
    again = replay(tr, svc, StaticPolicy(replicas=1), min_replicas=1, max_replicas=1)
    np.testing.assert_array_equal(raw.done_s, again.done_s)
    assert raw.preemptions == again.preemptions


def test_autoscale_reports_preemptions_and_mode(azure_conv: RequestTrace, l4_8b: Deployment) -> None:
    tr = _head(azure_conv, 1500)
    r = simulate_autoscale(tr, l4_8b, make_policy("kpa"), compare_static_peak=False)
    assert r.kv_mode == "paged" and r.preemptions >= 0 and r.rejected == 0
    doc = json.loads(json.dumps(to_jsonable(r)))
    assert "preemptions" in doc and doc["kv_mode"] == "paged"
    with pytest.raises(InputError, match="KV mode"):
        simulate_autoscale(tr, l4_8b, make_policy("kpa"), compare_static_peak=False, kv_mode="swap")


def test_block_size_is_vllms_default() -> None:
    assert KV_BLOCK_TOKENS == 16


def test_metrics_window_mean_is_the_time_weighted_mean() -> None:
    m = Metrics()
    # in flight: 0 on [0, 1), 4 on [1, 3), 1 on [3, 6)
    m.checkpoint(
        0.0, in_flight_integral=0.0, waiting_integral=0.0, in_flight=0, waiting=0, kv_usage=0, ready=1
    )
    m.checkpoint(
        2.0, in_flight_integral=4.0, waiting_integral=0.0, in_flight=4, waiting=0, kv_usage=0, ready=1
    )
    m.checkpoint(
        6.0,
        in_flight_integral=4.0 + 8.0 + 3.0,
        waiting_integral=1.0,
        in_flight=1,
        waiting=0,
        kv_usage=0.5,
        ready=2,
    )
    assert m.mean("in_flight", 6.0, 6.0) == pytest.approx(15.0 / 6.0)
    assert m.mean("in_flight", 4.0, 6.0) == pytest.approx(11.0 / 4.0)
    assert m.mean("in_flight", 100.0, 6.0) == pytest.approx(15.0 / 6.0)  # clipped to the start
    assert m.mean("waiting", 6.0, 6.0) == pytest.approx(1.0 / 6.0)
    assert m.mean("kv_usage", 1.0, 6.0) == pytest.approx(0.5)
    assert m.mean("ready", 5.0, 6.0) == pytest.approx(1.5)  # decisions at 2 s and 6 s
