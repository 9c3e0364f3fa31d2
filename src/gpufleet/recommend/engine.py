"""One workload against an offer table: candidates -> status -> ranked, Pareto, closest, CANNOT FIT."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offers import OfferTable
from gpufleet.catalog.specs import load_specs
from gpufleet.cost.prices import node_prices_usd_per_hour, price_kind_for
from gpufleet.cost.schedule import COMMITTED_KINDS
from gpufleet.cost.spot import SpotAssumption, assumption_for
from gpufleet.recommend.candidates import (
    CandidateSet,
    build_candidates,
    distinct,
    eligible_mask,
    is_consumer_gpu_mask,
    production_excluded_mask,
    text_codes,
    zones_mask,
)
from gpufleet.recommend.deploy import DEFAULT_HOST_RULES, STALE_PRICE_DAYS, HostRules, offer_info
from gpufleet.recommend.filters import EMBARGOED_COUNTRIES
from gpufleet.recommend.fit import analyse_cannot_fit
from gpufleet.recommend.near_ties import explain_near_ties
from gpufleet.recommend.perf import Estimator
from gpufleet.recommend.rank import check_objective, materialise, order, pareto_rows, within_risk
from gpufleet.recommend.risk import check_max_risk
from gpufleet.recommend.types import DEFAULT_TRAINING_HORIZON_H, Candidate, Recommendation, Workload
from gpufleet.units import HOURS_PER_MONTH
from gpufleet.validation import checked_output

#: most Pareto points returned
MAX_PARETO = 50
#: closest options returned when nothing is feasible
MAX_CLOSEST = 5


#: two offers of one provider with the same GPU, GPUs per node, node count and a cost within this fraction are
#: near-identical (e.g. Cudo "compute" and "graphics" A40 VMs, AWS p4d vs p4de-like twins): top-N keeps one
NEAR_IDENTICAL_COST_FRACTION = 0.01


def _dedupe(cs: CandidateSet, rows: npt.NDArray[np.int64], limit: int) -> list[int]:
    """First row per (provider, instance type): the best region of each offer; and one row per group of
    near-identical offers (same provider, GPU, GPUs per node, nodes, cost within 1 %)."""
    t = cs.table
    seen: set[tuple[object, ...]] = set()
    kept: list[tuple[tuple[object, ...], float]] = []
    out: list[int] = []
    cost = cs.cost_usd_per_hour
    for r in rows:
        o = int(cs.offer[r])
        prov = t.column("provider")[o]
        key = (prov, t.column("instance_type")[o])
        if key in seen:
            continue
        cfg = cs.configs[int(cs.cfg[r])]
        shape = (prov, cfg.gpu, cfg.gpus_per_node, int(cs.total_nodes[r]))
        c = float(cost[r])
        if any(k == shape and abs(c - c0) <= NEAR_IDENTICAL_COST_FRACTION * c0 for k, c0 in kept):
            continue
        seen.add(key)
        kept.append((shape, c))
        out.append(int(r))
        if len(out) >= limit:
            break
    return out


def horizon_note(w: Workload, cs: CandidateSet) -> tuple[str, ...]:
    """Says so when the default training horizon (no deadline given) drops a candidate that fits."""
    if not w.is_training or w.deadline_h != DEFAULT_TRAINING_HORIZON_H or bool(cs.meets_slo.all()):
        return ()
    h = DEFAULT_TRAINING_HORIZON_H
    return (
        f"Runs longer than {h / 24:.0f} days ({h:,.0f} h at the {w.confidence} end of the estimate) are not "
        "proposed when no deadline is given: prices and GPU generations turn over about yearly; pass "
        "deadline_hours (--deadline-hours) to set another.",
    )


def _spot_note(w: Workload, cs: CandidateSet, spot: dict[str, SpotAssumption]) -> tuple[str, ...]:
    if cs.price_kind != "spot" or not len(cs):
        return ()
    names, codes = text_codes(cs.table, "provider")  # distinct providers of the rows, by code
    provs = sorted(str(p) for p in names[distinct(codes[cs.offer])]) if len(cs) else []
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


#: how each workload pricing reads in a sentence
PRICING_LABEL: dict[str, str] = {
    "on_demand": "on-demand",
    "spot": "spot",
    "1y": "1-year commitment",
    "3y": "3-year commitment",
}


def _prices(table: OfferTable, w: Workload) -> npt.NDArray[np.float64]:
    return node_prices_usd_per_hour(table, price_kind_for(w.pricing), w.commitments_file)


def priced_mask(table: OfferTable, w: Workload) -> npt.NDArray[np.bool_]:
    """Offers passing the workload's filters that also have a price (> 0) for its pricing."""
    prices = _prices(table, w)
    with np.errstate(invalid="ignore"):
        return eligible_mask(table, w) & np.isfinite(prices) & (prices > 0)


