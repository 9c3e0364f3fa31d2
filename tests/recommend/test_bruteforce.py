"""The vectorised engine must pick the same optimum as the loop-based reference, over random workloads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.recommend.engine import recommend_on
from gpufleet.recommend.rank import brute_force_best
from gpufleet.recommend.types import Recommendation, Workload

from .fakes import FakeEstimator

EST = FakeEstimator()
SPOT = load_spot_assumptions()
FULL = load_offers()
GPU_ROWS = np.flatnonzero((FULL.column("gpu") != "") & (FULL.column("gpu_count") >= 1))


def subset(seed: int, n: int) -> OfferTable:
    rng = np.random.default_rng(seed)
    return FULL.take(np.sort(rng.choice(GPU_ROWS, size=n, replace=False)))


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    training = draw(st.booleans())
    common: dict[str, Any] = {
        "name": "w",
        "model": draw(st.sampled_from(["fake-1b", "fake-7b", "fake-13b", "fake-70b"])),
        "pricing": draw(st.sampled_from(["on_demand", "spot"])),
        "hours_per_month": draw(st.sampled_from([100.0, 400.0, 730.0])),
        "max_nodes": draw(st.integers(1, 3)),
        "objective": draw(st.sampled_from(["cheapest", "fastest", "throughput_per_dollar"])),
        "budget_usd_per_month": draw(st.one_of(st.none(), st.floats(500, 200_000))),
        "providers": draw(st.sampled_from([(), ("aws",), ("aws", "gcp", "azure"), ("runpod", "lambda")])),
        "regions": draw(st.sampled_from([(), ("us-*",), ("eu*", "asia*")])),
    }
    if training:
        return Workload(task=draw(st.sampled_from(["full_finetune", "lora", "qlora"])), precision="bf16",
                        train_tokens=draw(st.floats(1e8, 1e11)),
                        deadline_h=draw(st.one_of(st.none(), st.floats(1, 2000))), **common)  # fmt: skip
    target = draw(st.sampled_from(["none", "tps", "rps", "conc"]))
    return Workload(
        task="inference", precision=draw(st.sampled_from(["fp16", "fp8", "int4"])),
        input_len_tokens=draw(st.integers(64, 4096)), output_len_tokens=draw(st.integers(16, 1024)),
        target_output_tokens_per_s=draw(st.floats(10, 50_000)) if target == "tps" else None,
        target_requests_per_s=draw(st.floats(0.1, 50)) if target == "rps" else None,
        concurrency=draw(st.integers(1, 500)) if target == "conc" else None,
        ttft_p95_s=draw(st.one_of(st.none(), st.floats(0.05, 5))),
        tpot_p95_s=draw(st.one_of(st.none(), st.floats(0.005, 0.2))), **common,
    )  # fmt: skip


def engine_value(r: Recommendation, w: Workload) -> float:
    b = r.best
    assert b is not None
    if r.objective == "cheapest":
        return b.cost_usd_per_run if w.is_training else b.cost_usd_per_month  # type: ignore[return-value]
    if r.objective == "fastest":
        return -b.speed
    tput = b.tokens_per_s if w.is_training else b.output_tokens_per_s
    assert tput is not None
    return -tput.central / b.cost_usd_per_hour


def check(table: OfferTable, w: Workload) -> None:
    r = recommend_on(table, w, EST, SPOT, limit=3)
    ref = brute_force_best(table, w, EST, SPOT, w.objective)
    if ref is None:
        assert r.status != "ok", r.message
        return
    assert r.status == "ok", (r.status, r.message, ref)
    assert engine_value(r, w) == pytest.approx(ref[0], rel=1e-9, abs=1e-15)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=workloads(), seed=st.integers(0, 2**16))
def test_engine_equals_brute_force_on_random_subsets(w: Workload, seed: int) -> None:
    check(subset(seed, 120), w)


@pytest.mark.parametrize(
    "w",
    [
        Workload(name="a", model="fake-13b", task="inference", precision="fp16", target_requests_per_s=2,
                 ttft_p95_s=1.0, tpot_p95_s=0.06, max_nodes=2),
        Workload(name="b", model="fake-70b", task="full_finetune", precision="bf16", train_tokens=1e10,
                 max_nodes=2, objective="fastest", budget_usd_per_month=100_000),
        Workload(name="c", model="fake-7b", task="inference", precision="fp8", pricing="spot", concurrency=64,
                 max_nodes=1, objective="throughput_per_dollar"),
    ],
)  # fmt: skip
def test_engine_equals_brute_force_full_catalog(w: Workload) -> None:
    check(FULL, w)


def test_only_embargoed_offers_say_so_and_the_reference_agrees() -> None:
    """An offer in an embargoed country (here Russia) is no candidate unless allowed, in the engine and in the
    reference alike (the reference once skipped the embargo and 'beat' the engine with a lium host in RU),
    and the refusal names the embargo instead of claiming the catalog has no GPU offer."""
    from gpufleet.recommend.filters import EMBARGOED_COUNTRIES, _table_locations

    embargoed = np.isin(_table_locations(FULL)[1], EMBARGOED_COUNTRIES)
    rows = np.flatnonzero(embargoed & (FULL.column("gpu_count") >= 1))
    assert rows.size, "the shipped catalog lists hosts in embargoed countries"
    table = FULL.take(rows)
    w = Workload(name="e", model="fake-7b", task="inference", precision="fp16", target_requests_per_s=1)
    r = recommend_on(table, w, EST, SPOT, limit=3)
    assert r.status == "no_offers" and "embargo" in r.message and "allow_embargoed_countries" in r.message
    assert brute_force_best(table, w, EST, SPOT, w.objective) is None
    allowed = Workload(name="e", model="fake-7b", task="inference", precision="fp16", target_requests_per_s=1,
                       allow_embargoed_countries=True)  # fmt: skip
    check(table, allowed)
    assert recommend_on(table, allowed, EST, SPOT, limit=3).status == "ok"
