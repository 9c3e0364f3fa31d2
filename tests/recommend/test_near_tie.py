"""The near-tie rule: within ``near_tie_fraction`` of the best, the operationally simpler deployment ranks
first; a larger gap keeps the cheaper one. Prices are set from the measured costs so each case sits a known
distance inside or outside the band."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.offers import Offer, OfferTable
from gpufleet.errors import ConfigFileError
from gpufleet.recommend.api import recommend
from gpufleet.recommend.types import NEAR_TIE_FRACTION, Candidate, Recommendation

from .fakes import FakeEstimator, offer

EST = FakeEstimator()
#: a 70B full fine-tune needs two nodes of 8 x H100-80GB (the fake estimator's memory model) but fits
#: one node of 8 x B200
TRAIN: dict[str, Any] = {"model": "fake-70b", "task": "full_finetune", "train_tokens": 1e9, "max_nodes": 2}
#: a serving workload both offers hold on one L40S per replica
SERVE: dict[str, Any] = {"model": "fake-13b", "precision": "fp16", "target_requests_per_s": 2}


def _rec(offers: list[Offer], **kw: Any) -> Recommendation:
    r = recommend(offers=OfferTable.from_offers(offers), estimator=EST, limit=10, **kw)
    assert r.status == "ok" and r.best is not None, r.message
    return r


def _cost(c: Candidate) -> float:
    value = c.cost_usd_per_run if c.cost_usd_per_run is not None else c.cost_usd_per_month
    return float(value)


def _train_offers(ratio: float) -> list[Offer]:
    """The multi-node H100 job and a one-node B200 job costing ``ratio`` x as much."""
    h100 = offer("aws", "p5.48xlarge", "H100-SXM", 8, 55.04)
    probe = offer("aws", "p6-b200.48xlarge", "B200", 8, 100.0)
    r = _rec([h100, probe], **TRAIN, near_tie_pct=0)
    multi = next(c for c in r.ranked if c.nodes_per_replica == 2)
    single = next(c for c in r.ranked if c.gpu == "B200" and c.nodes_per_replica == 1)
    price = 100.0 * ratio * _cost(multi) / _cost(single)
    return [h100, offer("aws", "p6-b200.48xlarge", "B200", 8, price)]


def _serve_offers(ratio: float) -> list[Offer]:
    """A marketplace L40S host and a cloud one costing ``ratio`` x as much (same shape and speed)."""
    return [
        offer("vast", "1x-L40S", "L40S", 1, 1.0),
        offer("aws", "g6e.xlarge", "L40S", 1, ratio),
    ]


def test_default_band_is_three_percent() -> None:
    assert NEAR_TIE_FRACTION == 0.03
    r = _rec(_serve_offers(1.0), **SERVE)
    assert r.workload.near_tie_fraction == pytest.approx(0.03)


@pytest.mark.parametrize(
    ("ratio", "pct", "simple_wins"),
    [(1.02, 3, True), (1.02, 0, False), (1.02, 1.5, False), (1.05, 3, False), (1.05, 6, True)],
)
def test_training_one_node_beats_a_cheaper_multi_node_job_only_within_the_band(
    ratio: float, pct: float, simple_wins: bool
) -> None:
    r = _rec(_train_offers(ratio), **TRAIN, near_tie_pct=pct)
    multi = next(c for c in r.ranked if c.nodes_per_replica == 2)
    single = next(c for c in r.ranked if c.nodes_per_replica == 1)
    assert _cost(single) == pytest.approx(ratio * _cost(multi), rel=1e-9)  # the case is what it claims
    assert r.best is not None
    assert (r.best.nodes_per_replica == 1) is simple_wins
    if simple_wins:  # the cheaper job is still listed, right after
        assert r.ranked[1] == multi


@pytest.mark.parametrize(
    ("ratio", "pct", "simple_wins"),
    [(1.02, 3, True), (1.02, 0, False), (1.05, 3, False)],
)
def test_serving_cloud_host_beats_a_cheaper_marketplace_host_only_within_the_band(
    ratio: float, pct: float, simple_wins: bool
) -> None:
    r = _rec(_serve_offers(ratio), **SERVE, near_tie_pct=pct)
    assert r.best is not None
    market = next(c for c in r.ranked if c.provider == "vast")
    cloud = next(c for c in r.ranked if c.provider == "aws")
    assert market.risk == "medium" and cloud.risk == "low"
    assert _cost(cloud) == pytest.approx(ratio * _cost(market), rel=1e-9)
    assert (r.best.provider == "aws") is simple_wins


def test_band_is_measured_from_the_best_not_chained() -> None:
    """Three options 2 % apart: the simplest is 4 % above the best, outside a 3 % band, so it stays behind
    even though each neighbour is within 3 % of the next."""
    offers = [
        offer("vast", "1x-L40S", "L40S", 1, 1.0),
        offer("vast", "1x-L40S-b", "L40S", 1, 1.02),
        offer("aws", "g6e.xlarge", "L40S", 1, 1.04),
    ]
    r = _rec(offers, **SERVE)
    assert r.best is not None and r.best.provider == "vast"
    assert [c.provider for c in r.ranked][-1] == "aws"


@pytest.mark.parametrize("pct", [-1, 51])
def test_band_out_of_range_is_an_input_error(pct: float) -> None:
    with pytest.raises(ConfigFileError, match="near_tie_pct"):
        recommend(offers=OfferTable.from_offers(_serve_offers(1.0)), estimator=EST, **SERVE, near_tie_pct=pct)


@pytest.mark.parametrize(("pct", "faster_wins"), [(3, True), (0, False)])
def test_training_near_tie_prefers_the_job_that_finishes_sooner(pct: float, faster_wins: bool) -> None:
    """Two one-node jobs within the band: the one on more GPUs finishes sooner for about the same price per
    run, so it ranks first (the last simplicity key for training is the time to train, not the GPU count)."""
    work: dict[str, Any] = {"model": "fake-13b", "task": "lora", "train_tokens": 1e9, "max_nodes": 1}
    big, small = (
        offer("aws", "p6-b200.48xlarge", "B200", 8, 100.0),
        offer("aws", "p6-b200.24xlarge", "B200", 4, 50.0),
    )
    probe = _rec([big, small], **work, near_tie_pct=0)
    per_run = {c.gpus_per_node: _cost(c) for c in probe.ranked}
    # price the 4-GPU node so its run costs 1 % less than the 8-GPU one
    price = 50.0 * 0.99 * per_run[8] / per_run[4]
    r = _rec([big, offer("aws", "p6-b200.24xlarge", "B200", 4, price)], **work, near_tie_pct=pct)
    assert r.best is not None
    fast, slow = sorted(r.ranked[:2], key=lambda c: float(c.time_to_train_s.central))  # type: ignore[union-attr]
    assert _cost(slow) == pytest.approx(0.99 * _cost(fast), rel=1e-6)
    assert (r.best.gpus_per_node == 8) is faster_wins
