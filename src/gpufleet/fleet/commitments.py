"""The new commitments a plan buys, each with why it pays: rate and its source, term, break-even and the
on-demand alternative (the rule itself is :mod:`gpufleet.cost.commitment`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpufleet.cost.commitment import TERM_MONTHS, break_even_months, break_even_utilisation
from gpufleet.fleet.types import Fleet, NewCommitment, PlanLine, SharedPool
from gpufleet.units import HOURS_PER_MONTH


@dataclass(slots=True)
class _Agg:
    nodes: float = 0.0
    usd_per_month: float = 0.0
    used_node_hours: float = 0.0
    rate_usd_per_hour: float = math.nan
    on_demand_usd_per_hour: float = math.nan
    gpu: str = ""
    gpu_count: float = 0.0
    workloads: set[str] = field(default_factory=set)


def new_commitments(
    lines: Sequence[PlanLine], pools: Sequence[SharedPool] = (), fleet: Fleet | None = None
) -> tuple[NewCommitment, ...]:
    """New 1y/3y commitments of a plan, summed per (provider, region, instance type, term), with the rate's
    source (the commitment assumptions in force), break-even and utilisation."""
    agg: dict[tuple[str, str, str, str], _Agg] = defaultdict(_Agg)
    for pl in pools:  # shared MIG pools: their nodes run all month (their lines count slices)
        for kind, n in pl.nodes_by_pay_kind:
            if kind in TERM_MONTHS and n > 0:
                a = agg[(pl.provider, pl.region, pl.instance_type, kind)]
                a.nodes += n
                a.used_node_hours += n * HOURS_PER_MONTH
                a.usd_per_month += sum(
                    ln.cost_usd_per_month for ln in lines if ln.pool == pl.key and ln.pay_kind == kind
                )
                mine = [ln for ln in lines if ln.pool == pl.key and ln.pay_kind == kind]
                a.rate_usd_per_hour = a.usd_per_month / (a.nodes * HOURS_PER_MONTH)
                a.on_demand_usd_per_hour = pl.price_on_demand_usd_per_hour
                a.gpu, a.gpu_count = pl.gpu, float(pl.gpus_per_node)
                a.workloads |= {ln.workload for ln in mine}
    for ln in lines:
        if ln.pay_kind in TERM_MONTHS and not ln.pool:
            a = agg[(ln.provider, ln.region, ln.instance_type, ln.pay_kind)]
            a.nodes += ln.nodes
            a.usd_per_month += ln.cost_usd_per_month
            a.used_node_hours += ln.nodes * ln.hours_per_month
            a.rate_usd_per_hour = ln.unit_price_usd_per_hour
            a.on_demand_usd_per_hour = ln.list_unit_price_usd_per_hour
            a.gpu, a.gpu_count = ln.gpu, ln.gpus_per_node
            a.workloads.add(ln.workload)
    margin = fleet.constraints.commitment_margin_fraction if fleet is not None else math.nan
    return tuple(_describe(k, v, margin) for k, v in sorted(agg.items()))


def _describe(key: tuple[str, str, str, str], a: _Agg, margin: float) -> NewCommitment:
    from gpufleet.catalog.pricing import commitment_rate_info

    provider, region, instance_type, kind = key
    info = commitment_rate_info(provider, region, instance_type, a.gpu, a.gpu_count, kind)
    term_months = TERM_MONTHS[kind]
    capacity = a.nodes * HOURS_PER_MONTH
    used_per_node = a.used_node_hours / a.nodes if a.nodes else 0.0
    expected = a.used_node_hours / capacity if capacity else math.nan
    be_use = break_even_utilisation(a.rate_usd_per_hour, a.on_demand_usd_per_hour)
    return NewCommitment(
        provider=provider,
        region=region,
        instance_type=instance_type,
        term=kind.removeprefix("commit_"),
        nodes=int(a.nodes),
        usd_per_month=a.usd_per_month,
        gpu=a.gpu,
        rate_usd_per_hour=a.rate_usd_per_hour,
        on_demand_usd_per_hour=a.on_demand_usd_per_hour,
        discount_fraction=1.0 - a.rate_usd_per_hour / a.on_demand_usd_per_hour,
        rate_program=info.program if info else "",
        rate_basis=info.basis if info else "",
        rate_source=info.source if info else "no rate in force for this offer (stale options?)",
        rate_verified=info.verified if info else False,
        term_months=term_months,
        used_node_hours_per_month=a.used_node_hours,
        expected_utilisation=expected,
        break_even_utilisation=be_use,
        break_even_months=break_even_months(
            a.rate_usd_per_hour, a.on_demand_usd_per_hour, used_per_node, term_months
        ),
        on_demand_usd_per_month=a.on_demand_usd_per_hour * a.used_node_hours,
        margin_fraction=margin,
        # the lock-in: the term is owed in full, and it stays no dearer than on-demand only while the
        # committed nodes keep running at least the break-even share of 730 h (a falling load empties the
        # on-demand nodes above them first, then these)
        term_obligation_usd=a.usd_per_month * term_months,
        use_drop_tolerated_fraction=(
            max(0.0, 1.0 - be_use / expected) if expected and math.isfinite(expected) else math.nan
        ),
    )


def commitment_violations(fleet: Fleet, commitments: Sequence[NewCommitment]) -> list[str]:
    """A bought term on an unverified rate without the fleet's opt-in, or one that does not pay with the
    fleet's margin: what the plan must never hold."""
    bad = []
    c = fleet.constraints
    for nc in commitments:
        what = f"new {nc.term} commitment on {nc.provider}/{nc.region}/{nc.instance_type}"
        if not nc.rate_verified and not c.allow_unverified_commitments:
            bad.append(
                f"{what} uses an unverified rate ({nc.rate_source}) without allow_unverified_commitments"
            )
        limit = (1.0 - c.commitment_margin_fraction) * nc.expected_utilisation
        if not nc.break_even_utilisation <= limit + 1e-9:
            bad.append(
                f"{what}: break-even utilisation {nc.break_even_utilisation:.1%} above "
                f"{limit:.1%} (expected {nc.expected_utilisation:.1%} less the "
                f"{c.commitment_margin_fraction:.0%} margin)"
            )
    return bad


__all__ = ["commitment_violations", "new_commitments"]
