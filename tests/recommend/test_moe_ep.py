"""Serving a mixture-of-experts model: recommend weighs expert-parallel layouts (routed experts over the
node's GPUs, attention TP x DP inside them) beside tensor parallelism, with the real estimator."""

from __future__ import annotations

import pytest

from gpufleet.catalog.offers import OfferTable
from gpufleet.estimate.performance import estimate_inference
from gpufleet.recommend.api import recommend
from gpufleet.recommend.perf import DefaultEstimator

from .fakes import offer

H100_NODE = OfferTable.from_offers([offer("aws", "p5.48xlarge", "H100-SXM", 8, 55.04)])
#: a high decode-rate target: how many nodes the layout needs decides the cost
WORKLOAD = {
    "model": "qwen3-30b-a3b",
    "target_output_tokens_per_s": 200_000,
    "tpot_p95_ms": 100,
    "tier": "batch",
}


class TpOnlyEstimator(DefaultEstimator):
    """The default estimator without expert-parallel layouts (recommend before EP was considered)."""

    expert_parallel_layouts = None


def test_expert_parallel_layout_is_picked_when_it_needs_fewer_nodes() -> None:
    ep = recommend(offers=H100_NODE, estimator=DefaultEstimator(), **WORKLOAD)
    tp = recommend(offers=H100_NODE, estimator=TpOnlyEstimator(), **WORKLOAD)
    assert ep.status == tp.status == "ok" and ep.best is not None and tp.best is not None
    assert tp.best.ep == 1
    e = ep.best.ep
    assert e in (2, 4, 8) and e % ep.best.tp == 0
    assert ep.best.total_nodes < tp.best.total_nodes
    assert ep.best.cost_usd_per_month < tp.best.cost_usd_per_month
    # the pick's figures are the estimator's for that layout (8 / ep replicas per node); its TPOT is the one a
    # request sees at the operating concurrency (decode step plus the newcomers' prompts)
    direct = estimate_inference(model="qwen3-30b-a3b", gpu="H100-SXM", precision="bf16", input_len=512,
                                output_len=256, gpu_count=e, tp=ep.best.tp, ep=e,
                                batch=ep.best.batch_per_replica)  # fmt: skip
    assert direct.ep == e and direct.tpot_loaded_s is not None and ep.best.tpot_s is not None
    assert direct.tpot_s is not None and direct.tpot_loaded_s.central > direct.tpot_s.central
    assert ep.best.tpot_s.central == pytest.approx(direct.tpot_loaded_s.central, rel=1e-12)
    assert ep.best.replicas == ep.best.total_nodes * (8 // e)


@pytest.mark.parametrize(
    ("model", "gpu", "layouts"),
    [
        ("llama-3.1-8b", "H100-SXM", ()),  # dense: no expert parallelism
        (
            "mixtral-8x7b",
            "H100-SXM",
            ((2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (8, 1), (8, 2), (8, 4), (8, 8)),
        ),
    ],
)
def test_expert_layouts_offered(model: str, gpu: str, layouts: tuple[tuple[int, int], ...]) -> None:
    w = recommend(offers=H100_NODE, estimator=DefaultEstimator(), model=model, tier="batch").workload
    assert DefaultEstimator().expert_parallel_layouts(gpu=gpu, gpu_count=8, workload=w) == layouts


def test_ep_pick_reports_its_layout() -> None:
    from gpufleet.report.common import parallelism_text

    r = recommend(offers=H100_NODE, estimator=DefaultEstimator(), **WORKLOAD)
    assert r.best is not None
    e, t = r.best.ep, r.best.tp
    assert e > 1
    assert parallelism_text(r.best) == f"EP{e} (attention TP{t}xDP{e // t})xPP1"
