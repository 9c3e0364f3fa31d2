"""The multi-region analyzer: for a workload, every region that can run it, side by side.

Per (workload, provider, region): the cheapest fitting placement's monthly cost by price kind (on-demand,
spot, 1y, 3y), offer depth (fitting instance types there) and spot signals (discount vs on-demand, offers with
a spot price), egress priced from egress_prices.csv for moving the data in and serving the traffic out,
transfer time of the dataset and the weights at a given bandwidth, an RTT estimate from a user location
(great circle, :func:`gpufleet.fleet.refdata.rtt_estimate_ms`), and the grid carbon intensity.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.cost.prices import node_prices_usd_per_hour
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.errors import InputError
from gpufleet.fleet.names import check_data_location
from gpufleet.fleet.refdata import (
    carbon,
    egress_tiers,
    great_circle_km,
    priced_gib,
    region_info,
    rtt_estimate_ms,
    transfer_usd,
)
from gpufleet.recommend.perf import DefaultEstimator, Estimator
from gpufleet.recommend.types import Workload
from gpufleet.units import GIB, HOURS_PER_MONTH, SECONDS_PER_HOUR
from gpufleet.validation import check_count, check_number, checked_arguments

#: default network bandwidth for transfer times [Gbit/s]: a common cloud NIC class; pass the real one
DEFAULT_BANDWIDTH_GBIT_S = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionRow:
    workload: str
    provider: str
    region: str
    instance_type: str
    nodes: int
    on_demand_usd_per_month: float
    spot_usd_per_month: float | None
    commit_1y_usd_per_month: float | None
    commit_3y_usd_per_month: float | None
    offer_depth: int  # fitting instance types in this region [count]
    spot_offers: int  # of those, with a spot price [count]
    spot_discount: float | None  # 1 - spot / on-demand of the chosen placement [0..1]
    egress_usd_per_month: float | None  # data in + serving out; None = no sourced price
    transfer_time_h: float | None  # dataset + weights at the bandwidth [h]
    distance_km: float | None
    rtt_ms: float | None
    carbon_gco2e_per_kwh: float | None
    carbon_source: str
    total_usd_per_month: float  # on-demand + the priced egress parts (an unpriced part counted as 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionAnalysis:
    workloads: tuple[str, ...]
    rows: tuple[RegionRow, ...]
    notes: tuple[str, ...]


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
    serving_egress_gib_per_month: float = 0.0,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
    limit: int = 25,
) -> RegionAnalysis:
    """Compare every region that can run each workload (cheapest ``limit`` per workload by total cost)."""
    from gpufleet.recommend.candidates import build_candidates

    bandwidth_gbit_s = check_number(
        "bandwidth_gbit_s", bandwidth_gbit_s, maximum=1e6, flag="--bandwidth-gbps"
    )  # type: ignore[assignment]
    data_size_gib = check_number(
        "data_size_gib", data_size_gib, allow_zero=True, maximum=1e12, flag="--data-gib"
    )  # type: ignore[assignment]
    serving_egress_gib_per_month = check_number(  # type: ignore[assignment]
        "serving_egress_gib_per_month",
        serving_egress_gib_per_month,
        allow_zero=True,
        maximum=1e12,
        flag="--serving-gib",
    )
    limit = check_count("limit", limit, flag="--limit")  # type: ignore[assignment]
    for name, value in (("data_provider", data_provider), ("data_region", data_region)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{name} must be a name (string), got {value!r}.")
    if user_lat_lon is not None:
        if not isinstance(user_lat_lon, tuple | list) or len(user_lat_lon) != 2:
            raise InputError(f"user_lat_lon must be (latitude, longitude) in degrees, got {user_lat_lon!r}.")
        check_number("latitude", user_lat_lon[0], positive=False, flag="--user-lat")
        check_number("longitude", user_lat_lon[1], positive=False, flag="--user-lon")
    if bandwidth_gbit_s <= 0 or data_size_gib < 0 or serving_egress_gib_per_month < 0 or limit < 1:
        raise InputError(
            "bandwidth must be > 0 Gbit/s, data size and serving egress >= 0 GiB, limit >= 1; "
            "fix the options."
        )
    if (data_provider is None) != (data_region is None):
        raise InputError("Give the data location as both --data-provider and --data-region (or neither).")
    if user_lat_lon is not None:
        lat, lon = user_lat_lon
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise InputError(
                f"User location {lat}, {lon}: latitude must be in [-90, 90], longitude in [-180, 180]."
            )
    table = offers if offers is not None else load_offers()
    from gpufleet.recommend.filters import check_against_table

    for w in workloads:
        check_against_table(table, w)  # an unknown provider or region is an error, not an empty answer
    if data_provider is not None and data_region is not None:
        check_data_location(table, data_provider, data_region)
    est = estimator or DefaultEstimator()
    spot = load_spot_assumptions()
    prices = {k: node_prices_usd_per_hour(table, k) for k in ("on_demand", "spot", "commit_1y", "commit_3y")}
    co2 = carbon()
    rows: list[RegionRow] = []
    unpriced: set[str] = set()
    for w in workloads:
        wl = replace(w, pricing="on_demand", budget_usd_per_month=None)
        cs = build_candidates(table, wl, est, spot)
        feas = np.flatnonzero(cs.feasible) if len(cs) else np.zeros(0, dtype=np.int64)
        by_region: dict[tuple[str, str], list[int]] = defaultdict(list)
        for r in feas.tolist():
            o = int(cs.offer[r])
            by_region[(str(table.column("provider")[o]), str(table.column("region")[o]))].append(r)
        weights = w.checkpoint_gib()
        move_gib = data_size_gib + weights
        for (prov, reg), rs in by_region.items():
            best = min(rs, key=lambda r: float(cs.cost_usd_per_month[r]))
            o = int(cs.offer[best])
            nodes = int(cs.total_nodes[best])
            hours = w.hours_per_month

            def kind_cost(kind: str, billed: float, o: int = o, nodes: int = nodes) -> float | None:
                v = float(prices[kind][o])
                return v * nodes * billed if math.isfinite(v) and v > 0 else None

            od = float(cs.cost_usd_per_month[best])
            sp = kind_cost("spot", hours)
            types = {str(table.column("instance_type")[int(cs.offer[r])]) for r in rs}
            spot_types = {
                str(table.column("instance_type")[int(cs.offer[r])])
                for r in rs
                if math.isfinite(float(prices["spot"][int(cs.offer[r])]))
            }
            # Each part is priced on its own, as the plan does (fleet/options._transfer): the data leaving
            # its source is billed by the source provider whatever the destination's own egress price, so
            # an unpriced serving egress no longer drops the priced data move from the ranking total.
            priced = 0.0
            missing = False
            if data_provider is not None and data_region is not None and data_size_gib > 0:
                t = transfer_usd(data_provider, data_region, prov, reg, data_size_gib)
                missing |= t is None
                priced += t or 0.0
            if serving_egress_gib_per_month > 0:
                tiers = egress_tiers(prov, "internet_out", reg)
                missing |= not tiers
                priced += priced_gib(tiers, serving_egress_gib_per_month) if tiers else 0.0
            egress: float | None = None if missing else priced
            if missing:
                unpriced.add(prov)
            info = region_info(prov, reg)
            dist = rtt = None
            if (
                user_lat_lon is not None
                and info
                and info.latitude_deg is not None
                and info.longitude_deg is not None
            ):
                dist = great_circle_km(
                    user_lat_lon[0], user_lat_lon[1], info.latitude_deg, info.longitude_deg
                )
                rtt = rtt_estimate_ms(dist)
            c = co2.get((prov, reg))
            rows.append(
                RegionRow(
                    workload=w.name,
                    provider=prov,
                    region=reg,
                    instance_type=str(table.column("instance_type")[o]),
                    nodes=nodes,
                    on_demand_usd_per_month=od,
                    spot_usd_per_month=sp,
                    commit_1y_usd_per_month=kind_cost("commit_1y", HOURS_PER_MONTH),
                    commit_3y_usd_per_month=kind_cost("commit_3y", HOURS_PER_MONTH),
                    offer_depth=len(types),
                    spot_offers=len(spot_types),
                    spot_discount=1.0 - sp / od if sp is not None and od > 0 else None,
                    egress_usd_per_month=egress,
                    transfer_time_h=move_gib * GIB * 8 / (bandwidth_gbit_s * 1e9) / SECONDS_PER_HOUR
                    if move_gib
                    else None,
                    distance_km=dist,
                    rtt_ms=rtt,
                    carbon_gco2e_per_kwh=c[0] if c else None,
                    carbon_source=f"{c[2]} ({c[1]})" if c else "",
                    total_usd_per_month=od + priced,
                )
            )
    rows.sort(key=lambda row: (row.workload, row.total_usd_per_month))
    kept: list[RegionRow] = []
    count: dict[str, int] = defaultdict(int)
    for row in rows:
        if count[row.workload] < limit:
            kept.append(row)
            count[row.workload] += 1
    notes = [
        "RTT = 2 x great-circle distance x 1.5 (fibre route factor) / 204 km/ms (light in fibre, n = 1.47); "
        "a lower-bound-style estimate from regions.csv coordinates (area-level where verified = false).",
        f"Transfer time at {bandwidth_gbit_s:g} Gbit/s of the data plus the weights "
        "(parameters x bytes per element).",
        "Carbon: grid intensity of the region (Google's newest year for GCP, Green Algorithms for Azure, "
        "Cloud "
        "Carbon Footprint otherwise); not the provider's market-based figure.",
        "Egress: egress_prices.csv tiers, free allowances not applied.",
    ]
    if unpriced:
        notes.append(
            f"No sourced egress price for {', '.join(sorted(unpriced))}: egress shown as '-'; "
            "the unpriced part counted as $0, the priced part (data leaving its source) in the total."
        )
    if not kept:
        notes.append("No region can run these workloads under their filters (see `gpufleet recommend`).")
    return RegionAnalysis(workloads=tuple(w.name for w in workloads), rows=tuple(kept), notes=tuple(notes))
