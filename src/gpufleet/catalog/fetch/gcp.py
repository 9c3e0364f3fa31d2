"""GCP Cloud Billing Catalog (Compute Engine SKUs): fetch (API key), parse (pure), normalise.

API: ``GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?key=...``, paginated with
``nextPageToken``; SKU fields ``description, category{resourceGroup, usageType}, serviceRegions[],
pricingInfo[{pricingExpression{usageUnit, tieredRates[{unitPrice{units, nanos}}]}}]``; price = int(units) +
nanos/1e9 (shared/data/market_assumptions.md, "Price APIs"). A VM's price = vCPU SKU x vCPUs + RAM SKU x GiB
(+ GPU SKU x count), SKUs matched by description per machine series (``a2-highgpu-1g`` -> "A2"); vCPUs, RAM
and GPUs come from the shipped offer table. usageType OnDemand -> on-demand, Preemptible -> spot, Commit1Yr /
Commit3Yr -> resource-based CUD (program ``cud``). The key is read from ``GPUFLEET_GCP_API_KEY``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from gpufleet.catalog.fetch.http import api_number, api_parser, get_json
from gpufleet.catalog.fetch.normalise import MachinePrices, Shape
from gpufleet.errors import FetchError, InputError

API_URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
KEY_ENV = "GPUFLEET_GCP_API_KEY"
MAX_PAGES = 200
_USAGE = {
    "OnDemand": ("on_demand", 0),
    "Preemptible": ("spot", 0),
    "Commit1Yr": ("cud", 1),
    "Commit3Yr": ("cud", 3),
}
_PREFIX = re.compile(r"^(?:Spot Preemptible |Preemptible |Commitment v\d+: |Commitment: )")
_VM_PART = re.compile(
    r"^(?P<series>[A-Z][A-Z0-9]{1,3}) (?:Predefined )?(?:Instance )?(?P<res>Core|Cpu|Ram)\b"
)
_GPU_PART = re.compile(
    r"^(?:Nvidia |NVIDIA )?(?:Tesla )?(?P<name>[A-Z][A-Za-z0-9]*(?: \d+GB)?(?: Mega)?) GPU\b"
)

#: GPU name in SKU descriptions -> spec id (gpu_aliases.csv notes: GCP a2-highgpu = A100 40 GB SXM,
#: a2-ultragpu = A100 80 GB SXM, a3-highgpu/a3-megagpu = H100 SXM 80 GB, a3-ultragpu = H200 SXM,
#: GCP V100 = SXM2 16 GB, P100 = PCIe 16 GB).
GPU_NAMES: dict[str, str] = {
    "T4": "T4",
    "P4": "P4",
    "P100": "P100",
    "K80": "K80",
    "V100": "V100-SXM2-16GB",
    "L4": "L4",
    "A100": "A100-SXM-40GB",
    "A100 80GB": "A100-SXM-80GB",
    "H100 80GB": "H100-SXM",
    "H100 80GB Mega": "H100-SXM",
    "H200 141GB": "H200-SXM",
    "B200": "B200",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GcpSku:
    """One priced SKU: ``part`` is ("core"|"ram", series) or ("gpu", name); price per usage unit [USD]."""

    sku_id: str
    description: str
    part: tuple[str, str]
    kind: str  # on_demand | spot | cud
    term_years: int
    regions: tuple[str, ...]
    price_usd: float  # per vCPU-hour, GiB-hour or GPU-hour
    usage_unit: str


def api_key() -> str:
    """The API key from ``GPUFLEET_GCP_API_KEY``; :class:`InputError` naming the variable when unset."""
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        raise InputError(
            f"The GCP Cloud Billing Catalog needs an API key, and {KEY_ENV} is not set. Create an API key "
            "with the Cloud Billing API enabled (Google Cloud console > APIs & Services > Credentials), then "
            f"run `export {KEY_ENV}=<key>` and try again. Azure and AWS need no key."
        )
    return key


def _price(tier: dict[str, Any]) -> float:
    up = tier.get("unitPrice") or {}
    api, where = "GCP Cloud Billing Catalog API", "a tiered rate"
    units = api_number(up.get("units") or 0, api=api, where=where, field="unitPrice.units")
    nanos = api_number(up.get("nanos") or 0, api=api, where=where, field="unitPrice.nanos", maximum=1e9)
    return int(units) + int(nanos) / 1e9


def classify(description: str) -> tuple[str, str] | None:
    """("core"|"ram", series) or ("gpu", name) for a SKU description, None for anything else."""
    text = _PREFIX.sub("", description)
    m = _VM_PART.match(text)
    if m:
        return ("ram" if m["res"] == "Ram" else "core", m["series"])
    g = _GPU_PART.match(text)
    return ("gpu", g["name"]) if g else None


@api_parser("GCP Cloud Billing Catalog API")
def parse_page(data: Any, skipped: Counter[str]) -> tuple[list[GcpSku], str | None]:
    """Priced VM-part SKUs of one page and the nextPageToken."""
    if not isinstance(data, dict) or not isinstance(data.get("skus", []), list):
        raise FetchError("The GCP Cloud Billing Catalog returned a page without 'skus'. Nothing was written.")
    out: list[GcpSku] = []
    for s in data.get("skus", []):
        cat = s.get("category") or {}
        usage = _USAGE.get(str(cat.get("usageType")))
        part = classify(str(s.get("description", "")))
        if usage is None or part is None:
            skipped["SKU not a VM core/RAM/GPU price"] += 1
            continue
        infos = s.get("pricingInfo") or []
        if not infos:
            skipped["SKU without pricingInfo"] += 1
            continue
        expr = infos[-1].get("pricingExpression") or {}
        prices = [_price(t) for t in expr.get("tieredRates") or []]
        priced = [p for p in prices if p > 0]
        if not priced:
            skipped["SKU without a non-zero rate"] += 1
            continue
        out.append(
            GcpSku(
                sku_id=str(s.get("skuId", "")),
                description=str(s["description"]),
                part=part,
                kind=usage[0],
                term_years=usage[1],
                regions=tuple(str(r) for r in s.get("serviceRegions") or []),
                price_usd=priced[0],
                usage_unit=str(expr.get("usageUnit", "")),
            )
        )
    token = data.get("nextPageToken")
    return out, token if isinstance(token, str) and token else None


def fetch_all(client: httpx.Client, key: str, on_page: Callable[[int], None] | None = None) -> list[GcpSku]:
    """Every priced VM-part SKU of Compute Engine (all regions)."""
    skus: list[GcpSku] = []
    skipped: Counter[str] = Counter()
    token: str | None = None
    for page in range(1, MAX_PAGES + 1):
        params = {"key": key, "pageSize": "5000", "currencyCode": "USD"}
        if token:
            params["pageToken"] = token
        data = get_json(client, API_URL, params, what="GCP Cloud Billing Catalog API")
        page_skus, token = parse_page(data, skipped)
        skus.extend(page_skus)
        if on_page:
            on_page(page)
        if token is None:
            return skus
    raise FetchError(f"The GCP Cloud Billing Catalog gave more than {MAX_PAGES} pages; stopped.")


def _gpu_name(shape: Shape, names: set[str]) -> str | None:
    cands = sorted(n for n in names if GPU_NAMES.get(n) == shape.gpu)
    mega = "megagpu" in shape.instance_type
    pick = [n for n in cands if ("Mega" in n) == mega]
    return pick[0] if pick else None


def _vm_price(
    price: dict[tuple[str, str, str, int, str], float],
    shape: Shape,
    gpu_name: str,
    series: str,
    kind: str,
    term: int,
    region: str,
) -> float | None:
    """vCPU SKU x vCPUs + RAM SKU x GiB + GPU SKU x count [USD/h]; None when a part has no SKU."""
    core = price.get(("core", series, kind, term, region))
    ram = price.get(("ram", series, kind, term, region))
    gpu = price.get(("gpu", gpu_name, kind, term, region))
    if core is None or ram is None or gpu is None:
        return None
    return core * float(shape.vcpus or 0.0) + ram * float(shape.ram_gib or 0.0) + gpu * shape.gpu_count


def normalise(
    skus: list[GcpSku],
    regions: list[str],
    shapes: dict[str, list[Shape]],
    unmapped: Counter[str],
    skipped: Counter[str],
) -> list[MachinePrices]:
    """One :class:`MachinePrices` per (region, shape) whose vCPU, RAM and GPU SKUs have on-demand prices."""
    price: dict[tuple[str, str, str, int, str], float] = {}
    gpu_names: set[str] = set()
    for s in skus:
        if s.part[0] == "gpu":
            if s.part[1] in GPU_NAMES:
                gpu_names.add(s.part[1])
            else:
                unmapped[f"GPU SKU {s.part[1]!r}"] += 1
                continue
        for r in s.regions:
            price.setdefault((s.part[0], s.part[1], s.kind, s.term_years, r), s.price_usd)
    usable: list[tuple[Shape, str, str]] = []  # (shape, GPU SKU name, machine series)
    for instance_type, found in sorted(shapes.items()):
        for shape in found:
            if shape.gpu.startswith("TPU"):
                skipped["TPU (billed per chip, not by VM parts; not refreshed)"] += 1
                continue
            gname = _gpu_name(shape, gpu_names)
            if gname is None or shape.vcpus is None or shape.ram_gib is None:
                unmapped[f"{instance_type} ({shape.gpu})"] += 1
            else:
                usable.append((shape, gname, instance_type.split("-")[0].upper()))
    out: list[MachinePrices] = []
    for region in regions:
        for shape, gname, series in usable:
            od = _vm_price(price, shape, gname, series, "on_demand", 0, region)
            if od is None:
                skipped[f"no on-demand SKU for {series} / {gname} in the region"] += 1
                continue
            commitments = {
                ("cud", t): (p, "resource-based")
                for t in (1, 3)
                if (p := _vm_price(price, shape, gname, series, "cud", t, region)) is not None
            }
            out.append(
                MachinePrices(
                    region=region,
                    shape=shape,
                    on_demand_usd_per_hour=od,
                    spot_usd_per_hour=_vm_price(price, shape, gname, series, "spot", 0, region),
                    commitments=commitments,
                )
            )
    return out


__all__ = [
    "API_URL",
    "GPU_NAMES",
    "KEY_ENV",
    "GcpSku",
    "api_key",
    "classify",
    "fetch_all",
    "normalise",
    "parse_page",
]
