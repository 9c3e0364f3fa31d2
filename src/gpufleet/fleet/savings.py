"""Savings by lever: a waterfall from today's fleet to the plan, one lever switched on at a time.

1. *schedule*: today's nodes billed only for the demand's hours (scheduled shutdown) instead of today's hours;
2. *right-size*: the cheapest fitting offer on-demand in today's provider and region;
3. *region moves*: any allowed provider and region, still on-demand;
4. *spot*: the preemptible share on spot (expected cost);
5. *commitments*: new 1y/3y commitments for the base load and existing ones at zero marginal cost;
5b. *GPU sharing*: small inference workloads with ``sharing: auto|mig`` on MIG slices of shared GPUs
   (:mod:`gpufleet.fleet.sharing`); steps 2-5 use whole GPUs only;
6. *autoscaling*: only from measured numbers (``autoscaling_savings_pct`` from the simulators or telemetry);
   "not evaluated" otherwise;
7. *constraints*: what the plan's budgets cost compared with step 5 (usually 0).

Each step is the MILP re-solved with the levers so far (quotas always apply), so every number is an optimum.
Percentages are of today's cost. The goals beside them are the assessment seed's (spot 60-80 % for training,
autoscaling 40 %, right-sizing 25 %).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from gpufleet.catalog.offers import OfferTable
from gpufleet.fleet.model import Levers
from gpufleet.fleet.types import Fleet, FleetWorkload, Lever, Option

#: the smallest amount of money a report shows [USD]: a lever saving less than half of it is zero
CENT_USD = 0.01

GOALS = {
    "GPU sharing": "",
    "right-size": "25 % (assessment seed: right-sizing)",
    "spot": "60-80 % on training (assessment seed)",
    "autoscaling": "40 % (assessment seed)",
}


def current_cost(fw: FleetWorkload, table: OfferTable, hours: float | None = None) -> float | None:
    """Today's on-demand cost of ``fw.current`` [USD/month] (cheapest listed region when none is given)."""
    cur = fw.current
    if cur is None:
        return None
    prov = np.asarray(table.column("provider")) == cur.provider
    inst = np.asarray(table.column("instance_type")) == cur.instance_type
    m = prov & inst
    if cur.region:
        m &= np.asarray(table.column("region")) == cur.region
    prices = np.asarray(table.column("price_on_demand_usd_per_hour"), dtype=float)[m]
    prices = prices[np.isfinite(prices) & (prices > 0)]
    if prices.size == 0:
        return None
    return float(prices.min()) * cur.count * (hours if hours is not None else cur.hours_per_month)


def _pin(fleet: Fleet, options: Mapping[str, Sequence[Option]]) -> dict[str, list[Option]]:
    out: dict[str, list[Option]] = {}
    for fw in fleet.workloads:
        opts = list(options.get(fw.name, ()))
        if fw.current is not None:
            cur = fw.current
            same_provider = [o for o in opts if o.provider == cur.provider]
            pinned = [
                o for o in same_provider if cur.region is None or fnmatch.fnmatchcase(o.region, cur.region)
            ]
            for cand in (pinned, same_provider):  # HA needs enough regions: widen to the provider if not
                if len({(o.provider, o.region) for o in cand}) >= fw.ha_regions:
                    opts = cand
                    break
        out[fw.name] = opts
    return out


def _per_workload(lines: Sequence[object]) -> dict[str, float]:
    out: dict[str, float] = {}
    for ln in lines:
        out[ln.workload] = out.get(ln.workload, 0.0) + ln.cost_usd_per_month  # type: ignore[attr-defined]
    return out


