"""Findings per GPU, node and workload, in AWS Compute Optimizer's vocabulary, with priced options.

Signals (fleet-anchors C.4): compute = SM_ACTIVE; without it GR_ENGINE_ACTIVE, then GPU_UTIL, both flagged
as an *upper bound* (GPU_UTIL is a kernel-time flag: 100 % with one busy SM). Memory = FB_USED p99 against the
capacity (memory.total, used + free, or the spec). Memory bandwidth = DRAM_ACTIVE; power = draw / limit.

Rules (knobs in :class:`Thresholds`; percentiles from :mod:`gpufleet.telemetry.analyze`):
- ``InsufficientData``: observed for fewer than ``min_observed_hours`` (30 h, Compute Optimizer's minimum):
  no options, no savings.
- ``Idle``: compute at the percentile < ``idle_compute`` (nothing useful runs) and memory p99 below
  ``idle_max_memory`` of capacity (no process holds the GPU); with memory held it is ``Overprovisioned``.
- ``Underprovisioned``: memory p99 >= ``under_memory`` of capacity while the GPU computes and no serving
  engine's KV-cache gauge says otherwise (an engine's pre-allocation is not pressure), or serving evidence
  of the GPU's workload (vLLM/TGI/SGLang: requests waiting, KV cache near full, preemptions, TTFT or TPOT
  above the SLO), or training step-time evidence (the job's step-time gauge: slower than the estimator's
  p90 for its GPU when the inventory names what it trains, slowing down over the run, or stalling:
  percentile/median spread).
  Compute (SM_ACTIVE, GPU_UTIL) or DRAM activity near 100 % alone is **never** under-provisioned: a busy GPU
  is the goal; it is Optimized, with its evidence listed.
- ``Overprovisioned``: compute < ``over_compute`` (and not under-provisioned); memory and bandwidth reasons
  added when they are low too. Also a GPU busy only in bursts (:func:`_bursts`: compute mean below
  ``burst_duty_max`` of its p99 or percentile, e.g. a nightly job): held idle between jobs; never ``Idle``
  (the jobs need it while they run), and its options are sized on the bursts' level.
- ``Optimized``: otherwise.
Options, priced from the catalog with a 0-4 performance risk, come from :mod:`gpufleet.telemetry.options`:
release the GPU (idle), a MIG slice, a smaller/cheaper GPU, a larger GPU (under-provisioned), fewer GPUs per
node, a commitment price model.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import InputError
from gpufleet.estimate.types import Interval
from gpufleet.telemetry.analyze import GpuStats, Window
from gpufleet.telemetry.analyze_workloads import ServingStats, WorkloadStats
from gpufleet.telemetry.finding_types import (
    FINDINGS,
    REASON_CODES,
    UPPER_BOUND_CAVEAT,
    FleetFindings,
    GpuFinding,
    GroupFinding,
    Option,
    Thresholds,
    WorkloadFinding,
)
from gpufleet.telemetry.inventory import (
    GpuCost,
    InventoryEntry,
    check_inventory_matches,
    resolve_cost,
    spec_for_model,
)
from gpufleet.telemetry.options import (
    ObservedNeeds,
    current_risk_level,
    fewer_gpus_option,
    gpu_options,
    gpus_needed,
    performance_risk,
)
from gpufleet.telemetry.workloads import TIERS, TrainingJob, WorkloadId, WorkloadRule, workload_of
from gpufleet.units import HOURS_PER_DAY, HOURS_PER_MONTH, gib_from_mib

if TYPE_CHECKING:
    from gpufleet.telemetry.mig import MigProfile

_risk = performance_risk  # kept for callers of the old private name
_WEEK_H: Final = 7 * HOURS_PER_DAY  # hours in a week: the longest common job cycle short of monthly


def _compute(st: GpuStats) -> tuple[str, float | None, float | None, tuple[str, ...]]:
    m = st.metrics
    for name, scale in (("sm_active_ratio", 1.0), ("gr_engine_active_ratio", 1.0), ("gpu_util_pct", 0.01)):
        if name in m:
            caveat = () if name == "sm_active_ratio" else (UPPER_BOUND_CAVEAT.format(signal=name),)
            mean = m[name].mean * scale
            # NaN: unknown (a Prometheus series with a NaN sample has no sum_over_time; promql._Acc)
            return name, m[name].p_hi * scale, mean if math.isfinite(mean) else None, caveat
    return "none", None, None, ("no compute metric (SM_ACTIVE, GR_ENGINE_ACTIVE or GPU_UTIL) in the window",)


def _bursts(
    st: GpuStats,
    signal: str,
    compute: float | None,
    compute_mean: float | None,
    serving: ServingStats | None,
    th: Thresholds,
    pct: str,
) -> tuple[float | None, str]:
    """(the compute level its bursts run at, evidence) when the GPU works only in bursts, else (None, '').

    The level is the larger of the window's percentile and the p99 (a job running 1 h a night is 4 % of the
    samples: above the p95, inside the p99; the Prometheus path pushes no compute p99 down, so there it is the
    percentile). Bursty: the level is at least ``over_compute`` and the mean below ``burst_duty_max`` of it
    (the mean is the level times the share of time the GPU works, plus ~0 for the rest). A serving engine
    that exports its metrics is judged by them (its peaks are what the SLO needs), not by this rule."""
    if compute is None or compute_mean is None or signal not in st.metrics:
        return None, ""
    if serving is not None and serving.is_serving:
        return None, ""
    scale = 0.01 if signal == "gpu_util_pct" else 1.0
    p99 = st.metrics[signal].p99 * scale
    level, at = (p99, "p99") if math.isfinite(p99) and p99 > compute else (compute, pct)
    if level < th.over_compute or compute_mean >= th.burst_duty_max * level:
        return None, ""
    return level, (
        f"busy in bursts: compute mean {compute_mean:.0%} against {at} {level:.0%}, so it works about "
        f"{compute_mean / level:.0%} of the observed time (< {th.burst_duty_max:.0%}) and is held idle "
        "between jobs (nightly or one-off jobs): share it (time-slicing, a job queue) or run the jobs on "
        "scheduled capacity; not Idle, since the jobs need a GPU of this size while they run"
    )


def _mig_profile(st: GpuStats, spec: AcceleratorSpec | None) -> MigProfile | None:
    """The MIG profile of a MIG instance (``GPU_I_PROFILE``) on its GPU, when the table knows it."""
    if not st.mig_profile or spec is None:
        return None
    from gpufleet.telemetry.mig import mig_profiles

    return next((p for p in mig_profiles().get(spec.id, ()) if p.profile == st.mig_profile), None)


def _mig_priced(cost: GpuCost, prof: MigProfile | None) -> tuple[GpuCost, tuple[str, ...]]:
    """A MIG instance's cost: its compute slices' share of the GPU's price (a 3g.40gb instance is 3/7 of an
    A100). Priced whole, every instance of a GPU cost the whole GPU (two 3g.40gb instances: twice the GPU)
    and releasing an idle one "saved" the whole GPU (corpus review, telem3 2026-11-29)."""
    if prof is None or cost.price_usd_per_gpu_hour is None:
        return cost, ()
    share = prof.compute_slices / prof.compute_slices_total
    od = cost.on_demand_usd_per_gpu_hour
    return dataclasses.replace(
        cost,
        price_usd_per_gpu_hour=cost.price_usd_per_gpu_hour * share,
        on_demand_usd_per_gpu_hour=None if od is None else od * share,
    ), (
        f"MIG {prof.profile}: priced at {prof.compute_slices}/{prof.compute_slices_total} of the GPU's price "
        "(its compute slices); the GPU's other slices are priced with their own instances",
    )


def _capacity_gib(st: GpuStats, spec: AcceleratorSpec | None) -> float | None:
    m = st.metrics
    prof = _mig_profile(st, spec)
    if prof is not None:
        return prof.memory_gib
    if "fb_total_mib" in m:
        return gib_from_mib(m["fb_total_mib"].max)
    if "fb_used_mib" in m and "fb_free_mib" in m:
        # memory.total = used + free + reserved (nvidia-smi; fleet-anchors C.5): dcgm-exporter's default
        # counters carry FB_RESERVED but not FB_TOTAL (C.1)
        reserved = m["fb_reserved_mib"].mean if "fb_reserved_mib" in m else 0.0
        total = m["fb_used_mib"].mean + m["fb_free_mib"].mean + reserved
        if math.isfinite(total):  # NaN: a Prometheus series with a NaN sample (promql._Acc)
            return gib_from_mib(total)
    return spec.memory_gib if spec else None


def _serving_evidence(sv: ServingStats | None, th: Thresholds, pct: str) -> tuple[list[str], list[str]]:
    """(reason codes, evidence lines) from the workload's serving-engine metrics."""
    if sv is None:
        return [], [
            "no serving-engine metrics (vLLM, TGI, SGLang) or training step time for its workload: queueing, "
            "latency and step time not judged"
        ]
    reasons: list[str] = []
    ev: list[str] = []
    if sv.queue_p is not None:
        ev.append(f"requests waiting {pct} {sv.queue_p:g} (peak {sv.queue_max or 0:g})")
        if sv.queue_p >= th.serving_queue_requests:
            reasons.append("ServingQueueing")
    if sv.kv_cache_p is not None:
        ev.append(f"KV cache used {pct} {sv.kv_cache_p:.0%}")
        if sv.kv_cache_p >= th.kv_cache_pressure:
            reasons.append("ServingKVCachePressure")
    if sv.preemptions is not None:
        ev.append(f"preemptions in the window {sv.preemptions:,.0f}")
        if sv.preemptions > 0:
            reasons.append("ServingPreemptions")
    if sv.ttft_p_s is not None:
        ev.append(f"TTFT {pct} {sv.ttft_p_s:.3g} s (SLO {th.ttft_slo_s:g} s)")
        if sv.ttft_p_s > th.ttft_slo_s:
            reasons.append("ServingTTFTAboveSLO")
    if sv.tpot_p_s is not None:
        ev.append(f"TPOT {pct} {1000 * sv.tpot_p_s:.3g} ms (SLO {1000 * th.tpot_slo_s:g} ms)")
        if sv.tpot_p_s > th.tpot_slo_s:
            reasons.append("ServingTPOTAboveSLO")
    return reasons, ev


