"""`query_offers` (the CLI's `catalog offers` and the service's /catalog/offers): one mask and one sort over
the table give what filtering step by step and sorting the rest gave, and a provider is checked against the
whole catalog."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.listing import extra_filters, offer_rows, query_offer_index, query_offers
from gpufleet.catalog.offers import load_offers
from gpufleet.errors import UnknownNameError

QUERIES: tuple[dict[str, Any], ...] = (
    {},
    {"gpus": ["H100"]},
    {"gpus": ["A100"], "providers": ["aws", "gcp", "azure"], "sort": "price"},
    {"geos": ["eu"], "spot": True},
    {"min_gpu_memory_gib": 80, "gpu_count": 8, "sort": "price_per_gpu_memory"},
    {"regions": ["us-*", "*west*"], "max_price_usd_per_hour": 20, "spot": True, "sort": "price"},
    {"provider_classes": ["gpu_cloud"], "gpus": ["L4", "T4"]},
)


def _step_by_step(table: Any, q: dict[str, Any]) -> Any:
    return (
        extra_filters(
            table, q.get("gpus", ()), q.get("regions", ()), q.get("geos", ()), q.get("provider_classes", ())
        )
        .filter(
            min_gpu_memory_gib=q.get("min_gpu_memory_gib"),
            gpus=q.get("gpu_count"),
            provider=q.get("providers") or None,
            spot=q.get("spot", False),
            max_price_usd_per_hour=q.get("max_price_usd_per_hour"),
        )
        .sort(q.get("sort", "price_per_gpu"), spot=q.get("spot", False))
    )


@pytest.mark.parametrize("q", QUERIES)
def test_one_pass_query_is_the_step_by_step_one(q: dict[str, Any]) -> None:
    table = load_offers()
    got = query_offers(table, **q)
    assert len(got) > 0
    assert offer_rows(got) == offer_rows(_step_by_step(table, q))
    index = query_offer_index(table, **q)
    assert offer_rows(table.take(index[:5])) == offer_rows(got)[:5]


def test_a_known_provider_without_the_gpu_is_no_match_not_unknown() -> None:
    table = load_offers()
    assert "lambda" in table.providers()
    assert len(query_offers(table, gpus=["H100"], providers=["lambda"])) > 0
    gpus_at_lambda = set(table.take(table.column("provider") == "lambda").column("gpu").tolist())
    assert "T4" not in gpus_at_lambda
    # the step-by-step filter said "Unknown provider 'lambda'. Known providers: aws, azure, gcp."
    assert len(query_offers(table, gpus=["T4"], providers=["lambda"])) == 0
    with pytest.raises(UnknownNameError, match="Unknown provider 'nosuch'"):
        query_offers(table, gpus=["T4"], providers=["nosuch"])
    with pytest.raises(UnknownNameError, match="region"):
        query_offers(table, regions=["mars-*"])
