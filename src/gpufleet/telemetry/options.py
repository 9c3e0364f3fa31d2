"""Right-sizing options for one GPU or one node, priced from the catalog.

Options: release the GPU (idle), a MIG slice, a smaller/cheaper or larger GPU, fewer GPUs per node, a
commitment price model. Sizing needs = observed percentile x (1 + headroom). Each option is priced per GPU
on an on-demand basis and at the GPU's own price kind ("after discounts") and carries a 0-4 performance risk
from the projected utilisation of the binding resource on the target: <= 0.5: 0, <= 0.65: 1, <= 0.8: 2,
<= 0.9: 3, else 4 (Compute Optimizer's 0-4 scale; our cut points).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.telemetry.analyze import GpuStats, Window
from gpufleet.telemetry.finding_types import GpuFinding, Option, Thresholds
from gpufleet.telemetry.inventory import GpuCost
from gpufleet.telemetry.mig import smallest_fitting
from gpufleet.units import HOURS_PER_MONTH


def performance_risk(u: float | None) -> float:
    if u is None or math.isnan(u):
        return 2.0
    for cut, r in ((0.5, 0.0), (0.65, 1.0), (0.8, 2.0), (0.9, 3.0)):
        if u <= cut:
            return r
    return 4.0


def current_risk_level(u: float) -> str:
    return "VeryLow" if u < 0.5 else "Low" if u < 0.7 else "Medium" if u < 0.9 else "High"


def _peak(spec: AcceleratorSpec) -> float:
    """Compute capacity used to compare GPUs: the dense bf16 peak (fp16, then fp32 where bf16 is absent)."""
    return spec.bf16_tflops or spec.fp16_tflops or spec.fp32_tflops or 0.0


def _offer_candidates(cost: GpuCost, tier: str) -> list[tuple[str, str, str, float, float, float]]:
    return _offer_candidates_for(cost.provider, cost.region, cost.price_kind, tier)


def tier_mask(table: object, tier: str, serving: bool) -> np.ndarray:
    """Offers the recommender would consider at ``tier``: its own filter
    (:func:`gpufleet.recommend.candidates.eligible_mask`: whole GPUs, a named region; production: no
    marketplace or community host, no consumer GPU, no stale or undated price, no host of unknown
    RAM/vCPUs)."""
    from gpufleet.recommend.candidates import eligible_mask
    from gpufleet.recommend.types import Workload

    w = Workload(
        name="telemetry right-sizing",
        model="telemetry",  # no model: no model-specific filter applies
        task="inference" if serving else "pretrain",
        precision="bf16",
        tier=tier,
    )
    return eligible_mask(table, w)  # type: ignore[arg-type]


@cache
def _offer_candidates_for(
    provider: str | None, region: str | None, price_kind: str, tier: str = "production"
) -> list[tuple[str, str, str, float, float, float]]:
    """(provider, instance_type, gpu, gpu_count, per-GPU on-demand, per-GPU at the GPU's kind) per offer of
    the same provider (and region when known) that the recommender allows at ``tier``, cheapest per
    (instance type)."""
    from gpufleet.catalog.pricing import prices_usd_per_hour
    from gpufleet.telemetry.inventory import _offers

    t = _offers()
    mask = np.asarray(tier_mask(t, tier, serving=tier == "production"), dtype=bool).copy()
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
class ObservedNeeds:
    finding: str
    compute_p: float | None
    memory_p99_gib: float | None
    dram_active_p: float | None
    #: sizing memory: the peak (max) FB used, not a percentile (memory is not compressible: Compute Optimizer
    #: sizes on the maximum of each 5-minute interval, Azure Advisor on P100 memory; fleet-anchors A.1, A.3)
    memory_peak_gib: float | None = None
    #: a GPU busy only in bursts: the share of its observed time it works (compute mean / the bursts' level;
    #: findings._bursts), else None
    burst_duty: float | None = None


def gpu_options(
    st: GpuStats,
    f: ObservedNeeds,
    spec: AcceleratorSpec | None,
    cost: GpuCost,
    th: Thresholds,
    window: Window,
    tier: str = "production",
    reasons: tuple[str, ...] = (),
) -> list[Option]:
    """Options for one GPU (or one replica of a workload), from offers the recommender allows at ``tier``.
    Underprovisioned: a larger GPU (more memory for a memory shortage, more compute for a serving one) and,
    for serving evidence, one more replica."""
    price = cost.on_demand_usd_per_gpu_hour
    kind_price = cost.price_usd_per_gpu_hour
    month = HOURS_PER_MONTH
    opts: list[Option] = []
    compute = f.compute_p
    mem = f.memory_peak_gib if f.memory_peak_gib is not None else f.memory_p99_gib
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
                cost_usd_per_month=0.0,
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
                    performance_risk=performance_risk(u),
                    projected_utilization=u,
                    rank=0,
                    gpu_share=share,
                    cost_usd_per_month=None if price is None else price * share * month,
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
        if finding == "Underprovisioned":
            # a larger GPU is larger on what is short: memory for a memory shortage, else compute
            if "GPUMemoryUnderprovisioned" in reasons:
                need_m = max(need_m, spec.memory_gib * 1.0001)
            else:
                need_tflops = max(need_tflops, _peak(spec) * 1.0001)
        best: tuple[float, Option] | None = None
        for prov, itype, gpu, count, od, kp in _offer_candidates(cost, tier):
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
                performance_risk=performance_risk(u),
                projected_utilization=u,
                rank=0,
                notes=tuple(
                    n for n in (note, f"offers allowed at the {tier} tier (recommender's filter)") if n
                ),
                cost_usd_per_month=per_gpu_od * month,
            )
            if best is None or per_gpu_od < best[0]:
                best = (per_gpu_od, o)
        if best is not None:
            opts.append(best[1])
    if finding == "Underprovisioned" and price is not None and any(r.startswith("Serving") for r in reasons):
        opts.append(
            Option(
                kind="scale_out",
                target="one more replica on the same GPU"
                + (f" ({cost.provider} {cost.instance_type})" if cost.provider else ""),
                price_usd_per_gpu_hour=price,
                savings_usd_per_month=-price * month,
                savings_after_discounts_usd_per_month=None if kind_price is None else -kind_price * month,
                savings_pct=-100.0,
                performance_risk=0.0,
                projected_utilization=None,
                rank=0,
                notes=("users wait (serving evidence): capacity is added, not saved",),
                cost_usd_per_month=price * month,
            )
        )
    if finding == "Overprovisioned" and f.burst_duty is not None and price is not None:
        # hold the GPU only while the jobs run: per-hour (or per-second) on-demand billing of the same GPU,
        # so the jobs run as fast as now; the cost is the duty cycle's share of the hours
        per = price * f.burst_duty
        s, sa, pct = saving(per, per)
        opts.append(
            Option(
                kind="schedule_bursts",
                target=f"the same {spec.id if spec else 'GPU'} on demand, only while its jobs run",
                price_usd_per_gpu_hour=per,
                savings_usd_per_month=s,
                savings_after_discounts_usd_per_month=sa,
                savings_pct=pct,
                performance_risk=2.0,
                projected_utilization=None,
                rank=0,
                notes=(
                    f"works about {f.burst_duty:.0%} of the observed time (compute mean / the bursts' "
                    "level); priced as that share of the hours at the on-demand price",
                    "assumes on-demand capacity of this GPU at each job start (or a shared queue such as "
                    "Kueue or Slurm) and a job that tolerates minutes of start-up; a commitment is paid "
                    "either way",
                ),
                cost_usd_per_month=per * month,
            )
        )
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
                        cost_usd_per_month=c1 * month,
                    )
                )
    order = sorted(opts, key=lambda o: (o.performance_risk > 3, -(o.savings_usd_per_month or -1e18)))
    return [
        Option(**{**{s: getattr(o, s) for s in Option.__slots__}, "rank": i + 1}) for i, o in enumerate(order)
    ]


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


def fewer_gpus_option(members: Sequence[GpuFinding], needed: int, tier: str = "production") -> Option | None:
    """The cheapest instance of the same provider (and region) with the same GPU and at least ``needed`` of
    them, when it has fewer GPUs than the node; priced per month against the node's current GPUs."""
    first = members[0]
    cost = first.cost
    if not first.gpu or cost.on_demand_usd_per_gpu_hour is None:
        return None
    current_od = cost.on_demand_usd_per_gpu_hour * len(members)
    current_kind = (cost.price_usd_per_gpu_hour or cost.on_demand_usd_per_gpu_hour) * len(members)
    best: tuple[float, str, float, int] | None = None
    for prov, itype, gpu, count, od, kp in _offer_candidates_for(
        cost.provider, cost.region, cost.price_kind, tier
    ):
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
        cost_usd_per_month=total_od * HOURS_PER_MONTH,
        notes=(
            f"the node's work needs {needed} of its {len(members)} GPUs (idle released, MIG-able packed)",
            *(
                ("several instances: no NVLink between them; only for work that fits one",)
                if n_inst > 1
                else ()
            ),
        ),
    )


__all__ = ["fewer_gpus_option", "gpu_options", "gpus_needed", "performance_risk", "tier_mask"]