@functools.lru_cache(maxsize=256)
def expected_step_time(job: TrainingJob, gpu: str) -> Interval | str:
    """The estimator's step time of ``job`` on GPUs ``gpu`` (:func:`gpufleet.estimate.estimate_training`
    at its default layout search), or why there is none."""
    from gpufleet.errors import GpufleetError
    from gpufleet.estimate import estimate_training

    try:
        est = estimate_training(
            model=job.model,
            task=job.task,
            gpu=gpu,
            precision=job.precision,
            gpu_count=job.gpus,
            global_batch=job.global_batch,
            seq_len=job.seq_len,
        )
    except GpufleetError as exc:
        return f"no expected step time for {job.model} on {job.gpus} x {gpu}: {exc}"
    if est.step_time_s is None:
        return f"no expected step time for {job.model} on {job.gpus} x {gpu}: it does not fit in memory"
    return est.step_time_s


def _training_evidence(
    sv: ServingStats, th: Thresholds, pct: str, job: TrainingJob | None, gpu: str | None
) -> tuple[list[str], list[str], list[str]]:
    """(reason codes, evidence lines, caveats) from the workload's training step time: against the
    estimator's expected step time for its GPU when the inventory names what it trains, and against its own
    baseline (slowing down over the run, stalls)."""
    reasons: list[str] = []
    caveats: list[str] = []
    p50, p_hi = sv.step_time_p50_s or 0.0, sv.step_time_p_s or 0.0
    ev = [f"step time (slowest rank per minute) p50 {p50:.3g} s, {pct} {p_hi:.3g} s"]
    if p50 > 0 and p_hi / p50 >= th.step_time_spread:
        reasons.append("TrainingStepTimeStalls")
        ev.append(
            f"step time {pct}/p50 {p_hi / p50:.2f}x (>= {th.step_time_spread:g}x): stalls, stragglers or "
            "data-loader waits"
        )
        caveats.append(
            "step-time stalls point to a straggling rank or an input pipeline that cannot keep up: check the "
            "data loader and the slowest rank before moving to a larger GPU"
        )
    first, last, span_h = sv.step_time_first_s, sv.step_time_last_s, sv.step_time_span_h or 0.0
    if first and last is not None and span_h >= th.step_time_min_span_h:
        change = last / first - 1.0
        ev.append(
            f"step time median {first:.3g} s in the first quarter of its {span_h:.1f} h, {last:.3g} s in the "
            f"last ({change:+.0%}; degrading at >= +{th.step_time_degradation:.0%})"
        )
        if change >= th.step_time_degradation:
            reasons.append("TrainingStepTimeDegrading")
    else:
        ev.append(
            f"step-time trend not judged: {span_h:.1f} h of step time, {th.step_time_min_span_h:g} h needed"
        )
    if job is None:
        ev.append(
            "no expected step time: name the workload's training (model, gpus, global_batch, seq_len) in the "
            "inventory's workloads: entry to compare with the estimator"
        )
    elif gpu is None:
        ev.append("no expected step time: the GPU model is not in the catalog")
    else:
        est = expected_step_time(job, gpu)
        if isinstance(est, str):
            caveats.append(est)
        else:
            ev.append(
                f"expected step time on {job.gpus} x {gpu} ({job.model}, {job.precision}, batch "
                f"{job.global_batch} x {job.seq_len} tokens; gpufleet estimate): {est.central:.3g} s, "
                f"p10-p90 {est.p10:.3g}-{est.p90:.3g} s; observed p50 {p50 / est.central:.2f}x"
            )
            if p50 > est.p90:
                reasons.append("TrainingStepTimeAboveEstimate")
    return reasons, ev, caveats


