"""Brute-force enumeration of every plan of a small fleet: the reference the MILP is tested against.

Every workload: every set of ``ha_regions`` options in distinct regions, and for every block every split of
its nodes over every pay kind the offer has (on-demand, 1y, 3y, spot, each matching existing commitment,
on-prem); a MIG option's slices go to its pool, and each pool gets the fewest nodes whose GPUs' valid MIG
configurations hold its slices (:func:`gpufleet.fleet.mig.min_gpus`, a dynamic programme, not the MILP);
then every combination across workloads, cheapest first, until one passes
:func:`gpufleet.fleet.check.check_plan`.
Exponential: meant for a handful of workloads with a few options and nodes each.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from gpufleet.cost.commitment import TERM_MONTHS, commitment_pays, term_allowed
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.mig import min_gpus
from gpufleet.fleet.pools import build_pool, cheapest_pay, slice_line
from gpufleet.fleet.sharing import options_for_levers
from gpufleet.fleet.types import Fleet, FleetWorkload, Option, PlanLine, SharedPool
from gpufleet.units import HOURS_PER_MONTH


@dataclass(frozen=True, slots=True, kw_only=True)
class BruteResult:
    cost_usd_per_month: float | None  # None = infeasible
    lines: tuple[PlanLine, ...]
    plans_enumerated: int
    pools: tuple[SharedPool, ...] = ()


def _kinds(fleet: Fleet, fw: FleetWorkload, o: Option) -> list[tuple[str, float, float, str | None]]:
    """(pay kind, unit price, billed hours factor marker, commitment) available for one node of ``o``."""
    out: list[tuple[str, float, float, str | None]] = []
    if o.on_prem_site is not None:
        return [("on_prem", math.nan, HOURS_PER_MONTH, None)]
    if math.isfinite(o.price_on_demand_usd_per_hour):
        out.append(("on_demand", o.price_on_demand_usd_per_hour, -1.0, None))
    for kind, price in (
        ("commit_1y", o.price_commit_1y_usd_per_hour),
        ("commit_3y", o.price_commit_3y_usd_per_hour),
    ):
        if math.isfinite(price) and term_allowed(
            kind, fleet.constraints.commitment_terms, fw.lifetime_months
        ):
            out.append((kind, price, HOURS_PER_MONTH, None))
    if fw.preemptible_fraction > 0 and math.isfinite(o.price_spot_usd_per_hour):
        out.append(("spot", o.price_spot_usd_per_hour * o.spot_cost_factor, -1.0, None))
    for e in fleet.constraints.existing:
        if (e.provider, e.region, e.instance_type) == (
            o.provider,
            o.region,
            o.instance_type,
        ) and e.term_left_months >= 1:
            out.append(("existing", 0.0, -1.0, e.name))
    return out


def _splits(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every way to put ``n`` identical nodes into ``k`` kinds."""
    for cut in itertools.combinations(range(n + k - 1), k - 1):
        prev, parts = -1, []
        for c in (*cut, n + k - 1):
            parts.append(c - prev - 1)
            prev = c
        yield tuple(parts)


def _option_configs(fleet: Fleet, fw: FleetWorkload, o: Option) -> list[list[PlanLine]]:
    margin = fleet.constraints.commitment_margin_fraction
    per_block: list[list[list[PlanLine]]] = [[[slice_line(o, fw.name, fw.team)]]] if o.is_mig else []
    for bi, b in enumerate(o.blocks):
        kinds = [  # a new term only where it pays with the margin at this block's hours
            k
            for k in _kinds(fleet, fw, o)
            if k[0] not in TERM_MONTHS
            or commitment_pays(k[1], o.price_on_demand_usd_per_hour, b.hours_per_month, margin)
        ]
        choices = []
        for split in _splits(b.nodes, len(kinds)):
            lines = []
            for (kind, unit, billed, commitment), n in zip(kinds, split, strict=True):
                if n == 0:
                    continue
                hours = b.hours_per_month
                if kind == "on_prem":
                    unit = (
                        o.on_prem_fixed_usd_per_node_month + o.on_prem_energy_usd_per_node_hour * hours
                    ) / HOURS_PER_MONTH
                bh = hours if billed < 0 else billed
                lines.append(
                    PlanLine.for_option(
                        o,
                        workload=fw.name,
                        team=fw.team,
                        block=bi,
                        pay_kind=kind,
                        nodes=n,
                        unit_usd_per_hour=unit,
                        billed_hours=bh,
                        hours=hours,
                        commitment=commitment,
                    )
                )
            choices.append(lines)
        per_block.append(choices)
    transfer = []
    if o.transfer_usd_per_month > 0:
        transfer = [
            PlanLine.for_option(
                o,
                workload=fw.name,
                team=fw.team,
                block=-1,
                pay_kind="data_transfer",
                nodes=0,
                unit_usd_per_hour=0.0,
                billed_hours=0.0,
                hours=0.0,
                cost_usd_per_month=o.transfer_usd_per_month,
            )
        ]
    out = []
    for combo in itertools.product(*per_block):
        lines = [ln for part in combo for ln in part] + transfer
        spot = sum(ln.nodes for ln in lines if ln.pay_kind == "spot")
        whole = all(ln.nodes % max(1, o.nodes_per_replica) == 0 for ln in lines if ln.pay_kind == "spot")
        if whole and spot <= o.spot_share_nodes(fw.preemptible_fraction):
            out.append(lines)
    return out