def commitment_note(table: OfferTable, w: Workload) -> tuple[str, ...]:
    """For 1y/3y pricing: the providers under the filters left out for lack of a commitment rate, and how to
    give one (the shipped table has sourced programs only; AWS and Azure publish no 1-year GPU figure in the
    sources used, docs/pricing.md)."""
    if w.pricing not in ("1y", "3y"):
        return ()
    from gpufleet.catalog.pricing import load_commitment_assumptions, unverified_allowed

    label = PRICING_LABEL[w.pricing]
    used: tuple[str, ...] = ()
    if unverified_allowed():
        used = (
            f"Unverified {label} rates are in use (--allow-unverified-commitments): where no rate was "
            "fetched per offer, a provider's 'up to' ceiling from the shipped table prices the commitment; "
            "it is likely optimistic for GPUs, so check a quote before buying.",
        )
    prices = _prices(table, w)
    passing = eligible_mask(table, w)
    with np.errstate(invalid="ignore"):
        missing = passing & ~(np.isfinite(prices) & (prices > 0))
    provs = sorted({str(p) for p in table.column("provider")[missing]})
    if not provs:
        return used

    term = 1 if w.pricing == "1y" else 3
    rows = load_commitment_assumptions(include_fetched=False).rows
    ceiling = sorted({r.provider for r in rows if r.term_years == term and not r.verified} & set(provs))
    out = [
        f"No {label} rate for {', '.join(provs)}: no verified {label} rate (fetched per offer, or your own "
        "override file) is in force, so their offers are left out. Give "
        "your negotiated or published rates with --commitments FILE (workload field commitments_file; "
        "format in docs/pricing.md) or fetch them with `gpufleet catalog update --provider NAME`."
    ]
    if ceiling:
        out.append(
            f"{', '.join(ceiling)}: the shipped table holds only an unverified {label} ceiling (a provider's "
            "'up to' figure without a per-offer source); --allow-unverified-commitments uses it, and the "
            "answer then says so."
        )
    return used + tuple(out)


def _filters_text(w: Workload) -> str:
    parts = [
        f"providers {', '.join(w.providers)}" if w.providers else "",
        f"regions {', '.join(w.regions)}" if w.regions else "",
        f"GPU vendors {', '.join(w.gpu_vendors)}" if w.gpu_vendors else "",
        f"geos {', '.join(w.geos)}" if w.geos else "",
        f"provider classes {', '.join(w.provider_classes)}" if w.provider_classes else "",
        f"excluding {', '.join(w.exclude_providers)}" if w.exclude_providers else "",
        f"GPUs {', '.join(w.gpus)}" if w.gpus else "",
        f">= {w.min_gpu_memory_gib:g} GiB/GPU" if w.min_gpu_memory_gib is not None else "",
        f"{'/'.join(map(str, w.gpus_per_node))} GPUs per node" if w.gpus_per_node else "",
        f"<= ${w.max_price_per_gpu_usd_per_hour:g}/GPU-h" if w.max_price_per_gpu_usd_per_hour else "",
    ]
    given = [p for p in parts if p]
    return "; ".join(given) if given else "no offer filter"


def _some(values: Any, n: int = 8) -> str:
    names = sorted({str(v).strip() for v in values} - {""})
    more = f", ... ({len(names)} in all)" if len(names) > n else ""
    return ", ".join(repr(x) for x in names[:n]) + more


#: the workload's other offer filters, cleared
_NO_EXTRA_FILTERS: dict[str, Any] = {
    "geos": (),
    "exclude_providers": (),
    "provider_classes": (),
    "gpu_choices": (),
    "min_gpu_memory_gib": None,
    "gpus_per_node": (),
    "max_price_per_gpu_usd_per_hour": None,
}