def _memory_held_not_pressure(
    compute: float | None, serving: ServingStats | None, th: Thresholds, pct: str
) -> str:
    """Why memory near the capacity is not memory pressure on this GPU ('' when it may be).

    FB used is what the processes hold, not what they need: vLLM reserves ``gpu_memory_utilization`` (0.9
    by default) of the GPU at start-up for weights and KV blocks, SGLang ``mem_fraction_static``, TGI and
    JAX pre-allocate likewise, so a healthy serving GPU reads ~90 % used whatever its traffic. Memory is
    pressure (a larger GPU helps) only where work runs into it. Two cases where it cannot be read so:

    - compute below ``over_compute`` at the percentile (the bar under which the GPU is Overprovisioned on
      compute): little work runs, so none is shown to run into the memory (a loaded model waiting for
      traffic, an engine's or PyTorch's caching allocator holding freed blocks; it is Overprovisioned, and a
      larger GPU would only cost more). Before the second review of 2026-11-29 the bar was ``idle_compute``
      (5 %): an H100 pinned at 99 % memory with SM active ~5 % on average (p95 12 %) was Underprovisioned,
      risk High, with a "larger GPU" option;
    - the workload exports a serving engine's KV-cache gauge: the engine's own measure of its memory
      (``kv_cache_pressure``) decides, not the reservation.
    """
    if compute is not None and compute < th.over_compute:
        return (
            f"memory near capacity but compute {pct} {compute:.0%} (< {th.over_compute:.0%}, "
            "overprovisioned): memory held by a process that computes little (a loaded model, an engine's "
            "pre-allocation such as vLLM's gpu_memory_utilization 0.9, or a caching allocator), not memory "
            "pressure; read it as pressure only with out-of-memory errors or a serving engine's KV-cache "
            "gauge"
        )
    if serving is not None and serving.kv_cache_p is not None:
        return (
            f"memory near capacity is the serving engine's pre-allocation (vLLM reserves "
            f"gpu_memory_utilization 0.9 at start-up); its KV cache {pct} {serving.kv_cache_p:.0%} "
            f"(pressure at >= {th.kv_cache_pressure:.0%}) measures memory pressure instead"
        )
    return ""


