"""AWS price-list bulk offer files (AmazonEC2, per region): fetch, parse (pure), normalise.

File (no auth): ``https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.json``
with ``products{sku:{attributes{...}}}`` and ``terms{OnDemand|Reserved{sku{term{priceDimensions{rate{unit,
pricePerUnit{USD}}}, termAttributes{LeaseContractLength, OfferingClass, PurchaseOption}}}}}``
(shared/data/market_assumptions.md, "Price APIs"). Linux on-demand = operatingSystem Linux, tenancy Shared,
preInstalledSw NA, capacitystatus Used, usagetype in the ``BoxUsage:`` family. A Reserved term's effective
hourly price = its hourly part + its "Upfront Fee" (unit Quantity) / (term years x 8760 h). The file's
publicationDate and the terms' effectiveDate are kept in the source, because prices move.

Spot prices are not in these files: a refreshed row keeps the shipped spot price and says so. Savings Plans
rates live in separate files that are not fetched yet. The us-east-1 file is large (hundreds of MB), so the
refresh of that region needs memory to match.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from gpufleet.catalog.fetch.http import api_number, api_parser, get_json
from gpufleet.catalog.fetch.normalise import MachinePrices, Shape, keep_cheapest
from gpufleet.errors import FetchError
from gpufleet.units import HOURS_PER_YEAR

BASE_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.json"
_BOX_USAGE = re.compile(r"(^|-)BoxUsage:")
_TERMS = {"1yr": 1, "3yr": 3}
_GPU_FAMILY = re.compile(
    r"^(p\d|g\d|gr\d|dl\d|inf\d|trn\d)"
)  # accelerator families (GPU, Gaudi, Inferentia, Trainium)


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsProduct:
    sku: str
    instance_type: str
    region: str
    vcpus: float | None
    ram_gib: float | None
    gpu_count: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsReserved:
    term_years: int
    offering_class: str
    purchase_option: str
    price_usd_per_hour: float  # hourly + upfront / term hours
    effective_date: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AwsOfferFile:
    """The usable content of one regional offer file."""

    publication_date: str
    products: dict[str, AwsProduct]
    on_demand: dict[str, tuple[float, str]]  # sku -> (USD/h, effectiveDate)
    reserved: dict[str, list[AwsReserved]] = field(default_factory=dict)
    rows_read: int = 0


def _number(text: Any) -> float | None:
    """'1,152 GiB' -> 1152.0; 'NA' -> None."""
    m = re.match(r"^\s*([\d,]+(?:\.\d+)?)", str(text or ""))
    return float(m.group(1).replace(",", "")) if m else None


def _product(sku: str, p: dict[str, Any], skipped: Counter[str]) -> AwsProduct | None:
    a = p.get("attributes") or {}
    checks = (
        ("operatingSystem", "Linux", "not Linux"),
        ("tenancy", "Shared", "not shared tenancy"),
        ("preInstalledSw", "NA", "pre-installed software"),
        ("capacitystatus", "Used", "capacity reservation (UnusedCapacityReservation/AllocatedCapacity...)"),
    )
    for key, want, reason in checks:
        if a.get(key) != want:
            skipped[reason] += 1
            return None
    if not _BOX_USAGE.search(str(a.get("usagetype", ""))):
        skipped["usagetype not BoxUsage"] += 1
        return None
    if not a.get("instanceType"):
        skipped["no instanceType"] += 1
        return None
    return AwsProduct(
        sku=sku,
        instance_type=str(a["instanceType"]),
        region=str(a.get("regionCode", "")),
        vcpus=_number(a.get("vcpu")),
        ram_gib=_number(a.get("memory")),  # AWS writes "1,152 GiB"
        gpu_count=_number(a.get("gpu")),
    )


def _dimensions(term: dict[str, Any]) -> tuple[float, float]:
    """(hourly USD, upfront USD) of one term's priceDimensions."""
    hourly = upfront = 0.0
    for dim in (term.get("priceDimensions") or {}).values():
        usd = api_number(
            (dim.get("pricePerUnit") or {}).get("USD"),
            api="AWS price-list bulk API",
            where=str(dim.get("rateCode", "a price dimension")),
            field="pricePerUnit.USD",
            maximum=1e9,  # upfront payments of 3-year reservations reach ~10^6 USD
        )
        if dim.get("unit") == "Quantity":
            upfront += usd
        else:
            hourly += usd
    return hourly, upfront


