"""Shared normalisation: from fetched prices per machine to :class:`Offer` rows and commitment rates.

Price APIs do not say which GPU model a VM carries (Azure, AWS) or how big a machine is (GCP), so machines are
mapped through the shipped offer table (:func:`shape_index`). Rows that cannot be mapped are counted and
reported, never guessed. A fetched machine that the shipped table lists per zone keeps those zones; a spot
price the API does not publish (AWS bulk files) is carried over from the shipped row and the source says so.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from gpufleet.catalog.fetch.rates import CommitmentRate
from gpufleet.catalog.history import CARRIED_SPOT_NOTE
from gpufleet.catalog.offers import Offer, OfferTable


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """A machine from the shipped table: GPU spec id and count, per-GPU memory [GiB], vCPUs, RAM [GiB]."""

    instance_type: str
    gpu: str
    gpu_count: float
    gpu_memory_gib: float
    vcpus: float | None
    ram_gib: float | None
    arch: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MachinePrices:
    """Fetched prices of one machine in one region [USD/h]; commitments keyed by (program, term_years)."""

    region: str
    shape: Shape
    on_demand_usd_per_hour: float
    spot_usd_per_hour: float | None
    commitments: dict[tuple[str, int], tuple[float, str]] = field(default_factory=dict)  # -> (price, option)
    vcpus: float | None = None  # when the API states it (AWS)
    ram_gib: float | None = None
    note: str = ""  # appended to the source (e.g. publication and effective dates)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshResult:
    """One provider's refresh: normalised rows plus what was skipped or not mapped, and why."""

    provider: str
    regions: tuple[str, ...]
    offers: tuple[Offer, ...]
    rates: tuple[CommitmentRate, ...]
    rows_read: int  # price rows (items / SKUs / terms) read from the API
    unmapped: dict[str, int]  # instance type or SKU -> rows that could not be mapped to a spec/shape
    skipped: dict[str, int]  # reason -> rows left out on purpose (Windows, DevTest, CPU-only, ...)
    captured_at: str  # UTC ISO timestamp of the fetch
    source: str

    @property
    def unmapped_rows(self) -> int:
        return sum(self.unmapped.values())


def shape_index(table: OfferTable, provider: str) -> dict[str, list[Shape]]:
    """Distinct GPU shapes per instance type of ``provider`` in ``table`` (several for GCP hosts)."""
    t = table.filter(provider=provider) if provider in table.providers() else table.take(slice(0, 0))
    out: dict[str, list[Shape]] = {}
    for o in t.records():
        if o.gpu is None:
            continue
        s = Shape(
            instance_type=o.instance_type,
            gpu=o.gpu,
            gpu_count=o.gpu_count,
            gpu_memory_gib=o.gpu_memory_gib,
            vcpus=o.vcpus,
            ram_gib=o.ram_gib,
            arch=o.arch,
        )
        shapes = out.setdefault(o.instance_type, [])
        if s not in shapes:
            shapes.append(s)
    return out


def build_rows(
    provider: str,
    machines: list[MachinePrices],
    shipped: OfferTable,
    *,
    captured_at: str,
    source: str,
    skipped: Counter[str],
) -> tuple[list[Offer], list[CommitmentRate]]:
    """Offers and commitment rates for ``machines``; drops commitment prices above on-demand (counted)."""
    zones: dict[tuple[str, str, str, float], list[Offer]] = {}
    if provider in shipped.providers():
        for o in shipped.filter(provider=provider).records():
            zones.setdefault((o.region, o.instance_type, o.gpu or "", o.gpu_count), []).append(o)
    offers: list[Offer] = []
    rates: list[CommitmentRate] = []
    for m in machines:
        s = m.shape
        base = zones.get((m.region, s.instance_type, s.gpu, s.gpu_count), [])
        msource = f"{source}; {m.note}" if m.note else source
        targets: list[Offer | None] = list(base) if base else [None]
        for old in targets:
            spot, src = m.spot_usd_per_hour, msource
            if spot is None and old is not None and old.price_spot_usd_per_hour is not None:
                spot = old.price_spot_usd_per_hour
                src = f"{msource}; {CARRIED_SPOT_NOTE} ({old.captured_at})"
            offers.append(
                Offer(
                    provider=provider,
                    region=m.region,
                    zone=old.zone if old is not None else None,
                    instance_type=s.instance_type,
                    gpu=s.gpu,
                    gpu_count=s.gpu_count,
                    gpu_memory_gib=s.gpu_memory_gib,
                    vcpus=m.vcpus if m.vcpus is not None else s.vcpus,
                    ram_gib=m.ram_gib if m.ram_gib is not None else s.ram_gib,
                    arch=s.arch,
                    price_on_demand_usd_per_hour=m.on_demand_usd_per_hour,
                    price_spot_usd_per_hour=spot if spot is not None and spot > 0 else None,
                    captured_at=captured_at,
                    source=src,
                )
            )
        for (program, term), (price, option) in sorted(m.commitments.items()):
            if not (math.isfinite(price) and 0 < price <= m.on_demand_usd_per_hour):
                skipped["commitment price not below on-demand"] += 1
                continue
            rates.append(
                CommitmentRate(
                    provider=provider,
                    region=m.region,
                    instance_type=s.instance_type,
                    gpu=s.gpu,
                    gpu_count=s.gpu_count,
                    program=program,
                    term_years=term,
                    price_usd_per_hour=price,
                    on_demand_usd_per_hour=m.on_demand_usd_per_hour,
                    option=option,
                    captured_at=captured_at,
                    source=msource,
                )
            )
    return offers, rates


def keep_cheapest(
    store: dict[tuple[str, int], tuple[float, str]], key: tuple[str, int], price: float, option: str
) -> None:
    """Record ``price`` for ``key`` when it is the cheapest option seen so far."""
    if key not in store or price < store[key][0]:
        store[key] = (price, option)


__all__ = ["MachinePrices", "RefreshResult", "Shape", "build_rows", "keep_cheapest", "shape_index"]
