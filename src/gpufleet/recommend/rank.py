"""Objectives, the Pareto front of cost vs speed, and an independent loop-based reference search.

Objectives (all over feasible candidates: fits, meets the SLOs/deadline, within budget):

- ``cheapest``: lowest cost per run (training) or per month on the schedule (inference); ties -> faster.
- ``fastest``: highest speed (:attr:`Candidate.speed`: 1/TPOT for inference, 1/time-to-train for training);
  ties -> cheaper.
- ``throughput_per_dollar``: highest tokens/s per USD/h (output tokens for inference, trained tokens for
  training); ties -> cheaper.

Remaining ties break on the offer's row order in the catalog table, so results are deterministic.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offers import OfferTable
from gpufleet.catalog.regions import region_matches
from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.cost.prices import node_prices_usd_per_hour, price_kind_for
from gpufleet.cost.schedule import Schedule
from gpufleet.cost.spot import (
    SpotAssumption,
    assumption_for,
    replica_availability,
    replicas_to_provision,
    spot_training,
)
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate.types import Interval
from gpufleet.recommend.candidates import (
    NO_DECODER_SERVING,
    NO_QLORA_VENDORS,
    CandidateSet,
    is_consumer_gpu,
    serves_decoder,
)
from gpufleet.recommend.deploy import STALE_PRICE_DAYS, OfferInfo, offer_info
from gpufleet.recommend.deployability import production_exclusion
from gpufleet.recommend.failure import survives_text
from gpufleet.recommend.perf import Config, Estimator, configs_for, slo_gap, target_output_tokens_per_s
from gpufleet.recommend.risk import assess, within
from gpufleet.recommend.types import OBJECTIVES, RISK_LEVELS, Candidate, SpotCost, Workload
from gpufleet.units import MILLION, SECONDS_PER_HOUR, SECONDS_PER_MINUTE


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise InputError(
            f"Unknown objective {objective!r}. Allowed: {', '.join(OBJECTIVES)}. "
            "cheapest (default) meets the "
            "SLOs at the lowest cost; fastest is the quickest within budget; throughput_per_dollar maximises "
            "tokens/s per USD/h."
        )
    return objective


def serving_gpus_per_replica(cs: CandidateSet, w: Workload) -> npt.NDArray[np.int64]:
    """GPUs one serving replica spans (max(TP, EP) x PP) per row; 0 for training (no tie-break there).

    At an equal price the placement with fewer GPUs per replica is the one an engineer deploys: vLLM
    "Distributed inference and serving" ("if your model fits in a single GPU, you probably don't need to use
    distributed inference"): replicas add throughput without collectives, and one GPU failing takes down one
    replica, not a TP group."""
    per_cfg = np.array([0 if w.is_training else x.gpus_per_replica for x in cs.configs], dtype=np.int64)
    out: npt.NDArray[np.int64] = per_cfg[cs.cfg]
    return out


def primary_cost(cs: CandidateSet, w: Workload) -> npt.NDArray[np.float64]:
    """What ``cheapest`` minimises: cost per run (training) or per month (inference) [USD]."""
    return cs.cost_usd_per_run if w.is_training else cs.cost_usd_per_month


def _class_rank(cs: CandidateSet, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Tie-break rank of each row's offer (:attr:`OfferInfo.tie_rank`: established providers and regions
    first)."""
    ranks: npt.NDArray[np.int64] = offer_info(cs.table).tie_rank[cs.offer[rows]]
    return ranks


def order(
    cs: CandidateSet,
    w: Workload,
    objective: str,
    rows: npt.NDArray[np.int64],
    near_tie_fraction: float = 0.0,
) -> npt.NDArray[np.int64]:
    """``rows`` sorted best-first by ``objective``; ties break on speed or cost, then the provider class
    (hyperscaler, GPU cloud, aggregator, marketplace: established regions first), then table order. With
    ``near_tie_fraction`` > 0 the rows within that fraction of the best rank simplest first
    (:func:`near_tie_first`).

    ``cheapest`` serving breaks an exact cost tie on the GPUs one replica spans before speed
    (:func:`serving_gpus_per_replica`): the same nodes run as TP1 replicas rather than fewer TP2+ replicas
    whenever both meet every constraint."""
    check_objective(objective)
    cost = primary_cost(cs, w)[rows]
    speed = cs.speed[rows]
    cfg, offer = cs.cfg[rows], cs.offer[rows]
    cls = _class_rank(cs, rows)
    keys: tuple[npt.NDArray[Any], ...]
    if objective == "cheapest":
        keys = (cfg, offer, cls, -speed, serving_gpus_per_replica(cs, w)[rows], cost)
    elif objective == "fastest":
        keys = (cfg, offer, cls, cost, -speed)
    else:
        tpd = cs.output_tokens_per_s[rows] / cs.cost_usd_per_hour[rows]
        keys = (cfg, offer, cls, cost, -tpd)
    return near_tie_first(cs, w, objective, rows[np.lexsort(keys)], near_tie_fraction)


#: the two fronts shown: cost against throughput (the cost/throughput chart) and cost against latency
ParetoAxis = str
PARETO_AXES: tuple[str, ...] = ("throughput", "latency")


def pareto_benefit(cs: CandidateSet, w: Workload, axis: str = "throughput") -> npt.NDArray[np.float64]:
    """The quantity a front maximises: deployment throughput [tokens/s] (output tokens for inference,
    trained tokens for training) or, for ``latency``, per-stream speed (1/TPOT; training 1/time to train)."""
    if axis == "throughput":
        return cs.output_tokens_per_s
    if axis == "latency":
        return cs.speed
    raise InputError(f"Unknown Pareto axis {axis!r}. Allowed: {', '.join(PARETO_AXES)}.")


def pareto_rows(
    cs: CandidateSet, w: Workload, rows: npt.NDArray[np.int64], axis: str = "throughput"
) -> npt.NDArray[np.int64]:
    """Rows not dominated in (lower cost, higher benefit on ``axis``), cheapest first; equal points keep one.

    Cost is what ``cheapest`` minimises (:func:`primary_cost`: $/run for training, $/month for inference),
    the same axes the reports draw."""
    if rows.size == 0:
        return rows
    cost = primary_cost(cs, w)[rows]
    benefit = pareto_benefit(cs, w, axis)[rows]
    srt = rows[np.lexsort((cs.offer[rows], -benefit, cost))]
    b = pareto_benefit(cs, w, axis)[srt]
    prev_best = np.concatenate(([-np.inf], np.maximum.accumulate(b)[:-1]))
    return srt[b > prev_best]


_RISK_CACHE: dict[tuple[object, ...], tuple[object, object, tuple[str, tuple[str, ...]]]] = {}


def row_risk(cs: CandidateSet, w: Workload, row: int) -> tuple[str, tuple[str, ...]]:
    """Risk level and reasons of one candidate row (:mod:`gpufleet.recommend.risk`), memoised on what
    risk reads (the placement, the offer's class, fabric, price age, host listing and zone kind)."""
    info = offer_info(cs.table)
    o = int(cs.offer[row])
    cfg = cs.configs[int(cs.cfg[row])]
    age = float(info.price_age_days[o])
    host = not (math.isnan(float(info.vcpus[o])) or math.isnan(float(info.ram_gib[o])))
    key = (id(cfg), str(info.provider_class[o]), int(info.fabric_index[o]), id(info), age, host,
           bool(info.local_zone[o]), w.tier, w.precision, w.is_training, cs.price_kind)  # fmt: skip
    hit = _RISK_CACHE.get(key)
    if hit is None or hit[0] is not cfg or hit[1] is not info:  # ids are only valid while the objects live
        if len(_RISK_CACHE) > 50_000:
            _RISK_CACHE.clear()
        hit = (cfg, info, _row_risk(cs, w, row))
        _RISK_CACHE[key] = hit
    return hit[2]


def _row_risk(cs: CandidateSet, w: Workload, row: int) -> tuple[str, tuple[str, ...]]:
    info = offer_info(cs.table)
    o = int(cs.offer[row])
    cfg = cs.configs[int(cs.cfg[row])]
    age = float(info.price_age_days[o])
    return assess(
        w,
        provider_class=str(info.provider_class[o]),
        fabric=info.fabrics[int(info.fabric_index[o])],
        nodes=cfg.nodes_per_unit,
        gpu=cfg.gpu,
        precision_fallback=_needs_fallback(get_spec(cfg.gpu), w.precision),
        price_kind=cs.price_kind,
        price_age_days=None if math.isnan(age) else age,
        host_known=not (math.isnan(float(info.vcpus[o])) or math.isnan(float(info.ram_gib[o]))),
        interval=cfg.time_to_train_s if w.is_training else cfg.tpot_s,
        local_zone=bool(info.local_zone[o]),
        gpus_per_replica=cfg.gpus_per_replica,
        ep=cfg.ep,
        weights_share=weights_share(cfg),
        memory_share=memory_share(cfg),
    )


def memory_share(cfg: Config) -> float:
    """Estimated peak memory per GPU over the GPU's memory (risk: a training job near the limit may OOM)."""
    return cfg.mem_per_gpu_gib / cfg.mem_capacity_gib if cfg.mem_capacity_gib > 0 else 0.0


def weights_share(cfg: Config) -> float:
    """Weights per GPU over the GPU's memory (risk: little KV-cache room when high)."""
    return cfg.weights_per_gpu_gib / cfg.mem_capacity_gib if cfg.mem_capacity_gib > 0 else 0.0


_CLASS_CODES: dict[int, tuple[OfferInfo, npt.NDArray[np.int64]]] = {}


def _class_codes(info: OfferInfo) -> npt.NDArray[np.int64]:
    """Code of each offer's provider class (index into the sorted distinct classes), once per (cached)
    :class:`OfferInfo`."""
    hit = _CLASS_CODES.get(id(info))
    if hit is None or hit[0] is not info:
        if len(_CLASS_CODES) > 8:
            _CLASS_CODES.clear()
        values = info.provider_class.tolist()  # few distinct classes: ranked without sorting every row
        rank = {v: i for i, v in enumerate(sorted(set(values)))}
        codes = np.fromiter((rank[v] for v in values), dtype=np.int64, count=len(values))
        hit = (info, codes)
        _CLASS_CODES[id(info)] = hit
    return hit[1]


def risk_index(cs: CandidateSet, w: Workload, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Risk level of each row as an index into ``RISK_LEVELS`` (0 low, 1 medium, 2 high). Risk depends only
    on the offer's class, fabric, price age and host listing and on the placement: computed once per
    distinct combination."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    info = offer_info(cs.table)
    o = cs.offer[rows]
    age = info.price_age_days[o]
    with np.errstate(invalid="ignore"):
        age_state = np.where(np.isnan(age), 2, np.where(age > STALE_PRICE_DAYS, 1, 0))
    host = np.isfinite(info.vcpus[o]) & np.isfinite(info.ram_gib[o])
    cls = _class_codes(info)[o]
    # the combination as one integer (mixed radix over the ranges of its parts): the same distinct
    # combinations and first rows as the rows of (cfg, fabric, class, age state, host, zone kind)
    key = cs.cfg[rows].astype(np.int64)
    for part, radix in ((info.fabric_index[o], len(info.fabrics)), (cls, int(cls.max()) + 1), (age_state, 3),
                        (host, 2), (info.local_zone[o], 2)):  # fmt: skip
        key = key * radix + part.astype(np.int64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    levels = np.array([RISK_LEVELS.index(row_risk(cs, w, int(rows[i]))[0]) for i in first], dtype=np.int64)
    out: npt.NDArray[np.int64] = levels[inverse.reshape(-1)]
    return out


def within_risk(cs: CandidateSet, w: Workload, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``rows`` whose risk is at most ``w.max_risk`` (all when None)."""
    if w.max_risk is None or rows.size == 0:
        return rows
    kept: npt.NDArray[np.int64] = rows[risk_index(cs, w, rows) <= RISK_LEVELS.index(w.max_risk)]
    return kept


def objective_shortfall(
    cs: CandidateSet, w: Workload, objective: str, rows: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """What ``objective`` minimises as a positive quantity, the scale of the near-tie band: cost
    (:func:`primary_cost`) for ``cheapest``, time (TPOT; training time to train: 1 / speed) for ``fastest``,
    cost per token (USD/h per token/s) for ``throughput_per_dollar``."""
    if objective == "cheapest":
        return primary_cost(cs, w)[rows]
    if objective == "fastest":
        with np.errstate(divide="ignore"):
            return 1.0 / cs.speed[rows]
    with np.errstate(divide="ignore", invalid="ignore"):
        return cs.cost_usd_per_hour[rows] / cs.output_tokens_per_s[rows]


def simplicity_keys(
    cs: CandidateSet, w: Workload, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], ...]:
    """How much operating each row takes, most important first (lower is simpler): nodes one replica or the
    job spans (one node, one TPU slice, before several joined over the network); tensor parallelism across
    nodes; the risk level (:mod:`gpufleet.recommend.risk`); expert parallelism (an all-to-all per MoE layer,
    and the estimator's most optimistic layouts); a marketplace/community host; last, for serving the GPUs
    in all (fewer replicas, a smaller capacity request) and for training the time to train in whole minutes
    (at a near-equal price per run a job on more GPUs finishes sooner: one TPU v6e-64 slice runs a 70B LoRA
    in 4 h for the price of a v6e-8 in 32 h)."""
    cfgs = cs.configs
    c = cs.cfg[rows]
    nodes = np.array([x.nodes_per_unit for x in cfgs], dtype=np.int64)[c]
    cross_tp = np.array([x.tp > x.gpus_per_node for x in cfgs], dtype=np.int64)[c]
    ep = np.array([x.ep > 1 for x in cfgs], dtype=np.int64)[c]
    gpn = np.array([x.gpus_per_node for x in cfgs], dtype=np.int64)[c]
    info = offer_info(cs.table)
    market = (info.provider_class[cs.offer[rows]] == "marketplace").astype(np.int64)
    if w.is_training:
        last = np.rint(cs.time_to_train_s[rows] / SECONDS_PER_MINUTE).astype(np.int64)
    else:
        last = cs.total_nodes[rows] * gpn
    return nodes, cross_tp, risk_index(cs, w, rows), ep, market, last


#: relative slack on the near-tie bound so rounding in the costs never decides membership
_BAND_EPS = 1e-12


def near_tie_first(
    cs: CandidateSet, w: Workload, objective: str, ranked: npt.NDArray[np.int64], fraction: float
) -> npt.NDArray[np.int64]:
    """``ranked`` (best-first by ``objective``) with the rows within ``fraction`` of the best one on the
    objective (:func:`objective_shortfall`) reordered simplest first (:func:`simplicity_keys`), their order
    by the objective kept among equally simple ones; the rows outside the band follow unchanged.

    The band is measured from the best row, never chained from row to row, so a candidate more than
    ``fraction`` worse than the best never moves ahead of it (docs/recommend.md "Near ties")."""
    if fraction <= 0 or ranked.size < 2:
        return ranked
    value = objective_shortfall(cs, w, objective, ranked)
    best = float(value[0])
    if not math.isfinite(best):
        return ranked
    band = value <= best * (1.0 + fraction) * (1.0 + _BAND_EPS)
    n = int(np.argmin(band)) if not band.all() else ranked.size  # the band is a prefix: ranked by value
    if n < 2:
        return ranked
    head = ranked[:n]
    keys = simplicity_keys(cs, w, head)
    srt = np.lexsort((np.arange(n), *reversed(keys)))
    return np.concatenate((head[srt], ranked[n:]))


def _iv(x: Interval | None, factor: float) -> Interval | None:
    return x.scaled(factor) if x is not None else None


def with_unit_costs(
    c: Candidate, load_output_tokens_per_s: float | None, hours_per_month: float
) -> Candidate:
    """``c`` with its load and unit-cost fields recomputed from its own monthly cost and capacity for a load
    (output tokens/s; None = no load stated) served ``hours_per_month``: the one definition of
    ``cost_usd_per_million_output_tokens_at_load`` and ``..._saturated`` (docs/contracts.md "Figures and
    labels"), for a candidate built outside the vectorised costing (migrate's current deployment)."""
    if c.saturated_output_tokens_per_s is None and load_output_tokens_per_s is None:
        return c
    service_s = hours_per_month * SECONDS_PER_HOUR
    load = load_output_tokens_per_s
    sat = c.saturated_output_tokens_per_s
    month_load = load * service_s if load else None
    month_sat = sat * service_s if sat else None
    # a deployment whose full capacity is below the load does not make the load's tokens: no unit cost "at
    # your load" (before: 1 A10G at 949 tok/s read $0.027/1M at a 10,240 tok/s load, 11x too low)
    serves = load is not None and sat is not None and sat >= load * (1.0 - 1e-9)
    return dataclasses.replace(
        c,
        load_output_tokens_per_s=load,
        output_tokens_per_month_at_load=month_load,
        output_tokens_per_month_saturated=month_sat,
        cost_usd_per_million_output_tokens_at_load=c.cost_usd_per_month / month_load * MILLION
        if month_load and serves
        else None,
        cost_usd_per_million_output_tokens_saturated=c.cost_usd_per_month / month_sat * MILLION
        if month_sat
        else None,
    )


def materialise(
    cs: CandidateSet, w: Workload, row: int, spot_assumptions: dict[str, SpotAssumption] | None = None
) -> Candidate:
    """Build the :class:`Candidate` of one row (only for the rows shown)."""
    t = cs.table
    o = int(cs.offer[row])
    cfg = cs.configs[int(cs.cfg[row])]
    spec = get_spec(cfg.gpu)
    need = int(cs.replicas_needed[row])
    paid = int(cs.replicas[row])
    provider = str(t.column("provider")[o])
    spot = None
    if cs.price_kind == "spot" and spot_assumptions is not None:
        a = assumption_for(provider, spot_assumptions)
        st = spot_training(a, nodes=cfg.nodes_per_unit) if w.is_training else None
        spot = SpotCost(
            price_usd_per_hour=float(cs.price_usd_per_node_hour[row]),
            interruptions_per_h=a.interruptions_per_h * cfg.nodes_per_unit,
            checkpoint_interval_h=st.checkpoint_interval_h if st else None,
            wall_time_factor=st.wall_time_factor if st else 1.0,
            replica_availability=replica_availability(a, nodes_per_replica=cfg.nodes_per_unit),
            replicas_provisioned=paid,
            replicas_needed=need,
            assumption_source=a.source,
        )
    factor = float(cs.spot_factor[row])
    level, reasons = row_risk(cs, w, row)
    per_mtok = float(cs.cost_usd_per_million_output_tokens_at_load[row])
    load = float(cs.load_output_tokens_per_s[row])
    sat_tput = float(cs.saturated_output_tokens_per_s[row])
    service_s = w.hours_per_month * SECONDS_PER_HOUR
    per_mtok_sat = float(cs.cost_usd_per_million_output_tokens_saturated[row])
    per_run = float(cs.cost_usd_per_run[row])
    runs = float(cs.runs_per_month[row])
    info = offer_info(t)
    fabric = info.fabrics[int(info.fabric_index[o])]
    vcpus, ram = float(info.vcpus[o]), float(info.ram_gib[o])
    age = float(info.price_age_days[o])
    fallback = _needs_fallback(spec, w.precision)
    pclass = str(info.provider_class[o])
    return Candidate(
        provider=provider,
        region=str(t.column("region")[o]),
        instance_type=str(t.column("instance_type")[o]),
        gpu=cfg.gpu,
        gpu_vendor=spec.vendor,
        precision_fallback=fallback,
        provider_class=pclass,
        fabric=fabric.label,
        fabric_gbps_per_node=fabric.gbps_per_node,
        multi_node_capable=fabric.multi_node,
        vcpus=None if math.isnan(vcpus) else vcpus,
        host_memory_gib=None if math.isnan(ram) else ram,
        price_date=str(info.price_date[o]),
        price_age_days=None if math.isnan(age) else int(age),
        runs_per_month=None if math.isnan(runs) else runs,
        cost_usd_per_million_output_tokens_saturated=None if math.isnan(per_mtok_sat) else per_mtok_sat,
        load_output_tokens_per_s=None if math.isnan(load) else load,
        output_tokens_per_month_at_load=None if math.isnan(load) else load * service_s,
        saturated_output_tokens_per_s=None if math.isnan(sat_tput) else sat_tput,
        output_tokens_per_month_saturated=None if math.isnan(sat_tput) else sat_tput * service_s,
        risk=level,
        risk_reasons=reasons,
        survives=survives_text(w, need, cfg.nodes_per_unit),
        gpus_per_node=cfg.gpus_per_node,
        nodes_per_replica=cfg.nodes_per_unit,
        tp=cfg.tp,
        pp=cfg.pp,
        dp=cfg.dp,
        replicas=paid * cfg.replicas_per_unit if not w.is_training else 1,
        total_nodes=int(cs.total_nodes[row]),
        total_gpus=int(cs.total_nodes[row]) * cfg.gpus_per_node,
        price_kind=cs.price_kind,
        price_usd_per_node_hour=float(cs.price_usd_per_node_hour[row]),
        cost_usd_per_hour=float(cs.cost_usd_per_hour[row]),
        cost_usd_per_month=float(cs.cost_usd_per_month[row]),
        cost_usd_per_million_output_tokens_at_load=None if math.isnan(per_mtok) else per_mtok,
        cost_usd_per_run=None if math.isnan(per_run) else per_run,
        mem_per_gpu_gib=cfg.mem_per_gpu_gib,
        mem_capacity_gib=cfg.mem_capacity_gib,
        output_tokens_per_s=_iv(cfg.unit_output_tokens_per_s, need),
        requests_per_s=_iv(cfg.unit_requests_per_s, need),
        ttft_s=cfg.ttft_s,
        tpot_s=cfg.tpot_s,
        batch_per_replica=cfg.batch_per_replica,
        tokens_per_s=_iv(cfg.tokens_per_s, 1.0 / factor),
        time_to_train_s=_iv(cfg.time_to_train_s, factor),
        meets_slo=bool(cs.meets_slo[row]),
        slo_misses=_misses(cs, w, row, cfg.slo_misses),
        within_budget=bool(cs.within_budget[row]),
        spot=spot,
        generation_year=spec.release_year,
        ep=cfg.ep,
        notes=cfg.notes,
        recipe=cfg.recipe,
        optimizer=cfg.optimizer,
    )


def _misses(cs: CandidateSet, w: Workload, row: int, base: tuple[str, ...]) -> tuple[str, ...]:
    if w.is_training and w.deadline_h is not None and not cs.meets_slo[row] and not base:
        hours = float(cs.time_to_train_s[row]) / SECONDS_PER_HOUR
        return (f"time to train {hours:.1f} h with spot interruptions > deadline {w.deadline_h:g} h",)
    return base


# --- independent reference ------------------------------------------------------------------------------


def brute_force_best(
    table: OfferTable,
    w: Workload,
    est: Estimator,
    spot_assumptions: dict[str, SpotAssumption],
    objective: str = "cheapest",
) -> tuple[float, dict[str, Any]] | None:
    """Loop-based reference: the best objective value and its row, or None when nothing is feasible.

    It shares only the per-placement performance (:func:`configs_for`: the estimator's numbers), the offer
    capability lookups (class, fabric, price age), the host rules and the spot/schedule/risk formulas with
    the engine; filtering (the workload's filters and the embargo; not the price-per-GPU cap), pricing,
    replica counts, costing, feasibility and selection are re-done row by row over ``table.records()``.
    Returns ``(key, row)`` of the pick: ``key`` is the value minimised (cost, -speed or -tokens/s per
    USD/h); among the rows within ``w.near_tie_fraction`` of the best, the simplest is picked (the near-tie
    rule, re-done here with tuples: nodes per unit, cross-node TP, risk, EP, marketplace host, GPUs).
    """
    from gpufleet.catalog.capabilities import fabric_for, offer_class
    from gpufleet.catalog.provider_class import provider_class
    from gpufleet.catalog.regions import region_location
    from gpufleet.recommend.candidates import NO_REGION
    from gpufleet.recommend.deploy import DEFAULT_HOST_RULES, node_network, trains_across_nodes
    from gpufleet.recommend.filters import EMBARGOED_COUNTRIES
    from gpufleet.recommend.perf import at_confidence, rate_at_confidence

    kind = price_kind_for(w.pricing)
    billed_h = Schedule(hours_per_month=w.hours_per_month).billed_hours_per_month(kind)
    commit = (
        node_prices_usd_per_hour(table, kind, w.commitments_file)
        if kind not in ("on_demand", "spot")
        else None
    )
    ages = offer_info(table).price_age_days
    vendors = {v.lower() for v in w.gpu_vendors}
    rules = DEFAULT_HOST_RULES
    placements: list[tuple[int, Any, Any, float, Any]] = []  # (row, record, config, price, fabric)
    zones: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # zones listing each instance type
    for rec in table.records():
        if rec.zone:
            zones[rec.provider, rec.region, rec.instance_type].add(rec.zone)
    for i, rec in enumerate(table.records()):
        if rec.gpu is None or rec.gpu_count < 1 or rec.gpu_count != int(rec.gpu_count):
            continue
        if rec.region.strip().lower() in NO_REGION:
            continue
        if w.is_training and rec.gpu.startswith("Inferentia"):
            continue
        if w.task == "qlora" and get_spec(rec.gpu).vendor in NO_QLORA_VENDORS:  # no bitsandbytes backend
            continue
        if not w.is_training and rec.gpu in NO_DECODER_SERVING and serves_decoder(w.model):
            continue
        if w.providers and rec.provider not in {p.lower() for p in w.providers}:
            continue
        if w.regions and not any(region_matches(rec.region, g) for g in w.regions):
            continue
        if vendors and get_spec(rec.gpu).vendor.lower() not in vendors:
            continue
        place = region_location(rec.provider, rec.region)
        if not w.allow_embargoed_countries and place.country in EMBARGOED_COUNTRIES:
            continue
        if w.geos and place.geo not in w.geos:
            continue
        if w.exclude_providers and rec.provider in {p.lower() for p in w.exclude_providers}:
            continue
        if w.provider_classes and provider_class(rec.provider) not in w.provider_classes:
            continue
        if w.gpus and rec.gpu not in w.gpus:
            continue
        if w.min_gpu_memory_gib is not None and not (rec.gpu_memory_gib >= w.min_gpu_memory_gib):
            continue
        if w.gpus_per_node and rec.gpu_count not in w.gpus_per_node:
            continue
        if w.tier == "production":
            if not w.allow_marketplace and offer_class(rec.provider, rec.instance_type) == "marketplace":
                continue
            if not w.allow_consumer_gpus and is_consumer_gpu(rec.gpu):
                continue
            if not w.allow_stale_prices and not (ages[i] <= STALE_PRICE_DAYS):
                continue
            if rec.vcpus is None or rec.ram_gib is None:
                continue
            latency = not w.is_training and (w.ttft_p95_s is not None or w.tpot_p95_s is not None)
            if production_exclusion(rec.gpu, serving=not w.is_training, latency=latency):
                continue
            if (
                w.min_zones >= 2
                and not w.is_training
                and len(zones[rec.provider, rec.region, rec.instance_type]) < w.min_zones
            ):
                continue
        if kind == "on_demand":
            price = rec.price_on_demand_usd_per_hour
        elif kind == "spot":
            price = rec.price_spot_usd_per_hour if rec.price_spot_usd_per_hour is not None else math.nan
        else:
            assert commit is not None
            price = float(commit[i])
        if not (price > 0):
            continue
        fabric = fabric_for(rec.provider, rec.instance_type, rec.gpu)
        g = int(rec.gpu_count)
        scale_out = not w.is_training or w.tier == "dev" or trains_across_nodes(fabric)
        for cfg in configs_for(est, w, rec.gpu, g, node_network(fabric) if scale_out else None):
            if not cfg.fits:
                continue
            state = max(cfg.weights_per_gpu_gib, cfg.checkpoint_per_gpu_gib)
            ram_need = rules.ram_per_weight * state * g + rules.ram_base_gib
            cpu_need = rules.vcpus_needed(g, training=w.is_training)
            if rec.ram_gib is not None and rec.ram_gib < ram_need - 1e-9:
                continue
            if rec.vcpus is not None and rec.vcpus < cpu_need - 1e-9:
                continue
            placements.append((i, rec, cfg, price, fabric))
    if not w.is_training and any(p[2].nodes_per_unit == 1 for p in placements):
        placements = [p for p in placements if p[2].nodes_per_unit == 1]
    feasible: list[tuple[float, tuple[int, ...], tuple[float, ...], dict[str, Any]]] = []
    for i, rec, cfg, price, fabric in placements:
        need = cfg.units
        target = target_output_tokens_per_s(w)
        if not w.is_training and target is not None:
            assert cfg.unit_output_tokens_per_s is not None
            need = max(need, math.ceil(target / rate_at_confidence(cfg.unit_output_tokens_per_s, w) - 1e-9))
        need_load = need
        if not w.is_training and w.tier == "production":  # N+1 (and a zone's loss with min_zones >= 2)
            need += 1
            while w.min_zones >= 2 and need - math.ceil(need / w.min_zones) < need_load:
                need += 1
        paid, factor = need, 1.0
        if kind == "spot":
            a = assumption_for(rec.provider, spot_assumptions)
            if w.is_training:
                st = spot_training(a, nodes=cfg.nodes_per_unit)
                if not st.valid:
                    continue
                factor = st.wall_time_factor
            else:
                paid = replicas_to_provision(
                    need, replica_availability(a, nodes_per_replica=cfg.nodes_per_unit)
                )
        cost_h = price * paid * cfg.nodes_per_unit
        if w.is_training:
            assert cfg.time_to_train_s is not None and cfg.tokens_per_s is not None
            ttt = cfg.time_to_train_s.central * factor
            ttt_h = ttt / SECONDS_PER_HOUR
            runs = w.runs_per_month if w.runs_per_month is not None else min(1.0, w.hours_per_month / ttt_h)
            run_h = ttt_h if kind in ("on_demand", "spot") else max(ttt_h, billed_h / runs)
            cost_run = cost_h * run_h
            month = cost_run * runs
        else:
            month = cost_h * billed_h
        if w.budget_usd_per_month is not None and month > w.budget_usd_per_month:
            continue
        if slo_gap(cfg, w) > 1 + 1e-12:
            continue
        if w.is_training:
            if w.deadline_h is not None and at_confidence(cfg.time_to_train_s, w) * factor > w.deadline_h * (
                SECONDS_PER_HOUR * (1 + 1e-12)
            ):
                continue
            if w.runs_per_month is not None and w.runs_per_month * ttt_h > w.hours_per_month * (1 + 1e-12):
                continue
            cost, speed, tput = cost_run, 1.0 / ttt, cfg.tokens_per_s.central / factor
        else:
            assert cfg.unit_output_tokens_per_s is not None and cfg.tpot_s is not None
            cost, speed = month, 1.0 / cfg.tpot_s.central
            tput = cfg.unit_output_tokens_per_s.central * need
        age = float(ages[i])
        pclass = offer_class(rec.provider, rec.instance_type)
        level = assess(
            w,
            provider_class=pclass,
            fabric=fabric,
            nodes=cfg.nodes_per_unit,
            gpu=cfg.gpu,
            precision_fallback=_needs_fallback(get_spec(cfg.gpu), w.precision),
            price_kind=kind,
            price_age_days=None if math.isnan(age) else age,
            host_known=rec.vcpus is not None and rec.ram_gib is not None,
            interval=cfg.time_to_train_s if w.is_training else cfg.tpot_s,
            local_zone=bool(offer_info(table).local_zone[i]),
            gpus_per_replica=cfg.gpus_per_replica,
            ep=cfg.ep,
            weights_share=weights_share(cfg),
            memory_share=memory_share(cfg),
        )[0]
        if not within(level, w.max_risk):
            continue
        key: tuple[float, ...]
        if objective == "cheapest":  # exact cost ties: fewer GPUs per serving replica, then faster
            gpr = 0 if w.is_training else cfg.gpus_per_replica
            key, shortfall = (cost, float(gpr), -speed), cost
        elif objective == "fastest":
            key, shortfall = (-speed, cost), 1.0 / speed
        else:
            key, shortfall = (-tput / cost_h, cost), cost_h / tput
        simplicity = (
            cfg.nodes_per_unit,
            int(cfg.tp > cfg.gpus_per_node),
            RISK_LEVELS.index(level),
            int(cfg.ep > 1),
            int(pclass == "marketplace"),
            round(1.0 / speed / SECONDS_PER_MINUTE)
            if w.is_training
            else paid * cfg.nodes_per_unit * cfg.gpus_per_node,
        )
        row = {
            "offer": i,
            "provider": rec.provider,
            "instance_type": rec.instance_type,
            "cost": cost,
            "speed": speed,
            "nodes": cfg.nodes_per_unit,
            "tp": cfg.tp,
            "replicas": paid,
        }
        feasible.append((shortfall, simplicity, key, row))
    if not feasible:
        return None
    # near ties (docs/recommend.md): within the band of the best shortfall, the simplest, then the best key
    best_short = min(f[0] for f in feasible)
    bound = best_short * (1.0 + w.near_tie_fraction) * (1.0 + 1e-12)
    band = [f for f in feasible if f[0] <= bound] or feasible
    _, _, key, row = min(band, key=lambda f: (f[1], f[2]))
    return key[0], row


def objective_value(cs: CandidateSet, w: Workload, objective: str, row: int) -> float:
    """The engine's value of ``row`` on the same scale as :func:`brute_force_best` keys."""
    if objective == "cheapest":
        return float(primary_cost(cs, w)[row])
    if objective == "fastest":
        return -float(cs.speed[row])
    return -float(cs.output_tokens_per_s[row] / cs.cost_usd_per_hour[row])


@lru_cache(maxsize=4096)
def _needs_fallback(spec: AcceleratorSpec, precision: str) -> bool:
    """True when ``spec`` runs ``precision`` only through the estimator's explicit fallback."""
    from gpufleet.estimate.support import precision_support

    try:
        return precision_support(spec, precision, allow_fallback=True).fallback
    except UnsupportedError:  # no candidate is built for an unsupported precision; be explicit anyway
        return True
