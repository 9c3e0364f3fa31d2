"""Sourced reference data for fleet planning: region coordinates, egress prices, grid carbon, PUE, CPU offers,
MIG profiles. The CSVs sit in ``gpufleet/fleet/data`` (provenance in ``PROVENANCE.md`` there); every row names
its source and whether it was verified. Read once, cached.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gpufleet.units import GB, GIB

#: geo (regions.csv) -> continent used for inter-region egress tiers
CONTINENT: dict[str, str] = {
    "us": "north_america",
    "ca": "north_america",
    "eu": "europe",
    "uk": "europe",
    "apac": "asia",
    "india": "asia",
    "asia": "asia",
    "oceania": "oceania",
    "me": "mea",
    "africa": "mea",
    "latam": "south_america",
}
#: words the egress CSV uses in ``region_scope`` for each continent
_CONTINENT_WORDS: dict[str, tuple[str, ...]] = {
    "north_america": ("North America", "US/Canada/EU"),
    "europe": ("Europe", "US/Canada/EU"),
    "asia": ("Asia",),
    "oceania": ("Oceania",),
    "mea": ("Middle East", "Africa"),
    "south_america": ("South America",),
}


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("gpufleet.fleet").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionInfo:
    provider: str
    region: str
    country: str
    geo: str
    area: str
    latitude_deg: float | None
    longitude_deg: float | None
    verified: bool


def _num(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


@cache
def regions() -> dict[tuple[str, str], RegionInfo]:
    """(provider, region) -> location, from regions.csv."""
    out: dict[tuple[str, str], RegionInfo] = {}
    for r in _rows("regions.csv"):
        out[(r["provider"], r["region"])] = RegionInfo(
            provider=r["provider"],
            region=r["region"],
            country=r["country"],
            geo=r["geo"],
            area=r["city_or_area"],
            latitude_deg=_num(r["latitude"]),
            longitude_deg=_num(r["longitude"]),
            verified=r["verified"] == "true",
        )
    return out


def region_info(provider: str, region: str) -> RegionInfo | None:
    return regions().get((provider, region))


#: mean Earth radius [km] (IUGG), for the haversine great-circle distance
EARTH_RADIUS_KM = 6371.0
#: light in optical fibre travels at ~c / 1.47 ≈ 204 km/ms (refractive index of silica ~1.47)
FIBRE_KM_PER_MS = 204.0
#: fibre routes are longer than the great circle: route factor 1.5 (a common planning figure; measured
#: Internet paths are ~1.5-2x the geodesic, e.g. Singla et al., "The Internet at the Speed of Light",
#: HotNets 2014, report a median inflation of ~1.5x for fibre path length vs geodesic)
ROUTE_FACTOR = 1.5


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Haversine distance on a sphere of radius EARTH_RADIUS_KM [km]."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(min(1.0, a)))


def rtt_estimate_ms(distance_km: float) -> float:
    """Round-trip time lower-bound estimate: 2 x distance x route factor / fibre speed [ms]."""
    return 2.0 * distance_km * ROUTE_FACTOR / FIBRE_KM_PER_MS


# --------------------------------------------------------------------------------------------- carbon/PUE


@cache
def carbon() -> dict[tuple[str, str], tuple[float, str, str]]:
    """(provider, region) -> (gCO2e/kWh, year, dataset): Google's newest year for GCP, Green Algorithms for
    Azure, Cloud Carbon Footprint otherwise (the datasets are never averaged)."""
    pref = {"google-region-carbon-info": 0, "green-algorithms-v3.0": 1, "cloud-carbon-footprint": 2}
    best: dict[tuple[str, str], tuple[int, str, float, str]] = {}
    for r in _rows("carbon_intensity.csv"):
        v = _num(r["gco2e_per_kwh"])
        if v is None:
            continue
        key = (r["provider"], r["region"])
        rank = pref.get(r["dataset"], 9)
        year = r["year_or_as_of"]
        old = best.get(key)
        newer = old is not None and rank == old[0] and _year_key(year) > _year_key(old[1])
        if old is None or newer or rank < old[0]:
            best[key] = (rank, year, v, r["dataset"])
    return {k: (v[2], v[1], v[3]) for k, v in best.items()}


def _year_key(text: str) -> int:
    m = re.search(r"(19|20)\d\d", text)
    return int(m.group(0)) if m else 0


@cache
def pue_by_provider() -> dict[str, float]:
    """Fleet-average PUE per provider (CCF values first, Green Algorithms where CCF has none)."""
    out: dict[str, float] = {}
    for r in _rows("pue.csv"):
        v = _num(r["pue"])
        if v is None or ("fleet" not in r["scope"] and r["dataset"] == "cloud-carbon-footprint"):
            continue
        out.setdefault(r["provider"], v)
    return out


# --------------------------------------------------------------------------------------------- egress


@dataclass(frozen=True, slots=True, kw_only=True)
class EgressTier:
    from_gb: float
    to_gb: float | None
    usd_per_gb: float
    unit_bytes: int  # GB (1e9) or GiB (2**30): how the provider bills
    scope: str
    verified: bool


@cache
def _egress_rows() -> tuple[tuple[str, str, EgressTier], ...]:
    out = []
    for r in _rows("egress_prices.csv"):
        price = _num(r["usd_per_gb"])
        lo = _num(r["tier_from_gb"])
        if price is None or lo is None:
            continue  # no sourced price: never guessed
        scope = r["region_scope"]
        if "Standard Tier" in scope or "routing preference" in scope:
            continue  # default (premium / Microsoft network) routing only
        out.append(
            (
                r["provider"],
                r["kind"],
                EgressTier(
                    from_gb=lo,
                    to_gb=_num(r["tier_to_gb"]),
                    usd_per_gb=price,
                    unit_bytes=GIB if r["unit"] == "GiB" else GB,
                    scope=scope,
                    verified=r["verified"] == "true",
                ),
            )
        )
    return tuple(out)


_TOKEN = re.compile(r"[a-z]+(?:-[a-z0-9*]+)+")


def _scope_matches_region(scope: str, region: str) -> bool:
    return any(fnmatch.fnmatchcase(region, t) for t in _TOKEN.findall(scope))


def egress_tiers(provider: str, kind: str, region: str, dest_region: str | None = None) -> list[EgressTier]:
    """The tiers that apply to ``kind`` traffic leaving ``region`` (empty = no sourced price).

    The scope is chosen by the region named in the row, else by the continent words of the row (from
    regions.csv's geo), else the provider's first (default) scope.
    """
    return list(_egress_tiers(provider, kind, region, dest_region))


@cache
def _egress_tiers(provider: str, kind: str, region: str, dest_region: str | None) -> tuple[EgressTier, ...]:
    """:func:`egress_tiers`, memoised (fleet sizing asks for the same paths thousands of times)."""
    return tuple(_egress_tiers_uncached(provider, kind, region, dest_region))


def _egress_tiers_uncached(
    provider: str, kind: str, region: str, dest_region: str | None
) -> list[EgressTier]:
    rows = [t for p, k, t in _egress_rows() if p == provider and k == kind]
    if not rows:
        return []
    scopes = list(dict.fromkeys(t.scope for t in rows))
    chosen = next((s for s in scopes if _scope_matches_region(s, region)), None)
    info = region_info(provider, region)
    cont = CONTINENT.get(info.geo, "") if info else ""
    if chosen is None and kind == "inter_region_cross_continent" and dest_region is not None:
        dinfo = region_info(provider, dest_region)
        if (dinfo and CONTINENT.get(dinfo.geo) == "oceania") or cont == "oceania":
            chosen = next((s for s in scopes if "Oceania" in s and "between" in s), None)
    if chosen is None and cont:
        words = _CONTINENT_WORDS.get(cont, ())
        chosen = next((s for s in scopes if any(w in s for w in words)), None)
    if chosen is None:
        chosen = scopes[0]
    return sorted((t for t in rows if t.scope == chosen), key=lambda t: t.from_gb)


def priced_gib(tiers: list[EgressTier], gib: float) -> float:
    """USD for moving ``gib`` GiB through marginal ``tiers`` (free allowances not applied: conservative)."""
    total = 0.0
    for t in tiers:
        amount_units = gib * GIB / t.unit_bytes
        hi = t.to_gb if t.to_gb is not None else math.inf
        part = max(0.0, min(amount_units, hi) - t.from_gb)
        total += part * t.usd_per_gb
    return total


def transfer_usd(
    src_provider: str, src_region: str, dst_provider: str, dst_region: str, gib: float
) -> float | None:
    """USD to move ``gib`` from one region to another (None = no sourced price for that path)."""
    if gib <= 0 or (src_provider, src_region) == (dst_provider, dst_region):
        return 0.0
    if src_provider != dst_provider or src_provider == "onprem":
        tiers = egress_tiers(src_provider, "internet_out", src_region)
        return priced_gib(tiers, gib) if tiers else None
    a, b = region_info(src_provider, src_region), region_info(dst_provider, dst_region)
    same = a is not None and b is not None and CONTINENT.get(a.geo) == CONTINENT.get(b.geo)
    kind = "inter_region_same_continent" if same else "inter_region_cross_continent"
    tiers = egress_tiers(src_provider, kind, src_region, dst_region)
    return priced_gib(tiers, gib) if tiers else None


# ------------------------------------------------------------------------------------------- CPU, MIG


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuOffer:
    instance_type: str
    region: str
    vcpus: float
    ram_gib: float
    arch: str  # arm64 (Graviton) | x86_64
    price_on_demand_usd_per_hour: float
    price_spot_usd_per_hour: float  # NaN = unknown


@cache
def cpu_offers() -> tuple[CpuOffer, ...]:
    """AWS Graviton and x86 CPU offers, one per (instance type, region): spot = the cheapest zone's price."""
    best: dict[tuple[str, str], CpuOffer] = {}
    for r in _rows("aws_cpu_offers.csv"):
        od, spot = _num(r["Price"]), _num(r["SpotPrice"])
        vcpus, ram = _num(r["vCPUs"]), _num(r["MemoryGiB"])
        if od is None or vcpus is None or ram is None:
            continue
        key = (r["InstanceType"], r["Region"])
        s = spot if spot is not None and spot > 0 else math.nan
        old = best.get(key)
        if old is not None and not (
            s < old.price_spot_usd_per_hour or math.isnan(old.price_spot_usd_per_hour)
        ):
            continue
        best[key] = CpuOffer(
            instance_type=r["InstanceType"],
            region=r["Region"],
            vcpus=vcpus,
            ram_gib=ram,
            arch=r["Arch"] or "x86_64",
            price_on_demand_usd_per_hour=od,
            price_spot_usd_per_hour=s,
        )
    return tuple(best.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class MigProfile:
    gpu: str
    profile: str
    memory_gib: float
    compute_slices: int
    compute_slices_total: int
    max_instances: int


@cache
def mig_profiles() -> tuple[MigProfile, ...]:
    """Plain MIG GPU-instance profiles (no +me/+gfx variants) with a device-reported memory size."""
    out = []
    for r in _rows("mig_profiles.csv"):
        if r["variant"]:
            continue
        mem = _num(r["memory_gib_lgip"]) or (_num(r["memory_gb"]) or 0.0) * GB / GIB
        cs, tot, mx = _num(r["compute_slices"]), _num(r["compute_slices_total"]), _num(r["max_instances"])
        if not mem or cs is None or tot is None or mx is None:
            continue
        out.append(
            MigProfile(
                gpu=r["gpu"],
                profile=r["profile"],
                memory_gib=mem,
                compute_slices=int(cs),
                compute_slices_total=int(tot),
                max_instances=int(mx),
            )
        )
    return tuple(out)
