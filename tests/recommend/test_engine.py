"""The candidate engine with a deterministic fake estimator: statuses, costs, spot, Pareto, CANNOT FIT."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError, UnknownNameError
from gpufleet.recommend.api import recommend
from gpufleet.recommend.types import Candidate, Recommendation
from gpufleet.units import HOURS_PER_MONTH, MILLION, SECONDS_PER_HOUR

from .fakes import FakeEstimator, small_table

EST = FakeEstimator()


def rec(**kw: Any) -> Recommendation:
    return recommend(offers=small_table(), estimator=EST, **kw)


def test_cheapest_meets_target_and_costs_add_up() -> None:
    r = rec(
        model="fake-13b", precision="fp16", target_requests_per_s=2, ttft_p95_ms=1000, hours_per_month=300
    )
    assert r.status == "ok" and r.best is not None
    b = r.best
    assert b.cost_usd_per_hour == pytest.approx(b.price_usd_per_node_hour * b.total_nodes)
    assert b.cost_usd_per_month == pytest.approx(b.cost_usd_per_hour * 300)
    assert b.output_tokens_per_s is not None and b.output_tokens_per_s.central >= 2 * 256
    # USD per month / output tokens per month at the user's load (2 req/s x 256 tokens over 300 h)
    per_mtok = b.cost_usd_per_month / (2 * 256 * 300 * SECONDS_PER_HOUR) * MILLION
    assert b.cost_usd_per_million_output_tokens_at_load == pytest.approx(per_mtok)
    costs = [c.cost_usd_per_month for c in r.ranked]
    assert costs == sorted(costs)
    assert len({(c.provider, c.instance_type) for c in r.ranked}) == len(r.ranked)  # one row per offer type


def test_a_bigger_target_needs_more_replicas() -> None:
    small = rec(
        model="fake-7b",
        precision="fp16",
        target_output_tokens_per_s=500,
        providers=["aws"],
        gpu_vendors=["NVIDIA"],
    )
    big = rec(
        model="fake-7b",
        precision="fp16",
        target_output_tokens_per_s=50_000,
        providers=["aws"],
        gpu_vendors=["NVIDIA"],
    )
    assert small.best is not None and big.best is not None
    assert big.best.cost_usd_per_month > small.best.cost_usd_per_month
    assert big.best.output_tokens_per_s is not None and big.best.output_tokens_per_s.central >= 50_000


def test_fastest_and_tpd_objectives() -> None:
    kw = {"model": "fake-13b", "precision": "fp16", "target_requests_per_s": 2}
    cheap, fast, tpd = (rec(objective=o, **kw) for o in ("cheapest", "fastest", "throughput_per_dollar"))
    assert fast.best is not None and cheap.best is not None and tpd.best is not None
    assert fast.best.speed >= max(c.speed for c in cheap.ranked)
    assert fast.best.cost_usd_per_month >= cheap.best.cost_usd_per_month


def _tput(c: Candidate) -> float:
    iv = c.output_tokens_per_s if c.output_tokens_per_s is not None else c.tokens_per_s
    assert iv is not None
    return iv.central


def _dominated(a: Candidate, b: Candidate, benefit: Callable[[Candidate], float] = _tput) -> bool:
    """Brute-force dominance on the axes the reports draw: lower cost, higher benefit."""
    return b.cost_usd_per_month <= a.cost_usd_per_month and benefit(b) >= benefit(a) and (
        b.cost_usd_per_month < a.cost_usd_per_month or benefit(b) > benefit(a))  # fmt: skip


def test_pareto_front_is_non_dominated_and_sorted() -> None:
    r = rec(model="fake-7b", precision="fp16", target_requests_per_s=1, tpot_p95_ms=30, limit=50)
    assert len(r.pareto) >= 2
    for a in r.pareto:  # cost vs throughput (the chart's axes)
        assert not any(_dominated(a, b) for b in r.pareto)
        assert not any(_dominated(a, b) for b in r.ranked)
    for a in r.pareto_latency:  # cost vs per-stream speed (1/TPOT)
        assert not any(_dominated(a, b, lambda c: c.speed) for b in r.pareto_latency)
        assert not any(_dominated(a, b, lambda c: c.speed) for b in r.ranked)
    costs = [c.cost_usd_per_month for c in r.pareto]
    assert costs == sorted(costs)
    assert r.pareto[0].cost_usd_per_month == pytest.approx(r.best.cost_usd_per_month)  # type: ignore[union-attr]


def test_infeasible_slo_is_a_status_with_closest() -> None:
    r = rec(model="fake-13b", precision="fp16", ttft_p95_ms=0.001)
    assert r.status == "infeasible_slo" and r.best is None
    assert r.closest and all(not c.meets_slo and c.slo_misses for c in r.closest)
    assert "TTFT" in r.closest[0].slo_misses[0]


def test_over_budget_status() -> None:
    r = rec(model="fake-13b", precision="fp16", budget_usd_per_month=10)
    assert r.status == "over_budget" and r.closest
    assert r.closest[0].cost_usd_per_month > 10 and "OVER BUDGET" in r.message


def test_no_offers_status() -> None:
    r = rec(model="fake-7b", providers=["aws"], regions=["eastus"])  # each matches; together nothing
    assert r.status == "no_offers"


def test_region_glob_matching_no_region_is_an_error() -> None:
    with pytest.raises(UnknownNameError, match="Unknown region 'mars-\\*'"):
        rec(model="fake-7b", regions=["mars-*"])


def test_cannot_fit_explains_with_numbers() -> None:
    r = rec(model="fake-2t", precision="fp16", max_nodes=2)
    assert r.status == "cannot_fit" and r.cannot_fit is not None
    cf = r.cannot_fit
    assert cf.mem_needed_single_gpu_gib > cf.largest_gpu_memory_gib
    assert cf.largest_gpu_memory_gib == pytest.approx(get_spec("MI300X").memory_gib)
    kinds = {s.kind for s in cf.suggestions}
    assert {"lower_precision", "more_gpus"} <= kinds
    assert all(s.example_offer for s in cf.suggestions)


def test_cannot_fit_full_finetune_suggests_lora_and_wider_filters() -> None:
    r = rec(model="fake-70b", task="full_finetune", train_tokens=1e9, providers=["aws"], max_nodes=1)
    assert r.status == "cannot_fit" and r.cannot_fit is not None
    kinds = {s.kind for s in r.cannot_fit.suggestions}
    assert {"lora", "more_memory_gpu"} <= kinds


def test_training_costs_per_run() -> None:
    r = rec(model="fake-7b", task="full_finetune", train_tokens=1e9)
    assert r.status == "ok" and r.best is not None
    b = r.best
    assert b.time_to_train_s is not None and b.cost_usd_per_run is not None
    assert b.cost_usd_per_run == pytest.approx(
        b.cost_usd_per_hour * b.time_to_train_s.central / SECONDS_PER_HOUR
    )
    runs = [c.cost_usd_per_run for c in r.ranked]
    assert runs == sorted(runs)  # type: ignore[type-var]


def test_deadline_forces_more_nodes() -> None:
    free = rec(
        model="fake-7b", task="full_finetune", train_tokens=5e10, providers=["aws"], objective="cheapest"
    )
    assert free.best is not None and free.best.time_to_train_s is not None
    hours = free.best.time_to_train_s.central / SECONDS_PER_HOUR
    tight = rec(
        model="fake-7b", task="full_finetune", train_tokens=5e10, providers=["aws"], deadline_h=hours / 3
    )
    assert tight.status == "ok" and tight.best is not None
    assert tight.best.total_gpus > free.best.total_gpus


def test_spot_inference_over_provisions_and_skips_unknown_spot() -> None:
    r = rec(
        model="fake-7b",
        precision="fp16",
        target_output_tokens_per_s=20_000,
        pricing="spot",
        providers=["aws"],
    )
    assert r.status == "ok" and r.best is not None and r.best.spot is not None
    s = r.best.spot
    assert s.replicas_provisioned >= s.replicas_needed >= 1
    assert s.replicas_provisioned > s.replicas_needed  # 99 % availability at A ~ 0.93 needs spares
    assert all(
        not (c.instance_type == "g6e.xlarge" and c.region == "eu-west-1") for c in r.ranked
    )  # spot None
    assert any("expected-cost model" in n for n in r.notes)


def test_spot_training_slower_than_on_demand() -> None:
    od = rec(model="fake-7b", task="lora", train_tokens=1e9, providers=["aws"], max_nodes=1)
    sp = rec(model="fake-7b", task="lora", train_tokens=1e9, providers=["aws"], max_nodes=1, pricing="spot")
    assert od.best is not None and sp.best is not None and sp.best.spot is not None
    assert sp.best.spot.wall_time_factor > 1
    tt = sp.best.time_to_train_s
    assert tt is not None and sp.best.spot.checkpoint_interval_h is not None
    same = [c for c in od.ranked if c.instance_type == sp.best.instance_type and c.region == sp.best.region]
    assert same and same[0].time_to_train_s is not None
    assert tt.central == pytest.approx(same[0].time_to_train_s.central * sp.best.spot.wall_time_factor)


def test_commitment_bills_730_hours() -> None:
    r = rec(model="fake-7b", precision="fp16", pricing="1y", hours_per_month=100)
    if r.status == "ok" and r.best is not None:
        assert r.best.cost_usd_per_month == pytest.approx(r.best.cost_usd_per_hour * HOURS_PER_MONTH)
    else:  # no commitment program in the table for these providers: then nothing may be priced
        assert r.status == "no_offers"


def test_unknown_objective() -> None:
    with pytest.raises(InputError, match="Unknown objective"):
        rec(model="fake-7b", objective="prettiest")


def test_unknown_model_propagates() -> None:
    from gpufleet.recommend.perf import DefaultEstimator

    with pytest.raises(UnknownNameError):
        recommend(model="no-such-model-xyz", offers=small_table(), estimator=DefaultEstimator())


def test_bad_limit() -> None:
    with pytest.raises(InputError, match="limit"):
        rec(model="fake-7b", limit=0)


def test_vendor_filter() -> None:
    r = rec(model="fake-7b", precision="fp16", gpu_vendors=["AMD"])
    assert r.best is not None and all(c.gpu_vendor == "AMD" for c in r.ranked)


def test_speed_is_finite_for_every_ranked() -> None:
    r = rec(model="fake-13b", precision="fp16", target_requests_per_s=3)
    assert all(math.isfinite(c.speed) and c.speed > 0 for c in r.ranked)
    assert np.all(np.diff([c.cost_usd_per_month for c in r.ranked]) >= 0)