def _production_tier_message(table: OfferTable, w: Workload, filters: str) -> str | None:
    """Why the filters keep offers in the batch tier but none in production: how many of them each
    production exclusion (:func:`gpufleet.recommend.candidates.eligible_mask`) takes, and what allows it."""
    if w.tier != "production":
        return None
    left = eligible_mask(table, replace(w, tier="batch"))
    if not left.any():
        return None
    info = offer_info(table)
    with np.errstate(invalid="ignore"):
        excluded = (
            (is_consumer_gpu_mask(table), w.allow_consumer_gpus, "consumer (GeForce) GPUs",
             "`allow_consumer_gpus: true`"),
            (info.provider_class == "marketplace", w.allow_marketplace, "marketplace/community hosts",
             "`allow_marketplace: true`"),
            (~(info.price_age_days <= STALE_PRICE_DAYS), w.allow_stale_prices,
             "prices older than a year or undated", "`allow_stale_prices: true`"),
            (~(np.isfinite(info.vcpus) & np.isfinite(info.ram_gib)), False, "hosts of unknown RAM/vCPUs", ""),
            (production_excluded_mask(table, w), False,
             "GPUs production leaves out (end of support: Kepler-Volta, dropped by CUDA 13; workstation "
             "cards; Trainium1 for latency-bound serving; docs/recommend.md rules 34-36)", ""),
            (~zones_mask(table, w.min_zones) if w.min_zones >= 2 and not w.is_training else left & False,
             False, f"instance types the catalog lists in fewer than {w.min_zones} zones of their region",
             "a lower `min_zones`"),
        )  # fmt: skip
    parts = []
    for mask, allowed, what, field in excluded:
        n = int((left & mask).sum())
        if n and not allowed:
            parts.append(f"{n} on {what}" + (f" ({field} in the workload file)" if field else ""))
    if not parts:
        return None
    return (
        f"No offer passes the production tier under the filters ({filters}): of the {int(left.sum())} "
        f"offers they keep, {'; '.join(parts)}. Allow those, or use --tier batch (no replica or host rules) "
        "for a test or internal service."
    )


def no_offers_message(table: OfferTable, w: Workload) -> str:
    """Why no offer is left (a filter matching nothing, or no price of the chosen kind) and how to fix it."""
    label = PRICING_LABEL.get(w.pricing, w.pricing)
    filters = _filters_text(w)
    passing = eligible_mask(table, w)
    if passing.any():
        prices = _prices(table, w)
        with np.errstate(invalid="ignore"):
            has_price = np.isfinite(prices) & (prices > 0)
        any_provider = eligible_mask(table, replace(w, providers=()))
        with_kind = _some(table.column("provider")[any_provider & has_price])
        od = replace(w, pricing="on_demand")
        n_od = int(priced_mask(table, od).sum())
        alt = (
            f"Use --pricing on_demand ({n_od} offers under these filters have an on-demand price)"
            if w.pricing != "on_demand" and n_od
            else "Choose another pricing"
        )
        commit = ""
        if w.pricing in ("1y", "3y"):
            from gpufleet.catalog.pricing import unverified_allowed

            commit = (
                " Only verified commitment rates are used (fetched per offer by "
                "`gpufleet catalog update`, or your own --commitments file); "
                "--allow-unverified-commitments also uses the shipped providers' unverified 'up to' ceilings."
                if not unverified_allowed()
                else ""
            )
        return (
            f"No offer has a {label} price under the filters ({filters}): {int(passing.sum())} offers pass "
            f"the filters but none lists a {label} price. Providers with {label} prices for this workload: "
            f"{with_kind or 'none'}. {alt}, or widen the provider/region filters.{commit}"
        )
    if (tier := _production_tier_message(table, w, filters)) is not None:
        return tier
    bare = replace(w, providers=(), regions=(), gpu_vendors=(), **_NO_EXTRA_FILTERS)
    if not eligible_mask(table, bare).any():
        if (
            not w.allow_embargoed_countries
            and eligible_mask(table, replace(bare, allow_embargoed_countries=True)).any()
        ):
            return (
                "Every offer that could run this workload is in a country under a US/EU embargo "
                f"({', '.join(EMBARGOED_COUNTRIES)}; 15 CFR Part 746, EU 833/2014 and 765/2006), which is "
                "not recommended by default. Load a catalog with offers elsewhere (--catalog), or set "
                "`allow_embargoed_countries: true` if your compliance team has cleared it."
            )
        return (
            f"No offer in the catalog can run a {'training' if w.is_training else 'inference'} workload "
            "(no whole-GPU offer). Load a catalog with GPU offers (--catalog)."
        )
    for field, what in (("providers", "provider"), ("regions", "region"), ("gpu_vendors", "GPU vendor")):
        chosen = getattr(w, field)
        if not chosen:
            continue
        alone = replace(bare, **{field: chosen})
        if eligible_mask(table, alone).any():
            continue
        if field == "providers":
            known = _some(table.column("provider"))
        elif field == "regions":
            known = _some(table.column("region")[eligible_mask(table, replace(w, regions=()))], 12)
        else:
            specs = load_specs()
            known = _some(specs[str(g)].vendor for g in table.column("gpu") if str(g) in specs)
        return (
            f"No offer matches {what} filter {', '.join(chosen)}. Allowed {what}s here: {known or 'none'}. "
            f"Fix or drop the {what} filter."
        )
    for field, value in _NO_EXTRA_FILTERS.items():
        if (
            getattr(w, field) != value
            and not eligible_mask(table, replace(bare, **{field: getattr(w, field)})).any()
        ):
            return (
                f"No offer matches the {field.replace('_', ' ')} filter ({filters}) on its own. Loosen or "
                "drop it; `gpufleet catalog offers` shows what each provider lists."
            )
    where = ""
    if w.regions:
        regions = _some(table.column("region")[eligible_mask(table, replace(w, regions=()))], 12)
        where = f" Regions left by the other filters: {regions or 'none'}."
    return (
        f"No offer passes the filters together ({filters}); each matches offers on its own, but not in "
        f"combination.{where} Widen the filters (see `gpufleet catalog offers` for what each provider lists)."
    )


