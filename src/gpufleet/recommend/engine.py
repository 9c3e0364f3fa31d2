"""One workload against an offer table: candidates -> status -> ranked, Pareto, closest, CANNOT FIT."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offers import OfferTable
from gpufleet.cost.spot import SpotAssumption, assumption_for
from gpufleet.recommend.candidates import CandidateSet, build_candidates, eligible_mask
from gpufleet.recommend.fit import analyse_cannot_fit
from gpufleet.recommend.perf import Estimator
from gpufleet.recommend.rank import check_objective, materialise, order, pareto_rows
from gpufleet.recommend.types import Candidate, Recommendation, Workload

#: most Pareto points returned
MAX_PARETO = 50
#: closest options returned when nothing is feasible
MAX_CLOSEST = 5


def _dedupe(cs: CandidateSet, rows: npt.NDArray[np.int64], limit: int) -> list[int]:
    """First row per (provider, instance type, placement): the best region of each offer."""
    t = cs.table
    seen: set[tuple[object, ...]] = set()
    out: list[int] = []
    for r in rows:
        o = int(cs.offer[r])
        key = (t.column("provider")[o], t.column("instance_type")[o])
        if key in seen:
            continue
        seen.add(key)
        out.append(int(r))
        if len(out) >= limit:
            break
    return out


def _spot_note(w: Workload, cs: CandidateSet, spot: dict[str, SpotAssumption]) -> tuple[str, ...]:
    if cs.price_kind != "spot":
        return ()
    provs = sorted({str(p) for p in cs.table.column("provider")[cs.offer]}) if len(cs) else []
    parts = [
        f"{p}: 1 interruption / {assumption_for(p, spot).mean_time_between_interruptions_h:g} h"
        for p in provs[:6]
    ]
    how = (
        "checkpoint/restart slowdown E[T] = W(1 + C/tau)/(1 - lambda(tau/2 + R)), tau = sqrt(2CM) (Young)"
        if w.is_training
        else "replicas over-provisioned to keep the needed count serving 99 % of the time"
    )
    return (
        f"Spot is an expected-cost model, not a flat discount ({how}); assumed interruption rates "
        f"{'; '.join(parts)} (measured GPU spot traces, tight capacity; override with a spot assumptions "
        "file).",
    )


def recommend_on(
    table: OfferTable,
    w: Workload,
    est: Estimator,
    spot: dict[str, SpotAssumption],
    *,
    objective: str | None = None,
    limit: int = 10,
    full_table: OfferTable | None = None,
) -> Recommendation:
    """Rank every candidate of ``w`` over ``table`` (``full_table`` = unfiltered catalog, for suggestions)."""
    obj = check_objective(objective or w.objective)
    considered = int(eligible_mask(table, w).sum())
    cs = build_candidates(table, w, est, spot)
    notes = cs.notes + _spot_note(w, cs, spot)
    base: dict[str, Any] = {
        "workload": w,
        "objective": obj,
        "offers_considered": considered,
        "candidates_evaluated": len(cs),
    }
    if considered == 0:
        msg = (
            f"No offer passes the filters (providers {list(w.providers) or 'any'}, regions "
            f"{list(w.regions) or 'any'}, GPU vendors {list(w.gpu_vendors) or 'any'}) "
            f"with a {w.pricing} price. "
            "Widen the filters or choose another pricing."
        )
        return Recommendation(
            status="no_offers", best=None, ranked=(), pareto=(), message=msg, notes=notes, **base
        )
    if len(cs) == 0:
        cf = analyse_cannot_fit(table, w, est, spot, full_table if full_table is not None else table)
        msg = "CANNOT FIT: " + cf.reason
        return Recommendation(
            status="cannot_fit",
            best=None,
            ranked=(),
            pareto=(),
            cannot_fit=cf,
            message=msg,
            notes=notes,
            **base,
        )

    def mat(rows: list[int]) -> tuple[Candidate, ...]:
        return tuple(materialise(cs, w, r, spot) for r in rows)

    feasible = np.flatnonzero(cs.feasible)
    if feasible.size:
        ranked_rows = order(cs, w, obj, feasible)
        ranked = mat(_dedupe(cs, ranked_rows, limit))
        pareto = mat([int(r) for r in pareto_rows(cs, w, feasible)[:MAX_PARETO]])
        best = ranked[0]
        msg = (
            f"{feasible.size} of {len(cs)} candidates meet every constraint; best by {obj}: "
            f"{best.provider} {best.instance_type} ({best.region}) x{best.total_nodes}."
        )
        return Recommendation(
            status="ok",
            best=best,
            ranked=ranked,
            pareto=pareto,
            message=msg,
            notes=notes + best.notes,
            **base,
        )
    slo_ok = np.flatnonzero(cs.meets_slo)
    if slo_ok.size:
        closest = mat(_dedupe(cs, order(cs, w, "cheapest", slo_ok), MAX_CLOSEST))
        msg = (
            f"OVER BUDGET: {slo_ok.size} candidates meet the SLOs but none costs <= "
            f"${w.budget_usd_per_month:,.0f}/month; the cheapest costs "
            f"${closest[0].cost_usd_per_month:,.0f}/month. "
            "Raise the budget, cut the hours per month, or use spot/commitment pricing."
        )
        return Recommendation(
            status="over_budget",
            best=None,
            ranked=(),
            pareto=(),
            closest=closest,
            message=msg,
            notes=notes,
            **base,
        )
    rows = np.flatnonzero(np.ones(len(cs), dtype=bool))
    cost = cs.cost_usd_per_run if w.is_training else cs.cost_usd_per_month
    srt = rows[np.lexsort((cs.offer, cost, np.round(cs.slo_gap, 6)))]
    closest = mat(_dedupe(cs, srt, MAX_CLOSEST))
    msg = (
        f"INFEASIBLE: {len(cs)} placements fit in memory but none meets the SLOs/deadline. Closest: "
        f"{closest[0].provider} {closest[0].instance_type} ({'; '.join(closest[0].slo_misses)}). Relax the "
        "SLOs or the deadline, allow more nodes, or use a lower precision."
    )
    return Recommendation(
        status="infeasible_slo",
        best=None,
        ranked=(),
        pareto=(),
        closest=closest,
        message=msg,
        notes=notes,
        **base,
    )