def resolve_tier(tier: str, cost_tier: str | None, rule_tier: str | None, serving: bool) -> str:
    """The recommender's tier of a GPU or workload: the inventory's (host, then workload), else ``tier``;
    ``auto``: production for a serving workload (its users wait on it), batch otherwise (the recommender's
    default: production for serving with an SLO)."""
    if cost_tier:
        return cost_tier
    if rule_tier:
        return rule_tier
    if tier != "auto":
        return tier
    return "production" if serving else "batch"


def classify(
    st: GpuStats,
    th: Thresholds,
    window: Window,
    inventory: Sequence[InventoryEntry] = (),
    serving: ServingStats | None = None,
    *,
    tier: str = "auto",
    workload: WorkloadId | None = None,
) -> GpuFinding:
    """The finding of one GPU, or of one replica of a workload (see the module docstring for the rules)."""
    signal, compute, compute_mean, caveats = _compute(st)
    spec = spec_for_model(st.model)
    cost = resolve_cost(
        host=st.host,
        gpu_uuid=st.gpu_uuid,
        labels={"provider": st.provider, "instance_type": st.instance_type, "region": st.region},
        model=st.model,
        inventory=inventory,
    )
    if spec is None and cost.gpu:
        try:
            spec = get_spec(cost.gpu)
        except Exception:
            spec = None
    cost, mig_caveats = _mig_priced(cost, _mig_profile(st, spec))
    m = st.metrics
    cap = _capacity_gib(st, spec)
    mem = gib_from_mib(m["fb_used_mib"].p99) if "fb_used_mib" in m else None
    mem_peak = gib_from_mib(m["fb_used_mib"].max) if "fb_used_mib" in m else None
    mem_share = mem / cap if mem is not None and cap else None
    dram = m["dram_active_ratio"].p_hi if "dram_active_ratio" in m else None
    power = (
        m["power_w"].p_hi / m["power_limit_w"].max
        if "power_w" in m and "power_limit_w" in m and m["power_limit_w"].max > 0
        else None
    )
    util = m["gpu_util_pct"].p_hi / 100 if "gpu_util_pct" in m else None
    pct = f"p{100 * window.percentile:g}"
    evidence: list[str] = []
    under: list[str] = []
    over: list[str] = []
    mem_is_pressure = True  # False where memory near capacity is a reservation (_memory_held_not_pressure)
    if compute is not None:
        busy = compute >= th.under_compute
        evidence.append(
            f"compute ({signal}) {pct} {compute:.0%}, "
            + ("mean unknown (a NaN sample)" if compute_mean is None else f"mean {compute_mean:.0%}")
            + (": busy, which is the goal on a GPU, not a shortage on its own" if busy else "")
        )
        if compute < th.over_compute:
            over.append("GPUOverprovisioned")
    if mem_share is not None and mem is not None and cap:
        evidence.append(
            f"memory p99 {mem:.1f} of {cap:.1f} GiB ({mem_share:.0%}), peak {mem_peak or 0:.1f} GiB"
        )
        if mem_share >= th.under_memory:
            why_not = _memory_held_not_pressure(compute, serving, th, pct)
            if why_not:
                evidence.append(why_not)
                mem_is_pressure = False
            else:
                under.append("GPUMemoryUnderprovisioned")
        elif mem_share < th.over_memory:
            over.append("GPUMemoryOverprovisioned")
    if dram is not None:
        evidence.append(f"DRAM active {pct} {dram:.0%}")
        if dram < th.over_bandwidth:
            over.append("GPUMemoryBandwidthOverprovisioned")
    if power is not None and power < th.over_power:
        over.append("GPUPowerOverprovisioned")
    if serving is None or serving.is_serving:
        s_reasons, s_evidence = _serving_evidence(serving, th, pct)
        under += s_reasons
        evidence += s_evidence
    if serving is not None and serving.is_training:
        t_reasons, t_evidence, t_caveats = _training_evidence(
            serving, th, pct, workload.training if workload else None, spec.id if spec else cost.gpu
        )
        under += t_reasons
        evidence += t_evidence
        caveats = (*caveats, *t_caveats)
    burst, burst_why = _bursts(st, signal, compute, compute_mean, serving, th, pct)
    if burst_why:
        evidence.append(burst_why)
    reasons: tuple[str, ...]
    holds_memory = mem_share is not None and mem_share >= th.idle_max_memory
    if st.hours < th.min_observed_hours:
        # Compute Optimizer recommends nothing below 30 h of metrics in the lookback (ug/requirements)
        finding, reasons = "InsufficientData", ()
        what = "the workload (all its pods)" if workload is not None else "the window"
        caveats = (
            *caveats,
            f"insufficient data: {st.hours:.1f} h observed in {what}, {th.min_observed_hours:g} h needed "
            "(AWS Compute Optimizer's minimum); no finding or savings until more telemetry is stored",
        )
    elif (
        compute is not None and compute < th.idle_compute and not holds_memory and not under and burst is None
    ):
        finding, reasons = "Idle", ("GPUOverprovisioned",)
        if st.hours < _WEEK_H:
            # a nightly job shows in any window of 30 h or more (it is read as bursts, not Idle); a weekly
            # or monthly one may fall outside a shorter observation
            caveats = (
                *caveats,
                f"idle over the {st.hours / HOURS_PER_DAY:.1f} days observed: a job that runs less often "
                "(weekly, monthly) would not show; check its schedule before releasing the GPU, or look back "
                "14 days or more",
            )
    elif under:
        finding, reasons = "Underprovisioned", tuple(under)
    elif compute is not None and compute < th.idle_compute:
        # near-zero compute while a process holds the memory (a loaded model waiting for traffic): not idle,
        # releasing the GPU would kill that process (FB used = memory of active contexts, fleet-anchors C.5)
        finding, reasons = "Overprovisioned", tuple(dict.fromkeys(("GPUOverprovisioned", *over)))
        if burst is None:
            caveats = (
                *caveats,
                f"compute near zero but {mem or 0.0:.1f} GiB held by a running process: not called idle; "
                "scale it to zero only where a cold start fits the latency SLO",
            )
    elif "GPUOverprovisioned" in over:
        finding, reasons = "Overprovisioned", tuple(over)
    elif burst is not None:
        finding, reasons = "Overprovisioned", tuple(dict.fromkeys(("GPUOverprovisioned", *over)))
    else:
        finding, reasons = "Optimized", ()
    gpu_tier = resolve_tier(
        tier, cost.tier, workload.tier if workload else None, serving is not None and serving.is_serving
    )
    hours = st.hours
    cost_usd = None if cost.price_usd_per_gpu_hour is None else cost.price_usd_per_gpu_hour * hours
    if cost.price_basis == "catalog median":
        caveats = (*caveats, "price: catalog median for this GPU (no inventory or instance labels)")
    caveats = (*caveats, *mig_caveats)
    if cost.price_basis == "unknown":
        caveats = (*caveats, "price unknown: the GPU model is not in the catalog; give an inventory file")
    # a bursty GPU's target must run its bursts: sized on their level, not on the idle-dominated percentile
    f = ObservedNeeds(
        finding=finding,
        compute_p=compute if burst is None else burst,
        memory_p99_gib=mem,
        dram_active_p=dram,
        memory_peak_gib=mem_peak,
        burst_duty=None if burst is None or compute_mean is None else compute_mean / burst,
    )
    options = (
        gpu_options(st, f, spec, cost, th, window, tier=gpu_tier, reasons=reasons)
        if finding != "InsufficientData"
        else []
    )
    # performance risk now: memory and serving evidence, not compute (a busy GPU is not at risk by itself)
    u_now = max(
        (mem_share or 0.0) if mem_is_pressure else 0.0, (serving.kv_cache_p or 0.0) if serving else 0.0
    )
    risk = "High" if finding == "Underprovisioned" else current_risk_level(u_now)
    return GpuFinding(
        gpu_key=st.gpu_key,
        host=st.host,
        gpu_index=st.gpu_index,
        model=st.model,
        gpu=spec.id if spec else cost.gpu,
        mig_profile=st.mig_profile,
        namespace=st.namespace,
        workload=st.pod or st.job,
        team=(workload.team if workload else None) or cost.team or st.namespace,
        finding=finding,
        reason_codes=reasons,
        idle=finding == "Idle",
        compute_signal=signal,
        compute_p=compute,
        compute_mean=compute_mean,
        gpu_util_p=util,
        memory_p99_gib=mem,
        memory_capacity_gib=cap,
        dram_active_p=dram,
        power_share_p=power,
        hours=hours,
        cost=cost,
        cost_usd=cost_usd,
        cost_usd_per_month=None
        if cost.price_usd_per_gpu_hour is None
        else cost.price_usd_per_gpu_hour * HOURS_PER_MONTH,
        current_performance_risk=risk,
        options=tuple(options),
        caveats=caveats,
        memory_peak_gib=mem_peak,
        evidence=tuple(evidence),
        workload_key=workload.key if workload else None,
        tier=gpu_tier,
    )