def commitment_break_even_note(cs: CandidateSet, w: Workload, row: int, c: Candidate) -> tuple[str, bool]:
    """(What a committed price means at the workload's schedule, whether it costs more than on demand).

    A commitment bills all 730 h of a month (docs/contracts.md); it pays only where the workload runs at
    least the break-even share of them, rate / on-demand rate (FinOps Foundation, "Rate optimization":
    commit the steady baseline). Before, `--pricing 1y` at 300 h/month ranked a GCP A100 pair at
    $2,552/month with only "commitment lock-in" as a risk, while the same nodes on demand for the 300 h cost
    $1,457/month."""
    if c.price_kind not in COMMITTED_KINDS or c.price_usd_per_node_hour <= 0:
        return "", False
    od = float(cs.table.column("price_on_demand_usd_per_hour")[int(cs.offer[row])])
    if not od > 0:
        return "", False
    be = c.price_usd_per_node_hour / od
    hours = w.hours_per_month
    od_month = od * c.total_nodes * hours
    term = "3-year" if c.price_kind.endswith("3y") else "1-year"
    rates = (
        f"{c.instance_type}: ${c.price_usd_per_node_hour:,.4f} committed vs ${od:,.4f} on demand per node-h; "
        f"break-even {be * HOURS_PER_MONTH:,.0f} h/month = {be:.0%} of {HOURS_PER_MONTH:g} h"
    )
    if hours / HOURS_PER_MONTH < be - 1e-9:
        return (
            f"The {term} commitment costs more than on demand at {hours:g} h/month: "
            f"${c.cost_usd_per_month:,.0f}/month billed for {HOURS_PER_MONTH:g} h vs ${od_month:,.0f}/month "
            f"on demand for the {hours:g} h it runs ({rates}). Commit only a base load that runs at least "
            "the break-even hours; price this one on demand (--pricing on_demand).",
            True,
        )
    return (
        f"The {term} commitment at {hours:g} h/month ({hours / HOURS_PER_MONTH:.0%} of "
        f"{HOURS_PER_MONTH:g} h) saves ${od_month - c.cost_usd_per_month:,.0f}/month against the same nodes "
        f"on demand ({rates}); it is billed for the whole term whether or not the workload runs.",
        False,
    )