@api_parser("AWS price-list bulk API")
def parse_offer_file(data: Any, skipped: Counter[str]) -> AwsOfferFile:
    """Pure parse of one regional AmazonEC2 offer file (decoded JSON)."""
    if not isinstance(data, dict) or not isinstance(data.get("products"), dict):
        raise FetchError(
            "The AWS offer file has no 'products' object; the format may have changed. Nothing written."
        )
    products: dict[str, AwsProduct] = {}
    for sku, p in data["products"].items():
        prod = _product(sku, p, skipped)
        if prod is not None:
            products[sku] = prod
    terms = data.get("terms") or {}
    on_demand: dict[str, tuple[float, str]] = {}
    rows = len(data["products"])
    for sku, by_code in (terms.get("OnDemand") or {}).items():
        rows += len(by_code)
        if sku not in products:
            continue
        for term in by_code.values():
            hourly, _ = _dimensions(term)
            on_demand[sku] = (hourly, str(term.get("effectiveDate", "")))
    reserved: dict[str, list[AwsReserved]] = {}
    for sku, by_code in (terms.get("Reserved") or {}).items():
        rows += len(by_code)
        if sku not in products:
            continue
        for term in by_code.values():
            ta = term.get("termAttributes") or {}
            years = _TERMS.get(str(ta.get("LeaseContractLength")))
            if years is None:
                skipped["reserved term length unknown"] += 1
                continue
            hourly, upfront = _dimensions(term)
            reserved.setdefault(sku, []).append(
                AwsReserved(
                    term_years=years,
                    offering_class=str(ta.get("OfferingClass", "")),
                    purchase_option=str(ta.get("PurchaseOption", "")),
                    price_usd_per_hour=hourly + upfront / (years * HOURS_PER_YEAR),
                    effective_date=str(term.get("effectiveDate", "")),
                )
            )
    return AwsOfferFile(
        publication_date=str(data.get("publicationDate", "")),
        products=products,
        on_demand=on_demand,
        reserved=reserved,
        rows_read=rows,
    )


def fetch_region(client: httpx.Client, region: str) -> Any:
    """The decoded offer file of ``region``."""
    return get_json(client, BASE_URL.format(region=region), what="AWS price-list bulk API")


def normalise(
    parsed: AwsOfferFile,
    region: str,
    shapes: dict[str, list[Shape]],
    unmapped: Counter[str],
    skipped: Counter[str],
) -> list[MachinePrices]:
    """One :class:`MachinePrices` per mapped instance type with a positive on-demand price."""
    out: list[MachinePrices] = []
    for sku, prod in sorted(parsed.products.items(), key=lambda kv: kv[1].instance_type):
        found = shapes.get(prod.instance_type)
        if not found:
            if (prod.gpu_count or 0) > 0 or _GPU_FAMILY.match(prod.instance_type):
                unmapped[prod.instance_type] += 1
            else:
                skipped["not an accelerator instance"] += 1
            continue
        od = parsed.on_demand.get(sku)
        if od is None or not od[0] > 0:
            skipped["no on-demand price"] += 1
            continue
        commitments: dict[tuple[str, int], tuple[float, str]] = {}
        for r in parsed.reserved.get(sku, []):
            option = f"{r.offering_class} {r.purchase_option}".strip()
            if r.effective_date:  # the term's own date: prices move (market_assumptions.md)
                option += f", effectiveDate {r.effective_date}"
            keep_cheapest(commitments, ("reserved", r.term_years), r.price_usd_per_hour, option)
        out.extend(
            MachinePrices(
                region=prod.region or region,
                shape=s,
                on_demand_usd_per_hour=od[0],
                spot_usd_per_hour=None,
                commitments=commitments,
                vcpus=prod.vcpus,
                ram_gib=prod.ram_gib,
                note=f"publicationDate {parsed.publication_date}, on-demand effectiveDate {od[1]}",
            )
            for s in found
        )
    return out


__all__ = [
    "BASE_URL",
    "AwsOfferFile",
    "AwsProduct",
    "AwsReserved",
    "fetch_region",
    "normalise",
    "parse_offer_file",
]
