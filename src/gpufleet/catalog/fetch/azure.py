"""Azure Retail Prices API: fetch (pages via NextPageLink), parse (pure), normalise.

API (no auth): ``GET https://prices.azure.com/api/retail/prices?api-version=2023-01-01-preview&$filter=...``,
100 items per page, envelope ``{BillingCurrency, CustomerEntityId, CustomerEntityType, Items[], NextPageLink,
Count}`` (shared/data/market_assumptions.md, "Price APIs"). Rules:

- Windows rows (productName contains "Windows"), DevTestConsumption and " Low Priority" (Batch) are excluded.
- " Spot" in meterName/skuName is the spot price.
- A Reservation row's retailPrice is the total for the whole term although unitOfMeasure reads "1 Hour":
  divided by 8760 h (1 Year) or 26280 h (3 Years) (:data:`gpufleet.units.HOURS_PER_YEAR`).
- ``savingsPlan[{unitPrice, retailPrice, term}]`` entries (preview API) are hourly savings-plan prices.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from gpufleet.catalog.fetch.http import api_number, api_parser, get_json
from gpufleet.catalog.fetch.normalise import MachinePrices, Shape, keep_cheapest
from gpufleet.errors import FetchError
from gpufleet.units import HOURS_PER_YEAR

API_URL = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
MAX_PAGES = 2000  # a guard against a NextPageLink loop (a region has ~100 pages of VM prices)
_GPU_SKU = re.compile(r"^Standard_N[A-Z]")  # N-series: the GPU families (NC, ND, NV, NG)
_TERMS = {"1 Year": 1, "3 Years": 3}


@dataclass(frozen=True, slots=True, kw_only=True)
class AzurePrice:
    """One usable price row [USD/h]; ``kind`` is on_demand | spot | reserved | savings_plan."""

    region: str
    arm_sku_name: str
    kind: str
    term_years: int  # 0 for hourly kinds
    price_usd_per_hour: float
    effective_start: str


_API = "Azure Retail Prices API"


@api_parser(_API)
def parse_page(data: Any, skipped: Counter[str]) -> tuple[list[AzurePrice], str | None]:
    """Usable rows of one API page and its NextPageLink; counts excluded rows by reason in ``skipped``."""
    if not isinstance(data, dict) or not isinstance(data.get("Items"), list):
        raise FetchError(
            "The Azure Retail Prices API returned a page without an 'Items' list; the API format may have "
            "changed. Nothing was written."
        )
    out: list[AzurePrice] = []
    for item in data["Items"]:
        if not isinstance(item, dict):
            raise TypeError(f"an item is {type(item).__name__}, not an object")
        reason = _exclusion(item)
        if reason:
            skipped[reason] += 1
            continue
        out.extend(_rows(item))
    link = data.get("NextPageLink")
    return out, link if isinstance(link, str) and link else None


def _exclusion(item: dict[str, Any]) -> str:
    names = " ".join(str(item.get(k, "")) for k in ("meterName", "skuName"))
    if item.get("serviceName") != "Virtual Machines":
        return "not a virtual machine"
    if item.get("currencyCode", "USD") != "USD":
        return "not USD"
    if "Windows" in str(item.get("productName", "")):
        return "Windows"
    if item.get("type") == "DevTestConsumption":
        return "DevTest"
    if " Low Priority" in names:
        return "Low Priority (Batch)"
    if not item.get("armSkuName"):
        return "no armSkuName"
    if item.get("type") not in ("Consumption", "Reservation"):
        return f"price type {item.get('type')!r}"
    if item.get("unitOfMeasure") != "1 Hour":
        return f"unit {item.get('unitOfMeasure')!r}"
    return ""


def _rows(item: dict[str, Any]) -> list[AzurePrice]:
    base = {
        "region": str(item["armRegionName"]),
        "arm_sku_name": str(item["armSkuName"]),
        "effective_start": str(item.get("effectiveStartDate", "")),
    }
    where = f"{base['arm_sku_name']} in {base['region']}"
    price = api_number(item.get("retailPrice"), api=_API, where=where, field="retailPrice")
    if item["type"] == "Reservation":
        term = _TERMS.get(str(item.get("reservationTerm")))
        if term is None:
            return []
        return [
            AzurePrice(
                kind="reserved", term_years=term, price_usd_per_hour=price / (term * HOURS_PER_YEAR), **base
            )
        ]
    spot = " Spot" in f"{item.get('meterName', '')} {item.get('skuName', '')}"
    rows = [AzurePrice(kind="spot" if spot else "on_demand", term_years=0, price_usd_per_hour=price, **base)]
    for sp in [] if spot else (item.get("savingsPlan") or []):
        term = _TERMS.get(str(sp.get("term")))
        if term is not None:
            rows.append(
                AzurePrice(
                    kind="savings_plan",
                    term_years=term,
                    price_usd_per_hour=api_number(
                        sp.get("retailPrice"), api=_API, where=where, field="savingsPlan.retailPrice"
                    ),
                    **base,
                )
            )
    return rows


def region_filter(region: str) -> str:
    """OData filter for the VM prices of one region (values are case-sensitive)."""
    return f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}'"


def fetch_region(
    client: httpx.Client, region: str, skipped: Counter[str], on_page: Callable[[int], None] | None = None
) -> list[AzurePrice]:
    """Every usable price row of ``region``, following NextPageLink."""
    url: str | None = API_URL
    params: dict[str, str] | None = {"api-version": API_VERSION, "$filter": region_filter(region)}
    rows: list[AzurePrice] = []
    for page in range(1, MAX_PAGES + 1):
        if url is None:
            return rows
        data = get_json(client, url, params, what="Azure Retail Prices API")
        page_rows, url = parse_page(data, skipped)
        rows.extend(page_rows)
        params = None  # NextPageLink carries the query
        if on_page:
            on_page(page)
    raise FetchError(f"The Azure Retail Prices API gave more than {MAX_PAGES} pages for {region}; stopped.")


def normalise(
    rows: list[AzurePrice], shapes: dict[str, list[Shape]], unmapped: Counter[str], skipped: Counter[str]
) -> list[MachinePrices]:
    """One :class:`MachinePrices` per (region, VM size) with an on-demand price and a known shape."""
    latest: dict[tuple[str, str, str, int], AzurePrice] = {}
    for r in rows:
        k = (r.region, r.arm_sku_name, r.kind, r.term_years)
        if k not in latest or r.effective_start > latest[k].effective_start:
            latest[k] = r
    by_machine: dict[tuple[str, str], list[AzurePrice]] = {}
    for (region, sku, _, _), r in sorted(latest.items()):
        by_machine.setdefault((region, sku), []).append(r)
    out: list[MachinePrices] = []
    for (region, sku), prices in by_machine.items():
        found = shapes.get(sku)
        if not found:
            if _GPU_SKU.match(sku):
                unmapped[sku] += len(prices)
            else:
                skipped["not a GPU VM size"] += len(prices)
            continue
        od = next((p.price_usd_per_hour for p in prices if p.kind == "on_demand"), None)
        if od is None or od <= 0:
            skipped["no on-demand price"] += len(prices)
            continue
        spot = next((p.price_usd_per_hour for p in prices if p.kind == "spot"), None)
        commitments: dict[tuple[str, int], tuple[float, str]] = {}
        for p in prices:
            if p.kind in ("reserved", "savings_plan"):
                dated = f"effectiveStartDate {p.effective_start}" if p.effective_start else ""
                keep_cheapest(commitments, (p.kind, p.term_years), p.price_usd_per_hour, dated)
        out.extend(
            MachinePrices(
                region=region,
                shape=s,
                on_demand_usd_per_hour=od,
                spot_usd_per_hour=spot,
                commitments=commitments,
            )
            for s in found
        )
    return out


__all__ = ["API_URL", "API_VERSION", "AzurePrice", "fetch_region", "normalise", "parse_page", "region_filter"]
