"""Plan a fleet: options -> pruning -> MILP -> HiGHS -> decode -> independent check -> savings by lever."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpufleet.catalog.offers import OfferTable, load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.errors import InputError, UnknownNameError
from gpufleet.fleet.carbon import plan_emissions
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.commitments import commitment_violations, new_commitments
from gpufleet.fleet.model import Levers, Model, build_model
from gpufleet.fleet.names import check_fleet_names
from gpufleet.fleet.onprem import on_prem_tco
from gpufleet.fleet.options import ONPREM, build_options
from gpufleet.fleet.pools import decode_pools, slice_line
from gpufleet.fleet.prune import prune_options
from gpufleet.fleet.sharing import options_for_levers
from gpufleet.fleet.solve import binding_rows, shortfall_text, solve
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.fleet.types import Fleet, FleetPlan, Option, PlanLine, SharedPool, SolveStats
from gpufleet.recommend.perf import DefaultEstimator, Estimator
from gpufleet.units import HOURS_PER_MONTH
from gpufleet.validation import MAX_TIME_LIMIT_S, check_number, checked_arguments

#: progress callback: (stage, done, total)
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Solved:
    status: str
    message: str
    cost_usd_per_month: float | None
    lines: tuple[PlanLine, ...]
    binding: tuple[str, ...]
    stats: SolveStats
    violations: tuple[str, ...]
    options: Mapping[str, Option]
    pools: tuple[SharedPool, ...] = ()


def _spread(total: int, members: int, caps: Sequence[int], start: int) -> tuple[list[int], int]:
    """Round-robin ``total`` units over ``members`` from ``start`` (each <= its cap); returns (units, next).

    Spot units go round-robin across blocks with a running start, so members' totals differ by at most one:
    each gets <= ceil(S_b / c) <= n_b per block and <= ceil(sum S / c) <= its share in all (the MILP's rows
    S_b <= n_b c and sum S <= share c guarantee it)."""
    out = [0] * members
    j = start
    left = total
    guard = 0
    while left > 0 and guard < 10 * (total + members):
        if out[j] < caps[j]:
            out[j] += 1
            left -= 1
        j = (j + 1) % members
        guard += 1
    return out, j


def _decode(
    fleet: Fleet, model: Model, x: Sequence[float], options: Mapping[str, Sequence[Option]]
) -> list[PlanLine]:
    existing = fleet.constraints.existing
    team = {w.name: w.team for w in fleet.workloads}
    pre = {w.name: w.preemptible_fraction for w in fleet.workloads}
    lines: list[PlanLine] = []

    def line(
        o: Option,
        wname: str,
        kind: str,
        block: int,
        nodes: int,
        unit: float,
        billed: float,
        hours: float,
        commitment: str | None = None,
        cost: float | None = None,
    ) -> PlanLine:
        return PlanLine.for_option(
            o, workload=wname, team=team[wname], block=block, pay_kind=kind, nodes=nodes,
            unit_usd_per_hour=unit, billed_hours=billed, hours=hours, commitment=commitment,
            cost_usd_per_month=cost,
        )  # fmt: skip

    for rep, ovs in model.vars.items():
        members = model.groups.get(rep, [rep])
        nxt = 0  # next member to place
        for oi, ov in enumerate(ovs):
            count = round(x[ov.s])
            if count <= 0:
                continue
            if len(members) == 1:  # a single workload (HA: one chosen option per region)
                who, count = [rep], 1
            else:
                who = members[nxt : nxt + count]
                nxt += count
            rep_o = ov.option
            per_member = [options[w][oi] if w != rep else rep_o for w in who]
            if rep_o.is_mig:  # slices on a shared pool: one chargeback line each (the pool is decoded apart)
                for wname, o in zip(who, per_member, strict=True):
                    lines.append(slice_line(o, wname, team[wname]))
                    if o.transfer_usd_per_month > 0:
                        lines.append(
                            line(
                                o, wname, "data_transfer", -1, 0, 0.0, 0.0, 0.0, cost=o.transfer_usd_per_month
                            )
                        )
                continue
            share = rep_o.spot_share_nodes(pre[rep])
            npr = max(1, rep_o.nodes_per_replica)  # spot goes in whole replicas (Option.spot_share_nodes)
            spot_left = [share] * count
            start = 0
            for bi, b in enumerate(rep_o.blocks):
                spot = [0] * count
                if bi in ov.spot or bi in ov.spot_fixed:
                    caps = [min(b.nodes, spot_left[j]) // npr for j in range(count)]
                    total = round(x[ov.spot[bi]]) if bi in ov.spot else ov.spot_fixed[bi] * count // npr
                    units, start = _spread(total, count, caps, start)
                    spot = [k * npr for k in units]
                    spot_left = [spot_left[j] - spot[j] for j in range(count)]
                used = list(spot)
                ex_split: dict[int, list[int]] = {}
                for (bj, k), v in ov.existing.items():
                    if bj != bi:
                        continue
                    caps = [b.nodes - used[j] for j in range(count)]
                    split, _ = _spread(round(x[v]), count, caps, 0)
                    ex_split[k] = split
                    used = [used[j] + split[j] for j in range(count)]
                kind, per_node = ov.regular[bi]
                for j, (wname, o) in enumerate(zip(who, per_member, strict=True)):
                    if spot[j]:
                        unit = o.price_spot_usd_per_hour * o.spot_cost_factor
                        lines.append(
                            line(o, wname, "spot", bi, spot[j], unit, b.hours_per_month, b.hours_per_month)
                        )
                    for k, split in ex_split.items():
                        if split[j]:
                            lines.append(
                                line(
                                    o,
                                    wname,
                                    "existing",
                                    bi,
                                    split[j],
                                    0.0,
                                    b.hours_per_month,
                                    b.hours_per_month,
                                    existing[k].name,
                                )
                            )
                    left = b.nodes - used[j]
                    if left > 0:
                        if kind == "on_demand":
                            lines.append(
                                line(
                                    o,
                                    wname,
                                    kind,
                                    bi,
                                    left,
                                    o.price_on_demand_usd_per_hour,
                                    b.hours_per_month,
                                    b.hours_per_month,
                                )
                            )
                        else:
                            lines.append(
                                line(
                                    o,
                                    wname,
                                    kind,
                                    bi,
                                    left,
                                    per_node / HOURS_PER_MONTH,
                                    HOURS_PER_MONTH,
                                    b.hours_per_month,
                                )
                            )
            for wname, o in zip(who, per_member, strict=True):
                if o.transfer_usd_per_month > 0:
                    lines.append(
                        line(o, wname, "data_transfer", -1, 0, 0.0, 0.0, 0.0, cost=o.transfer_usd_per_month)
                    )
    return lines


@checked_arguments("fleet solve")
def solve_fleet(
    fleet: Fleet,
    options: Mapping[str, Sequence[Option]],
    *,
    levers: Levers | None = None,
    reasons: Mapping[str, str] | None = None,
    time_limit_s: float = 60.0,
    mip_rel_gap: float = 1e-6,
    prune: bool = True,
    explain: bool = True,
) -> Solved:
    """Solve the fleet MILP over given options (the typed core: tests and benchmarks call it directly)."""
    levers = levers or Levers()
    t0 = time.perf_counter()
    n_before = sum(len(v) for v in options.values())
    kept: dict[str, list[Option]] = {}
    usable = options_for_levers(fleet, options, levers.sharing)
    for fw in fleet.workloads:
        opts = usable.get(fw.name, [])
        whole = [o for o in opts if not o.is_mig]  # MIG options share pools: never pruned one by one
        kept[fw.name] = (prune_options(fleet, fw, whole, levers) if prune else whole) + [
            o for o in opts if o.is_mig
        ]
    all_opts = {o.key: o for v in options.values() for o in v}
    missing = [fw for fw in fleet.workloads if not kept[fw.name]]
    model = build_model(fleet, kept, levers)
    p = model.problem
    build_s = time.perf_counter() - t0

    solver = "HiGHS (highspy)"

    def stats(solve_s: float, gap: float | None, nodes: int | None) -> SolveStats:
        return SolveStats(
            variables=p.n_vars,
            integer_variables=sum(p.integer),
            constraints=len(p.rows),
            options_before_pruning=n_before,
            options_after_pruning=sum(len(v) for v in kept.values()),
            solve_time_s=solve_s,
            build_time_s=build_s,
            mip_gap=gap,
            mip_nodes=nodes,
            solver=solver,
        )

    if missing:
        why = [f"workload {fw.name}: {(reasons or {}).get(fw.name) or 'no option'}" for fw in missing]
        return Solved(
            status="infeasible",
            message="INFEASIBLE: " + "; ".join(why),
            cost_usd_per_month=None,
            lines=(),
            binding=tuple(why),
            stats=stats(0.0, None, None),
            violations=(),
            options=all_opts,
        )
    sol = solve(p, time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap)
    if sol.source != "HiGHS":
        solver = "HiGHS (highspy): LP relaxation rounded within the gap (no branching needed)"
    elif sol.incumbent_objective is not None:
        solver = "HiGHS (highspy), started from a rounding of the LP relaxation"
    if sol.status in ("optimal", "feasible"):
        lines = _decode(fleet, model, sol.x, kept)
        pools, lines = decode_pools(model.pools, sol.x, lines)
        total = sum(ln.cost_usd_per_month for ln in lines)
        viol = check_plan(fleet, all_opts, lines, total, pools=pools)
        if sol.objective is not None and not math.isclose(total, sol.objective, rel_tol=1e-7, abs_tol=1e-6):
            viol.append(
                f"decoded plan costs ${total:,.2f}/month but the MILP objective is ${sol.objective:,.2f}"
            )
        gap_txt = f"gap {sol.mip_gap:.2%}" if sol.mip_gap is not None else "gap unknown"
        msg = (
            f"{'OPTIMAL' if sol.status == 'optimal' else 'FEASIBLE (time limit)'}: ${total:,.2f}/month for "
            f"{len(fleet.workloads)} workloads ({gap_txt}, HiGHS {sol.solve_time_s:.2f} s)."
        )
        if sol.status == "feasible":
            bound = f"${sol.dual_bound:,.2f}/month" if sol.dual_bound is not None else "not known"
            msg += (
                f" The best plan found within the {time_limit_s:g} s limit; no plan costs less than {bound}. "
                "Raise --time-limit (time_limit_s) or --gap (mip_rel_gap) to prove a tighter one."
            )
        return Solved(
            status=sol.status,
            message=msg,
            cost_usd_per_month=total,
            lines=tuple(lines),
            binding=(),
            stats=stats(sol.solve_time_s, sol.mip_gap, sol.mip_nodes),
            violations=tuple(viol),
            options=all_opts,
            pools=tuple(pools),
        )
    if sol.status == "infeasible":
        binding = (
            [shortfall_text(p, name, v) for name, v in binding_rows(p, time_limit_s=time_limit_s)]
            if explain
            else []
        )
        msg = "INFEASIBLE: no plan meets every constraint; binding: " + (
            "; ".join(binding) or "not determined"
        )
        return Solved(
            status="infeasible",
            message=msg,
            cost_usd_per_month=None,
            lines=(),
            binding=tuple(binding),
            stats=stats(sol.solve_time_s, None, None),
            violations=(),
            options=all_opts,
        )
    bound = (
        f" No plan can cost less than ${sol.dual_bound:,.2f}/month (lower bound)."
        if sol.dual_bound is not None
        else ""
    )
    return Solved(
        status="error",
        message=(
            f"NO PLAN: HiGHS stopped ({sol.message}) after {sol.solve_time_s:.1f} s without a feasible plan, "
            f"and no rounding of the LP relaxation met every constraint.{bound} Raise --time-limit "
            f"(time_limit_s; now {time_limit_s:g} s) or loosen the quotas and budgets."
        ),
        cost_usd_per_month=None,
        lines=(),
        binding=(),
        stats=stats(sol.solve_time_s, None, None),
        violations=(),
        options=all_opts,
    )


@checked_arguments("fleet plan")
def plan_fleet(
    fleet: Fleet | str | Path,
    *,
    offers: OfferTable | None = None,
    estimator: Estimator | None = None,
    spot_assumptions: Path | None = None,
    time_limit_s: float = 60.0,
    mip_rel_gap: float = 1e-6,
    savings: bool = True,
    progress: Progress | None = None,
) -> FleetPlan:
    """Plan ``fleet`` (a :class:`Fleet` or a fleet file path) to proven optimality (within ``mip_rel_gap``).

    Never raises for an infeasible fleet: that is ``status == "infeasible"`` with the binding constraints.
    """

    check_number("time_limit_s", time_limit_s, maximum=MAX_TIME_LIMIT_S, flag="--time-limit (time_limit_s)")
    check_number("mip_rel_gap", mip_rel_gap, allow_zero=True, maximum=0.5, flag="--gap (mip_rel_gap)")
    f = read_fleet_file(fleet) if isinstance(fleet, (str, Path)) else fleet
    from gpufleet.catalog.pricing import allow_unverified_commitments
    from gpufleet.fleet.place import stay_in_current_geo

    f, place_notes = stay_in_current_geo(f)

    # the fleet's opt-in lets table rates without a per-offer source price its commitments (docs/fleet.md)
    with allow_unverified_commitments(f.constraints.allow_unverified_commitments):
        plan = _plan(f, offers, estimator, spot_assumptions, time_limit_s, mip_rel_gap, savings, progress)
    return replace(plan, notes=place_notes + plan.notes) if place_notes else plan


def _plan(
    f: Fleet,
    offers: OfferTable | None,
    estimator: Estimator | None,
    spot_assumptions: Path | None,
    time_limit_s: float,
    mip_rel_gap: float,
    savings: bool,
    progress: Progress | None,
) -> FleetPlan:
    from gpufleet.fleet.savings import savings_by_lever

    table = offers if offers is not None else load_offers()
    known = table.providers()
    for fw in f.workloads:  # an unknown provider is an error, not an empty answer
        for p in fw.providers:
            if p.lower() == ONPREM:  # the fleet's own sites (docs/fleet.md): needs one declared
                if not f.on_prem:
                    raise InputError(
                        f"Workload {fw.name}: provider {ONPREM!r} means the fleet's own on-prem sites, and "
                        "the fleet file declares none. Add an `on_prem:` site (name, gpu, gpus_per_node, "
                        "nodes, capex_usd_per_node, ...; docs/fleet.md) or drop onprem from providers."
                    )
                continue
            if p.lower() not in known:
                raise UnknownNameError(
                    "provider",
                    p,
                    known,
                    hint=f"workload {fw.name}: provider names are lower case; see `gpufleet catalog offers`.",
                )
    check_fleet_names(f, table)  # unknown instance types, regions and quota globs: errors, not no-ops
    spot = load_spot_assumptions(spot_assumptions)
    est = estimator or DefaultEstimator()
    step = (lambda d, t, _n: progress("options", d, t)) if progress else None
    wopts = build_options(f, table, est, spot, progress=step)
    options = {w.workload: list(w.options) for w in wopts}
    reasons = {w.workload: w.reason for w in wopts}
    notes = sorted({n for w in wopts for n in w.notes})
    if progress:
        progress("solve", 0, 1)
    # options are already pruned exactly at generation (for every lever set), so no second pruning pass
    solved = solve_fleet(
        f, options, reasons=reasons, time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, prune=False
    )
    if progress:
        progress("solve", 1, 1)
    levers = (
        savings_by_lever(f, options, solved, table, time_limit_s=time_limit_s)
        if savings and solved.lines
        else ()
    )
    chosen = {ln.option for ln in solved.lines}
    notes += sorted({o.note for v in options.values() for o in v if o.key in chosen and o.note})
    teams: dict[str, float] = defaultdict(float)
    for ln in solved.lines:
        teams[ln.team] += ln.cost_usd_per_month
    status = solved.status
    msg = solved.message
    bought = new_commitments(solved.lines, solved.pools, f)
    emissions, emissions_total = plan_emissions(solved.lines, f.on_prem)
    violations = (*solved.violations, *commitment_violations(f, bought))
    if violations:
        status, msg = (
            "error",
            msg + " The independent check found violations: " + "; ".join(violations),
        )
    return FleetPlan(
        fleet=f.name,
        status=status,
        message=msg,
        cost_usd_per_month=solved.cost_usd_per_month,
        lines=solved.lines,
        new_commitments=bought,
        binding=solved.binding,
        levers=tuple(levers),
        stats=replace(solved.stats, options_before_pruning=sum(w.generated for w in wopts)),
        check_violations=violations,
        notes=tuple(notes) + _model_notes(f),
        cost_by_team_usd_per_month=tuple(sorted(teams.items())),
        pools=solved.pools,
        emissions=emissions,
        emissions_kg_co2e_per_month=emissions_total,
        on_prem_tco=on_prem_tco(f, solved.lines, options),
    )


def _model_notes(f: Fleet) -> tuple[str, ...]:
    out = [
        "Quotas count a placement's peak nodes (workloads that never overlap in time are not netted).",
        "New commitments are sized per workload block (commit the base load, on-demand above); they are not "
        "shared between workloads whose schedules interleave.",
        _commitment_note(f),
        "Spot is an expected cost: price x interruption factor (training: checkpoint/restart slowdown; "
        "inference: over-provisioning 1/availability), only for the workload's preemptible share.",
    ]
    prod = [w.name for w in f.workloads if w.node_spare]
    if prod:
        out.append(
            f"Production serving ({', '.join(prod)}) survives one lost node: each placement keeps one node's "
            "worth of replica units above its load at every hour with demand, on >= 2 nodes (N+1); MIG "
            "slices of a production service sit in two mirrored halves of their pool (checked per GPU)."
        )
    if any(w.ha_regions > 1 for w in f.workloads):
        ha_prod = [w.name for w in f.workloads if w.region_loss_sized]
        out.append(
            "HA over N regions sizes every region for the peak / (N - 1) replicas (survives one region)"
            + (
                f"; production serving over regions ({', '.join(ha_prod)}) adds no N+1 spare inside a "
                "region: the N - 1 regions left carry the peak, and a lost node is less than a lost region."
                if ha_prod
                else "."
            )
        )
    if any(w.sharing != "none" for w in f.workloads):
        out.append(
            "MIG: a workload's slices are reserved all month on a shared pool (730 h, on demand or a 1y/3y "
            "commitment all its tenants outlive; no spot); the pool's cost is charged back by compute slices "
            "and its idle slices are a line of their own."
        )
    if any(w.data for w in f.workloads):
        out.append(
            "Egress is priced from egress_prices.csv per workload without free allowances (conservative)."
        )
    return tuple(out)


def _commitment_note(f: Fleet) -> str:
    c = f.constraints
    no_life = sorted(w.name for w in f.workloads if w.lifetime_months is None)
    rates = (
        "unverified table rates (provider 'up to' ceilings without a per-offer source) ARE used: the fleet "
        "sets allow_unverified_commitments"
        if c.allow_unverified_commitments
        else "only verified rates (fetched per offer by `gpufleet catalog update`, or your own override "
        "file) are used; table ceilings without a per-offer source are not "
        "(allow_unverified_commitments: true)"
    )
    out = (
        f"Commitments: a new term is bought only where it costs <= {1 - c.commitment_margin_fraction:.0%} of "
        f"on-demand at the expected use (a {c.commitment_margin_fraction:.0%} margin for demand below the "
        f"forecast) and the workload's lifetime covers it; {rates}."
    )
    if no_life:
        out += f" No lifetime_months given (no new commitment): {', '.join(no_life)}."
    return out


def _isfinite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)
