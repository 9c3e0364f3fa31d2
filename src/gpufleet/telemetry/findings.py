"""Findings per GPU, node and workload, in AWS Compute Optimizer's vocabulary, with priced options.

Signals (fleet-anchors C.4): compute = SM_ACTIVE; without it GR_ENGINE_ACTIVE, then GPU_UTIL, both flagged
as an *upper bound* (GPU_UTIL is a kernel-time flag: 100 % with one busy SM). Memory = FB_USED p99 against the
capacity (memory.total, used + free, or the spec). Memory bandwidth = DRAM_ACTIVE; power = draw / limit.

Rules (knobs in :class:`Thresholds`; percentiles from :mod:`gpufleet.telemetry.analyze`):
- ``InsufficientData``: observed for fewer than ``min_observed_hours`` (30 h, Compute Optimizer's minimum):
  no options, no savings.
- ``Idle``: compute at the percentile < ``idle_compute`` (nothing useful runs) and memory p99 below
  ``idle_max_memory`` of capacity (no process holds the GPU); with memory held it is ``Overprovisioned``.
- ``Underprovisioned``: compute >= ``under_compute``, memory p99 >= ``under_memory`` of capacity, or DRAM
  active >= ``under_bandwidth``.
- ``Overprovisioned``: compute < ``over_compute`` (and not under-provisioned); memory and bandwidth reasons
  added when they are low too.
- ``Optimized``: otherwise.
Options, priced from the catalog with a 0-4 performance risk, come from :mod:`gpufleet.telemetry.options`:
release the GPU (idle), a MIG slice, a smaller/cheaper GPU, a larger GPU (under-provisioned), fewer GPUs per
node, a commitment price model.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Final

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.telemetry.analyze import GpuStats, Window
from gpufleet.telemetry.finding_types import (
    FINDINGS,
    REASON_CODES,
    UPPER_BOUND_CAVEAT,
    FleetFindings,
    GpuFinding,
    GroupFinding,
    Option,
    Thresholds,
)
from gpufleet.telemetry.inventory import (
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
from gpufleet.units import HOURS_PER_MONTH, gib_from_mib

_risk = performance_risk  # kept for callers of the old private name


def _compute(st: GpuStats) -> tuple[str, float | None, float | None, tuple[str, ...]]:
    m = st.metrics
    for name, scale in (("sm_active_ratio", 1.0), ("gr_engine_active_ratio", 1.0), ("gpu_util_pct", 0.01)):
        if name in m:
            caveat = () if name == "sm_active_ratio" else (UPPER_BOUND_CAVEAT.format(signal=name),)
            return name, m[name].p_hi * scale, m[name].mean * scale, caveat
    return "none", None, None, ("no compute metric (SM_ACTIVE, GR_ENGINE_ACTIVE or GPU_UTIL) in the window",)


def _capacity_gib(st: GpuStats, spec: AcceleratorSpec | None) -> float | None:
    m = st.metrics
    if st.mig_profile and spec is not None:
        from gpufleet.telemetry.mig import mig_profiles

        prof = next((p for p in mig_profiles().get(spec.id, ()) if p.profile == st.mig_profile), None)
        if prof is not None:
            return prof.memory_gib
    if "fb_total_mib" in m:
        return gib_from_mib(m["fb_total_mib"].max)
    if "fb_used_mib" in m and "fb_free_mib" in m:
        # memory.total = used + free + reserved (nvidia-smi; fleet-anchors C.5): dcgm-exporter's default
        # counters carry FB_RESERVED but not FB_TOTAL (C.1)
        reserved = m["fb_reserved_mib"].mean if "fb_reserved_mib" in m else 0.0
        return gib_from_mib(m["fb_used_mib"].mean + m["fb_free_mib"].mean + reserved)
    return spec.memory_gib if spec else None


def classify(
    st: GpuStats, th: Thresholds, window: Window, inventory: Sequence[InventoryEntry] = ()
) -> GpuFinding:
    """The finding of one GPU (see the module docstring for the rules)."""
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
    under: list[str] = []
    over: list[str] = []
    if compute is not None:
        if compute >= th.under_compute:
            under.append("GPUUnderprovisioned")
        elif compute < th.over_compute:
            over.append("GPUOverprovisioned")
    if mem_share is not None:
        if mem_share >= th.under_memory:
            under.append("GPUMemoryUnderprovisioned")
        elif mem_share < th.over_memory:
            over.append("GPUMemoryOverprovisioned")
    if dram is not None:
        if dram >= th.under_bandwidth:
            under.append("GPUMemoryBandwidthUnderprovisioned")
        elif dram < th.over_bandwidth:
            over.append("GPUMemoryBandwidthOverprovisioned")
    if power is not None and power < th.over_power:
        over.append("GPUPowerOverprovisioned")
    reasons: tuple[str, ...]
    holds_memory = mem_share is not None and mem_share >= th.idle_max_memory
    if st.hours < th.min_observed_hours:
        # Compute Optimizer recommends nothing below 30 h of metrics in the lookback (ug/requirements)
        finding, reasons = "InsufficientData", ()
        caveats = (
            *caveats,
            f"insufficient data: {st.hours:.1f} h observed in the window, {th.min_observed_hours:g} h needed "
            "(AWS Compute Optimizer's minimum); no finding or savings until more telemetry is stored",
        )
    elif compute is not None and compute < th.idle_compute and not holds_memory:
        finding, reasons = "Idle", ("GPUOverprovisioned",)
    elif compute is not None and compute < th.idle_compute:
        # near-zero compute while a process holds the memory (a loaded model waiting for traffic): not idle,
        # releasing the GPU would kill that process (FB used = memory of active contexts, fleet-anchors C.5)
        finding, reasons = "Overprovisioned", tuple(dict.fromkeys(("GPUOverprovisioned", *over)))
        caveats = (
            *caveats,
            f"compute near zero but {mem:.1f} GiB held by a running process: not called idle; scale it "
            "to zero only where a cold start fits the latency SLO",
        )
    elif under:
        finding, reasons = "Underprovisioned", tuple(under)
    elif "GPUOverprovisioned" in over:
        finding, reasons = "Overprovisioned", tuple(over)
    else:
        finding, reasons = "Optimized", ()
    hours = st.hours
    cost_usd = None if cost.price_usd_per_gpu_hour is None else cost.price_usd_per_gpu_hour * hours
    if cost.price_basis == "catalog median":
        caveats = (*caveats, "price: catalog median for this GPU (no inventory or instance labels)")
    if cost.price_basis == "unknown":
        caveats = (*caveats, "price unknown: the GPU model is not in the catalog; give an inventory file")
    f = ObservedNeeds(
        finding=finding, compute_p=compute, memory_p99_gib=mem, dram_active_p=dram, memory_peak_gib=mem_peak
    )
    options = gpu_options(st, f, spec, cost, th, window) if finding != "InsufficientData" else []
    u_now = max(x for x in (compute or 0.0, mem_share or 0.0, dram or 0.0))
    return GpuFinding(
        gpu_key=st.gpu_key,
        host=st.host,
        gpu_index=st.gpu_index,
        model=st.model,
        gpu=spec.id if spec else cost.gpu,
        mig_profile=st.mig_profile,
        namespace=st.namespace,
        workload=st.pod or st.job,
        team=cost.team or st.namespace,
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
        current_performance_risk=current_risk_level(u_now),
        options=tuple(options),
        caveats=caveats,
        memory_peak_gib=mem_peak,
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
    if level == "node":
        if all(g.finding == "Idle" for g in members):
            worst = "Idle"
        needed = gpus_needed(members)
        fewer = fewer_gpus_option(members, needed) if 0 < needed < len(members) else None
        if fewer is not None:
            options = (fewer,)
            if not any(g.finding == "Underprovisioned" for g in members):
                worst = "Overprovisioned"
    return GroupFinding(
        level=level,
        name=name,
        team=team,
        gpus=len(members),
        finding=worst,
        reason_codes=reasons,
        idle_gpus=sum(g.idle for g in members),
        cost_usd_per_month=sum(costs) if costs else None,
        savings_usd_per_month=savings,
        options=options,
    )


def find(
    stats: Sequence[GpuStats],
    window: Window,
    thresholds: Thresholds | None = None,
    inventory: Sequence[InventoryEntry] = (),
) -> FleetFindings:
    """Findings for every GPU, node and workload in ``stats``."""
    th = thresholds or Thresholds()
    check_inventory_matches(inventory, [(s.host, s.gpu_uuid) for s in stats])
    gpus = tuple(classify(s, th, window, inventory) for s in stats)
    by_host: dict[str, list[GpuFinding]] = defaultdict(list)
    by_work: dict[str, list[GpuFinding]] = defaultdict(list)
    for g in gpus:
        if g.gpu_index >= 0:
            by_host[g.host].append(g)
        if g.workload:
            by_work[f"{g.namespace or '-'}/{g.workload}"].append(g)
    shares: dict[str, list[float]] = defaultdict(list)
    for g in gpus:
        mig = next((o for o in g.options if o.kind == "mig_slice"), None)
        if mig is not None and g.gpu and mig.gpu_share is not None:
            shares[g.gpu].append(mig.gpu_share)
    # First-fit bound: whole GPUs needed to hold every MIG-able workload's slice (slices are sevenths or
    # quarters).
    packed = {k: (len(v), math.ceil(sum(v) - 1e-9)) for k, v in shares.items()}
    return FleetFindings(
        window=window,
        thresholds=th,
        gpus=gpus,
        nodes=tuple(_group("node", h, m) for h, m in sorted(by_host.items())),
        workloads=tuple(_group("workload", w, m) for w, m in sorted(by_work.items())),
        consolidation=packed,
    )


__all__ = [
    "FINDINGS",
    "REASON_CODES",
    "FleetFindings",
    "GpuFinding",
    "GroupFinding",
    "Option",
    "Thresholds",
    "classify",
    "find",
]
