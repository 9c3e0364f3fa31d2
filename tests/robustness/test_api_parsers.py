"""Price-API responses of an unexpected shape end as FetchError (no traceback, nothing written)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gpufleet.catalog.fetch import aws, azure, gcp
from gpufleet.errors import FetchError

_AZ_ITEM: dict[str, Any] = {
    "serviceName": "Virtual Machines",
    "currencyCode": "USD",
    "productName": "NC Series",
    "meterName": "NC6s v3",
    "skuName": "NC6s v3",
    "armSkuName": "Standard_NC6s_v3",
    "armRegionName": "eastus",
    "type": "Consumption",
    "unitOfMeasure": "1 Hour",
    "retailPrice": 3.06,
    "effectiveStartDate": "2026-01-01T00:00:00Z",
}


def _az(**kw: Any) -> dict[str, Any]:
    return {"Items": [{**_AZ_ITEM, **kw}]}


@pytest.mark.parametrize(
    "page",
    [
        _az(retailPrice=None),
        _az(retailPrice="abc"),
        _az(retailPrice="NaN"),
        _az(retailPrice=float("inf")),
        _az(retailPrice=-1),
        _az(retailPrice=True),
        _az(retailPrice={"x": 1}),
        _az(savingsPlan=[{"term": "1 Year", "retailPrice": "nan"}]),
        _az(savingsPlan=["1 Year"]),
        _az(savingsPlan=5),
        {"Items": ["scalar"]},
        {"Items": [None]},
        {"Items": {"a": 1}},
        {"Items": 3},
        [],
        "text",
        None,
    ],
)
def test_azure_bad_page(page: Any) -> None:
    with pytest.raises(FetchError, match="Azure Retail Prices API"):
        azure.parse_page(page, Counter())


def test_azure_good_page() -> None:
    rows, link = azure.parse_page(_az(), Counter())
    assert [r.price_usd_per_hour for r in rows] == [3.06] and link is None


def _aws(usd: Any = "1.5", products: Any = None, terms: Any = None) -> dict[str, Any]:
    prod = {
        "attributes": {
            "operatingSystem": "Linux",
            "tenancy": "Shared",
            "preInstalledSw": "NA",
            "capacitystatus": "Used",
            "usagetype": "BoxUsage:p4d.24xlarge",
            "instanceType": "p4d.24xlarge",
            "regionCode": "us-east-1",
            "gpu": "8",
        }
    }
    dims = {"r": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}
    return {
        "products": {"SKU": prod} if products is None else products,
        "terms": {"OnDemand": {"SKU": {"T": {"priceDimensions": dims}}}} if terms is None else terms,
    }


@pytest.mark.parametrize(
    "doc",
    [
        _aws(usd=None),
        _aws(usd="x"),
        _aws(usd="nan"),
        _aws(usd="-3"),
        _aws(usd=[1]),
        _aws(products={"SKU": "scalar"}),
        _aws(products=[1, 2]),
        _aws(terms={"OnDemand": {"SKU": "scalar"}}),
        _aws(terms={"OnDemand": {"SKU": {"T": {"priceDimensions": {"r": 7}}}}}),
        _aws(terms={"OnDemand": [1]}),
        {"products": {}, "terms": "x"},
        "scalar",
    ],
)
def test_aws_bad_offer_file(doc: Any) -> None:
    with pytest.raises(FetchError, match="AWS"):
        aws.parse_offer_file(doc, Counter())


def test_aws_good_offer_file() -> None:
    parsed = aws.parse_offer_file(_aws(), Counter())
    assert parsed.on_demand["SKU"][0] == 1.5


def _gcp(units: Any = "1", nanos: Any = 0, sku: Any = None) -> dict[str, Any]:
    s = {
        "skuId": "X",
        "description": "Nvidia Tesla A100 GPU running in Americas",
        "category": {"usageType": "OnDemand"},
        "serviceRegions": ["us-central1"],
        "pricingInfo": [
            {
                "pricingExpression": {
                    "usageUnit": "h",
                    "tieredRates": [{"unitPrice": {"units": units, "nanos": nanos}}],
                }
            }
        ],
    }
    return {"skus": [s if sku is None else sku]}


@pytest.mark.parametrize(
    "page",
    [
        _gcp(units="x"),
        _gcp(units="nan"),
        _gcp(nanos=-5),
        _gcp(units=[1]),
        _gcp(sku="scalar"),
        _gcp(sku={"description": "Nvidia Tesla A100 GPU running in Americas", "category": "x"}),
        {"skus": "x"},
        "scalar",
    ],
)
def test_gcp_bad_page(page: Any) -> None:
    with pytest.raises(FetchError, match="GCP"):
        gcp.parse_page(page, Counter())
