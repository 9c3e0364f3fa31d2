"""Review scenarios: what a failed recommendation says is the reason it failed.

- A 405B pre-training on 28 nodes priced on spot answered "CANNOT FIT: needs about 6,089.5 GiB on a single
  GPU ... no larger node count fits" while the same run fits on demand: spot's interruption model dropped
  every multi-node placement (lambda (tau/2 + R) > 0.5), which is no memory verdict.
- Closest options without an SLO miss read "over budget" in every renderer, also under OVER RISK with no
  budget given."""

from __future__ import annotations

import math
from functools import cache

from gpufleet.cost.spot import assumption_for, load_spot_assumptions
from gpufleet.recommend.api import recommend
from gpufleet.recommend.types import Recommendation
from gpufleet.report import render_text
from gpufleet.units import SECONDS_PER_HOUR

PRETRAIN_405B = {
    "model": "llama-3.1-405b",
    "task": "pretrain",
    "precision": "bf16",
    "train_tokens": 2e11,
    "seq_len_tokens": 8192,
    "global_batch_sequences": 1024,
    "deadline_h": 2500,
    "gpus": ["H100", "H200"],
    "max_nodes": 32,
}


@cache
def _on(pricing: str) -> Recommendation:
    return recommend({**PRETRAIN_405B, "pricing": pricing})


def test_spot_dropping_every_placement_is_not_a_memory_verdict() -> None:
    od = _on("on_demand")
    assert od.status != "cannot_fit"  # it fits in memory on demand
    r = _on("spot")
    assert r.status == "infeasible_slo", r.message
    assert r.cannot_fit is None and r.message.startswith("INFEASIBLE ON SPOT")
    assert r.closest and all(c.price_kind == "on_demand" for c in r.closest)
    c0 = r.closest[0]
    assert c0.slo_misses[0].startswith("not runnable on spot")
    # recomputed by hand (cost/spot.py): the job stops when any node is interrupted, lambda_job = n / M;
    # Young's tau = sqrt(2 C M_job); the first-order model is valid only while lambda (tau/2 + R) <= 0.5
    a = assumption_for(c0.provider, load_spot_assumptions())
    lam = a.interruptions_per_h * c0.total_nodes
    tau = math.sqrt(2 * (a.checkpoint_cost_s / SECONDS_PER_HOUR) / lam)
    assert lam * (tau / 2 + a.restart_overhead_s / SECONDS_PER_HOUR) > 0.5
    assert f"x{c0.total_nodes}" in r.message and f"needs {c0.total_nodes} node(s)" in r.message


def test_over_risk_closest_options_are_not_called_over_budget() -> None:
    r = recommend(
        model="llama-3.1-8b", target_requests_per_s=2, tier="batch", max_risk="low", providers=["vast"]
    )
    assert r.status == "over_risk" and r.closest
    assert r.workload.budget_usd_per_month is None
    for fmt in ("markdown", "html"):
        text = render_text(r, fmt)
        assert "over budget" not in text, fmt
        assert "above the limit (low)" in text, fmt
