"""Independent feasibility check of a plan: re-derives every constraint from the plan lines and the fleet.

It does not read the MILP: it recomputes node counts per block, pay-kind eligibility, unit prices, costs,
quota use, budgets, commitment and on-prem capacity, provider count, placement filters, data residency, HA
spread and production serving's survival of one lost node (N+1, MIG slices per node) from the plan lines
themselves, with its own matching code. An empty list means feasible.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase

from gpufleet.cost.commitment import TERM_MONTHS, commitment_pays
from gpufleet.fleet.pools import IDLE_WORKLOAD, check_pools
from gpufleet.fleet.refdata import region_info
from gpufleet.fleet.types import Fleet, FleetWorkload, Option, PlanLine, SharedPool
from gpufleet.units import HOURS_PER_MONTH
from gpufleet.validation import checked_arguments

_TOL = 1e-6


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL * max(1.0, abs(a), abs(b))


def _unit_price(line: PlanLine, o: Option) -> float | None:
    k = line.pay_kind
    if k == "on_demand":
        return o.price_on_demand_usd_per_hour
    if k == "commit_1y":
        return o.price_commit_1y_usd_per_hour
    if k == "commit_3y":
        return o.price_commit_3y_usd_per_hour
    if k == "spot":
        return o.price_spot_usd_per_hour * o.spot_cost_factor
    if k == "existing":
        return 0.0
    if k == "on_prem":
        b = o.blocks[line.block]
        return (
            o.on_prem_fixed_usd_per_node_month + o.on_prem_energy_usd_per_node_hour * b.hours_per_month
        ) / HOURS_PER_MONTH
    return None


def _units_on(nodes: int, units_per_node: int, nodes_per_unit: int) -> int:
    """Whole replica units ``nodes`` nodes hold."""
    return nodes * units_per_node if nodes_per_unit == 1 else nodes // nodes_per_unit


def _check_node_loss(fw: FleetWorkload, opts: Sequence[Option]) -> list[str]:
    """Production serving survives one lost node (N+1) in each placement: at peak the replica units paid for
    exceed the units the load needs by one whole node's worth, they span >= 2 nodes, and even the lowest
    demand block runs 2 units. MIG placements are re-checked slice by slice in the pool
    (:func:`gpufleet.fleet.pools.check_pools`)."""
    if not fw.production_serving:
        return []
    if fw.region_loss_sized:
        return _check_region_loss(fw, opts)
    bad = []
    for o in opts:
        if not o.survives_node_loss:
            bad.append(f"{fw.name}: production serving on {o.key} is not sized to survive a lost node")
            continue
        if o.is_mig:
            continue
        npu = max(1, o.nodes_per_replica)
        upn = max(1, o.units_per_node)

        units = _units_on(o.nodes_peak, upn, npu)
        left = _units_on(max(0, o.nodes_peak - 1), upn, npu)
        base = _units_on(o.blocks[0].nodes, upn, npu) if o.blocks else 0
        if left < o.replicas_needed or o.nodes_peak < 2:
            bad.append(
                f"{fw.name}: {units} replica unit(s) on {o.nodes_peak} node(s) at peak in {o.key}; one lost "
                f"leaves {left}, the load needs {o.replicas_needed}"
            )
        if o.blocks and o.blocks[0].nodes < 2:
            bad.append(
                f"{fw.name}: {o.key} runs {base} replica unit(s) in its base block (one lost node stops it)"
            )
    return bad


def _check_region_loss(fw: FleetWorkload, opts: Sequence[Option]) -> list[str]:
    """Production serving over ``ha_regions`` = N >= 2 regions survives the loss of one region: every
    placement runs at peak the units that carry its share (the peak / (N - 1), in its own GPUs' units), so
    the N - 1 left carry the peak; a lost node is less than a lost region."""
    bad = []
    for o in opts:
        if o.region_loss_units <= 0:
            bad.append(f"{fw.name}: {o.key} is not sized to carry peak / ({fw.ha_regions} - 1) of the load")
            continue
        if o.is_mig:
            if o.mig_slices < o.region_loss_units:
                bad.append(f"{fw.name}: {o.mig_slices} slice(s) in {o.key}, its region share needs "
                           f"{o.region_loss_units}")  # fmt: skip
            continue
        units = _units_on(o.nodes_peak, max(1, o.units_per_node), max(1, o.nodes_per_replica))
        if units < o.region_loss_units:
            bad.append(
                f"{fw.name}: {units} replica unit(s) at peak in {o.key}; with one of {fw.ha_regions} regions "
                f"lost each region left must carry {o.region_loss_units}"
            )
    return bad


@checked_arguments("fleet plan check")
def check_plan(
    fleet: Fleet,
    options: Mapping[str, Option],
    lines: Sequence[PlanLine],
    total_usd_per_month: float | None = None,
    *,
    pools: Sequence[SharedPool] = (),
) -> list[str]:
    """Every constraint the plan breaks, as sentences (empty = feasible). MIG lines and ``pools`` (GPUs
    shared through MIG slices) are re-checked by :func:`gpufleet.fleet.pools.check_pools`."""
    bad: list[str] = check_pools(fleet, options, lines, pools)
    c = fleet.constraints
    by_wl: dict[str, set[str]] = defaultdict(set)
    nodes_in_block: dict[tuple[str, int], int] = defaultdict(int)
    spot_nodes: dict[str, int] = defaultdict(int)
    spot_by_block: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    cost_by_wl: dict[str, float] = defaultdict(float)
    # team/workload budgets: MIG slices count at their on-demand chargeback (the pool's pay kind is a
    # fleet-level choice); everything else at its cost
    charge_by_wl: dict[str, float] = defaultdict(float)
    existing_use: dict[str, int] = defaultdict(int)
    total = 0.0
    for ln in lines:
        if ln.pool and ln.pay_kind != "data_transfer":  # MIG slice or idle-pool line (checked above)
            cost_by_wl[ln.workload] += ln.cost_usd_per_month
            charge_by_wl[ln.workload] += (
                ln.nodes * ln.list_unit_price_usd_per_hour * HOURS_PER_MONTH if ln.mig_profile else 0.0
            )
            total += ln.cost_usd_per_month
            if ln.mig_profile:
                by_wl[ln.workload].add(ln.option)
            continue
        o = options.get(ln.option)
        if o is None:
            bad.append(f"line for {ln.workload} names unknown option {ln.option}")
            continue
        if o.workload != ln.workload:
            bad.append(f"option {o.key} belongs to {o.workload}, not {ln.workload}")
        by_wl[ln.workload].add(ln.option)
        cost_by_wl[ln.workload] += ln.cost_usd_per_month
        charge_by_wl[ln.workload] += ln.cost_usd_per_month
        total += ln.cost_usd_per_month
        if ln.pay_kind == "data_transfer":
            if not _close(ln.cost_usd_per_month, o.transfer_usd_per_month):
                bad.append(
                    f"{o.key}: data transfer cost {ln.cost_usd_per_month} != {o.transfer_usd_per_month}"
                )
            continue
        if ln.nodes < 0 or ln.nodes != int(ln.nodes):
            bad.append(f"{o.key}: node count {ln.nodes} is not a non-negative integer")
        b = o.blocks[ln.block]
        nodes_in_block[(o.key, ln.block)] += ln.nodes
        if not _close(ln.hours_per_month, b.hours_per_month):
            bad.append(
                f"{o.key} block {ln.block}: runs {ln.hours_per_month} h, demand says {b.hours_per_month} h"
            )
        price = _unit_price(ln, o)
        if price is None or not math.isfinite(price):
            bad.append(f"{o.key}: pay kind {ln.pay_kind} has no price for {o.instance_type}")
            continue
        billed = (
            HOURS_PER_MONTH if ln.pay_kind in ("commit_1y", "commit_3y", "on_prem") else b.hours_per_month
        )
        if not _close(ln.unit_price_usd_per_hour, price) or not _close(ln.billed_hours_per_month, billed):
            bad.append(
                f"{o.key}: {ln.pay_kind} priced {ln.unit_price_usd_per_hour}/h x "
                f"{ln.billed_hours_per_month} h, expected {price}/h x {billed} h"
            )
        if not _close(ln.cost_usd_per_month, ln.nodes * price * billed):
            bad.append(f"{o.key}: cost {ln.cost_usd_per_month} != nodes x unit price x billed hours")
        if ln.pay_kind == "on_prem" and o.on_prem_site is None:
            bad.append(f"{o.key}: on_prem pay kind on a cloud offer")
        if ln.pay_kind != "on_prem" and o.on_prem_site is not None:
            bad.append(f"{o.key}: on-prem nodes paid as {ln.pay_kind}")
        if ln.pay_kind == "spot":
            spot_nodes[o.key] += ln.nodes
            spot_by_block[o.key][ln.block] += ln.nodes
        if ln.pay_kind == "existing":
            ex = next((e for e in c.existing if e.name == ln.commitment), None)
            if ex is None or (ex.provider, ex.region, ex.instance_type) != (
                o.provider,
                o.region,
                o.instance_type,
            ):
                bad.append(
                    f"{o.key}: uses existing commitment {ln.commitment!r} that does not cover "
                    f"{o.instance_type} in {o.region}"
                )
            else:
                existing_use[ex.name] += ln.nodes
    workloads = {w.name: w for w in fleet.workloads}
    for name in by_wl:
        if name not in workloads and name != IDLE_WORKLOAD:
            bad.append(f"plan places unknown workload {name}")
    chosen: dict[str, list[Option]] = {
        n: [options[k] for k in keys if k in options] for n, keys in by_wl.items()
    }
    for fw in fleet.workloads:
        opts = chosen.get(fw.name, [])
        if len(opts) != fw.ha_regions:
            bad.append(f"{fw.name}: placed in {len(opts)} option(s), needs {fw.ha_regions}")
        if len({(o.provider, o.region) for o in opts}) != len(opts):
            bad.append(f"{fw.name}: two placements share a region (HA needs distinct regions)")
        bad += _check_node_loss(fw, opts)
        for o in opts:
            for bi, b in enumerate(o.blocks):
                if nodes_in_block[(o.key, bi)] != b.nodes:
                    bad.append(
                        f"{fw.name}: block {bi} of {o.key} has {nodes_in_block[(o.key, bi)]} nodes paid, "
                        f"needs {b.nodes}"
                    )
            npr = max(1, o.nodes_per_replica)  # a replica over npr nodes is all spot or all regular
            share = math.floor(fw.preemptible_fraction * o.nodes_peak + 1e-9) // npr * npr
            if spot_nodes[o.key] > share:
                bad.append(
                    f"{fw.name}: {spot_nodes[o.key]} spot nodes exceed its preemptible share ({share} nodes, "
                    f"whole replicas of {npr})"
                )
            if npr > 1 and any(n % npr for n in spot_by_block.get(o.key, {}).values()):
                bad.append(
                    f"{fw.name}: a replica of {o.key} over {npr} nodes is split between spot and regular "
                    "nodes (one reclaimed node stops the replica: spot goes in whole replicas)"
                )
            if fw.providers and o.provider not in fw.providers:
                bad.append(f"{fw.name}: provider {o.provider} not allowed")
            if fw.regions and not any(fnmatchcase(o.region.lower(), g.lower()) for g in fw.regions):
                bad.append(f"{fw.name}: region {o.region} not allowed")
            if (fw.geos or fw.countries) and o.on_prem_site is None:
                info = region_info(o.provider, o.region)
                if (
                    info is None
                    or (fw.geos and info.geo.lower() not in fw.geos)
                    or (fw.countries and info.country.upper() not in fw.countries)
                ):
                    bad.append(f"{fw.name}: {o.provider}/{o.region} breaks its data residency")
    for ln in lines:
        if ln.pay_kind in ("commit_1y", "commit_3y"):
            lw = workloads.get(ln.workload)
            months = TERM_MONTHS[ln.pay_kind]
            if ln.pay_kind.removeprefix("commit_") not in c.commitment_terms:
                bad.append(f"{ln.workload}: {ln.pay_kind} is not an allowed commitment term")
            if lw is not None and (lw.lifetime_months is None or lw.lifetime_months < months):
                life = "no lifetime given" if lw.lifetime_months is None else f"{lw.lifetime_months:g} months"
                bad.append(f"{ln.workload}: {ln.pay_kind} outlives the workload ({life})")
            if not ln.pool and not commitment_pays(
                ln.unit_price_usd_per_hour,
                ln.list_unit_price_usd_per_hour,
                ln.hours_per_month,
                c.commitment_margin_fraction,
            ):
                bad.append(
                    f"{ln.workload}: {ln.pay_kind} on {ln.instance_type} at "
                    f"${ln.unit_price_usd_per_hour:.4f}/h for {ln.hours_per_month:g} h/month does not pay "
                    f"with a {c.commitment_margin_fraction:.0%} margin against on-demand"
                )
    for q in c.quotas:
        used = 0.0
        for opts in chosen.values():
            for o in opts:
                if not (
                    q.provider == o.provider
                    and fnmatchcase(o.region, q.region)
                    and fnmatchcase(o.gpu.lower(), q.gpu.lower())
                    and fnmatchcase(o.instance_type.lower(), q.instance_family.lower())
                ):
                    continue
                per = {"gpus": o.gpus_per_node, "vcpus": o.vcpus_per_node, "instances": 1.0}[q.unit]
                nodes = spot_nodes[o.key] if q.spot else o.nodes_peak - spot_nodes[o.key]
                used += per * nodes
        for pl in pools:  # MIG pools run on demand
            if not q.spot and (
                q.provider == pl.provider
                and fnmatchcase(pl.region, q.region)
                and fnmatchcase(pl.gpu.lower(), q.gpu.lower())
                and fnmatchcase(pl.instance_type.lower(), q.instance_family.lower())
            ):
                t = next((o for o in options.values() if o.is_mig and o.pool == pl.key), None)
                vcpus = t.vcpus_per_node if t is not None else 0.0
                per = {"gpus": float(pl.gpus_per_node), "vcpus": vcpus, "instances": 1.0}[q.unit]
                used += per * pl.nodes
        if used > q.limit + 1e-6:
            bad.append(f"{q.name}: uses {used:g} {q.unit}, limit {q.limit:g}")
    for bud in c.budgets:
        whole = not bud.teams and not bud.workloads
        spent = sum(
            v
            for n, v in (cost_by_wl if whole else charge_by_wl).items()
            if whole or n in bud.workloads or (n in workloads and workloads[n].team in bud.teams)
        )
        if spent > bud.usd_per_month * (1 + 1e-9) + 1e-6:
            bad.append(f"{bud.name}: ${spent:,.2f}/month over ${bud.usd_per_month:,.2f}")
    for e in c.existing:
        if existing_use[e.name] > e.count:
            bad.append(f"existing commitment {e.name}: {existing_use[e.name]} nodes used, {e.count} held")
    for site in fleet.on_prem:
        used_nodes = sum(
            o.nodes_peak for opts in chosen.values() for o in opts if o.on_prem_site == site.name
        )
        if used_nodes > site.nodes:
            bad.append(f"on-prem {site.name}: {used_nodes} nodes planned, {site.nodes} owned")
    if c.max_providers is not None:
        provs = {o.provider for opts in chosen.values() for o in opts} | {
            pl.provider for pl in pools if pl.nodes > 0
        }
        if len(provs) > c.max_providers:
            bad.append(f"{len(provs)} providers used ({', '.join(sorted(provs))}), at most {c.max_providers}")
    if total_usd_per_month is not None and not _close(total, total_usd_per_month):
        bad.append(f"plan total ${total_usd_per_month:,.2f} != sum of its lines ${total:,.2f}")
    return bad