def savings_by_lever(
    fleet: Fleet,
    options: Mapping[str, Sequence[Option]],
    final: object,
    table: OfferTable,
    *,
    time_limit_s: float = 60.0,
) -> list[Lever]:
    from gpufleet.fleet.plan import Solved, solve_fleet

    assert isinstance(final, Solved)
    # no HA or budgets in the baseline steps would change what "today" means; quotas stay (physical limits)
    base_levers = Levers(spot=False, commitments=False, existing=False, budgets=False, sharing=False)

    def run(opts: Mapping[str, Sequence[Option]], lv: Levers) -> tuple[float | None, dict[str, float], str]:
        s = solve_fleet(fleet, opts, levers=lv, time_limit_s=time_limit_s, explain=False, prune=False)
        if s.cost_usd_per_month is None:
            return None, {}, s.message
        return s.cost_usd_per_month, _per_workload(s.lines), ""

    rs_total, rs_by_wl, rs_err = run(_pin(fleet, options), base_levers)
    free = {fw.name: list(options.get(fw.name, ())) for fw in fleet.workloads}
    rm, rm_by_wl, rm_err = run(free, base_levers)
    sp, sp_by_wl, sp_err = run(free, replace(base_levers, spot=True))
    cm, by_wl, cm_err = run(free, replace(base_levers, spot=True, commitments=True, existing=True))
    shares = any(fw.sharing != "none" for fw in fleet.workloads)
    if shares:
        gs, gs_by_wl, gs_err = run(
            free, replace(base_levers, spot=True, commitments=True, existing=True, sharing=True)
        )
        by_wl = gs_by_wl or by_wl
    # today and scheduled-today per workload; a workload without `current` enters at its first optimum, with
    # the shared lines of that optimum (a MIG pool's idle slices): a baseline taken from the sharing step
    # without them would show the lever that made the plan fit as a negative saving of their cost
    names = {fw.name for fw in fleet.workloads}
    today = 0.0
    scheduled = 0.0
    have_current = False
    shared_added = False
    for fw in fleet.workloads:
        now = current_cost(fw, table)
        sched = current_cost(fw, table, hours=fw.demand.hours_per_month)
        if now is None or sched is None:
            src = next((d for d in (rs_by_wl, rm_by_wl, sp_by_wl, by_wl) if fw.name in d), None)
            fallback = None if src is None else src[fw.name]
            if src is not None and not shared_added:
                shared = sum(v for k, v in src.items() if k not in names)
                today += shared
                scheduled += shared
                shared_added = True
            if fallback is None:
                return [
                    Lever(
                        name="all",
                        usd_per_month_before=None,
                        usd_per_month_after=None,
                        savings_usd_per_month=None,
                        savings_pct=None,
                        goal="",
                        note=f"not evaluated: {rs_err or rm_err or 'no baseline'}",
                    )
                ]
            now = sched = fallback
        else:
            have_current = True
        today += now
        scheduled += sched
    steps: list[tuple[str, float | None, str]] = [
        (
            "schedule",
            scheduled,
            ""
            if have_current
            else "no current deployment given: 'today' is the right-sized on-demand plan (no spot, no "
            "commitments), the base every saving and % in this table is measured against",
        ),
        (
            "right-size",
            rs_total,
            rs_err
            or "cheapest fitting offer in the current provider/region; capacity follows the demand profile"
            + (
                "; production serving adds the spare node that survives a lost one (N+1), which today's "
                "deployment may lack, so this step can cost more"
                if any(fw.production_serving for fw in fleet.workloads)
                else ""
            ),
        ),
        ("region moves", rm, rm_err),
        ("spot", sp, sp_err),
        ("commitments", cm, cm_err),
    ]
    if shares:
        note = gs_err or "small inference on MIG slices of shared GPUs (sharing: auto|mig)"
        if cm is None and gs is not None:  # whole GPUs alone meet no plan: sharing is what makes it fit
            note = f"the plan fits only with GPU sharing; with whole GPUs alone: {cm_err}"
        steps.append(("GPU sharing", gs, note))
    auto_pct = [
        (fw, fw.autoscaling_savings_pct) for fw in fleet.workloads if fw.autoscaling_savings_pct is not None
    ]
    levers: list[Lever] = []
    before: float | None = today

    def add(name: str, after: float | None, note: str = "") -> None:
        nonlocal before
        if after is None or before is None:
            levers.append(
                Lever(
                    name=name,
                    usd_per_month_before=before,
                    usd_per_month_after=None,
                    savings_usd_per_month=None,
                    savings_pct=None,
                    goal=GOALS.get(name, ""),
                    note=f"not evaluated: {note}" if note else "not evaluated",
                )
            )
            return
        saved = before - after
        if abs(saved) < CENT_USD / 2:  # the same plan summed in another order: float residue, not a saving
            saved = 0.0  # (before: the multicloud example's schedule lever read "saved $1.82e-12")
        levers.append(
            Lever(
                name=name,
                usd_per_month_before=before,
                usd_per_month_after=after,
                savings_usd_per_month=saved,
                savings_pct=100.0 * saved / today if today > 0 else None,
                goal=GOALS.get(name, ""),
                note=note,
            )
        )
        before = after

    for name, after, note in steps:
        add(name, after, note)
    if auto_pct and before is not None:
        cut = sum(by_wl.get(fw.name, 0.0) * pct / 100.0 for fw, pct in auto_pct)
        add(
            "autoscaling",
            before - cut,
            "from simulator/telemetry numbers in the fleet file: "
            + ", ".join(f"{fw.name} {pct:g} %" for fw, pct in auto_pct),
        )
    else:
        levers.append(
            Lever(
                name="autoscaling",
                usd_per_month_before=before,
                usd_per_month_after=None,
                savings_usd_per_month=None,
                savings_pct=None,
                goal=GOALS["autoscaling"],
                note="not evaluated: no simulator or telemetry numbers (autoscaling_savings_pct) given; "
                "the demand profile's shape is already priced in every step",
            )
        )
    if (
        final.cost_usd_per_month is not None
        and before is not None
        and not math.isclose(before, final.cost_usd_per_month, rel_tol=1e-9)
    ):
        add("constraints", final.cost_usd_per_month, "budgets and the other fleet constraints of the plan")
    return levers
