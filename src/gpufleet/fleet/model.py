"""The fleet MILP: options x pay kinds under quotas, budgets, commitments, capacity, providers and HA.

Variables (all integer):

* ``s[o]`` in {0, 1}: option ``o`` is chosen (one per workload, or ``ha_regions`` in distinct regions);
* ``spot[o,b]`` in [0, n_b]: nodes of block ``b`` on spot (only where the workload has a preemptible share
  and the offer a spot price);
* ``ex[o,b,k]`` in [0, n_b]: nodes of block ``b`` on existing commitment ``k`` (zero marginal cost);
* ``u[p]`` in {0, 1}: provider ``p`` is used (only with ``max_providers``).

Every other node of a block is paid the block's *regular* way: the cheapest of on-demand (its hours),
a new 1-year or 3-year commitment (730 h billed) where the workload lives long enough and the fleet allows it,
or the on-prem TCO. Because those three use the same quota and nothing else, the cheapest dominates; the
MILP keeps only the choices that differ in a constraint (spot: spot quota and preemptible share; existing:
the commitment's count).
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpufleet.cost.commitment import commitment_pays, term_allowed
from gpufleet.fleet.pools import PoolVars, add_pools
from gpufleet.fleet.problem import Problem
from gpufleet.fleet.types import Block, ExistingCommitment, Fleet, FleetWorkload, Option, Quota
from gpufleet.units import HOURS_PER_MONTH


@dataclass(frozen=True, slots=True, kw_only=True)
class Levers:
    """Which pricing/placement levers the model may use (the savings waterfall switches them on in turn)."""

    spot: bool = True
    commitments: bool = True
    existing: bool = True
    budgets: bool = True
    sharing: bool = True  # MIG slices on shared GPUs (gpufleet.fleet.sharing)


#: the lever sets the plan and its savings waterfall solve with (pruning at option generation keeps the
#: options that survive under any of them, so each solve stays exact)
LEVER_SETS: tuple[Levers, ...] = (
    Levers(spot=False, commitments=False, existing=False),
    Levers(spot=True, commitments=False, existing=False),
    Levers(),
)


def regular_kind(
    fw: FleetWorkload,
    o: Option,
    b: Block,
    terms: tuple[str, ...],
    levers: Levers,
    margin_fraction: float,
) -> tuple[str, float]:
    """(pay kind, USD/month per node) of the cheapest non-spot, non-existing way to pay block ``b``: a new
    term only where the lifetime covers it and it pays with ``margin_fraction`` (gpufleet.cost.commitment)."""
    if o.on_prem_site is not None:
        return (
            "on_prem",
            o.on_prem_fixed_usd_per_node_month + o.on_prem_energy_usd_per_node_hour * b.hours_per_month,
        )
    best = ("on_demand", o.price_on_demand_usd_per_hour * b.hours_per_month)
    if levers.commitments:
        for kind, price in (
            ("commit_1y", o.price_commit_1y_usd_per_hour),
            ("commit_3y", o.price_commit_3y_usd_per_hour),
        ):
            if not term_allowed(kind, terms, fw.lifetime_months):
                continue
            pays = commitment_pays(price, o.price_on_demand_usd_per_hour, b.hours_per_month, margin_fraction)
            if pays and price * HOURS_PER_MONTH < best[1] - 1e-9:
                best = (kind, price * HOURS_PER_MONTH)
    return best


def spot_usd_per_node_month(fw: FleetWorkload, o: Option, b: Block, levers: Levers) -> float | None:
    """Expected spot cost of one node of block ``b`` [USD/month], or None where spot is not allowed."""
    if not levers.spot or fw.preemptible_fraction <= 0 or not math.isfinite(o.price_spot_usd_per_hour):
        return None
    return o.price_spot_usd_per_hour * o.spot_cost_factor * b.hours_per_month


def matching_existing(o: Option, existing: tuple[ExistingCommitment, ...]) -> list[int]:
    return [
        k
        for k, e in enumerate(existing)
        if e.provider == o.provider
        and e.region == o.region
        and e.instance_type == o.instance_type
        and e.term_left_months >= 1.0
    ]


def quota_matches(q: Quota, o: Option) -> bool:
    return (
        q.provider == o.provider
        and fnmatch.fnmatchcase(o.region, q.region)
        and fnmatch.fnmatchcase(o.gpu.lower(), q.gpu.lower())
        and fnmatch.fnmatchcase(o.instance_type.lower(), q.instance_family.lower())
    )


def quota_units_per_node(q: Quota, o: Option) -> float:
    if q.unit == "gpus":
        return o.gpus_per_node
    if q.unit == "vcpus":
        return o.vcpus_per_node
    return 1.0


@dataclass(slots=True)
class OptionVars:
    option: Option
    s: int
    spot: dict[int, int] = field(default_factory=dict)  # block -> var (whole replicas of spot_nodes_per_unit)
    existing: dict[tuple[int, int], int] = field(default_factory=dict)  # (block, commitment) -> var
    regular: list[tuple[str, float]] = field(default_factory=list)  # per block: (kind, USD/node-month)
    spot_cost: dict[int, float] = field(default_factory=dict)  # block -> USD/node-month
    # block -> spot nodes per chosen unit, fixed where no live row couples the option's spot use (folded into
    # the choice's cost; see _spot_fixed)
    spot_fixed: dict[int, int] = field(default_factory=dict)
    spot_nodes_per_unit: int = (
        1  # nodes one ``spot`` variable unit stands for (the option's nodes per replica)
    )


@dataclass(slots=True)
class Model:
    problem: Problem
    vars: dict[str, list[OptionVars]]  # group representative -> its options' variables (counts over members)
    groups: dict[str, list[str]] = field(
        default_factory=dict
    )  # representative -> member workloads (in order)
    fixed_usd_per_month: float = 0.0
    pools: dict[str, PoolVars] = field(default_factory=dict)  # MIG pools by key


def group_identical(fleet: Fleet, options: dict[str, list[Option]]) -> dict[str, list[str]]:
    """Workloads that are interchangeable in every row: same team, spot share, lifetime and options (in the
    same order), a single region, and named by no budget. The MILP carries each group once with counts: exact
    (a split of the counts over the members always exists; see :func:`gpufleet.fleet.plan._spread`)."""
    named = {w for b in fleet.constraints.budgets for w in b.workloads}
    # a cheap key first (most fleets have few identical workloads); the full comparison only where it collides
    rough: dict[object, list[str]] = {}
    for fw in fleet.workloads:
        opts = options.get(fw.name, [])
        if fw.ha_regions != 1 or fw.name in named or not opts:
            key: object = ("single", fw.name)
        else:
            key = (fw.team, fw.preemptible_fraction, fw.lifetime_months,
                   tuple((o.provider, o.region, o.instance_type, o.blocks) for o in opts))  # fmt: skip
        rough.setdefault(key, []).append(fw.name)
    out: dict[str, list[str]] = {}
    for names in rough.values():
        if len(names) == 1:
            out[names[0]] = names
            continue
        groups: dict[object, list[str]] = {}
        for name in names:
            # repr, not the dataclasses: an absent price is NaN, and NaN is unequal to itself (its hash is
            # per object since Python 3.10), so equal options built in different processes would not group
            full = tuple(repr(replace(o, key="", workload="")) for o in options[name])
            groups.setdefault(full, []).append(name)
        out.update({g[0]: g for g in groups.values()})
    return {name: out[name] for name in (w.name for w in fleet.workloads) if name in out}


def _workload_budgets(fleet: Fleet, fw: FleetWorkload) -> list[int]:
    out = []
    for i, b in enumerate(fleet.constraints.budgets):
        if (not b.teams and not b.workloads) or fw.team in b.teams or fw.name in b.workloads:
            out.append(i)
    return out


def _live_quotas(
    fleet: Fleet,
    options: dict[str, list[Option]],
    groups: dict[str, list[str]],
    levers: Levers,
    matching_quotas: Callable[[Option], list[int]],
) -> list[bool]:
    """Quotas some choice of options could exceed (an upper bound of each workload's largest use, summed);
    the others can never bind, so they leave the model and do not couple spot use."""
    c = fleet.constraints
    worst = [0.0] * len(c.quotas)
    pooled = [False] * len(c.quotas)
    by_name = {w.name: w for w in fleet.workloads}
    for rep, members in groups.items():
        fw = by_name[rep]
        m = len(members)
        most = [0.0] * len(c.quotas)
        for o in options.get(rep, []):
            matching = matching_quotas(o)
            if not matching:
                continue
            if o.is_mig:  # a shared pool's nodes count in its quotas (add_pools): never fold spot past them
                for qi in matching:
                    pooled[qi] = True
                continue
            peak = o.nodes_peak
            limit = o.spot_share_nodes(fw.preemptible_fraction)
            spot_ub = sum(
                min(b.nodes, limit)
                for b in o.blocks
                if limit > 0 and spot_usd_per_node_month(fw, o, b, levers) is not None
            )
            for qi in matching:
                q = c.quotas[qi]
                u = quota_units_per_node(q, o)
                most[qi] = max(most[qi], u * m * (spot_ub if q.spot else peak))
        for qi in range(len(c.quotas)):
            worst[qi] += most[qi] * fw.ha_regions
    return [pl or w > q.limit + 1e-9 for w, pl, q in zip(worst, pooled, c.quotas, strict=True)]


def _spot_fixed(
    fw: FleetWorkload, o: Option, regs: list[tuple[str, float]], levers: Levers
) -> tuple[dict[int, int], float]:
    """(spot nodes per block, USD/month saved) of the cheapest spot use of one chosen option: blocks by
    saving per node, each up to its nodes, all within the preemptible share (a fractional knapsack with
    unit weights, so greedy is optimal and integral). Exact where no live row couples the spot use. A
    replica over several nodes goes to spot whole (:meth:`Option.spot_share_nodes`; blocks hold whole
    replicas), so the knapsack's items are replicas of ``nodes_per_replica`` nodes."""
    limit = o.spot_share_nodes(fw.preemptible_fraction)
    npr = max(1, o.nodes_per_replica)
    if limit <= 0:
        return {}, 0.0
    gains = []
    for bi, b in enumerate(o.blocks):
        sc = spot_usd_per_node_month(fw, o, b, levers)
        if sc is not None and sc < regs[bi][1]:
            gains.append((regs[bi][1] - sc, bi, b.nodes))
    out: dict[int, int] = {}
    saved = 0.0
    left = limit
    for gain, bi, nodes in sorted(gains, key=lambda g: (-g[0], g[1])):
        if left <= 0:
            break
        k = min(nodes, left) // npr * npr
        if k <= 0:
            continue
        out[bi] = k
        saved += k * gain
        left -= k
    return out, saved


def build_model(fleet: Fleet, options: dict[str, list[Option]], levers: Levers | None = None) -> Model:
    """The MILP for ``fleet`` over the (pruned) ``options`` of each workload."""
    levers = levers or Levers()
    p = Problem()
    c = fleet.constraints
    terms = c.commitment_terms
    existing = c.existing if levers.existing else ()
    quota_terms: dict[int, list[tuple[int, float]]] = defaultdict(list)
    budget_terms: dict[int, list[tuple[int, float]]] = defaultdict(list)
    budget_const: dict[int, float] = defaultdict(float)
    existing_terms: dict[int, list[tuple[int, float]]] = defaultdict(list)
    site_terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
    provider_opts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    model = Model(problem=p, vars={})
    quota_max: dict[tuple[int, str], float] = {}  # (quota, workload) -> most it can use with one option
    budget_max: dict[tuple[int, str], float] = {}  # (budget, workload) -> most it can cost with one option
    memo: dict[tuple[str, str, str, str], list[int]] = {}

    def matching_quotas(o: Option) -> list[int]:
        key = (o.provider, o.region, o.gpu, o.instance_type)
        if key not in memo:
            memo[key] = [qi for qi, q in enumerate(c.quotas) if quota_matches(q, o)]
        return memo[key]

    mig_vars: list[tuple[Option, int, int]] = []  # MIG options: (option, choice variable, multiplicity)
    model.groups = group_identical(fleet, options)
    live = _live_quotas(fleet, options, model.groups, levers, matching_quotas)
    by_name = {w.name: w for w in fleet.workloads}
    mult = {rep: len(members) for rep, members in model.groups.items()}
    for rep in model.groups:
        fw = by_name[rep]
        m = mult[rep]
        opts = options.get(fw.name, [])
        budgets = _workload_budgets(fleet, fw) if levers.budgets else []
        ovs: list[OptionVars] = []
        for o in opts:
            regs = [regular_kind(fw, o, b, terms, levers, c.commitment_margin_fraction) for b in o.blocks]
            fixed = (
                sum(b.nodes * r[1] for b, r in zip(o.blocks, regs, strict=True)) + o.transfer_usd_per_month
            )
            matching = [] if o.is_mig else matching_quotas(o)
            # no live quota and no existing commitment couples this option's spot use: its best spot use is
            # fixed per chosen unit and folded into the choice's cost (no spot variables, no share row)
            fold = not any(live[qi] for qi in matching) and not matching_existing(o, existing)
            spot_fixed, saved = _spot_fixed(fw, o, regs, levers) if fold else ({}, 0.0)
            fixed -= saved
            s = p.add_var(f"choose[{o.key}]", ub=float(m), cost=fixed)
            ov = OptionVars(option=o, s=s, regular=regs, spot_fixed=spot_fixed)
            for bi in spot_fixed:
                sc_ = spot_usd_per_node_month(fw, o, o.blocks[bi], levers)
                assert sc_ is not None
                ov.spot_cost[bi] = sc_
            spot_vars = []
            # a MIG option's GPUs are its pool's nodes: quotas count those (add_pools below)
            if o.is_mig:
                mig_vars.append((o, s, m))
            charge = o.mig_slices * o.mig_slice_usd_per_hour * HOURS_PER_MONTH  # MIG chargeback (0 otherwise)
            # dearer spot only helps by freeing an on-demand quota: without one it is never used
            od_quota = any(not c.quotas[qi].spot for qi in matching)
            limit = o.spot_share_nodes(fw.preemptible_fraction)
            # a spot variable counts whole replicas (npr nodes each): no replica is half spot
            npr = ov.spot_nodes_per_unit = max(1, o.nodes_per_replica)
            for bi, b in enumerate(o.blocks):
                flex: list[tuple[int, float]] = []
                sc = spot_usd_per_node_month(fw, o, b, levers)
                spot_ub = min(b.nodes, limit) // npr
                if not fold and sc is not None and spot_ub > 0 and (sc < regs[bi][1] or od_quota):
                    v = p.add_var(f"spot[{o.key},{bi}]", ub=float(m * spot_ub), cost=npr * (sc - regs[bi][1]))
                    ov.spot[bi] = v
                    ov.spot_cost[bi] = sc
                    spot_vars.append(v)
                    flex.append((v, float(npr)))
                for k in matching_existing(o, existing):
                    v = p.add_var(
                        f"existing[{o.key},{bi},{existing[k].name}]", ub=float(m * b.nodes), cost=-regs[bi][1]
                    )
                    ov.existing[(bi, k)] = v
                    existing_terms[k].append((v, 1.0))
                    flex.append((v, 1.0))
                if flex:
                    p.add_row(
                        f"block {o.key}/{bi}",
                        "block",
                        [*flex, (s, -float(b.nodes))],
                        hi=0.0,
                        elastic=False,
                    )
            spot_nodes = sum(b.nodes for bi, b in enumerate(o.blocks) if bi in ov.spot)
            if spot_vars and spot_nodes > limit:
                p.add_row(
                    f"preemptible share of {fw.name} ({fw.preemptible_fraction:.0%})",
                    "spot_share",
                    [(v, float(npr)) for v in spot_vars] + [(s, -float(limit))],
                    hi=0.0,
                    elastic=False,
                )
            for qi in matching:
                q = c.quotas[qi]
                u = quota_units_per_node(q, o)
                if u <= 0:
                    continue
                if q.spot:
                    quota_terms[qi] += [(v, u * npr) for v in ov.spot.values()]
                    use = u * npr * sum(p.ub[v] for v in ov.spot.values())  # already x m
                else:
                    quota_terms[qi].append((s, u * o.nodes_peak))
                    quota_terms[qi] += [(v, -u * npr) for v in ov.spot.values()]
                    use = u * o.nodes_peak * m
                quota_max[(qi, fw.name)] = max(quota_max.get((qi, fw.name), 0.0), use)
            worst = m * fixed + sum(
                max(0.0, ov.spot_cost[bi] - regs[bi][1]) * npr * p.ub[v] for bi, v in ov.spot.items()
            )
            for bi_ in budgets:
                scoped = bool(c.budgets[bi_].teams or c.budgets[bi_].workloads)  # MIG: charged back by team
                budget_terms[bi_].append((s, fixed + (charge if scoped else 0.0)))
                for bi, v in ov.spot.items():
                    budget_terms[bi_].append((v, npr * (ov.spot_cost[bi] - regs[bi][1])))
                for (bi, _k), v in ov.existing.items():
                    budget_terms[bi_].append((v, -regs[bi][1]))
                w_max = worst + (m * charge if scoped else 0.0)
                budget_max[(bi_, fw.name)] = max(budget_max.get((bi_, fw.name), 0.0), w_max)
            if o.on_prem_site is not None:
                site_terms[o.on_prem_site].append((s, float(o.nodes_peak)))
            provider_opts[o.provider][fw.name].append(s)
            ovs.append(ov)
        model.vars[fw.name] = ovs
        need = float(fw.ha_regions * m)
        p.add_row(
            f"placement of {fw.name}"
            + (f" and {m - 1} identical workload(s)" if m > 1 else "")
            + (f" in {fw.ha_regions} distinct regions (HA)" if fw.ha_regions > 1 else ""),
            "choice",
            [(ov.s, 1.0) for ov in ovs],
            lo=need,
            hi=need,
            unit="placements",
        )
        if fw.ha_regions > 1:
            by_region: dict[tuple[str, str], list[int]] = defaultdict(list)
            for ov in ovs:
                by_region[(ov.option.provider, ov.option.region)].append(ov.s)
            for (prov, reg), ss in by_region.items():
                if len(ss) > 1:
                    p.add_row(
                        f"HA: one placement of {fw.name} per region {prov}/{reg}",
                        "ha",
                        [(v, 1.0) for v in ss],
                        hi=1.0,
                        elastic=False,
                    )
    # a row that no choice can violate (the sum of each workload's worst option fits) is left out: exact,
    # and it spares HiGHS's presolve dense rows
    ha_of = {w.name: w.ha_regions for w in fleet.workloads}
    model.pools = add_pools(
        p,
        mig_vars,
        terms=terms,
        commitments=levers.commitments,
        lifetime_months={w.name: w.lifetime_months for w in fleet.workloads},
        margin_fraction=c.commitment_margin_fraction,
    )
    for key, pv in model.pools.items():  # pool nodes: quotas (not spot), whole-fleet budgets, providers
        t = pv.template
        ub = sum(p.ub[v] for v in pv.n.values())  # most nodes the pool's variables allow, all pay kinds
        for qi, q in enumerate(c.quotas):
            u = quota_units_per_node(q, t)
            if not q.spot and u > 0 and qi in matching_quotas(t):
                quota_terms[qi] += [(v, u) for v in pv.n.values()]
                quota_max[(qi, "pool:" + key)] = u * ub
        for bi_, bud in enumerate(c.budgets if levers.budgets else ()):
            if not bud.teams and not bud.workloads:
                budget_terms[bi_] += [(v, pv.price[k] * HOURS_PER_MONTH) for k, v in pv.n.items()]
                budget_max[(bi_, "pool:" + key)] = sum(
                    pv.price[k] * HOURS_PER_MONTH * p.ub[v] for k, v in pv.n.items()
                )
        provider_opts[t.provider]["pool:" + key] += list(pv.n.values())

    def worst_case(table: dict[tuple[int, str], float], i: int) -> float:
        return sum(v * ha_of.get(w, 1) for (j, w), v in table.items() if j == i)

    for qi, q in enumerate(c.quotas):
        if quota_terms[qi] and worst_case(quota_max, qi) > q.limit + 1e-9:
            p.add_row(
                f"{q.name} (<= {q.limit:g} {q.unit})", "quota", quota_terms[qi], hi=q.limit, unit=str(q.unit)
            )
    for bi_, bud in enumerate(c.budgets if levers.budgets else ()):
        if budget_terms[bi_] and worst_case(budget_max, bi_) > bud.usd_per_month - budget_const[bi_] + 1e-9:
            p.add_row(
                f"{bud.name} (<= ${bud.usd_per_month:,.0f}/month)",
                "budget",
                budget_terms[bi_],
                hi=bud.usd_per_month - budget_const[bi_],
                unit="USD/month",
            )
    for k, e in enumerate(existing):
        if existing_terms[k]:
            p.add_row(
                f"existing commitment {e.name} (count {e.count})",
                "existing",
                existing_terms[k],
                hi=float(e.count),
                elastic=False,
            )
    for site in fleet.on_prem:
        if site_terms[site.name]:
            p.add_row(
                f"on-prem capacity of {site.name} ({site.nodes} nodes)",
                "capacity",
                site_terms[site.name],
                hi=float(site.nodes),
                unit="nodes",
            )
    if c.max_providers is not None and len(provider_opts) > c.max_providers:
        uvars = {}
        for prov in sorted(provider_opts):
            uvars[prov] = p.add_var(f"use_provider[{prov}]", ub=1.0)
            for wname, ss in provider_opts[prov].items():
                fw_ha = ha_of[wname] * mult[wname] if wname in ha_of else sum(p.ub[v] for v in ss)
                p.add_row(
                    f"link {wname}/{prov}",
                    "providers",
                    [(v, 1.0) for v in ss] + [(uvars[prov], -float(fw_ha))],
                    hi=0.0,
                    elastic=False,
                )
        p.add_row(
            f"at most {c.max_providers} providers",
            "providers",
            [(v, 1.0) for v in uvars.values()],
            hi=float(c.max_providers),
            unit="providers",
        )
    return model