def _pools(
    fleet: Fleet, lines: Sequence[PlanLine], options: Mapping[str, Option]
) -> tuple[float, list[SharedPool], list[PlanLine]]:
    """(cost of the MIG pools the slice lines need, the pools, the MIG lines re-priced plus idle lines).

    Each pool: the fewest GPUs that hold its slices (dynamic programme), whole nodes, paid the cheapest way
    its tenants' lifetimes allow."""
    by_pool: dict[str, list[PlanLine]] = {}
    for ln in lines:
        if ln.mig_profile:
            by_pool.setdefault(ln.pool, []).append(ln)
    life = {w.name: w.lifetime_months for w in fleet.workloads}
    cost, pools, out = 0.0, [], []
    for key in sorted(by_pool):
        mine = by_pool[key]
        t = options[mine[0].option]
        demand: dict[str, int] = {}
        for ln in mine:
            demand[ln.mig_profile] = demand.get(ln.mig_profile, 0) + ln.nodes
        prod = {ln.workload for ln in mine if options[ln.option].survives_node_loss}
        if prod:  # two mirrored halves, each holding half of every profile's slices (rounded up)
            gpus, layouts = min_gpus(t.gpu, {p: -(-n // 2) for p, n in demand.items()})
            nodes = 2 * math.ceil(gpus / int(t.gpus_per_node))
            layouts = [(c, 2 * n) for c, n in layouts]
        else:
            gpus, layouts = min_gpus(t.gpu, demand)
            nodes = math.ceil(gpus / int(t.gpus_per_node))
        kind, price = cheapest_pay(
            t,
            fleet.constraints.commitment_terms,
            [life[ln.workload] for ln in mine],
            margin_fraction=fleet.constraints.commitment_margin_fraction,
        )
        pool, priced = build_pool(
            t, {kind: nodes}, {kind: price}, layouts, mine, mirrored=bool(prod), production=prod
        )
        cost += pool.cost_usd_per_month
        pools.append(pool)
        out += priced
    return cost, pools, out


def brute_force(fleet: Fleet, options: Mapping[str, Sequence[Option]]) -> BruteResult:
    """The cheapest feasible plan by exhaustive enumeration (``cost_usd_per_month`` None if none)."""
    options = options_for_levers(fleet, options, True)
    per_workload: list[list[list[PlanLine]]] = []
    for fw in fleet.workloads:
        configs: list[list[PlanLine]] = []
        for subset in itertools.combinations(options.get(fw.name, ()), fw.ha_regions):
            if len({(o.provider, o.region) for o in subset}) != len(subset):
                continue
            for parts in itertools.product(*(_option_configs(fleet, fw, o) for o in subset)):
                configs.append([ln for p in parts for ln in p])
        per_workload.append(configs)
    all_opts = {o.key: o for v in options.values() for o in v}
    costs = [
        [sum(ln.cost_usd_per_month for ln in cfg if not ln.mig_profile) for cfg in configs]
        for configs in per_workload
    ]

    def total(idx: tuple[int, ...]) -> float:
        lines = [ln for w, i in enumerate(idx) for ln in per_workload[w][i] if ln.mig_profile]
        return sum(costs[w][i] for w, i in enumerate(idx)) + (
            _pools(fleet, lines, all_opts)[0] if lines else 0.0
        )

    combos = sorted(itertools.product(*(range(len(c)) for c in per_workload)), key=total)
    for idx in combos:
        lines = [ln for w, i in enumerate(idx) for ln in per_workload[w][i]]
        _c, pools, priced = _pools(fleet, lines, all_opts)
        lines = [ln for ln in lines if not ln.mig_profile] + priced
        if not check_plan(fleet, all_opts, lines, pools=pools):
            cost = sum(ln.cost_usd_per_month for ln in lines)
            return BruteResult(
                cost_usd_per_month=cost, lines=tuple(lines), plans_enumerated=len(combos), pools=tuple(pools)
            )
    return BruteResult(cost_usd_per_month=None, lines=(), plans_enumerated=len(combos))


def plan_count(fleet: Fleet, options: Mapping[str, Sequence[Option]]) -> int:
    """How many plans :func:`brute_force` would enumerate (to keep tests small)."""
    options = options_for_levers(fleet, options, True)
    total = 1
    for fw in fleet.workloads:
        n = 0
        for subset in itertools.combinations(options.get(fw.name, ()), fw.ha_regions):
            if len({(o.provider, o.region) for o in subset}) != len(subset):
                continue
            n += math.prod(len(_option_configs(fleet, fw, o)) for o in subset)
        total *= n
    return total
