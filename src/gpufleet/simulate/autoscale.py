"""Autoscaling analyzer: replay a request trace through an autoscaled deployment and price it.

The deployment is a model on a GPU (or the best pick of :func:`gpufleet.recommend`), its speed sampled
from the estimator (:mod:`gpufleet.simulate.serving`) and its price from the catalog (the cheapest offer of
that GPU passing the deployment tier's rules, production by default: the per-GPU price x GPUs per replica).
The replay (:mod:`gpufleet.simulate.cluster`) measures TTFT, TPOT and end-to-end latency per request,
replica-hours and scale events.

"Static peak" is the smallest fixed replica count that meets every SLO set (p95 TTFT, p95 TPOT and, when
given, the SLO attainment; found by bisection: more replicas never raise latency, a property test); the
comparison prices the policy against it, and states a saving only when the policy meets the same SLOs
(otherwise "not comparable", with the gap).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import assumption_for, load_spot_assumptions
from gpufleet.errors import InfeasibleError, InputError
from gpufleet.simulate.cluster import RawRun, SpotSetting, replay
from gpufleet.simulate.coldstart import ColdStart, cold_start_for
from gpufleet.simulate.core import cdf_points, percentile
from gpufleet.simulate.policies import (
    KNATIVE_TARGET_UTILISATION,
    HpaPolicy,
    KpaPolicy,
    Policy,
    RayServePolicy,
    StaticPolicy,
)
from gpufleet.simulate.serving import ServiceModel, service_from_estimator
from gpufleet.simulate.traces import RequestTrace
from gpufleet.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, gib_from_bytes
from gpufleet.validation import check_count, check_number, checked_arguments

#: default SLOs when none is given: p95 TTFT 2 s and TPOT 0.1 s (interactive chat; the MLPerf Inference
#: v5.0 Llama-2-70B interactive scenario uses TTFT 450 ms / TPOT 40 ms, the server scenario 2 s / 200 ms)
DEFAULT_SLO_TTFT_S = 2.0
DEFAULT_SLO_TPOT_S = 0.2
#: Bounds that keep a replay finite: replicas of one deployment, an SLO [s] and the trace time-scale factor.
MAX_REPLICAS = 10_000
MAX_SLO_S = 3600.0
MAX_RATE_FACTOR = 10_000.0
#: Longest trace a replay simulates [s]: 400 days, longer than the public LLM traces it reads (Azure,
#: BurstGPT, Mooncake span hours to months).
MAX_TRACE_SPAN_S = 400 * SECONDS_PER_DAY
#: time-series points kept for charts
SERIES_POINTS = 360


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """What one replica is, how fast it starts and what it costs."""

    service: ServiceModel
    cold_start: ColdStart
    price_usd_per_replica_hour: float
    spot_price_usd_per_replica_hour: float | None
    offer: str  # provider / region / instance type the price comes from
    provider: str  # of the spot price (its interruption hazard)


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyStats:
    p50_s: float
    p95_s: float
    p99_s: float
    mean_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceLevel:
    """The SLOs a run is judged on: p95 TTFT and p95 TPOT [s], and the least fraction of requests meeting
    both (None: not set)."""

    ttft_p95_s: float
    tpot_p95_s: float
    attainment: float | None = None

    def gaps(self, ttft_p95_s: float, tpot_p95_s: float, attainment: float) -> tuple[str, ...]:
        """What misses the SLOs, one phrase each with the gap (empty: every SLO met)."""
        out = []
        if not ttft_p95_s <= self.ttft_p95_s:
            out.append(_gap("p95 TTFT", ttft_p95_s, self.ttft_p95_s))
        if not tpot_p95_s <= self.tpot_p95_s:
            out.append(_gap("p95 TPOT", tpot_p95_s, self.tpot_p95_s))
        if self.attainment is not None and not attainment >= self.attainment:
            out.append(
                f"SLO attainment {attainment * 100:.1f} % < {self.attainment * 100:.1f} % "
                f"({(self.attainment - attainment) * 100:.1f} points short)"
            )
        return tuple(out)


def _fmt_s(v: float) -> str:
    if not math.isfinite(v):
        return "never (requests not served)"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"


def _gap(name: str, value: float, limit: float) -> str:
    over = f" (+{_fmt_s(value - limit)})" if math.isfinite(value) else ""
    return f"{name} {_fmt_s(value)} > {_fmt_s(limit)}{over}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticPeak:
    replicas: int
    cost_usd: float
    ttft_p95_s: float
    tpot_p95_s: float
    slo_attainment: float  # requests meeting both SLOs [fraction]
    meets_slo: bool  # every SLO set (p95 TTFT, p95 TPOT, attainment when set)
    slo_gaps: tuple[str, ...]  # what misses, with the gap (empty when meets_slo)


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoscaleResult:
    trace: str
    requests: int
    duration_s: float
    rate_factor: float
    deployment: str
    offer: str
    policy: str
    policy_params: Mapping[str, object]
    seed: int
    min_replicas: int
    max_replicas: int
    cold_start: ColdStart
    spot_share: float
    ttft: LatencyStats
    tpot: LatencyStats
    e2e: LatencyStats
    queue_wait: LatencyStats
    slo_ttft_s: float
    slo_tpot_s: float
    slo_attainment: float  # requests meeting both SLOs [fraction]
    slo_attainment_target: float | None  # least attainment required [fraction]; None: not set
    meets_slo: bool  # p95 TTFT <= SLO, p95 TPOT <= SLO and attainment >= its target when set
    slo_gaps: tuple[str, ...]  # what misses an SLO, with the gap (empty when meets_slo)
    unfinished: int  # requests never served (no capacity before the horizon)
    replica_hours: float
    spot_replica_hours: float
    cost_usd: float
    price_usd_per_replica_hour: float
    mean_replicas: float
    peak_replicas: int
    scale_events: tuple[tuple[float, int, int], ...]  # (time [s], from, to)
    cold_start_hits: int  # requests that waited while a replica was starting
    interruptions: int
    requeued: int
    kv_mode: str  # paged (grow per token, preempt when full) | reserve (input + output at admission)
    preemptions: int  # KV-pool preemptions (recompute) [count]
    rejected: int  # requests larger than a replica's KV pool, never served [count]
    static_peak: StaticPeak | None
    savings_vs_static_peak: float | None  # 1 - cost / static-peak cost [fraction]; None: not comparable
    #: why no saving is stated against the static peak (None: stated, or no static peak computed)
    not_comparable: str | None
    series_t_s: tuple[float, ...]
    series_arrivals_per_s: tuple[float, ...]
    series_replicas: tuple[float, ...]
    series_ready: tuple[float, ...]
    ttft_cdf: tuple[tuple[float, float], ...]
    e2e_cdf: tuple[tuple[float, float], ...]
    notes: tuple[str, ...]


#: deployment tiers a serving replica may be priced under (the recommender's ``--tier``)
PRICE_TIERS = ("production", "batch", "dev")


def _price_offer(
    gpu: str,
    gpus: int,
    provider: str | None,
    *,
    model: str = "llama-3.1-8b",
    tier: str = "production",
    weights_per_gpu_gib: float = 0.0,
) -> tuple[float, float | None, str, str]:
    """(on-demand price, spot price, offer, spot provider) per replica: the cheapest whole-GPU offers of
    ``gpu`` (per GPU x the replica's GPUs) that pass the recommender's deployability rules for ``tier``
    (:func:`gpufleet.recommend.candidates.eligible_mask`: production takes no marketplace or community host
    and no stale or undated price, as ``recommend`` and ``simulate batch`` do); the spot price is the
    cheapest such spot offer, maybe elsewhere. Before, any offer priced a production service: L40S at a
    marketplace host's $0.38/GPU-h against $0.85 for the cheapest production offer.

    The host must also hold the recommender's RAM and vCPU floor (:class:`gpufleet.recommend.deploy.
    HostRules`: RAM >= the node's GPUs x ``weights_per_gpu_gib`` + 8 GiB, vCPUs >= 2 + GPUs for serving), as
    ``recommend`` does: an H100 was priced at a host of 2 vCPUs and 4 GB RAM, which cannot load 15 GiB of
    weights through host memory. Offers with unknown RAM or vCPUs are left to the tier (production drops
    them)."""
    from gpufleet.recommend.candidates import eligible_mask
    from gpufleet.recommend.deploy import DEFAULT_HOST_RULES
    from gpufleet.recommend.types import Workload

    def host_ok(o: Any) -> bool:
        g = int(o.gpu_count)
        ram_need = DEFAULT_HOST_RULES.ram_needed_gib(weights_per_gpu_gib * g)
        cpu_need = DEFAULT_HOST_RULES.vcpus_needed(g, training=False)
        return (o.ram_gib is None or o.ram_gib >= ram_need - 1e-9) and (
            o.vcpus is None or o.vcpus >= cpu_need - 1e-9
        )

    if tier not in PRICE_TIERS:
        raise InputError(f"tier {tier!r} is unknown. Allowed: {', '.join(PRICE_TIERS)}.")
    table = load_offers().filter(gpu=gpu, provider=provider) if provider else load_offers().filter(gpu=gpu)
    w = Workload(name="autoscale replica", model=model, task="inference", precision="bf16", tier=tier)
    records = table.records()
    whole = [
        o
        for o, keep in zip(records, eligible_mask(table, w), strict=True)
        if keep and o.gpu_count >= 1 and host_ok(o)
    ]
    if not whole:
        where = f" at {provider}" if provider else ""
        offered = sum(1 for o in records if o.gpu_count >= 1)
        raise InfeasibleError(
            f"no catalog offer of whole {gpu} GPUs{where} passes the {tier} tier ({offered} offer(s) of it "
            "in all, marketplace or community hosts and stale prices left out); choose another GPU, or price "
            "the replica at a given price (price_usd_per_replica_hour) or at tier batch/dev."
        )
    od = min(whole, key=lambda o: (o.price_on_demand_usd_per_hour / o.gpu_count, o.provider, o.region))
    spots = [o for o in whole if o.price_spot_usd_per_hour is not None]
    spot_price, spot_provider = None, od.provider
    if spots:
        so = min(
            spots, key=lambda o: ((o.price_spot_usd_per_hour or 0.0) / o.gpu_count, o.provider, o.region)
        )
        spot_price = (so.price_spot_usd_per_hour or 0.0) / so.gpu_count * gpus
        spot_provider = so.provider
    offer = f"{od.provider}/{od.region}/{od.instance_type}"
    return od.price_on_demand_usd_per_hour / od.gpu_count * gpus, spot_price, offer, spot_provider


def _check_trace_context(trace: RequestTrace, model: str) -> None:
    """:class:`InputError` when a request's prompt plus output exceed the model's maximum context: a serving
    engine refuses it (vLLM answers HTTP 400), so replaying it as served would be a silent wrong answer. The
    positions used are input + output - 1 (:func:`gpufleet.validation.check_context`)."""
    from gpufleet.errors import GpufleetError
    from gpufleet.models import resolve_model

    try:
        limit = resolve_model(model).max_position_embeddings
    except GpufleetError:
        return  # an unknown model is reported by the estimator
    total = trace.input_tokens + trace.output_tokens
    k = int(np.argmax(total))
    if limit > 0 and total[k] - 1 > limit:
        over = int(np.count_nonzero(total - 1 > limit))
        raise InputError(
            f"The trace {trace.name}, request {k + 1}: input_tokens {trace.input_tokens[k]:,.0f} + "
            f"output_tokens {trace.output_tokens[k]:,.0f} = {total[k]:,.0f} tokens, beyond the "
            f"{limit:,}-token maximum context of {model} ({over:,} request(s) of {len(total):,} exceed it); "
            "an engine refuses such requests. Remove or truncate those rows, or replay with a model of a "
            "longer context (or its "
            "config.json with the extended max_position_embeddings)."
        )


@checked_arguments("deployment sizing")
def deployment_for(
    trace: RequestTrace,
    *,
    model: str,
    gpu: str | None = None,
    precision: str = "bf16",
    gpus_per_replica: int | None = None,
    provider: str | None = None,
    software: str = "vllm",
    cold_start: ColdStart | None = None,
    price_usd_per_replica_hour: float | None = None,
    tier: str = "production",
) -> Deployment:
    """A deployment of ``model`` sized for ``trace``'s mean request; ``gpu`` None: the top pick of
    :func:`gpufleet.recommend` for the trace's mean lengths and rate."""
    gpus_per_replica = check_count(
        "gpus_per_replica", gpus_per_replica, flag="--gpus-per-replica", allow_none=True
    )
    if cold_start is not None and not isinstance(cold_start, ColdStart):  # -1 was stored as the cold start
        raise InputError(
            f"cold_start must be a ColdStart or None (sized from the weights), got {cold_start!r:.60}."
        )
    price_usd_per_replica_hour = check_number(
        "price_usd_per_replica_hour", price_usd_per_replica_hour, allow_none=True, maximum=1e6
    )
    _check_trace_context(trace, model)
    mean_in = float(np.mean(trace.input_tokens))
    mean_out = float(np.mean(trace.output_tokens))
    if gpu is None:
        from gpufleet.recommend.api import recommend

        rec = recommend(
            model=model,
            task="inference",
            precision=precision,
            input_len_tokens=max(1, round(mean_in)),
            output_len_tokens=max(1, round(mean_out)),
            target_requests_per_s=trace.mean_rate_per_s,
            pricing="on_demand",
            limit=1,
            providers=(provider,) if provider else (),
            tier=tier,
        )
        if rec.best is None:
            raise InfeasibleError(f"recommend found no offer for {model} ({rec.message}); pass --gpu.")
        top = rec.best
        gpu, gpus_per_replica = top.gpu, top.tp * top.pp
    service = service_from_estimator(
        model=model,
        gpu=gpu,
        precision=precision,
        gpus_per_replica=gpus_per_replica,
        mean_input_tokens=mean_in,
        mean_output_tokens=mean_out,
        software=software,
    )
    wpg = gib_from_bytes(service.weights_bytes) / service.gpus_per_replica  # host RAM floor [GiB per GPU]
    if price_usd_per_replica_hour is not None:  # no catalog offer needed: a given price has no tier
        try:
            _, spot, _, prov = _price_offer(
                gpu, service.gpus_per_replica, provider, model=model, tier=tier, weights_per_gpu_gib=wpg
            )
        except InfeasibleError:
            spot, prov = None, provider or ""
        price, offer = price_usd_per_replica_hour, "given price"
    else:
        price, spot, offer, prov = _price_offer(
            gpu, service.gpus_per_replica, provider, model=model, tier=tier, weights_per_gpu_gib=wpg
        )
    return Deployment(
        service=service,
        cold_start=cold_start or cold_start_for(service.weights_bytes),
        price_usd_per_replica_hour=price,
        spot_price_usd_per_replica_hour=spot,
        offer=offer,
        provider=prov,
    )


#: the TTFT [s] a never-served request counts as in the SLO percentile (finite, so numpy interpolates)
_NEVER_S: Final = float(np.finfo(np.float64).max)


def _nothing_served(
    trace: RequestTrace,
    deployment: Deployment,
    policy: Policy,
    raw: RawRun,
    min_replicas: int,
    initial_replicas: int | None,
) -> str:
    """Why a replay served no request at all: it has no latency to report, so it is refused, not returned
    with empty percentiles."""
    if raw.rejected >= len(trace):
        return (
            f"No request of {trace.name} was served: each needs more KV cache than one replica of "
            f"{deployment.service.name} holds ({deployment.service.kv_capacity_tokens:,.0f} tokens). Serve "
            "on a GPU with more memory or more GPUs per replica (--gpus-per-replica), or cut the lengths."
        )
    return (
        f"No request of {trace.name} was served: policy {policy.name} started at {initial_replicas or 0} "
        f"replicas with min replicas {min_replicas} and never started one (a policy that scales on the load "
        "of running replicas, such as HPA, cannot scale up from zero). Set min replicas >= 1 or initial "
        "replicas >= 1, or use a policy that activates from zero on queued requests (kpa)."
    )


def _stats(x: np.ndarray) -> LatencyStats:
    return LatencyStats(
        p50_s=percentile(x, 50),
        p95_s=percentile(x, 95),
        p99_s=percentile(x, 99),
        mean_s=float(np.nanmean(x)) if np.isfinite(x).any() else math.nan,
    )


def _series(trace: RequestTrace, raw: RawRun) -> tuple[tuple[float, ...], ...]:
    end = max(raw.end_s, 1.0)
    edges = np.linspace(0.0, end, SERIES_POINTS + 1)
    counts, _ = np.histogram(trace.arrival_s, bins=edges)
    width = edges[1] - edges[0]
    mids = (edges[:-1] + edges[1:]) / 2
    idx = np.clip(np.searchsorted(raw.sample_t, mids, side="right") - 1, 0, max(len(raw.sample_t) - 1, 0))
    reps = raw.sample_replicas[idx] if len(raw.sample_t) else np.zeros_like(mids)
    ready = raw.sample_ready[idx] if len(raw.sample_t) else np.zeros_like(mids)
    return (
        tuple(mids.tolist()),
        tuple((counts / width).tolist()),
        tuple(reps.tolist()),
        tuple(ready.tolist()),
    )


def concurrency_target(policy: Policy, capacity: int) -> float:
    """In-flight requests per replica the policy steers to: its own concurrency target when it has one,
    else 70 % of the batch cap (the Knative target rule)."""
    default = KNATIVE_TARGET_UTILISATION * capacity
    if isinstance(policy, KpaPolicy):
        return policy.target_concurrency or default
    if isinstance(policy, RayServePolicy):
        return policy.target_ongoing_requests or default
    if isinstance(policy, HpaPolicy) and policy.metric == "concurrency":
        return policy.target or default
    return default


def warm_start_replicas(
    trace: RequestTrace,
    service: ServiceModel,
    window_s: float = 60.0,
    target_per_replica: float | None = None,
) -> int:
    """Replicas a deployment already runs when the trace starts: the first ``window_s`` of traffic by
    Little's law (in-flight = rate x unloaded latency) over ``target_per_replica`` in-flight requests per
    replica (default 70 % of the batch cap, the Knative target rule; :func:`simulate_autoscale` passes the
    policy's own target, so that an autoscaler starts where it would settle rather than below it)."""
    first = trace.arrival_s <= window_s
    rate = float(np.sum(first)) / window_s
    steps = service.step_table()
    latency = float(
        np.mean(
            service.prefill_time_s(trace.input_tokens[first]) + (trace.output_tokens[first] - 1) * steps[1]
        )
    )
    target = target_per_replica or KNATIVE_TARGET_UTILISATION * service.max_batch
    return max(1, math.ceil(rate * latency / target))


def _run(
    trace: RequestTrace,
    dep: Deployment,
    policy: Policy,
    *,
    min_replicas: int,
    max_replicas: int,
    spot_share: float,
    seed: int,
    initial_replicas: int | None = None,
    kv_mode: str = "paged",
) -> RawRun:
    spot = SpotSetting()
    if spot_share > 0:
        a = assumption_for(dep.provider, load_spot_assumptions())
        spot = SpotSetting(
            share=spot_share,
            mean_time_between_interruptions_s=SECONDS_PER_HOUR / a.interruptions_per_h,
            notice_s=a.notice_s,
        )
    return replay(
        trace,
        dep.service,
        policy,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        cold_start_s=dep.cold_start.total_s,
        spot=spot,
        seed=seed,
        initial_replicas=initial_replicas,
        kv_mode=kv_mode,
    )


def _cost(dep: Deployment, raw: RawRun) -> float:
    od_h = (raw.replica_seconds - raw.spot_replica_seconds) / SECONDS_PER_HOUR
    spot_h = raw.spot_replica_seconds / SECONDS_PER_HOUR
    spot_price = dep.spot_price_usd_per_replica_hour
    if spot_h > 0 and spot_price is None:
        raise InputError(f"the offer {dep.offer} has no spot price; set spot share 0 or choose a provider.")
    return od_h * dep.price_usd_per_replica_hour + spot_h * (spot_price or 0.0)


def _judge(trace: RequestTrace, raw: RawRun, slo: ServiceLevel) -> tuple[float, float, float]:
    """(p95 TTFT, p95 TPOT, SLO attainment) over every request of ``trace``: one never served counts as
    an infinite latency (a miss), as in the MLPerf Inference server scenario, where the bound holds over all
    queries issued."""
    ttft = raw.first_token_s - trace.arrival_s
    out = trace.output_tokens
    tpot = np.where(out > 1, (raw.done_s - raw.first_token_s) / np.maximum(out - 1, 1), 0.0)
    tpot[~np.isfinite(raw.done_s)] = np.inf
    ttft = np.where(np.isfinite(ttft), ttft, np.inf)

    def p95(x: np.ndarray) -> float:
        v = float(np.percentile(np.where(np.isfinite(x), x, _NEVER_S), 95))
        return math.inf if v >= _NEVER_S else v

    ok = (ttft <= slo.ttft_p95_s) & (tpot <= slo.tpot_p95_s)
    return p95(ttft), p95(tpot), float(np.mean(ok))


@checked_arguments("static peak sizing")
def static_peak(
    trace: RequestTrace,
    dep: Deployment,
    *,
    slo_ttft_s: float,
    slo_tpot_s: float = DEFAULT_SLO_TPOT_S,
    slo_attainment: float | None = None,
    seed: int = 0,
    max_replicas: int = 256,
    kv_mode: str = "paged",
) -> StaticPeak:
    """The smallest fixed replica count meeting every SLO set (p95 TTFT, p95 TPOT, attainment when given;
    bisection: more replicas never raise latency)."""
    slo = ServiceLevel(ttft_p95_s=slo_ttft_s, tpot_p95_s=slo_tpot_s, attainment=slo_attainment)

    def run(n: int) -> StaticPeak:
        raw = _run(
            trace,
            dep,
            StaticPolicy(replicas=n),
            min_replicas=n,
            max_replicas=n,
            spot_share=0.0,
            seed=seed,
            kv_mode=kv_mode,
        )
        ttft, tpot, att = _judge(trace, raw, slo)
        gaps = slo.gaps(ttft, tpot, att)
        return StaticPeak(
            replicas=n,
            cost_usd=_cost(dep, raw),
            ttft_p95_s=ttft,
            tpot_p95_s=tpot,
            slo_attainment=att,
            meets_slo=not gaps,
            slo_gaps=gaps,
        )

    lo, hi = 1, 1
    cur = run(hi)
    while not cur.meets_slo and hi < max_replicas:
        lo, hi = hi + 1, min(hi * 2, max_replicas)
        cur = run(hi)
    if not cur.meets_slo:
        return cur
    best = cur
    while lo < best.replicas:
        mid = (lo + best.replicas) // 2
        r = run(mid)
        if r.meets_slo:
            best = r
        else:
            lo = mid + 1
    return best


def _not_comparable(policy_gaps: tuple[str, ...], peak: StaticPeak) -> str | None:
    """Why the policy's cost is not compared with the static peak's (None: it is): a saving is stated only
    against a baseline meeting the same SLOs, by a policy that meets them too (FinOps Foundation: savings
    are measured against a baseline that delivers the same service)."""
    if not peak.meets_slo:
        return (
            f"no fixed count up to {peak.replicas} replicas meets the SLOs ({'; '.join(peak.slo_gaps)} at "
            f"{peak.replicas}): no baseline at equal service"
        )
    if policy_gaps:
        return f"the policy misses the SLOs the baseline meets: {'; '.join(policy_gaps)}"
    if peak.cost_usd <= 0:
        return "the baseline costs nothing"
    return None


@checked_arguments("autoscaling simulation")
def simulate_autoscale(
    trace: RequestTrace,
    deployment: Deployment,
    policy: Policy,
    *,
    min_replicas: int = 1,
    max_replicas: int = 64,
    spot_share: float = 0.0,
    slo_ttft_s: float = DEFAULT_SLO_TTFT_S,
    slo_tpot_s: float = DEFAULT_SLO_TPOT_S,
    slo_attainment: float | None = None,
    seed: int = 0,
    rate_factor: float = 1.0,
    compare_static_peak: bool = True,
    initial_replicas: int | None = None,
    kv_mode: str = "paged",
) -> AutoscaleResult:
    """Replay ``trace`` under ``policy`` (module doc); ``rate_factor`` records how the trace was scaled.

    ``initial_replicas`` None: static and scheduled policies start at their own count, the others warm at
    :func:`warm_start_replicas` (a deployment that was running before the trace window).
    ``slo_ttft_s`` and ``slo_tpot_s`` are p95 targets; ``slo_attainment`` (a fraction, None: not set) the
    least share of requests meeting both. A saving against the static peak is stated only when both meet
    every one of them (``not_comparable`` says why not, with the gap).
    """
    min_replicas = check_count(
        "min_replicas", min_replicas, minimum=0, maximum=MAX_REPLICAS, flag="--min-replicas"
    )  # type: ignore[assignment]
    max_replicas = check_count("max_replicas", max_replicas, maximum=MAX_REPLICAS, flag="--max-replicas")  # type: ignore[assignment]
    initial_replicas = check_count(
        "initial_replicas", initial_replicas, minimum=0, maximum=MAX_REPLICAS, allow_none=True
    )
    spot_share = check_number("spot_share", spot_share, allow_zero=True, maximum=1.0, flag="--spot-share")  # type: ignore[assignment]
    slo_ttft_s = check_number("slo_ttft_s", slo_ttft_s, maximum=MAX_SLO_S, flag="--slo-ttft (s)")  # type: ignore[assignment]
    slo_tpot_s = check_number("slo_tpot_s", slo_tpot_s, maximum=MAX_SLO_S, flag="--slo-tpot (s)")  # type: ignore[assignment]
    if (
        isinstance(slo_attainment, int | float)
        and not isinstance(slo_attainment, bool)
        and 1 < slo_attainment <= 100
    ):
        raise InputError(
            f"--slo-attainment {slo_attainment:g}: the attainment target is a fraction from 0 to 1 (the "
            "share of requests meeting both TTFT and TPOT SLOs); for "
            f"{slo_attainment:g} % give {slo_attainment / 100:g}."
        )
    slo_attainment = check_number(
        "slo_attainment", slo_attainment, maximum=1.0, flag="--slo-attainment (fraction)", allow_none=True
    )
    rate_factor = check_number("rate_factor", rate_factor, maximum=MAX_RATE_FACTOR, flag="--rate")  # type: ignore[assignment]
    seed = check_count("seed", seed, minimum=0, maximum=2**63 - 1, flag="--seed")  # type: ignore[assignment]
    span_s = float(trace.arrival_s[-1] - trace.arrival_s[0]) if len(trace.arrival_s) else 0.0
    if span_s > MAX_TRACE_SPAN_S:
        raise InputError(
            f"The trace spans {span_s / SECONDS_PER_DAY:,.1f} days, more than the "
            f"{MAX_TRACE_SPAN_S / SECONDS_PER_DAY:,.0f} days "
            "a replay simulates. Cut the trace to a shorter window."
        )
    if span_s <= 0:
        raise InputError(
            f"The trace {trace.name} spans 0 s: its {len(trace.arrival_s):,} request(s) all arrive at "
            "the same instant, so there is no load over time to autoscale on (a constant timestamp "
            "column, or dates without a time of day, read so). Give arrival times in seconds that spread "
            "the requests over the window replayed, or use `gpufleet estimate infer` for one burst."
        )
    if not 0 <= min_replicas <= max_replicas or max_replicas < 1:
        raise InputError(f"replicas: need 0 <= min ({min_replicas}) <= max ({max_replicas}) and max >= 1.")
    if not 0 <= spot_share <= 1:
        raise InputError(f"spot share {spot_share} must be in [0, 1].")
    if slo_ttft_s <= 0 or slo_tpot_s <= 0:
        raise InputError("SLOs must be > 0 s.")
    if spot_share > 0 and deployment.spot_price_usd_per_replica_hour is None:
        raise InputError(
            f"no catalog offer of this GPU has a spot price; use --spot-share 0 ({deployment.offer})."
        )
    if initial_replicas is None and policy.name not in ("static", "scheduled"):
        initial_replicas = warm_start_replicas(
            trace,
            deployment.service,
            target_per_replica=concurrency_target(policy, deployment.service.max_batch),
        )
    raw = _run(
        trace,
        deployment,
        policy,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        spot_share=spot_share,
        seed=seed,
        initial_replicas=initial_replicas,
        kv_mode=kv_mode,
    )
    arrival = trace.arrival_s
    ttft = raw.first_token_s - arrival
    e2e = raw.done_s - arrival
    out = trace.output_tokens
    tpot = np.where(out > 1, (raw.done_s - raw.first_token_s) / np.maximum(out - 1, 1), 0.0)
    tpot[~np.isfinite(raw.done_s)] = np.nan
    if not np.isfinite(ttft).any():
        raise InfeasibleError(_nothing_served(trace, deployment, policy, raw, min_replicas, initial_replicas))
    slo = ServiceLevel(ttft_p95_s=slo_ttft_s, tpot_p95_s=slo_tpot_s, attainment=slo_attainment)
    all_ttft_p95, all_tpot_p95, attainment = _judge(trace, raw, slo)
    gaps = slo.gaps(all_ttft_p95, all_tpot_p95, attainment)
    cost = _cost(deployment, raw)
    peak = (
        static_peak(
            trace,
            deployment,
            slo_ttft_s=slo_ttft_s,
            slo_tpot_s=slo_tpot_s,
            slo_attainment=slo_attainment,
            seed=seed,
            kv_mode=kv_mode,
        )
        if compare_static_peak
        else None
    )
    not_comparable = _not_comparable(gaps, peak) if peak is not None else None
    ttft_stats = _stats(ttft)
    t, rate, reps, ready = _series(trace, raw)
    kv_note = (
        "paged KV (grown per token, newest request preempted and recomputed when the pool is full)"
        if kv_mode == "paged"
        else "KV reserved for input + output at admission"
    )
    notes = [
        f"Replica speed sampled from the gpufleet estimator at the trace's mean context; {kv_note}.",
        f"Cold start {deployment.cold_start.total_s:.0f} s (provisioning + image pull + weight load + "
        "warm-up).",
    ]
    if raw.rejected:
        notes.append(
            f"{raw.rejected} requests need more KV than a replica holds "
            f"({deployment.service.kv_capacity_tokens:,.0f} tokens) and were never served."
        )
    if min_replicas == 0 and deployment.cold_start.total_s > slo_ttft_s:
        # scale to zero only where a cold start fits the latency SLO (Knative KPA scale-to-zero, KEDA
        # activation; cold starts of 15 s-5 min, fleet-anchors F): after any quiet spell longer than the
        # policy's scale-down window the next request waits the whole cold start
        notes.append(
            "Scale to zero (min replicas 0): a request after a quiet spell waits the "
            f"{deployment.cold_start.total_s:.0f} s cold start, above the {slo_ttft_s:g} s TTFT SLO; keep "
            "min replicas >= 1 for a latency SLO."
        )
    never = int(np.sum(~np.isfinite(ttft)))
    if never:
        notes.append(
            f"{never} of {len(trace)} requests never got a first token; they count as SLO misses "
            "(latency percentiles are over the served requests)"
            + (
                "; with min replicas 0 the policy must scale up from zero on queued requests (KEDA "
                "activation, Knative KPA), which HPA alone does not"
                if min_replicas == 0
                else ""
            )
            + "."
        )
    if trace.dropped:
        notes.append(f"{trace.dropped} failed requests (0 output tokens) dropped from the trace.")
    seconds = raw.replica_seconds
    return AutoscaleResult(
        trace=trace.name,
        requests=len(trace),
        duration_s=trace.duration_s,
        rate_factor=rate_factor,
        deployment=deployment.service.name,
        offer=deployment.offer,
        policy=policy.name,
        policy_params={k: v for k, v in asdict(policy).items() if k != "name"},
        seed=seed,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        cold_start=deployment.cold_start,
        spot_share=spot_share,
        ttft=ttft_stats,
        tpot=_stats(tpot),
        e2e=_stats(e2e),
        queue_wait=_stats(raw.admit_s - arrival),
        slo_ttft_s=slo_ttft_s,
        slo_tpot_s=slo_tpot_s,
        slo_attainment=attainment,
        slo_attainment_target=slo_attainment,
        # a request never served is an SLO miss, not a sample to drop (MLPerf Inference server scenario: the
        # latency bound holds over all queries issued); the percentiles above describe the served ones
        meets_slo=not gaps,
        slo_gaps=gaps,
        unfinished=int(np.sum(~np.isfinite(raw.done_s))),
        replica_hours=seconds / SECONDS_PER_HOUR,
        spot_replica_hours=raw.spot_replica_seconds / SECONDS_PER_HOUR,
        cost_usd=cost,
        price_usd_per_replica_hour=deployment.price_usd_per_replica_hour,
        mean_replicas=seconds / raw.end_s if raw.end_s > 0 else 0.0,
        peak_replicas=int(raw.sample_replicas.max()) if len(raw.sample_replicas) else 0,
        scale_events=raw.scale_events,
        cold_start_hits=int(raw.cold_hit.sum()),
        interruptions=raw.interruptions,
        requeued=raw.requeued,
        kv_mode=kv_mode,
        preemptions=raw.preemptions,
        rejected=raw.rejected,
        static_peak=peak,
        # savings only at equal service (_not_comparable): both meet every SLO set
        savings_vs_static_peak=(
            (1.0 - cost / peak.cost_usd) if peak is not None and not_comparable is None else None
        ),
        not_comparable=not_comparable,
        series_t_s=t,
        series_arrivals_per_s=rate,
        series_replicas=reps,
        series_ready=ready,
        ttft_cdf=cdf_points(ttft),
        e2e_cdf=cdf_points(e2e),
        notes=tuple(notes),
    )
