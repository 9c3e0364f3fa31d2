"""Findings per GPU, node and workload, in AWS Compute Optimizer's vocabulary, with priced options.

Signals (fleet-anchors C.4): compute = SM_ACTIVE; without it GR_ENGINE_ACTIVE, then GPU_UTIL, both flagged
as an *upper bound* (GPU_UTIL is a kernel-time flag: 100 % with one busy SM). Memory = FB_USED p99 against the
capacity (memory.total, used + free, or the spec). Memory bandwidth = DRAM_ACTIVE; power = draw / limit.

Rules (knobs in :class:`Thresholds`; percentiles from :mod:`gpufleet.telemetry.analyze`):
- ``Idle``: compute at the percentile < ``idle_compute`` (nothing useful runs).
- ``Underprovisioned``: compute >= ``under_compute``, memory p99 >= ``under_memory`` of capacity, or DRAM
  active >= ``under_bandwidth``.
- ``Overprovisioned``: compute < ``over_compute`` (and not under-provisioned); memory and bandwidth reasons
  added when they are low too.
- ``Optimized``: otherwise.
Options: release the GPU (idle), a MIG slice, a smaller/cheaper GPU, a larger GPU (under-provisioned),
fewer GPUs
per node, a commitment price model. Sizing needs = observed percentile x (1 + headroom). Each option is priced
from the catalog per GPU (on-demand basis and at the GPU's own price kind, "after discounts") and carries a
0-4 performance risk from the projected utilisation on the target: <= 0.5: 0, <= 0.65: 1, <= 0.8: 2,
<= 0.9: 3, else 4 (Compute Optimizer's 0-4 scale; our cut points).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Final

import numpy as np

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.telemetry.analyze import GpuStats, Window
from gpufleet.telemetry.inventory import GpuCost, InventoryEntry, resolve_cost, spec_for_model
from gpufleet.telemetry.mig import smallest_fitting
from gpufleet.units import HOURS_PER_MONTH, gib_from_mib

FINDINGS: Final[tuple[str, ...]] = ("Idle", "Overprovisioned", "Underprovisioned", "Optimized")
#: Compute Optimizer's GPU reason codes, plus ours for bandwidth and power in the same style.
REASON_CODES: Final[tuple[str, ...]] = (
    "GPUOverprovisioned",
    "GPUUnderprovisioned",
    "GPUMemoryOverprovisioned",
    "GPUMemoryUnderprovisioned",
    "GPUMemoryBandwidthOverprovisioned",
    "GPUMemoryBandwidthUnderprovisioned",
    "GPUPowerOverprovisioned",
)
UPPER_BOUND_CAVEAT: Final = (
    "compute from {signal}: an upper bound (a kernel running on one SM counts as busy); enable "
    "DCGM_FI_PROF_SM_ACTIVE in dcgm-exporter for a real measure"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    idle_compute: float = 0.05
    over_compute: float = 0.40
    under_compute: float = 0.85
    over_memory: float = 0.40
    under_memory: float = 0.90
    over_bandwidth: float = 0.30
    under_bandwidth: float = 0.85
    over_power: float = 0.40
    headroom: float = 0.20  # added to observed needs when sizing a target
    commit_min_busy_share: float = 0.70  # observed hours / window for a commitment option


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    kind: str  # release | mig_slice | smaller_gpu | larger_gpu | fewer_gpus | price_model
    target: str  # e.g. "MIG 3g.40gb on H100-SXM", "aws g6e.xlarge (L40S)", "commit_1y"
    price_usd_per_gpu_hour: float | None  # on-demand basis, per current GPU replaced
    savings_usd_per_month: float | None  # on-demand basis (CO savingsOpportunity)
    savings_after_discounts_usd_per_month: float | None  # at the GPU's own price kind
    savings_pct: float | None
    performance_risk: float  # 0-4
    projected_utilization: float | None  # of the binding resource on the target, 0-1
    rank: int
    gpu_share: float | None = None  # MIG: compute slices / total slices of the current GPU
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFinding:
    gpu_key: str
    host: str
    gpu_index: int
    model: str | None
    gpu: str | None  # spec id
    mig_profile: str | None
    namespace: str | None
    workload: str | None  # pod or job
    team: str | None
    finding: str
    reason_codes: tuple[str, ...]
    idle: bool
    compute_signal: str  # the metric compute was read from
    compute_p: float | None  # at the percentile, 0-1
    compute_mean: float | None
    gpu_util_p: float | None  # 0-1 (nvidia-smi view)
    memory_p99_gib: float | None
    memory_capacity_gib: float | None
    dram_active_p: float | None
    power_share_p: float | None
    hours: float
    cost: GpuCost
    cost_usd: float | None  # over the observed hours at the GPU's price kind
    cost_usd_per_month: float | None
    current_performance_risk: str  # VeryLow | Low | Medium | High
    options: tuple[Option, ...]
    caveats: tuple[str, ...]

    @property
    def best_savings_usd_per_month(self) -> float:
        s = [
            o.savings_usd_per_month
            for o in self.options
            if o.savings_usd_per_month is not None and o.rank == 1
        ]
        return max(s[0], 0.0) if s else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupFinding:
    """A node (host) or a workload (namespace/pod or job): the GPUs it holds and what they could save."""

    level: str  # "node" | "workload"
    name: str
    team: str | None
    gpus: int
    finding: str
    reason_codes: tuple[str, ...]
    idle_gpus: int
    cost_usd_per_month: float | None
    savings_usd_per_month: float
    options: tuple[Option, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetFindings:
    window: Window
    thresholds: Thresholds
    gpus: tuple[GpuFinding, ...]
    nodes: tuple[GroupFinding, ...]
    workloads: tuple[GroupFinding, ...]
    consolidation: dict[str, tuple[int, int]] = field(
        default_factory=dict
    )  # spec -> (MIG-able GPUs, GPUs after packing)


def _risk(u: float | None) -> float:
    if u is None or math.isnan(u):
        return 2.0
    for cut, r in ((0.5, 0.0), (0.65, 1.0), (0.8, 2.0), (0.9, 3.0)):
        if u <= cut:
            return r
    return 4.0


def _current_risk(u: float) -> str:
    return "VeryLow" if u < 0.5 else "Low" if u < 0.7 else "Medium" if u < 0.9 else "High"


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
        return gib_from_mib(m["fb_used_mib"].mean + m["fb_free_mib"].mean)
    return spec.memory_gib if spec else None


def _peak(spec: AcceleratorSpec) -> float:
    """Compute capacity used to compare GPUs: the dense bf16 peak (fp16, then fp32 where bf16 is absent)."""
    return spec.bf16_tflops or spec.fp16_tflops or spec.fp32_tflops or 0.0


def _offer_candidates(cost: GpuCost) -> list[tuple[str, str, str, float, float, float]]:
    return _offer_candidates_for(cost.provider, cost.region, cost.price_kind)


@cache
def _offer_candidates_for(
    provider: str | None, region: str | None, price_kind: str
) -> list[tuple[str, str, str, float, float, float]]:
    """(provider, instance_type, gpu, gpu_count, per-GPU on-demand, per-GPU at the GPU's kind) per offer of
    the same provider (and region when known), cheapest per (instance type)."""
    from gpufleet.catalog.pricing import prices_usd_per_hour
    from gpufleet.telemetry.inventory import _offers

    t = _offers()
    mask = np.ones(len(t), dtype=bool)
    if provider:
        mask &= t.column("provider") == provider
    if region:
        reg = mask & (t.column("region") == region)
        mask = reg if reg.any() else mask
    mask &= t.column("gpu") != ""
    sub = t.take(np.flatnonzero(mask))
    if not len(sub):
        return []
    counts = np.asarray(sub.column("gpu_count"), dtype=float)
    od = np.asarray(sub.column("price_on_demand_usd_per_hour"), dtype=float) / counts
    kind = prices_usd_per_hour(sub, price_kind) / counts
    best: dict[str, tuple[str, str, str, float, float, float]] = {}
    for i in range(len(sub)):
        key = f"{sub.column('provider')[i]}|{sub.column('instance_type')[i]}"
        row = (
            str(sub.column("provider")[i]),
            str(sub.column("instance_type")[i]),
            str(sub.column("gpu")[i]),
            float(counts[i]),
            float(od[i]),
            float(kind[i]),
        )
        if key not in best or row[4] < best[key][4]:
            best[key] = row
    return list(best.values())


def _model_fits(model: str | None, spec: AcceleratorSpec) -> tuple[bool, str]:
    """Whether a labelled model fits one GPU of ``spec`` for inference in bf16 (the estimator's memory
    model)."""
    if not model:
        return True, ""
    from gpufleet.errors import GpufleetError
    from gpufleet.estimate.memory import estimate_memory

    try:
        est = estimate_memory(
            model=model, task="inference", precision="bf16", gpu=spec, seq_len=4096, allow_fallback=True
        )
    except GpufleetError as exc:
        return False, f"estimator: {exc}"
    return est.fits, f"estimator: {model} needs {est.per_gpu_gib:.1f} GiB of {est.capacity_gib:.1f} GiB"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Observed:
    finding: str
    compute_p: float | None
    memory_p99_gib: float | None
    dram_active_p: float | None


def _gpu_options(
    st: GpuStats,
    f: _Observed,
    spec: AcceleratorSpec | None,
    cost: GpuCost,
    th: Thresholds,
    window: Window,
) -> list[Option]:
    price = cost.on_demand_usd_per_gpu_hour
    kind_price = cost.price_usd_per_gpu_hour
    month = HOURS_PER_MONTH
    opts: list[Option] = []
    compute = f.compute_p
    mem = f.memory_p99_gib
    need_c = None if compute is None else compute * (1 + th.headroom)  # > 1: more than this GPU
    need_m = None if mem is None else mem * (1 + th.headroom)
    finding = f.finding

    def saving(
        new_od: float | None, new_kind: float | None
    ) -> tuple[float | None, float | None, float | None]:
        if price is None or new_od is None:
            return None, None, None
        s = (price - new_od) * month
        sa = (kind_price - new_kind) * month if kind_price is not None and new_kind is not None else None
        return s, sa, (price - new_od) / price * 100 if price else None

    if finding == "Idle":
        s, sa, pct = saving(0.0, 0.0)
        opts.append(
            Option(
                kind="release",
                target="release the GPU",
                price_usd_per_gpu_hour=0.0,
                savings_usd_per_month=s,
                savings_after_discounts_usd_per_month=sa,
                savings_pct=pct,
                performance_risk=1.0,
                projected_utilization=None,
                rank=0,
                notes=(
                    "stop it, scale to zero or give it to another team; a returning job would need it back",
                ),
            )
        )
    if (
        finding == "Overprovisioned"
        and spec is not None
        and need_c is not None
        and need_m is not None
        and not st.mig_profile
    ):
        prof = smallest_fitting(spec.id, compute_fraction=need_c, memory_gib=need_m)
        if prof is not None:
            share = prof.compute_slices / prof.compute_slices_total
            s, sa, pct = saving(
                None if price is None else price * share, None if kind_price is None else kind_price * share
            )
            u = max(need_c / prof.sm_fraction, need_m / prof.memory_gib) / (1 + th.headroom)
            opts.append(
                Option(
                    kind="mig_slice",
                    target=f"MIG {prof.profile} on {spec.id}",
                    price_usd_per_gpu_hour=None if price is None else price * share,
                    savings_usd_per_month=s,
                    savings_after_discounts_usd_per_month=sa,
                    savings_pct=pct,
                    performance_risk=_risk(u),
                    projected_utilization=u,
                    rank=0,
                    gpu_share=share,
                    notes=(
                        f"{prof.compute_slices}/{prof.compute_slices_total} of the GPU; savings assume the "
                        "other "
                        "slices serve other workloads (consolidation)",
                        "profile from NVIDIA MIG User Guide (data/mig_profiles.csv)"
                        + ("" if prof.verified else ", unverified row"),
                    ),
                )
            )
    if (
        finding in ("Overprovisioned", "Underprovisioned")
        and spec is not None
        and need_c is not None
        and need_m is not None
    ):
        need_tflops = need_c * _peak(spec)
        need_bw = (f.dram_active_p or 0.0) * (1 + th.headroom) * spec.mem_bw_gb_per_s
        best: tuple[float, Option] | None = None
        for prov, itype, gpu, count, od, kp in _offer_candidates(cost):
            if gpu == spec.id or (count < 1 and finding == "Underprovisioned"):
                continue
            try:
                cand = get_spec(gpu)
            except Exception:
                continue
            if cand.vendor != spec.vendor:
                continue  # a CUDA workload does not move to another vendor's GPU by a resize
            cap = _peak(cand) * min(count, 1.0)
            mem_cap = cand.memory_gib * min(count, 1.0)
            if (
                cap <= 0
                or mem_cap < need_m
                or cap < need_tflops
                or cand.mem_bw_gb_per_s * min(count, 1.0) < need_bw
            ):
                continue
            fits, note = _model_fits(cost.model, cand)
            if not fits:
                continue
            per_gpu_od = od * min(count, 1.0) if count < 1 else od
            per_gpu_kind = kp * min(count, 1.0) if count < 1 else kp
            smaller = finding != "Underprovisioned"
            if smaller and price is not None and per_gpu_od >= price:
                continue
            u = max(need_tflops / cap, need_m / mem_cap) / (1 + th.headroom)
            s, sa, pct = saving(per_gpu_od, per_gpu_kind if math.isfinite(per_gpu_kind) else None)
            o = Option(
                kind="smaller_gpu" if smaller else "larger_gpu",
                target=f"{prov} {itype} ({gpu}" + (f", {count:g} GPU" if count < 1 else "") + ")",
                price_usd_per_gpu_hour=per_gpu_od,
                savings_usd_per_month=s,
                savings_after_discounts_usd_per_month=sa,
                savings_pct=pct,
                performance_risk=_risk(u),
                projected_utilization=u,
                rank=0,
                notes=tuple(n for n in (note,) if n),
            )
            if best is None or per_gpu_od < best[0]:
                best = (per_gpu_od, o)
        if best is not None:
            opts.append(best[1])
    busy_share = st.hours / (window.days * 24.0) if window.days > 0 else 0.0
    if (
        finding in ("Optimized", "Underprovisioned")
        and cost.price_kind == "on_demand"
        and cost.provider
        and cost.instance_type
        and busy_share >= th.commit_min_busy_share
    ):
        from gpufleet.catalog.pricing import prices_usd_per_hour
        from gpufleet.telemetry.inventory import _match_offer

        table = _match_offer(cost.provider, cost.instance_type, cost.region)
        if table is not None:
            best_commit: tuple[float, str] | None = None
            counts = np.asarray(table.column("gpu_count"), dtype=float)
            for kind in ("commit_1y", "commit_3y"):  # the provider's cheapest 1- and 3-year programs
                per = prices_usd_per_hour(table, kind) / counts
                if np.isfinite(per).any():
                    c = float(np.median(per[np.isfinite(per)]))
                    if best_commit is None or c < best_commit[0]:
                        best_commit = (c, kind)
            if best_commit is not None and price is not None and best_commit[0] < price:
                c1, kind = best_commit
                s, _, pct = saving(c1, None)
                opts.append(
                    Option(
                        kind="price_model",
                        target=f"{kind} (the provider's cheapest {kind[-2]}-year commitment program)",
                        price_usd_per_gpu_hour=c1,
                        savings_usd_per_month=s,
                        savings_after_discounts_usd_per_month=s,
                        savings_pct=pct,
                        performance_risk=0.0,
                        projected_utilization=None,
                        rank=0,
                        notes=(f"busy {busy_share:.0%} of the lookback; pays off only if it stays busy",),
                    )
                )
    order = sorted(opts, key=lambda o: (o.performance_risk > 3, -(o.savings_usd_per_month or -1e18)))
    return [
        Option(**{**{s: getattr(o, s) for s in Option.__slots__}, "rank": i + 1}) for i, o in enumerate(order)
    ]


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
    if compute is not None and compute < th.idle_compute:
        finding, reasons = "Idle", ("GPUOverprovisioned",)
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
    f = _Observed(finding=finding, compute_p=compute, memory_p99_gib=mem, dram_active_p=dram)
    options = _gpu_options(st, f, spec, cost, th, window)
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
        current_performance_risk=_current_risk(u_now),
        options=tuple(options),
        caveats=caveats,
    )


_SEVERITY: Final = {"Underprovisioned": 3, "Idle": 2, "Overprovisioned": 1, "Optimized": 0}


def gpus_needed(members: Sequence[GpuFinding]) -> int:
    """Whole GPUs a node's work needs: idle GPUs none, MIG-able ones their slice shares packed together
    (rounded up), every other GPU one."""
    shares = 0.0
    whole = 0
    for g in members:
        if g.idle:
            continue
        mig = next((o for o in g.options if o.kind == "mig_slice"), None)
        if mig is not None and mig.gpu_share is not None:
            shares += mig.gpu_share
        else:
            whole += 1
    return whole + math.ceil(shares - 1e-9)


def _fewer_gpus_option(members: Sequence[GpuFinding], needed: int) -> Option | None:
    """The cheapest instance of the same provider (and region) with the same GPU and at least ``needed`` of
    them, when it has fewer GPUs than the node; priced per month against the node's current GPUs."""
    first = members[0]
    cost = first.cost
    if not first.gpu or cost.on_demand_usd_per_gpu_hour is None:
        return None
    current_od = cost.on_demand_usd_per_gpu_hour * len(members)
    current_kind = (cost.price_usd_per_gpu_hour or cost.on_demand_usd_per_gpu_hour) * len(members)
    best: tuple[float, str, float, int] | None = None
    for prov, itype, gpu, count, od, kp in _offer_candidates_for(cost.provider, cost.region, cost.price_kind):
        if gpu != first.gpu or count < 1:
            continue
        n_inst = math.ceil(
            needed / count
        )  # several smaller instances when no instance has exactly enough GPUs
        if n_inst * count >= len(members):
            continue
        total_od, total_kind = od * count * n_inst, kp * count * n_inst
        if best is None or total_od < best[0]:
            label = f"{prov} {itype} ({count:g} x {gpu})"
            best = (total_od, label if n_inst == 1 else f"{n_inst} x {label}", total_kind, n_inst)
    if best is None:
        return None
    total_od, target, total_kind, n_inst = best
    saving = (current_od - total_od) * HOURS_PER_MONTH
    after = (current_kind - total_kind) * HOURS_PER_MONTH if math.isfinite(total_kind) else None
    return Option(
        kind="fewer_gpus",
        target=target,
        price_usd_per_gpu_hour=total_od / max(needed, 1),
        savings_usd_per_month=saving,
        savings_after_discounts_usd_per_month=after,
        savings_pct=100.0 * (current_od - total_od) / current_od,
        performance_risk=1.0 if n_inst == 1 else 2.0,
        projected_utilization=None,
        rank=1,
        notes=(
            f"the node's work needs {needed} of its {len(members)} GPUs (idle released, MIG-able packed)",
            *(
                ("several instances: no NVLink between them; only for work that fits one",)
                if n_inst > 1
                else ()
            ),
        ),
    )


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
        fewer = _fewer_gpus_option(members, needed) if 0 < needed < len(members) else None
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
