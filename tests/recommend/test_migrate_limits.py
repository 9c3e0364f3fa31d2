"""Migration keeps place and limits (issue 22 item 4): the current region is always known, the move stays in
its geo unless told, ``max_risk`` bounds the *move's* risk and the answer names every factor of it."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.offers import OfferTable
from gpufleet.catalog.regions import region_location
from gpufleet.recommend.api import migrate
from gpufleet.recommend.migrate import assess_risk
from gpufleet.recommend.types import RISK_LEVELS, Migration

from .fakes import FakeEstimator, offer

EST = FakeEstimator()


def _table() -> OfferTable:
    return OfferTable.from_offers(
        [
            offer("aws", "p5.4xlarge", "H100-SXM", 1, 6.88, 3.0),  # the current deployment (us-east-1)
            offer("aws", "p5.4xlarge", "H100-SXM", 1, 6.50, 3.0, region="us-east-2"),  # cheaper: not default
            offer("aws", "g6e.xlarge", "L40S", 1, 1.861, 0.80),  # same provider, low-risk move
            offer("lium", "L40S_1x", "L40S", 1, 0.60, None, region="US"),  # marketplace: a high-risk move
            offer("hyperstack", "n3-L40x1", "L40S", 1, 0.50, None, region="NORWAY-1"),  # another geo
        ]
    )


def _mig(**kw: Any) -> Migration:
    base: dict[str, Any] = {"model": "fake-13b", "precision": "fp16", "target_requests_per_s": 2}
    return migrate(offers=_table(), estimator=EST, **(base | kw))


def test_current_region_defaults_to_the_providers_default_and_is_stated() -> None:
    m = _mig(current={"instance_type": "p5.4xlarge"})  # no region: us-east-1, not the cheaper us-east-2
    assert m.workload.current is not None and m.workload.current.region == "us-east-1"
    assert m.current.region == "us-east-1"
    assert any("taken to run in us-east-1 (the default region of aws)" in n for n in m.recommendation.notes)


def test_move_stays_in_the_current_geo_without_a_region_typed() -> None:
    m = _mig(current={"instance_type": "p5.4xlarge"}, max_risk="high")
    assert m.recommended is not None
    assert region_location(m.recommended.provider, m.recommended.region).geo == "us"
    assert all(region_location(c.provider, c.region).geo == "us" for c in m.recommendation.ranked)
    assert any("limited to geo us" in n for n in m.recommendation.notes)


def test_another_geo_only_when_told() -> None:
    m = _mig(current={"instance_type": "p5.4xlarge"}, max_risk="high", geos=["eu"])
    assert m.recommended is not None and m.recommended.region == "NORWAY-1"


def test_default_limit_bounds_the_moves_risk_not_the_candidates() -> None:
    m = _mig(current={"instance_type": "p5.4xlarge"})
    assert m.recommended is not None
    assert RISK_LEVELS.index(m.risk) <= RISK_LEVELS.index("medium")
    # the marketplace host is cheaper and its own risk is medium, but moving there is high: passed over
    assert m.recommended.provider == "aws" and m.recommended.instance_type == "g6e.xlarge"
    assert "passed over" in m.recommendation.message and "lium" in m.recommendation.message
    for c in m.recommendation.ranked:  # every alternative shown is a move within the limit
        level, *_ = assess_risk(m.workload, m.current, c)
        assert RISK_LEVELS.index(level) <= RISK_LEVELS.index("medium")
    high = _mig(current={"instance_type": "p5.4xlarge"}, max_risk="high")
    assert high.recommended is not None and high.recommended.provider == "lium" and high.risk == "high"


def test_explicit_low_limit_keeps_only_low_risk_moves() -> None:
    m = _mig(current={"instance_type": "p5.4xlarge"}, max_risk="low")
    assert m.recommended is not None and m.risk == "low"
    assert m.recommended.provider == "aws"
    none = _mig(current={"instance_type": "p5.4xlarge"}, max_risk="low", providers=["lium"])
    assert none.recommended is None and none.verdict.startswith("Stay on aws p5.4xlarge")


@pytest.mark.parametrize("max_risk", ["medium", "high"])
def test_every_factor_of_the_risk_is_named_with_its_level(max_risk: str) -> None:
    m = _mig(current={"instance_type": "p5.4xlarge"}, max_risk=max_risk)
    assert m.recommended is not None
    head, *factors = m.risk_reasons
    assert head.startswith(f"risk {m.risk} because of ")
    assert factors and all(f.split(":", 1)[0] in ("high", "medium", "low") for f in factors)
    n_med = sum(f.startswith("medium:") for f in factors)
    n_high = sum(f.startswith("high:") for f in factors)
    if n_high:
        assert m.risk == "high" and f"{n_high} high factor" in head
    elif n_med >= 3:
        assert m.risk == "high" and f"{n_med} medium factors" in head
    if m.recommended.provider != "aws":
        assert any(f.startswith("medium: cross-provider move") for f in factors)
