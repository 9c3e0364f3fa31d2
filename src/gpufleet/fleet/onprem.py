"""Total cost of ownership of the plan's on-prem placements, against the best cloud alternative at the same
load.

Per placement on a site (``on_prem:`` in the fleet file, provider ``onprem``), per month:

* capex amortisation = nodes x capex_usd_per_node / depreciation_months (0 when ``capex_sunk``);
* power = nodes x hours used x power_kw_per_node x PUE x usd_per_kwh;
* operations = nodes x ops_usd_per_node_per_month;

and the best cloud alternative: the workload's cheapest cloud option (same demand profile, so the same load;
on-demand or a new commitment where it pays under the fleet's rules; no spot, no existing commitments) among
the options the planner sized for it. Break-even months = the capex / (cloud alternative - power -
operations): how long the owned nodes must run for the purchase to cost less than renting.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from gpufleet.fleet.model import Levers, regular_kind
from gpufleet.fleet.types import Fleet, OnPremTco, Option, PlanLine

#: how the cloud alternative is paid: regular pay kinds only (spot's interruptions are not the same service)
_ALTERNATIVE_LEVERS = Levers(spot=False, existing=False, sharing=False)


def _alternative(fleet: Fleet, name: str, options: Sequence[Option]) -> tuple[str, float] | None:
    fw = next(w for w in fleet.workloads if w.name == name)
    c = fleet.constraints
    best: tuple[str, float] | None = None
    for o in options:
        if o.on_prem_site is not None or o.is_mig or not o.blocks:
            continue
        regs = [
            regular_kind(fw, o, b, c.commitment_terms, _ALTERNATIVE_LEVERS, c.commitment_margin_fraction)
            for b in o.blocks
        ]
        cost = sum(b.nodes * r[1] for b, r in zip(o.blocks, regs, strict=True)) + o.transfer_usd_per_month
        if not math.isfinite(cost):
            continue
        kinds = "+".join(sorted({r[0] for r in regs}))
        label = f"{o.provider}/{o.region} {o.instance_type} x {o.nodes_peak} ({kinds})"
        if best is None or cost < best[1]:
            best = (label, cost)
    return best


def on_prem_tco(
    fleet: Fleet, lines: Sequence[PlanLine], options: Mapping[str, Sequence[Option]]
) -> tuple[OnPremTco, ...]:
    """The TCO of every workload the plan puts on an owned site."""
    sites = {s.name: s for s in fleet.on_prem}
    nodes: dict[tuple[str, str], int] = defaultdict(int)
    hours: dict[tuple[str, str], float] = defaultdict(float)
    for ln in lines:
        if ln.pay_kind == "on_prem" and ln.instance_type in sites:
            nodes[(ln.workload, ln.instance_type)] += ln.nodes
            hours[(ln.workload, ln.instance_type)] += ln.nodes * ln.hours_per_month
    out = []
    for (name, site_name), n in sorted(nodes.items()):
        s = sites[site_name]
        node_hours = hours[(name, site_name)]
        capex = 0.0 if s.capex_sunk else n * s.capex_usd_per_node
        amort = capex / s.depreciation_months
        power = s.power_kw_per_node * s.pue * s.usd_per_kwh * node_hours
        ops = n * s.ops_usd_per_node_per_month
        alt = _alternative(fleet, name, options.get(name, ()))
        be: float | None = None
        if alt is None:
            note = (
                "no cloud option is allowed for this workload (its providers/regions filters), so no "
                "break-even"
            )
        else:
            saving = alt[1] - power - ops
            if s.capex_sunk:
                be, note = 0.0, "capex sunk: only power and operations count"
            elif saving > 0:
                be = capex / saving
                note = (
                    f"the capex ${capex:,.0f} is repaid by ${saving:,.2f}/month saved against the cloud "
                    "alternative (its cost less power and operations)"
                )
            else:
                note = "never: power and operations alone cost more than the cloud alternative"
        out.append(
            OnPremTco(
                workload=name,
                site=site_name,
                nodes=n,
                node_hours_per_month=node_hours,
                capex_usd=capex,
                depreciation_months=s.depreciation_months,
                capex_amortisation_usd_per_month=amort,
                power_kw_per_node=s.power_kw_per_node,
                pue=s.pue,
                usd_per_kwh=s.usd_per_kwh,
                power_usd_per_month=power,
                operations_usd_per_month=ops,
                total_usd_per_month=amort + power + ops,
                cloud_alternative=alt[0] if alt else "",
                cloud_alternative_usd_per_month=alt[1] if alt else None,
                break_even_months=be,
                note=note,
            )
        )
    return tuple(out)


__all__ = ["on_prem_tco"]
