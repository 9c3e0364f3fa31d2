"""Shared MIG pools in the fleet MILP: exact bin packing by configuration patterns, decoding and the check.

Per pool (one offer: provider, region, instance type) integer nodes per pay kind (on demand, 1y/3y
commitments its tenants outlive), integer GPUs per valid configuration ``g_c`` with
``sum_c g_c <= GPUs/node x nodes``, and per profile ``sum_o slices_o x s_o <= sum_c count_c(profile) x g_c``.
Each workload's slices are charged back by compute slices at the pool's cost; the pool's idle rest is
a line of its own, so a plan's lines still sum to what the nodes cost.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpufleet.cost.commitment import (
    DEFAULT_MARGIN_FRACTION,
    TERM_MONTHS,
    commitment_pays,
    shortest_lifetime,
    term_allowed,
)
from gpufleet.fleet.mig import Config, config_is_valid, mig_configs, mig_shapes, shape_of
from gpufleet.fleet.problem import Problem
from gpufleet.fleet.types import Fleet, Option, PlanLine, PoolGpu, SharedPool
from gpufleet.units import HOURS_PER_MONTH

#: workload name and team of a pool's idle-capacity line
IDLE_WORKLOAD = "(idle MIG slices)"
SHARED_TEAM = "(shared)"
#: months a workload must still run for a pool node on each commitment term
_TERM_MONTHS = TERM_MONTHS


def pool_pay_kinds(
    t: Option,
    terms: Sequence[str],
    commitments: bool = True,
    margin_fraction: float = DEFAULT_MARGIN_FRACTION,
) -> dict[str, float]:
    """Ways to pay a pool node [USD/h]: on demand, and 1y/3y commitments the fleet allows where they pay with
    ``margin_fraction`` (gpufleet.cost.commitment). A pool runs all month, so a commitment is billed the same
    730 h as on demand."""
    od = t.price_on_demand_usd_per_hour
    out = {"on_demand": od}
    if commitments:
        for kind, price in (
            ("commit_1y", t.price_commit_1y_usd_per_hour),
            ("commit_3y", t.price_commit_3y_usd_per_hour),
        ):
            if kind.removeprefix("commit_") in terms and commitment_pays(
                price, od, HOURS_PER_MONTH, margin_fraction
            ):
                out[kind] = price
    return out


def cheapest_pay(
    t: Option,
    terms: Sequence[str],
    lifetimes_months: Iterable[float | None],
    commitments: bool = True,
    margin_fraction: float = DEFAULT_MARGIN_FRACTION,
) -> tuple[str, float]:
    """The cheapest way to pay a pool's nodes when tenants living ``lifetimes_months`` share it (a tenant
    without a lifetime: on demand)."""
    life = shortest_lifetime(lifetimes_months)
    kinds = pool_pay_kinds(t, terms, commitments, margin_fraction)
    return min(
        ((k, v) for k, v in kinds.items() if k not in _TERM_MONTHS or term_allowed(k, terms, life)),
        key=lambda kv: kv[1],
    )


def _outlives(life: float | None, kind: str) -> bool:
    """A tenant living ``life`` months (None: not given) cannot share a pool node on ``kind``."""
    return kind in _TERM_MONTHS and (life is None or life < _TERM_MONTHS[kind])


@dataclass(slots=True)
class PoolVars:
    key: str
    template: Option  # any MIG option of the pool (offer facts)
    n: dict[str, int] = field(default_factory=dict)  # pay kind -> node variable
    price: dict[str, float] = field(default_factory=dict)  # pay kind -> USD per node-hour
    g: list[int] = field(default_factory=list)  # GPUs per configuration
    configs: tuple[Config, ...] = ()
    slot_terms: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # profile -> (s var, slices)
    mirrored: bool = False  # two identical halves (a production tenant may use the pool)
    production: frozenset[str] = frozenset()  # workloads whose slices must survive a lost node


def add_pools(
    p: Problem,
    mig: Iterable[tuple[Option, int, int]],
    *,
    terms: Sequence[str] = ("1y", "3y"),
    commitments: bool = True,
    lifetime_months: Mapping[str, float | None] | None = None,
    margin_fraction: float = DEFAULT_MARGIN_FRACTION,
) -> dict[str, PoolVars]:
    """Pool variables and packing rows for the chosen-option variables of MIG options (team and workload
    budgets see a workload's slices at their on-demand chargeback, ``Option.mig_slice_usd_per_hour``).

    ``mig``: (option, its choice variable, how many identical workloads the variable counts). Pool nodes on a
    commitment need every workload placed on the pool to live for the term: a binary ``y`` per pool and term
    with ``s_o <= m (1 - y)`` for each shorter-lived workload's option and ``n_term <= ub y``.
    """
    life = lifetime_months or {}
    by_pool: dict[str, list[tuple[Option, int, int]]] = defaultdict(list)
    for o, s, mult in mig:
        by_pool[o.pool].append((o, s, mult))
    pools: dict[str, PoolVars] = {}
    for key, members in by_pool.items():
        t = members[0][0]
        gpn = int(t.gpus_per_node)
        worst: dict[str, int] = defaultdict(int)  # per workload, its largest slice count here
        for o, _s, mult in members:
            worst[o.workload] = max(worst[o.workload], o.mig_slices * mult)
        ub = math.ceil(sum(worst.values()) / gpn)
        mirrored = any(o.survives_node_loss for o, _s, _m in members)
        if mirrored:
            ub = 2 * max(1, math.ceil(ub / 2))
        pv = PoolVars(key=key, template=t)
        for kind, price in pool_pay_kinds(t, terms, commitments, margin_fraction).items():
            pv.price[kind] = price
            pv.n[kind] = p.add_var(f"pool_nodes[{key},{kind}]", ub=float(ub), cost=price * HOURS_PER_MONTH)
            short = [
                (s, m) for o, s, m in members if o.workload in life and _outlives(life[o.workload], kind)
            ]
            if short:
                y = p.add_var(f"pool_commit[{key},{kind}]", ub=1.0)
                p.add_row(
                    f"pool {key} on {kind} only with y",
                    "mig_commit",
                    [(pv.n[kind], 1.0), (y, -float(ub))],
                    hi=0.0,
                    elastic=False,
                )
                for s, m in short:
                    p.add_row(
                        f"pool {key} on {kind}: tenants live the term",
                        "mig_commit",
                        [(s, 1.0), (y, float(m))],
                        hi=float(m),
                        elastic=False,
                    )
        pv.configs = mig_configs(t.gpu)
        pv.g = [
            p.add_var(f"pool_gpus[{key},{'+'.join(f'{n}x{q}' for q, n in c)}]", ub=float(ub * gpn))
            for c in pv.configs
        ]
        pv.mirrored = mirrored
        pv.production = frozenset(o.workload for o, _s, _m in members if o.survives_node_loss)
        if mirrored:  # N+1 over nodes: two identical halves, so nodes and GPUs per layout come in pairs
            for name, v in [(f"nodes {k}", x) for k, x in pv.n.items()] + [
                (f"GPUs of layout {i}", x) for i, x in enumerate(pv.g)
            ]:
                half = p.add_var(f"pool_half[{key},{name}]", ub=math.ceil(p.ub[v] / 2))
                p.add_row(
                    f"pool {key}: {name} in two mirrored halves",
                    "mig_mirror",
                    [(v, 1.0), (half, -2.0)],
                    lo=0.0,
                    hi=0.0,
                    elastic=False,
                )
        p.add_row(
            f"MIG GPUs of pool {key} (<= {gpn} per node)",
            "mig_gpus",
            [(v, 1.0) for v in pv.g] + [(v, -float(gpn)) for v in pv.n.values()],
            hi=0.0,
            elastic=False,
        )
        for o, s, _mult in members:
            pv.slot_terms.setdefault(o.mig_profile, []).append((s, float(o.mig_slices)))
        for prof, terms_ in pv.slot_terms.items():
            supply = [(v, -float(dict(c).get(prof, 0))) for v, c in zip(pv.g, pv.configs, strict=True)]
            p.add_row(
                f"MIG {prof} slices of pool {key}",
                "mig_slots",
                terms_ + [x for x in supply if x[1]],
                hi=0.0,
                elastic=False,
            )
        pools[key] = pv
    return pools


def slice_line(
    o: Option, workload: str, team: str, unit_usd_per_compute_slice_hour: float | None = None
) -> PlanLine:
    """The chargeback line of a workload's slices: count in ``nodes``, the GPU share of one slice in
    ``gpus_per_node``, priced by compute slices at the pool's rate (on demand until the pool is priced)."""
    per_cs = (
        unit_usd_per_compute_slice_hour
        if unit_usd_per_compute_slice_hour is not None
        else o.price_on_demand_usd_per_hour / (o.mig_compute_slices_total * o.gpus_per_node)
    )
    unit = per_cs * o.mig_compute_slices
    return PlanLine(
        workload=workload,
        team=team,
        option=o.key,
        block=0,
        provider=o.provider,
        region=o.region,
        instance_type=o.instance_type,
        gpu=o.gpu,
        gpus_per_node=o.mig_compute_slices / o.mig_compute_slices_total,
        pay_kind="on_demand",
        nodes=o.mig_slices,
        hours_per_month=HOURS_PER_MONTH,
        billed_hours_per_month=HOURS_PER_MONTH,
        unit_price_usd_per_hour=unit,
        list_unit_price_usd_per_hour=o.mig_slice_usd_per_hour,
        cost_usd_per_month=o.mig_slices * unit * HOURS_PER_MONTH,
        pool=o.pool,
        mig_profile=o.mig_profile,
    )


def place_slices(
    gpus_per_node: int,
    nodes: int,
    layouts: Sequence[tuple[Config, int]],
    slices: Sequence[tuple[str, str, int]],
    *,
    mirrored: bool = False,
    production: Iterable[str] = (),
) -> tuple[PoolGpu, ...]:
    """Where each slice runs: the configured GPUs laid out node by node and every (workload, profile, count)
    placed on free slots of its profile. ``mirrored``: the pool is two identical halves (nodes and GPUs per
    layout even); a ``production`` workload's slices go half to each half, so losing any node (or GPU) leaves
    the other half's. Within a half a workload's slices spread over nodes (fewest of its slices first)."""
    halves = 2 if mirrored else 1
    per_half = nodes // halves
    gpu_node: list[int] = []
    gpu_layout: list[Config] = []
    gpu_half: list[int] = []
    for h in range(halves):
        i = 0
        for layout, n in layouts:
            for _ in range(n // halves if mirrored else n):
                gpu_node.append(h * per_half + i // gpus_per_node)
                gpu_layout.append(layout)
                gpu_half.append(h)
                i += 1
    free = [dict(layout) for layout in gpu_layout]
    placed: list[dict[tuple[str, str], int]] = [defaultdict(int) for _ in gpu_layout]
    on_node: dict[tuple[str, int], int] = defaultdict(int)
    prod = set(production)

    def put(workload: str, profile: str, count: int, half: int | None) -> None:
        for _ in range(count):
            cands = [
                g
                for g in range(len(free))
                if free[g].get(profile, 0) > 0 and (half is None or gpu_half[g] == half)
            ]
            if not cands:
                raise AssertionError(f"no free {profile} slot for {workload} (pool packing)")
            g = min(cands, key=lambda g: (on_node[(workload, gpu_node[g])], gpu_node[g], g))
            free[g][profile] -= 1
            placed[g][(workload, profile)] += 1
            on_node[(workload, gpu_node[g])] += 1

    order = sorted(slices, key=lambda x: (x[0] not in prod, x[0], x[1]))
    for workload, profile, count in order:
        if mirrored and workload in prod:
            put(workload, profile, count - count // 2, 0)
            put(workload, profile, count // 2, 1)
        else:
            put(workload, profile, count, None)
    return tuple(
        PoolGpu(
            node=gpu_node[g],
            layout=gpu_layout[g],
            tenants=tuple((w, prof, n) for (w, prof), n in sorted(placed[g].items())),
        )
        for g in range(len(gpu_layout))
    )


def build_pool(
    t: Option,
    nodes: Mapping[str, int],
    prices: Mapping[str, float],
    layouts: Sequence[tuple[Config, int]],
    slice_lines: Sequence[PlanLine],
    *,
    mirrored: bool = False,
    production: Iterable[str] = (),
) -> tuple[SharedPool, list[PlanLine]]:
    """The pool with ``nodes`` per pay kind (USD/node-hour in ``prices``), its slice lines re-priced at the
    pool's cost per compute slice, and its idle line: the lines sum to what the nodes cost. ``mirrored``
    and ``production``: see :func:`place_slices`."""
    gpn = int(t.gpus_per_node)
    total = t.mig_compute_slices_total
    n_all = sum(nodes.values())
    cost = sum(n * prices[k] * HOURS_PER_MONTH for k, n in nodes.items())
    kind = max(nodes, key=lambda k: (nodes[k], -prices[k])) if n_all else "on_demand"
    per_cs = cost / (n_all * gpn * total * HOURS_PER_MONTH) if n_all else 0.0
    out: list[PlanLine] = []
    used = 0
    for ln in slice_lines:
        shape = shape_of(t.gpu, ln.mig_profile)
        assert shape is not None
        used += shape.compute_slices * ln.nodes
        unit = per_cs * shape.compute_slices
        out.append(
            replace(
                ln,
                pay_kind=kind,
                unit_price_usd_per_hour=unit,
                cost_usd_per_month=ln.nodes * unit * HOURS_PER_MONTH,
            )
        )
    pool = SharedPool(
        key=t.pool,
        provider=t.provider,
        region=t.region,
        instance_type=t.instance_type,
        gpu=t.gpu,
        gpus_per_node=gpn,
        nodes=n_all,
        pay_kind=kind,
        nodes_by_pay_kind=tuple((k, n) for k, n in sorted(nodes.items()) if n),
        price_on_demand_usd_per_hour=t.price_on_demand_usd_per_hour,
        cost_usd_per_month=cost,
        layouts=tuple((c, n) for c, n in layouts if n > 0),
        slices=tuple((ln.workload, ln.mig_profile, ln.nodes) for ln in slice_lines),
        gpus=place_slices(
            gpn,
            n_all,
            [(c, n) for c, n in layouts if n > 0],
            [(ln.workload, ln.mig_profile, ln.nodes) for ln in slice_lines],
            mirrored=mirrored,
            production=production,
        ),
        mirrored=mirrored,
    )
    idle = n_all * gpn * total - used
    if idle > 0:
        out.append(
            PlanLine(
                workload=IDLE_WORKLOAD,
                team=SHARED_TEAM,
                option=t.pool,
                block=0,
                provider=t.provider,
                region=t.region,
                instance_type=t.instance_type,
                gpu=t.gpu,
                gpus_per_node=1.0 / total,
                pay_kind=kind,
                nodes=idle,
                hours_per_month=HOURS_PER_MONTH,
                billed_hours_per_month=HOURS_PER_MONTH,
                unit_price_usd_per_hour=per_cs,
                list_unit_price_usd_per_hour=t.price_on_demand_usd_per_hour / (gpn * total),
                cost_usd_per_month=idle * per_cs * HOURS_PER_MONTH,
                pool=t.pool,
            )
        )
    return pool, out


def decode_pools(
    pools: Mapping[str, PoolVars], x: Sequence[float], lines: Sequence[PlanLine]
) -> tuple[list[SharedPool], list[PlanLine]]:
    """The pools of a MILP solution and the plan's lines with the MIG ones re-priced (plus idle lines)."""
    out: list[SharedPool] = []
    mig_lines: list[PlanLine] = []
    for key, pv in pools.items():
        nodes = {k: round(x[v]) for k, v in pv.n.items()}
        mine = [ln for ln in lines if ln.pool == key and ln.mig_profile]
        if not any(nodes.values()) and not mine:
            continue
        layouts = [(c, round(x[v])) for c, v in zip(pv.configs, pv.g, strict=True)]
        pool, priced = build_pool(
            pv.template, nodes, pv.price, layouts, mine, mirrored=pv.mirrored, production=pv.production
        )
        out.append(pool)
        mig_lines += priced
    return out, [ln for ln in lines if not ln.mig_profile] + mig_lines


# ------------------------------------------------------------------------------- independent re-checks


def _kind_price(t: Option, kind: str) -> float:
    return {
        "on_demand": t.price_on_demand_usd_per_hour,
        "commit_1y": t.price_commit_1y_usd_per_hour,
        "commit_3y": t.price_commit_3y_usd_per_hour,
    }.get(kind, math.nan)


def check_pools(
    fleet: Fleet, options: Mapping[str, Option], lines: Sequence[PlanLine], pools: Sequence[SharedPool]
) -> list[str]:
    """What the plan's MIG lines and pools break: slice lines match their options, every GPU layout is a
    valid MIG configuration, layouts fit the pool's GPUs, each profile's slots cover the slices placed, pool
    commitments are allowed and outlived by every tenant, and the pool's lines (slices charged by compute
    slices, the idle rest) sum to its nodes' cost."""
    bad: list[str] = []
    by_key = {pl.key: pl for pl in pools}
    life = {w.name: w.lifetime_months for w in fleet.workloads}
    mig_lines: dict[str, list[PlanLine]] = defaultdict(list)
    idle_lines: dict[str, list[PlanLine]] = defaultdict(list)
    for ln in lines:
        if not ln.pool or ln.pay_kind == "data_transfer":
            continue
        if ln.pool not in by_key:
            bad.append(f"{ln.workload}: MIG line names pool {ln.pool} that the plan does not hold")
        elif ln.mig_profile:
            mig_lines[ln.pool].append(ln)
        else:
            idle_lines[ln.pool].append(ln)
    for pl in pools:
        shapes = {s.profile: s for s in mig_shapes().get(pl.gpu, ())}
        t = next((o for o in options.values() if o.is_mig and o.pool == pl.key), None)
        if not shapes or t is None:
            bad.append(f"pool {pl.key}: no MIG option or no known MIG geometry for {pl.gpu}")
            continue
        total = next(iter(shapes.values())).compute_slices_total
        cost = 0.0
        for kind, n in pl.nodes_by_pay_kind:
            price = _kind_price(t, kind)
            if not math.isfinite(price) or n < 0:
                bad.append(f"pool {pl.key}: {kind} has no price for {pl.instance_type}")
                continue
            cost += n * price * HOURS_PER_MONTH
            if kind in _TERM_MONTHS:
                if kind.removeprefix("commit_") not in fleet.constraints.commitment_terms:
                    bad.append(f"pool {pl.key}: {kind} is not an allowed commitment term")
                short = [ln.workload for ln in mig_lines[pl.key] if _outlives(life.get(ln.workload), kind)]
                if short:
                    bad.append(f"pool {pl.key}: {kind} outlives its tenants {', '.join(sorted(set(short)))}")
                margin = fleet.constraints.commitment_margin_fraction
                if not commitment_pays(price, t.price_on_demand_usd_per_hour, HOURS_PER_MONTH, margin):
                    bad.append(
                        f"pool {pl.key}: {kind} at ${price:.4f}/h does not pay with a {margin:.0%} margin "
                        f"against ${t.price_on_demand_usd_per_hour:.4f}/h on demand"
                    )
        if sum(n for _k, n in pl.nodes_by_pay_kind) != pl.nodes:
            bad.append(f"pool {pl.key}: nodes by pay kind do not add up to {pl.nodes}")
        if not math.isclose(cost, pl.cost_usd_per_month, rel_tol=1e-9, abs_tol=1e-6):
            bad.append(f"pool {pl.key}: costs ${pl.cost_usd_per_month:,.2f}, its nodes ${cost:,.2f}")
        per_cs = cost / (pl.nodes * pl.gpus_per_node * total * HOURS_PER_MONTH) if pl.nodes else 0.0
        gpus = 0
        supply: dict[str, int] = defaultdict(int)
        for layout, n in pl.layouts:
            if n < 0 or not config_is_valid(pl.gpu, dict(layout)):
                bad.append(f"pool {pl.key}: {dict(layout)} is not a valid MIG configuration of {pl.gpu}")
            gpus += n
            for prof, k in layout:
                supply[prof] += k * n
        if gpus > pl.nodes * pl.gpus_per_node:
            bad.append(f"pool {pl.key}: {gpus} GPUs configured on {pl.nodes} x {pl.gpus_per_node} GPUs")
        used: dict[str, int] = defaultdict(int)
        compute = 0
        for ln in mig_lines[pl.key]:
            o = options.get(ln.option)
            shape = shapes.get(ln.mig_profile)
            if o is None or o.pool != pl.key or o.mig_profile != ln.mig_profile or shape is None:
                bad.append(
                    f"{ln.workload}: MIG line {ln.option} does not match a MIG option of pool {pl.key}"
                )
                continue
            unit = per_cs * shape.compute_slices
            if ln.nodes != o.mig_slices or not (
                math.isclose(ln.unit_price_usd_per_hour, unit, rel_tol=1e-9, abs_tol=1e-12)
                and math.isclose(
                    ln.cost_usd_per_month, ln.nodes * unit * HOURS_PER_MONTH, rel_tol=1e-9, abs_tol=1e-9
                )
            ):
                bad.append(
                    f"{ln.workload}: {ln.nodes} x {ln.mig_profile} at {ln.unit_price_usd_per_hour}/h, "
                    f"its option needs {o.mig_slices} slices at {unit}/h"
                )
            used[ln.mig_profile] += ln.nodes
            compute += ln.nodes * shape.compute_slices
        for prof, k in used.items():
            if k > supply.get(prof, 0):
                bad.append(f"pool {pl.key}: {k} {prof} slices placed, {supply.get(prof, 0)} configured")
        if sorted(pl.slices) != sorted((ln.workload, ln.mig_profile, ln.nodes) for ln in mig_lines[pl.key]):
            bad.append(f"pool {pl.key}: its slice list differs from the plan's slice lines")
        bad += _check_placement(pl, options, mig_lines[pl.key])
        idle = pl.nodes * pl.gpus_per_node * total - compute
        idle_n = sum(ln.nodes for ln in idle_lines[pl.key])
        if idle != idle_n:
            bad.append(f"pool {pl.key}: idle line counts {idle_n} compute slices, the pool has {idle} idle")
        lines_cost = sum(ln.cost_usd_per_month for ln in mig_lines[pl.key] + idle_lines[pl.key])
        if not math.isclose(cost, lines_cost, rel_tol=1e-7, abs_tol=1e-6):
            bad.append(f"pool {pl.key}: lines cost ${lines_cost:,.2f}, its {pl.nodes} nodes ${cost:,.2f}")
    return bad


def _check_placement(pl: SharedPool, options: Mapping[str, Option], lines: Sequence[PlanLine]) -> list[str]:
    """The pool's per-GPU placement: GPUs within its nodes, the same layouts, slices within each GPU's
    slots and matching the slice lines, and each production tenant keeping the slices its load needs with
    any one node (hence any one GPU) lost, on at least 2 nodes."""
    bad: list[str] = []
    needed: dict[str, int] = {}
    for ln in lines:
        o = options.get(ln.option)
        if o is not None and o.survives_node_loss:
            needed[ln.workload] = max(needed.get(ln.workload, 0), o.replicas_needed)
    if not pl.gpus:
        if needed:
            bad.append(f"pool {pl.key}: no placement of its slices, so N+1 of {', '.join(sorted(needed))} "
                       "cannot be shown")  # fmt: skip
        return bad
    per_node: dict[int, int] = defaultdict(int)
    layouts: dict[tuple[tuple[str, int], ...], int] = defaultdict(int)
    total: dict[tuple[str, str], int] = defaultdict(int)
    by_node: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for g in pl.gpus:
        if not 0 <= g.node < pl.nodes:
            bad.append(f"pool {pl.key}: a GPU sits on node {g.node} of {pl.nodes}")
        per_node[g.node] += 1
        layouts[tuple(g.layout)] += 1
        used: dict[str, int] = defaultdict(int)
        for w, prof, n in g.tenants:
            used[prof] += n
            total[(w, prof)] += n
            by_node[w][g.node] += n
        for prof, n in used.items():
            if n > dict(g.layout).get(prof, 0):
                bad.append(f"pool {pl.key}: node {g.node} GPU holds {n} {prof} slices, its layout has "
                           f"{dict(g.layout).get(prof, 0)}")  # fmt: skip
    if any(n > pl.gpus_per_node for n in per_node.values()):
        bad.append(f"pool {pl.key}: a node holds more than its {pl.gpus_per_node} GPUs")
    if dict(layouts) != {tuple(c): n for c, n in pl.layouts if n}:
        bad.append(f"pool {pl.key}: the per-GPU layouts differ from the pool's layouts")
    want: dict[tuple[str, str], int] = defaultdict(int)
    for ln in lines:
        want[(ln.workload, ln.mig_profile)] += ln.nodes
    if dict(total) != dict(want):
        bad.append(f"pool {pl.key}: the slices placed on its GPUs differ from the plan's slice lines")
    for w, n_load in sorted(needed.items()):
        nodes = by_node.get(w, {})
        have = sum(nodes.values())
        worst = max(nodes.values(), default=0)
        if len(nodes) < 2 or have - worst < n_load:
            bad.append(
                f"{w}: {have} MIG slices on {len(nodes)} node(s) of pool {pl.key}; losing the node with "
                f"{worst} leaves {have - worst}, its load needs {n_load} (production survives one lost node)"
            )
    return bad


__all__ = [
    "IDLE_WORKLOAD",
    "SHARED_TEAM",
    "PoolVars",
    "add_pools",
    "build_pool",
    "cheapest_pay",
    "check_pools",
    "decode_pools",
    "place_slices",
    "pool_pay_kinds",
    "slice_line",
]