_SEVERITY: Final = {
    "Underprovisioned": 3,
    "Idle": 2,
    "Overprovisioned": 1,
    "Optimized": 0,
    "InsufficientData": -1,
}


def _group(level: str, name: str, members: list[GpuFinding]) -> GroupFinding:
    worst = max(members, key=lambda g: _SEVERITY[g.finding]).finding
    reasons = tuple(dict.fromkeys(r for g in members for r in g.reason_codes))
    costs = [g.cost_usd_per_month for g in members if g.cost_usd_per_month is not None]
    team = next((g.team for g in members if g.team), None)
    savings = sum(g.best_savings_usd_per_month for g in members)
    options: tuple[Option, ...] = ()
    # physical GPUs: the MIG instances of one GPU share its index (two 3g.40gb instances are one GPU)
    physical: dict[int, list[GpuFinding]] = defaultdict(list)
    for g in members:
        physical[g.gpu_index].append(g)
    n_gpus = len(physical)
    idle_gpus = sum(all(g.idle for g in ms) for ms in physical.values())
    if level == "node":
        if all(g.finding == "Idle" for g in members):
            worst = "Idle"
        elif worst == "Idle":
            # some GPUs idle, the others working: the node holds GPUs its work does not use (before, a node
            # with 7 busy ranks and one idle GPU was "Idle", as if the node could be released)
            worst = "Overprovisioned"
        needed = gpus_needed(members)
        tier = "production" if any(g.tier == "production" for g in members) else (members[0].tier or "batch")
        mig = any(g.mig_profile for g in members)  # fewer GPUs counts whole GPUs, not slices
        fewer = fewer_gpus_option(members, needed, tier) if not mig and 0 < needed < len(members) else None
        if fewer is not None:
            options = (fewer,)
            if not any(g.finding == "Underprovisioned" for g in members):
                worst = "Overprovisioned"
    return GroupFinding(
        level=level,
        name=name,
        team=team,
        gpus=n_gpus,
        finding=worst,
        reason_codes=reasons,
        idle_gpus=idle_gpus,
        cost_usd_per_month=sum(costs) if costs else None,
        savings_usd_per_month=savings,
        options=options,
    )


