"""`recommend --pricing 1y/3y` follows the fleet planner's rule: no unverified commitment rate silently
(issue 22)."""

from __future__ import annotations

from gpufleet.recommend.api import recommend

ASK = {
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "target_rps": 5,
    "ttft_ms": 500,
    "tpot_ms": 50,
    "provider": "aws",
}


def test_3y_without_a_verified_rate_has_no_offer_and_names_the_opt_in() -> None:
    r = recommend(pricing="3y", limit=3, **ASK)  # type: ignore[arg-type]
    assert r.status == "no_offers" and not r.ranked
    assert "--allow-unverified-commitments" in r.message
    assert any("unverified 3-year commitment ceiling" in n for n in r.notes)


def test_opt_in_prices_with_the_ceiling_and_says_so() -> None:
    r = recommend(pricing="3y", limit=3, allow_unverified_commitments=True, **ASK)  # type: ignore[arg-type]
    assert r.status == "ok" and r.ranked
    assert any("Unverified 3-year commitment rates are in use" in n for n in r.notes)
    best = r.ranked[0]
    od = recommend(pricing="on_demand", limit=50, **ASK)  # type: ignore[arg-type]
    same = next(
        c
        for c in od.ranked
        if (c.provider, c.region, c.instance_type) == (best.provider, best.region, best.instance_type)
    )
    assert best.cost_usd_per_month < same.cost_usd_per_month  # the 66 % ceiling applied


def test_1y_has_no_aws_rate_at_all_on_the_shipped_catalog() -> None:
    r = recommend(pricing="1y", limit=3, allow_unverified_commitments=True, **ASK)  # type: ignore[arg-type]
    assert r.status == "no_offers"  # no sourced 1-year AWS figure, verified or not: never invented
