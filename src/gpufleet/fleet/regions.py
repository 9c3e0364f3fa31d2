"""The multi-region analyzer: where should a workload run, for these users and this data.

Per (workload, provider, region): the cheapest fitting placement's monthly cost by price kind (on-demand,
spot, 1y, 3y), offer depth (fitting instance types there) and spot signals (discount vs on-demand, offers with
a spot price), egress priced from egress_prices.csv for moving the data in and serving the responses out of
that region, transfer time of the dataset and the weights at a given bandwidth, an RTT estimate from a user
location (great circle, :func:`gpufleet.fleet.refdata.rtt_estimate_ms`), and the grid carbon intensity with
the emissions of the placement per month (:func:`placement_emissions`).

The offers pass the same filters as ``recommend`` (provider, region glob, geo, provider class, GPU, tier, ...:
:func:`gpufleet.recommend.candidates.build_candidates` applies them), regions farther from the users than
``max_rtt_ms`` are left out, the rest are ranked by total monthly cost (compute + egress + data transfer),
and the data's own region is always shown (marked, with its rank) even when it is not in the top ``limit``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.catalog.regions import region_location
from gpufleet.catalog.specs import get_spec
from gpufleet.cost.prices import node_prices_usd_per_hour
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.errors import InputError
from gpufleet.fleet.locations import UserLocation
from gpufleet.fleet.names import check_data_location
from gpufleet.fleet.refdata import (
    _rows,
    carbon,
    egress_tiers,
    great_circle_km,
    priced_gib,
    pue_by_provider,
    region_info,
    rtt_estimate_ms,
    transfer_usd,
)
from gpufleet.recommend.perf import DefaultEstimator, Estimator, target_output_tokens_per_s
from gpufleet.recommend.types import Workload
from gpufleet.units import BITS_PER_BYTE, GIB, GIGA, HOURS_PER_MONTH, SECONDS_PER_HOUR, kwh_from_wh
from gpufleet.validation import check_count, check_number, checked_arguments

if TYPE_CHECKING:
    from gpufleet.recommend.candidates import CandidateSet

#: default network bandwidth for transfer times [Gbit/s]: a common cloud NIC class; pass the real one
DEFAULT_BANDWIDTH_GBIT_S = 10.0
#: the slowest link --bandwidth-gbps takes [Gbit/s] (1 Mbit/s); below it the transfer time is no estimate
MIN_BANDWIDTH_GBIT_S = 1e-3
#: bytes a served output token takes on the wire [B/token]: ~4 characters of English text per token (OpenAI,
#: "What are tokens and how to count them": 1 token ~ 4 characters), 1 byte per character in UTF-8; used to
#: estimate the responses' internet egress of a serving workload when no volume is given
BYTES_PER_OUTPUT_TOKEN = 4.0
#: PUE for a provider pue.csv has no figure for: the industry average row of pue.csv (Green Algorithms v3.0
#: ``defaults_PUE.csv``, Uptime Institute survey 2024)
INDUSTRY_PUE_KEY = "unknown (industry average)"


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionRow:
    workload: str
    provider: str
    region: str
    instance_type: str
    nodes: int
    gpu: str  # the placement's GPU (spec id)
    gpus: float  # GPUs of the placement (fractional for a shared-GPU offer) [count]
    on_demand_usd_per_month: float
    spot_usd_per_month: float | None
    commit_1y_usd_per_month: float | None
    commit_3y_usd_per_month: float | None
    offer_depth: int  # fitting instance types in this region [count]
    spot_offers: int  # of those, with a spot price [count]
    spot_discount: float | None  # 1 - spot / on-demand of the chosen placement [0..1]
    data_transfer_usd: float | None  # the data moved in from its region, billed by its source [USD, one-off]
    serving_egress_usd_per_month: (
        float | None
    )  # the responses leaving this region to the internet [USD/month]
    egress_usd_per_month: float | None  # data_transfer + serving egress; None = a part has no sourced price
    transfer_time_h: float | None  # dataset + weights at the bandwidth [h]
    distance_km: float | None  # from the users (several locations: traffic-weighted mean) [km]
    rtt_ms: float | None  # round trip from the users (several locations: traffic-weighted mean) [ms]
    carbon_gco2e_per_kwh: float | None  # location-based grid intensity [gCO2e/kWh]
    carbon_source: str
    energy_kwh_per_month: float | None  # GPUs x TDP x hours per month x PUE [kWh/month]
    carbon_gco2e_per_month: float | None  # energy x grid intensity [gCO2e/month]
    total_usd_per_month: float  # on-demand + data transfer + serving egress (an unpriced part counted as 0)
    rank: int | None  # position by total cost among the regions within the filters and RTT bound (1 = best)
    is_data_region: bool  # the data's own (provider, region)
    rtt_worst_ms: float | None = None  # the farthest user location's round trip [ms]
    rtt_by_location_ms: tuple[tuple[str, float], ...] = ()  # (location, round trip [ms]) per user location


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionAnalysis:
    workloads: tuple[str, ...]
    rows: tuple[RegionRow, ...]
    notes: tuple[str, ...]
    user_locations: tuple[UserLocation, ...] = ()  # where the users are, with their traffic shares


@cache
def country_carbon() -> dict[str, tuple[float, str, str]]:
    """ISO country -> (gCO2e/kWh, year, source) from the country-average rows of carbon_intensity.csv (Cloud
    Carbon Footprint's country factors: EEA in Europe, carbonfootprint.com elsewhere). Per country, the
    value CCF gives its AWS region there, else its Azure one when all agree; US regions use NERC sub-region
    factors (no country figure), so a US host without a cloud region row has none."""
    by_country: dict[str, dict[str, list[tuple[float, str, str]]]] = defaultdict(lambda: defaultdict(list))
    for r in _rows("carbon_intensity.csv"):
        if r["dataset"] != "cloud-carbon-footprint" or not r["basis"].startswith("country average"):
            continue
        try:
            value = float(r["gco2e_per_kwh"])
        except ValueError:
            continue
        country = region_location(r["provider"], r["region"]).country
        if country:
            by_country[country][r["provider"]].append(
                (value, r["year_or_as_of"], f"{r['provider']} {r['region']}")
            )
    out: dict[str, tuple[float, str, str]] = {}
    for country, per in by_country.items():
        for prov in ("aws", "azure"):
            vals = per.get(prov, [])
            if vals and len({v for v, _y, _s in vals}) == 1:
                v, year, src = vals[0]
                out[country] = (
                    v,
                    year,
                    f"cloud-carbon-footprint country factor for {country} (as for {src})",
                )
                break
    return out


def grid_intensity(provider: str, region: str) -> tuple[float, str] | None:
    """(gCO2e/kWh, source) of a provider's region: the region's own row of carbon_intensity.csv (Google's
    newest year for GCP, Green Algorithms for Azure, Cloud Carbon Footprint otherwise), else the country
    factor of the country the region is in (:func:`country_carbon`); None when neither exists."""
    c = carbon().get((provider, region))
    if c is not None:
        return c[0], f"{c[2]} ({c[1]})"
    country = region_location(provider, region).country
    hit = country_carbon().get(country or "")
    if hit is not None:
        return hit[0], f"{hit[2]} ({hit[1]})"
    return None


def provider_pue(provider: str) -> float:
    """The provider's fleet PUE from pue.csv, else the industry average row."""
    table = pue_by_provider()
    return table.get(provider, table[INDUSTRY_PUE_KEY])


def placement_emissions(
    provider: str, region: str, gpu: str, gpus: float, hours_per_month: float
) -> tuple[float | None, float | None]:
    """(kWh/month, gCO2e/month) of ``gpus`` GPUs running ``hours_per_month`` in a region: GPU board power at
    its TDP (gpu_specs.csv ``tdp_w``; an upper bound of the GPUs' draw, host CPUs, memory and network left
    out) x the provider's PUE (pue.csv) x the region's grid intensity (:func:`grid_intensity`). (None, None)
    without a TDP; (kWh, None) without a grid figure."""
    tdp = get_spec(gpu).tdp_w
    if tdp is None or not math.isfinite(tdp) or tdp <= 0:
        return None, None
    kwh = kwh_from_wh(gpus * tdp * hours_per_month) * provider_pue(provider)
    grid = grid_intensity(provider, region)
    return kwh, (kwh * grid[0] if grid is not None else None)


def serving_egress_estimate_gib(w: Workload) -> float:
    """Responses a serving workload sends to the internet per month [GiB/month]: target output tokens/s x
    hours per month x :data:`BYTES_PER_OUTPUT_TOKEN`; 0 for training or without a throughput target."""
    if w.is_training:
        return 0.0
    tps = target_output_tokens_per_s(w)
    if tps is None:
        return 0.0
    return tps * w.hours_per_month * SECONDS_PER_HOUR * BYTES_PER_OUTPUT_TOKEN / GIB


def _check_args(
    bandwidth_gbit_s: float,
    data_size_gib: float,
    serving_egress_gib_per_month: float | None,
    limit: int,
    max_rtt_ms: float | None,
    data_provider: str | None,
    data_region: str | None,
    user_lat_lon: tuple[float, float] | None,
    user_locations: Sequence[UserLocation] = (),
) -> None:
    check_number("bandwidth_gbit_s", bandwidth_gbit_s, maximum=1e6, flag="--bandwidth-gbps")
    if bandwidth_gbit_s < MIN_BANDWIDTH_GBIT_S:  # 1e-320 Gbit/s: transfer_time_h overflowed to null
        raise InputError(
            f"--bandwidth-gbps {bandwidth_gbit_s:g} is below {MIN_BANDWIDTH_GBIT_S:g} Gbit/s (1 Mbit/s), "
            "slower than any network a data transfer runs on. Give the link's bandwidth in Gbit/s (e.g. 10), "
            "or leave --bandwidth-gbps out for the default."
        )
    check_number("data_size_gib", data_size_gib, allow_zero=True, maximum=1e12, flag="--data-gib")
    if serving_egress_gib_per_month is not None:
        check_number("serving_egress_gib_per_month", serving_egress_gib_per_month, allow_zero=True,
                     maximum=1e12, flag="--serving-gib")  # fmt: skip
    if max_rtt_ms is not None:
        check_number("max_rtt_ms", max_rtt_ms, maximum=1e5, flag="--max-rtt-ms")
        if user_lat_lon is None and not user_locations:
            raise InputError(
                "--max-rtt-ms bounds the round trip from the users, but no user location was given: add "
                "--user-lat and --user-lon (degrees) or --user-location, or drop --max-rtt-ms."
            )
    if user_lat_lon is not None and user_locations:
        raise InputError(
            "Give the users' location either as --user-lat/--user-lon or as --user-location (repeatable, "
            "with traffic shares), not both."
        )
    if user_locations:
        if any(not isinstance(u, UserLocation) for u in user_locations):
            raise InputError("user_locations must be UserLocation values (gpufleet.fleet.locations).")
        total = sum(u.share for u in user_locations)
        if any(not (u.share > 0) for u in user_locations) or abs(total - 1.0) > 1e-6:
            raise InputError(
                f"user_locations' traffic shares must be > 0 and sum to 1 (they sum to {total:g}); "
                "gpufleet.fleet.locations.parse_user_locations normalises them."
            )
    check_count("limit", limit, flag="--limit")
    for name, value in (("data_provider", data_provider), ("data_region", data_region)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{name} must be a name (string), got {value!r}.")
    if user_lat_lon is not None:
        if not isinstance(user_lat_lon, tuple | list) or len(user_lat_lon) != 2:
            raise InputError(f"user_lat_lon must be (latitude, longitude) in degrees, got {user_lat_lon!r}.")
        check_number("latitude", user_lat_lon[0], positive=False, flag="--user-lat")
        check_number("longitude", user_lat_lon[1], positive=False, flag="--user-lon")
        lat, lon = user_lat_lon
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise InputError(
                f"User location {lat}, {lon}: latitude must be in [-90, 90], longitude in [-180, 180]."
            )
    if bandwidth_gbit_s <= 0 or data_size_gib < 0 or limit < 1:
        raise InputError(
            "bandwidth must be > 0 Gbit/s, data size and serving egress >= 0 GiB, limit >= 1; fix the "
            "options."
        )
    if (data_provider is None) != (data_region is None):
        raise InputError("Give the data location as both --data-provider and --data-region (or neither).")


@checked_arguments("region analysis")
def analyze_regions(
    workloads: Sequence[Workload],
    *,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    user_lat_lon: tuple[float, float] | None = None,
    data_provider: str | None = None,
    data_region: str | None = None,
    data_size_gib: float = 0.0,
    serving_egress_gib_per_month: float | None = None,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
    max_rtt_ms: float | None = None,
    limit: int = 25,
    user_locations: Sequence[UserLocation] = (),
) -> RegionAnalysis:
    """Compare every region that can run each workload: the cheapest ``limit`` per workload by total monthly
    cost within ``max_rtt_ms`` of the users, plus the data's own region. ``serving_egress_gib_per_month``
    None = estimated from a serving workload's target (:func:`serving_egress_estimate_gib`).

    The users are at ``user_lat_lon`` or at several ``user_locations`` with traffic shares
    (:func:`gpufleet.fleet.locations.parse_user_locations`): each row then gives the traffic-weighted RTT,
    the worst location's and each location's, and ``max_rtt_ms`` must hold for every location."""
    from gpufleet.recommend.candidates import build_candidates
    from gpufleet.recommend.filters import check_against_table

    _check_args(bandwidth_gbit_s, data_size_gib, serving_egress_gib_per_month, limit, max_rtt_ms,
                data_provider, data_region, user_lat_lon, user_locations)  # fmt: skip
    users = tuple(user_locations)
    if user_lat_lon is not None:
        lat, lon = user_lat_lon
        users = (UserLocation(name=f"{lat:g},{lon:g}", latitude_deg=lat, longitude_deg=lon, share=1.0),)
    table = offers if offers is not None else load_offers()
    for w in workloads:
        check_against_table(table, w)  # an unknown provider or region is an error, not an empty answer
    if data_provider is not None and data_region is not None:
        check_data_location(table, data_provider, data_region)
    est = estimator or DefaultEstimator()
    spot = load_spot_assumptions()
    prices = {k: node_prices_usd_per_hour(table, k) for k in ("on_demand", "spot", "commit_1y", "commit_3y")}
    kept: list[RegionRow] = []
    notes: list[str] = []
    unpriced: set[str] = set()
    for w in workloads:
        wl = replace(w, pricing="on_demand", budget_usd_per_month=None)
        cs = build_candidates(table, wl, est, spot)
        feas = np.flatnonzero(cs.feasible) if len(cs) else np.zeros(0, dtype=np.int64)
        by_region: dict[tuple[str, str], list[int]] = defaultdict(list)
        for r in feas.tolist():
            o = int(cs.offer[r])
            by_region[(str(table.column("provider")[o]), str(table.column("region")[o]))].append(r)
        serving_gib = (
            serving_egress_estimate_gib(w)
            if serving_egress_gib_per_month is None
            else serving_egress_gib_per_month
        )
        if serving_egress_gib_per_month is None and serving_gib > 0:
            notes.append(
                f"{w.name}: responses served to the internet estimated at {serving_gib:,.1f} GiB/month "
                f"(target {target_output_tokens_per_s(w) or 0:,.0f} output tokens/s x {w.hours_per_month:g} "
                f"h/month x {BYTES_PER_OUTPUT_TOKEN:g} B/token); pass --serving-gib to set it."
            )
        move_gib = data_size_gib + w.checkpoint_gib()
        rows: list[RegionRow] = []
        for (prov, reg), rs in by_region.items():
            row, missing = _row(w, table, cs, prices, prov, reg, rs, serving_gib, data_provider, data_region,
                                data_size_gib, move_gib, bandwidth_gbit_s, users)  # fmt: skip
            if missing:
                unpriced.add(prov)
            rows.append(row)
        rows.sort(key=lambda row: row.total_usd_per_month)
        # the bound holds for every user location: the worst one decides (one location: its RTT)
        within = [
            r
            for r in rows
            if max_rtt_ms is None or (r.rtt_worst_ms is not None and r.rtt_worst_ms <= max_rtt_ms)
        ]
        if max_rtt_ms is not None:
            far = sum(1 for r in rows if r.rtt_worst_ms is not None and r.rtt_worst_ms > max_rtt_ms)
            unknown = sum(1 for r in rows if r.rtt_worst_ms is None)
            every = " (every location)" if len(users) > 1 else ""
            notes.append(
                f"{w.name}: {len(within)} of {len(rows)} regions within {max_rtt_ms:g} ms RTT of the "
                f"users{every}; {far} farther and {unknown} without coordinates (no RTT estimate) left out."
            )
        ranked = [replace(r, rank=i + 1) for i, r in enumerate(within)]
        shown = ranked[:limit]
        if data_provider is not None and data_region is not None:
            shown += _data_region_rows(w, ranked, rows, shown, data_provider, data_region, limit, max_rtt_ms,
                                       notes)  # fmt: skip
        kept.extend(shown)
    notes += _notes(bandwidth_gbit_s, unpriced, bool(kept))
    if len(users) > 1:
        notes.append(
            "Users at "
            + ", ".join(f"{u.name} ({u.share:.0%})" for u in users)
            + ": RTT = traffic-weighted mean over the locations / the worst location; --max-rtt-ms holds for "
            "every location."
        )
    return RegionAnalysis(
        workloads=tuple(w.name for w in workloads), rows=tuple(kept), notes=tuple(notes), user_locations=users
    )


def _data_region_rows(
    w: Workload,
    ranked: list[RegionRow],
    rows: list[RegionRow],
    shown: list[RegionRow],
    data_provider: str,
    data_region: str,
    limit: int,
    max_rtt_ms: float | None,
    notes: list[str],
) -> list[RegionRow]:
    """The data's own region when it is not among ``shown`` (marked; with its rank, or none when it is
    outside the RTT bound), or a note saying why it cannot be shown."""
    if any(r.is_data_region for r in shown):
        return []
    hit = next((r for r in ranked if r.is_data_region), None)
    if hit is not None:
        notes.append(
            f"{w.name}: the data's region {data_provider} {data_region} ranks #{hit.rank} of {len(ranked)}; "
            f"shown below the top {limit}."
        )
        return [hit]
    out = next((r for r in rows if r.is_data_region), None)
    if out is not None:
        notes.append(
            f"{w.name}: the data's region {data_provider} {data_region} is {out.rtt_worst_ms or 0:,.0f} ms "
            f"RTT from the (farthest) users, beyond --max-rtt-ms {max_rtt_ms:g}; shown unranked."
            if out.rtt_worst_ms is not None
            else f"{w.name}: the data's region {data_provider} {data_region} has no coordinates (no RTT "
            "estimate); shown unranked."
        )
        return [out]
    notes.append(
        f"{w.name}: the data's region {data_provider} {data_region} cannot run this workload under its "
        "filters (no fitting offer there; `gpufleet recommend --provider "
        f"{data_provider} --region {data_region}` says why)."
    )
    return []


def _row(
    w: Workload,
    table: OfferTable,
    cs: CandidateSet,
    prices: dict[str, np.ndarray],
    prov: str,
    reg: str,
    rs: list[int],
    serving_gib: float,
    data_provider: str | None,
    data_region: str | None,
    data_size_gib: float,
    move_gib: float,
    bandwidth_gbit_s: float,
    users: Sequence[UserLocation],
) -> tuple[RegionRow, bool]:
    """One region's row and whether a part of its egress has no sourced price."""
    c = cs
    best = min(rs, key=lambda r: float(c.cost_usd_per_month[r]))
    o = int(c.offer[best])
    nodes = int(c.total_nodes[best])
    gpus = nodes * float(table.column("gpu_count")[o])

    def kind_cost(kind: str, billed: float) -> float | None:
        v = float(prices[kind][o])
        return v * nodes * billed if math.isfinite(v) and v > 0 else None

    od = float(c.cost_usd_per_month[best])
    sp = kind_cost("spot", w.hours_per_month)
    types = {str(table.column("instance_type")[int(c.offer[r])]) for r in rs}
    spot_types = {
        str(table.column("instance_type")[int(c.offer[r])])
        for r in rs
        if math.isfinite(float(prices["spot"][int(c.offer[r])]))
    }
    # Each part is priced on its own, as the plan does (fleet/options._transfer): the data leaving its source
    # is billed by the source provider whatever the destination's own egress price; the responses leave this
    # region at this region's internet rate (per-region where egress_prices.csv has it, e.g. AWS ap-*, sa-*)
    missing = False
    data_usd: float | None = 0.0
    if data_provider is not None and data_region is not None and data_size_gib > 0:
        data_usd = transfer_usd(data_provider, data_region, prov, reg, data_size_gib)
        missing |= data_usd is None
    serve_usd: float | None = 0.0
    if serving_gib > 0:
        tiers = egress_tiers(prov, "internet_out", reg)
        serve_usd = priced_gib(tiers, serving_gib) if tiers else None
        missing |= serve_usd is None
    priced = (data_usd or 0.0) + (serve_usd or 0.0)
    info = region_info(prov, reg)
    dist = rtt = worst = None
    by_loc: tuple[tuple[str, float], ...] = ()
    if users and info and info.latitude_deg is not None and info.longitude_deg is not None:
        d = [
            great_circle_km(u.latitude_deg, u.longitude_deg, info.latitude_deg, info.longitude_deg)
            for u in users
        ]
        dist = sum(u.share * x for u, x in zip(users, d, strict=True))
        rtts = [rtt_estimate_ms(x) for x in d]
        rtt = sum(u.share * x for u, x in zip(users, rtts, strict=True))
        worst = max(rtts)
        if len(users) > 1:
            by_loc = tuple((u.name, x) for u, x in zip(users, rtts, strict=True))
    grid = grid_intensity(prov, reg)
    gpu = str(table.column("gpu")[o])
    kwh, co2 = placement_emissions(prov, reg, gpu, gpus, w.hours_per_month)
    row = RegionRow(
        workload=w.name,
        provider=prov,
        region=reg,
        instance_type=str(table.column("instance_type")[o]),
        nodes=nodes,
        gpu=gpu,
        gpus=gpus,
        on_demand_usd_per_month=od,
        spot_usd_per_month=sp,
        commit_1y_usd_per_month=kind_cost("commit_1y", HOURS_PER_MONTH),
        commit_3y_usd_per_month=kind_cost("commit_3y", HOURS_PER_MONTH),
        offer_depth=len(types),
        spot_offers=len(spot_types),
        spot_discount=1.0 - sp / od if sp is not None and od > 0 else None,
        data_transfer_usd=data_usd,
        serving_egress_usd_per_month=serve_usd,
        egress_usd_per_month=None if missing else priced,
        transfer_time_h=move_gib * GIB * BITS_PER_BYTE / (bandwidth_gbit_s * GIGA) / SECONDS_PER_HOUR
        if move_gib
        else None,
        distance_km=dist,
        rtt_ms=rtt,
        carbon_gco2e_per_kwh=grid[0] if grid else None,
        carbon_source=grid[1] if grid else "",
        energy_kwh_per_month=kwh,
        carbon_gco2e_per_month=co2,
        total_usd_per_month=od + priced,
        rank=None,
        is_data_region=(prov, reg) == (data_provider, data_region),
        rtt_worst_ms=worst,
        rtt_by_location_ms=by_loc,
    )
    return row, missing


def _notes(bandwidth_gbit_s: float, unpriced: set[str], any_rows: bool) -> list[str]:
    notes = [
        "Ranked by total $/month = on-demand compute + the data moved in from its region (one-off, counted "
        "in the month) + the responses served to the internet from the region; the data's region is marked.",
        "RTT = 2 x great-circle distance x 1.5 (fibre route factor) / 204 km/ms (light in fibre, n = 1.47); "
        "a lower-bound-style estimate from regions.csv coordinates (area-level where verified = false).",
        f"Transfer time at {bandwidth_gbit_s:g} Gbit/s of the data plus the weights "
        "(parameters x bytes per element).",
        "Carbon: location-based grid intensity of the region (Google's newest year for GCP, Green Algorithms "
        "for Azure, Cloud Carbon Footprint otherwise; another provider's host: CCF's country factor), not "
        "the provider's market-based figure. gCO2e/month = GPUs x TDP x hours/month x provider PUE "
        "(pue.csv) x intensity: GPU board power at TDP, an upper bound of the GPUs' draw; host CPUs, memory "
        "and network not counted.",
        "Egress: egress_prices.csv tiers, free allowances not applied.",
    ]
    if unpriced:
        notes.append(
            f"No sourced egress price for {', '.join(sorted(unpriced))}: egress shown as '-'; "
            "the unpriced part counted as $0, the priced part (data leaving its source) in the total."
        )
    if not any_rows:
        notes.append("No region can run these workloads under their filters (see `gpufleet recommend`).")
    return notes