def _workload_finding(ws: WorkloadStats, g: GpuFinding) -> WorkloadFinding:
    """A workload's finding from its per-replica finding ``g``: money scaled by the mean replicas."""
    reps = ws.replicas
    best = next((o for o in g.options if o.rank == 1), None)
    mig = next((o for o in g.options if o.kind == "mig_slice"), None)
    th_need = [
        x
        for x in (
            g.compute_p,
            None if not g.memory_capacity_gib else (g.memory_peak_gib or 0.0) / g.memory_capacity_gib,
        )
        if x is not None
    ]
    fraction = max(th_need) if th_need else None
    if g.finding == "InsufficientData":
        rec = "no recommendation (insufficient data)"
    elif g.finding == "Idle":
        rec = "release its GPUs"
    elif g.finding == "Overprovisioned":
        pick = mig or best
        rec = (
            f"run its jobs on {pick.target.removeprefix('the same ')}"
            if pick is not None and pick.kind == "schedule_bursts"
            else f"{pick.target} per replica"
            if pick is not None and pick.kind in ("mig_slice", "smaller_gpu")
            else f"a {fraction:.2f} share of one {g.gpu or 'GPU'} per replica (time-slicing or MPS)"
            if fraction is not None
            else "a smaller share of its GPU"
        )
    elif g.finding == "Underprovisioned":
        rec = best.target if best is not None else "more capacity (no larger offer at its tier)"
    else:
        rec = f"keep {g.gpu or 'its GPU'}"
    price = g.cost.price_usd_per_gpu_hour
    return WorkloadFinding(
        key=ws.id.key,
        namespace=ws.id.namespace,
        name=ws.id.name,
        source=ws.id.source,
        team=g.team,
        tier=g.tier or "batch",
        pods=ws.pods,
        gpus=ws.gpus,
        replicas=reps,
        hours=ws.replica.hours,
        gpu_hours=ws.gpu_hours,
        finding=g.finding,
        reason_codes=g.reason_codes,
        evidence=g.evidence,
        recommendation=rec,
        gpu_fraction=fraction,
        cost_usd=None if price is None else price * ws.gpu_hours,
        cost_usd_per_month=None if price is None else price * reps * HOURS_PER_MONTH,
        savings_usd_per_month=g.best_savings_usd_per_month * reps,
        replica=g,
    )