def _spot_dropped_all(
    table: OfferTable,
    w: Workload,
    est: Estimator,
    spot: dict[str, SpotAssumption],
    host_rules: HostRules,
    notes: tuple[str, ...],
    base: dict[str, Any],
) -> Recommendation | None:
    """A training run on spot with no candidate left: when placements fit in memory on demand, spot's
    interruptions dropped them all (lambda (tau/2 + R) > 0.5: a job of n nodes is interrupted n times as
    often), which is no memory verdict. Answered as infeasible with the on-demand placements as the closest
    options, said so; None when nothing fits on demand either (then it is a memory verdict).

    Before, a 405B pre-training on 28 nodes of 8 x H200 priced on spot answered "CANNOT FIT: needs about
    6,089.5 GiB on a single GPU ... no larger node count fits", while the same run on demand fits."""
    od_w = replace(w, pricing="on_demand")
    od = build_candidates(table, od_w, est, spot, host_rules)
    if not len(od):
        return None
    rows = np.flatnonzero(np.ones(len(od), dtype=bool))
    srt = rows[np.lexsort((od.offer, od.cost_usd_per_run, np.round(od.slo_gap, 6)))]
    why = "not runnable on spot (interruptions lose more than half the run); priced on demand here"
    closest = tuple(
        replace(c, slo_misses=(why, *c.slo_misses))
        for c in (materialise(od, od_w, int(r), spot) for r in _dedupe(od, srt, MAX_CLOSEST))
    )
    c0 = closest[0]
    msg = (
        f"INFEASIBLE ON SPOT: {len(od)} placements fit in memory, but on spot each loses more than half its "
        "run to interruptions (lambda (tau/2 + R) > 0.5: a job stops whenever any of its nodes is "
        f"interrupted, and the closest needs {c0.total_nodes} node(s)). Closest on demand: {c0.provider} "
        f"{c0.instance_type} x{c0.total_nodes} (on-demand prices below"
        + (f"; {'; '.join(c0.slo_misses[1:])}" if c0.slo_misses[1:] else "")
        + "). Run it on demand or under a commitment, on fewer nodes, or with a faster restart and "
        "checkpoint (a spot assumptions file)."
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


@checked_output("recommendation")
def recommend_on(
    table: OfferTable,
    w: Workload,
    est: Estimator,
    spot: dict[str, SpotAssumption],
    *,
    objective: str | None = None,
    limit: int = 10,
    full_table: OfferTable | None = None,
    host_rules: HostRules = DEFAULT_HOST_RULES,
) -> Recommendation:
    """Rank every candidate of ``w`` over ``table`` (``full_table`` = unfiltered catalog, for suggestions;
    ``host_rules``: host RAM/vCPU minimums, docs/recommend.md).

    Checked once, on the result (:func:`gpufleet.validation.checked_output`), like the public
    ``gpufleet.recommend``: the hundreds of estimates made inside are nested calls and skip their own
    output checks (a third of the engine's time when each was checked), what is reported is checked here.
    """
    obj = check_objective(w.objective if objective is None else objective)  # "" is refused, not the default
    check_max_risk(w.max_risk)
    considered = int(priced_mask(table, w).sum())
    cs = build_candidates(table, w, est, spot, host_rules)
    notes = w.notes + cs.notes + horizon_note(w, cs) + _spot_note(w, cs, spot) + commitment_note(table, w)
    base: dict[str, Any] = {
        "workload": w,
        "objective": obj,
        "offers_considered": considered,
        "candidates_evaluated": len(cs),
    }
    if considered == 0:
        msg = no_offers_message(table, w)
        return Recommendation(
            status="no_offers", best=None, ranked=(), pareto=(), message=msg, notes=notes, **base
        )
    if len(cs) == 0 and w.pricing == "spot" and w.is_training:
        spot_out = _spot_dropped_all(table, w, est, spot, host_rules, notes, base)
        if spot_out is not None:
            return spot_out
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

    feasible_any = np.flatnonzero(cs.feasible)
    feasible = within_risk(cs, w, feasible_any)
    if feasible_any.size and not feasible.size:
        closest = mat(_dedupe(cs, order(cs, w, obj, feasible_any), MAX_CLOSEST))
        c0 = closest[0]
        msg = (
            f"OVER RISK: {feasible_any.size} candidates meet every constraint but none is at or below risk "
            f"{w.max_risk}; the best, {c0.provider} {c0.instance_type} ({c0.region}), is {c0.risk} risk "
            f"({'; '.join(c0.risk_reasons)}). Raise max_risk (--max-risk), or widen the filters."
        )
        return Recommendation(
            status="over_risk", best=None, ranked=(), pareto=(), closest=closest, message=msg, notes=notes,
            **base,
        )  # fmt: skip
    if feasible.size:
        ranked_rows = order(cs, w, obj, feasible, w.near_tie_fraction)
        ranked = explain_near_ties(mat(_dedupe(cs, ranked_rows, limit)), w, obj)
        pareto = mat([int(r) for r in pareto_rows(cs, w, feasible)[:MAX_PARETO]])
        pareto_lat = mat([int(r) for r in pareto_rows(cs, w, feasible, "latency")[:MAX_PARETO]])
        best = ranked[0]
        msg = (
            f"{feasible.size} of {len(cs)} candidates meet every constraint; best by {obj}: "
            f"{best.provider} {best.instance_type} ({best.region}) x{best.total_nodes}."
        )
        commit_note, commit_loses = commitment_break_even_note(cs, w, int(ranked_rows[0]), best)
        if commit_note:
            notes = (commit_note, *notes)
            if commit_loses:
                msg += " " + commit_note
        return Recommendation(
            status="ok",
            best=best,
            ranked=ranked,
            pareto=pareto,
            pareto_latency=pareto_lat,
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
