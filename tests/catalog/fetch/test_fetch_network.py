"""Live API checks (deselected by default; run with `pytest -m network`). They check formats, not prices."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from gpufleet.catalog.fetch import azure, gcp
from gpufleet.catalog.fetch.http import get_json, make_client

pytestmark = pytest.mark.network


def test_azure_retail_prices_live_format() -> None:
    flt = azure.region_filter("eastus") + " and armSkuName eq 'Standard_NC4as_T4_v3'"
    with make_client() as client:
        data = get_json(
            client, azure.API_URL, {"api-version": azure.API_VERSION, "$filter": flt}, what="Azure"
        )
    skipped: Counter[str] = Counter()
    rows, _ = azure.parse_page(data, skipped)
    kinds = {r.kind for r in rows}
    assert "on_demand" in kinds and "reserved" in kinds
    assert all(0 < r.price_usd_per_hour < 10 for r in rows)  # a T4 VM: sanity bound [USD/h]


@pytest.mark.skipif(not os.environ.get(gcp.KEY_ENV), reason=f"{gcp.KEY_ENV} not set")
def test_gcp_billing_catalog_live_first_page() -> None:
    with make_client() as client:
        data = get_json(
            client, gcp.API_URL, {"key": gcp.api_key(), "pageSize": "500", "currencyCode": "USD"}, what="GCP"
        )
    skus, _ = gcp.parse_page(data, Counter())
    assert skus, "no VM core/RAM/GPU SKU recognised on the first page: descriptions may have changed"