def find(
    stats: Sequence[GpuStats],
    window: Window,
    thresholds: Thresholds | None = None,
    inventory: Sequence[InventoryEntry] = (),
    *,
    workloads: Sequence[WorkloadStats] = (),
    serving: Mapping[str, ServingStats] | None = None,
    rules: Sequence[WorkloadRule] = (),
    tier: str = "auto",
) -> FleetFindings:
    """Findings for every GPU, node and workload. ``workloads`` and ``serving`` come from
    :mod:`gpufleet.telemetry.analyze_workloads` (local store) or :mod:`gpufleet.telemetry.promql`."""
    th = thresholds or Thresholds()
    if tier not in TIERS:
        raise InputError(f"--tier {tier!r} is not one of {', '.join(TIERS)}.")
    serving = serving or {}
    check_inventory_matches(inventory, [(s.host, s.gpu_uuid) for s in stats])
    gpus_l = []
    for s in stats:
        wid = workload_of(namespace=s.namespace, pod=s.pod, job=s.job, rules=rules)
        sv = serving.get(wid.key) if wid else None
        gpus_l.append(classify(s, th, window, inventory, sv, tier=tier, workload=wid))
    gpus = tuple(gpus_l)
    by_host: dict[str, list[GpuFinding]] = defaultdict(list)
    for g in gpus:
        if g.gpu_index >= 0:
            by_host[g.host].append(g)
    shares: dict[str, list[float]] = defaultdict(list)
    for g in gpus:
        mig = next((o for o in g.options if o.kind == "mig_slice"), None)
        if mig is not None and g.gpu and mig.gpu_share is not None:
            shares[g.gpu].append(mig.gpu_share)
    # First-fit bound: whole GPUs needed to hold every MIG-able workload's slice (slices are sevenths or
    # quarters).
    packed = {k: (len(v), math.ceil(sum(v) - 1e-9)) for k, v in shares.items()}
    wl = tuple(
        _workload_finding(
            ws, classify(ws.replica, th, window, inventory, serving.get(ws.id.key), tier=tier, workload=ws.id)
        )
        for ws in workloads
    )
    firsts = [s.first_ts for s in stats] + [w.replica.first_ts for w in workloads]
    lasts = [s.last_ts for s in stats] + [w.replica.last_ts for w in workloads]
    return FleetFindings(
        window=window,
        thresholds=th,
        gpus=gpus,
        nodes=tuple(_group("node", h, m) for h, m in sorted(by_host.items())),
        workloads=wl,
        consolidation=packed,
        observed_start=min(firsts) if firsts else None,
        observed_end=max(lasts) if lasts else None,
    )


__all__ = [
    "FINDINGS",
    "REASON_CODES",
    "FleetFindings",
    "GpuFinding",
    "GroupFinding",
    "Option",
    "Thresholds",
    "WorkloadFinding",
    "classify",
    "find",
    "resolve_tier",
]
