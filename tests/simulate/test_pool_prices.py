"""Batch pool prices come from a catalog offer of a whole node under the tier rules (issue 23, item 5): the
default 8 x H100 pool was priced at 8 x a 1-GPU marketplace offer."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.catalog.capabilities import offer_class
from gpufleet.catalog.offers import load_offers
from gpufleet.errors import ConfigFileError
from gpufleet.simulate.batch import default_fleet, read_fleet


def _node_offers(gpu: str, per_node: int) -> list[object]:
    return [o for o in load_offers().filter(gpu=gpu).records() if o.gpu_count == per_node]


def test_default_pools_are_priced_as_8_gpu_nodes_off_the_marketplace() -> None:
    pools = {p.kind: p for p in default_fleet().pools}
    od, spot = pools["on_demand"], pools["spot"]
    for p in (od, spot):
        provider, region, instance = p.price_source.split("/", 2)
        offer = next(
            o
            for o in _node_offers("h100", 8)
            if (o.provider, o.region, o.instance_type) == (provider, region, instance)  # type: ignore[attr-defined]
        )
        assert offer.gpu_count == 8  # type: ignore[attr-defined]
        assert offer_class(provider, instance) != "marketplace"
        want = offer.price_spot_usd_per_hour if p.kind == "spot" else offer.price_on_demand_usd_per_hour  # type: ignore[attr-defined]
        assert p.price_usd_per_node_hour == want
    # no cheaper 8-GPU on-demand node that is not a marketplace host (production: dated prices too)
    cheaper = [
        o
        for o in _node_offers("h100", 8)
        if o.price_on_demand_usd_per_hour < od.price_usd_per_node_hour  # type: ignore[attr-defined]
        and offer_class(o.provider, o.instance_type) != "marketplace"  # type: ignore[attr-defined]
        and o.region not in ("", "unspecified", "default")  # type: ignore[attr-defined]
    ]
    assert not cheaper, cheaper
    # the old price: 8 x the cheapest 1-GPU offer per GPU, a marketplace host
    one = min(
        (o for o in load_offers().filter(gpu="h100").records() if o.gpu_count >= 1),
        key=lambda o: o.price_on_demand_usd_per_hour / o.gpu_count,
    )
    assert offer_class(one.provider, one.instance_type) == "marketplace"
    assert od.price_usd_per_node_hour > 8 * one.price_on_demand_usd_per_hour / one.gpu_count


def test_a_node_size_no_production_offer_has_is_an_error(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text("pools:\n  - {gpu: h100, gpus_per_node: 3, nodes: 2, kind: on_demand}\n")
    with pytest.raises(ConfigFileError, match=r"3-GPU h100 node .* production tier .* sizes offered"):
        read_fleet(f)


def test_batch_tier_and_provider(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(
        "pools:\n  - {gpu: h100, gpus_per_node: 8, nodes: 2, kind: on_demand, provider: aws}\n"
        "  - {name: any, gpu: h100, gpus_per_node: 8, nodes: 2, kind: on_demand, tier: batch}\n"
    )
    aws, anyhost = read_fleet(f).pools
    assert aws.price_source.startswith("aws/")
    assert anyhost.price_usd_per_node_hour <= default_fleet().pools[0].price_usd_per_node_hour
