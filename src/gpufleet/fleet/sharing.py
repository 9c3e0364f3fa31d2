"""GPU sharing: MIG slice options of small inference workloads, sized by the estimator on the slice.

A slice is the GPU with its memory capacity (the profile's), memory bandwidth x memory slices / total memory
slices and compute x compute slices / total compute slices: the MIG User Guide, "Terminology": a memory slice
is "roughly one eighth of the total GPU memory resources, including both capacity and bandwidth", an SM slice
"roughly one seventh of the total number of SMs available in the GPU when configured in MIG mode"
(:func:`gpufleet.fleet.mig.slice_spec`). The estimator (``gpufleet.estimate.estimate_inference``) runs on that
slice as on a GPU of its own, with the recommend engine's batch search (SLOs, concurrency) and throughput
target, so the workload's demand and SLOs hold on its slices. Geometry is in :mod:`gpufleet.fleet.mig`, the
shared pools in the MILP, their decoding and their check in :mod:`gpufleet.fleet.pools`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpufleet.fleet.mig import MigShape, mig_shapes, slice_spec, useful_shapes
from gpufleet.fleet.types import Fleet, FleetWorkload, Option
from gpufleet.recommend.failure import needs_spare

#: candidate pools per GPU model and workload: the cheapest offers per GPU-hour (a cap on the MILP's size)
MAX_POOLS_PER_GPU = 8


class _SliceEstimator:
    """The recommend engine's estimator protocol on one MIG slice (the gpu name is ignored)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def inference(
        self,
        *,
        gpu: str,
        precision: str,
        gpu_count: int,
        tp: int,
        pp: int,
        batch: int | None,
        workload: Any,
        ep: int = 1,
    ) -> Any:
        from gpufleet.estimate.inference import estimate_inference
        from gpufleet.models import resolve_model

        return estimate_inference(
            model=resolve_model(workload.model),
            gpu=self.spec,
            precision=precision,
            input_len=workload.input_len_tokens,
            output_len=workload.output_len_tokens,
            gpu_count=gpu_count,
            batch=batch,
            tp=tp,
            pp=pp,
            ep=ep,
            allow_fallback=workload.allow_fallback,
        )

    def training(self, **_: Any) -> Any:  # pragma: no cover - slices are for inference only
        raise NotImplementedError("MIG slices are sized for inference only")


_SLICES: dict[tuple[object, ...], tuple[int, str]] = {}


def slices_needed(w: Any, shape: MigShape) -> tuple[int, str]:
    """(slices of ``shape`` that carry workload ``w`` at its SLOs, concurrency and throughput target, why not
    when 0). One model replica per slice (TP = PP = 1). Production serving deploys twice as many, one set
    in each half of a mirrored pool (:func:`mig_options`)."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.errors import GpufleetError
    from gpufleet.recommend.perf import (
        _inference_config,
        _Placement,
        perf_cache_key,
        rate_at_confidence,
        target_output_tokens_per_s,
    )

    key = (
        perf_cache_key(w),
        w.concurrency,
        w.ttft_p95_s,
        w.tpot_p95_s,
        w.confidence,
        target_output_tokens_per_s(w),
        shape,
    )
    hit = _SLICES.get(key)
    if hit is not None:
        return hit
    est = _SliceEstimator(slice_spec(get_spec(shape.gpu), shape))
    try:
        cfg = _inference_config(w, shape.gpu, 1, 1, 1, 1, _Placement(est, w, shape.gpu, 1, 1, 1))
    except GpufleetError as exc:
        out = (0, str(exc))
    else:
        if not cfg.fits:
            out = (0, f"does not fit in {shape.profile} ({shape.memory_gib:.1f} GiB)")
        elif not cfg.meets_slo:
            out = (0, f"misses its SLOs on {shape.profile}: " + "; ".join(cfg.slo_misses))
        else:
            need = max(cfg.units, 1)
            target = target_output_tokens_per_s(w)
            if target is not None and cfg.unit_output_tokens_per_s is not None:
                need = max(
                    need, math.ceil(target / rate_at_confidence(cfg.unit_output_tokens_per_s, w) - 1e-9)
                )
            out = (need, "")
    _SLICES[key] = out
    return out


def mig_options(
    fw: FleetWorkload,
    table: Any,
    od_prices: Any,
    *,
    commit_prices: Any = None,
    allowed: Any,
    transfer: Any,
    start: int = 0,
) -> tuple[list[Option], tuple[str, ...]]:
    """MIG slice options of a model inference workload with ``sharing`` mig/auto (else none), and notes.

    ``od_prices``: on-demand node prices of ``table`` (``commit_prices``: 1y and 3y arrays, optional);
    ``allowed(provider, region)`` and ``transfer(provider,
    region)`` are the option generator's placement filter and egress price.
    """
    import numpy as np

    from gpufleet.recommend.candidates import eligible_mask

    w = fw.workload
    if fw.sharing == "none" or w is None or w.is_training:
        return [], ()
    shapes = mig_shapes()
    count = np.asarray(table.column("gpu_count"), dtype=float)
    gpus = table.column("gpu")
    od = np.asarray(od_prices, dtype=float)
    wl = replace(w, providers=fw.providers or w.providers, regions=fw.regions or w.regions)
    m = eligible_mask(table, wl) & (count >= 1) & (np.mod(count, 1.0) == 0)
    with np.errstate(invalid="ignore"):
        m &= np.isfinite(od) & (od > 0)
    m &= np.array([str(g) in shapes for g in gpus], dtype=bool)
    best: dict[tuple[str, str, str, int], int] = {}
    for o in np.flatnonzero(m).tolist():
        prov, reg = str(table.column("provider")[o]), str(table.column("region")[o])
        if prov == "onprem" or not allowed(prov, reg):
            continue
        k = (prov, reg, str(gpus[o]), int(count[o]))
        if k not in best or od[o] < od[best[k]]:
            best[k] = o
    by_gpu: dict[str, list[int]] = defaultdict(list)
    for (_p, _r, g, _n), o in best.items():
        by_gpu[g].append(o)
    out: list[Option] = []
    notes: set[str] = set()
    for g, rows in sorted(by_gpu.items()):
        needs = [(s, slices_needed(w, s)) for s in shapes[g] if s.compute_slices < s.compute_slices_total]
        fit = [(s, n) for s, (n, _why) in needs if n > 0]
        if not fit:
            continue
        fit = useful_shapes(fit)
        rows.sort(key=lambda o: (od[o] / count[o], o))
        if len(rows) > MAX_POOLS_PER_GPU:
            notes.add(
                f"MIG pools: per GPU model the {MAX_POOLS_PER_GPU} cheapest offers per GPU-hour a workload "
                "may use are the candidate pools (the plan is optimal over those)"
            )
        for o in rows[:MAX_POOLS_PER_GPU]:
            prov, reg = str(table.column("provider")[o]), str(table.column("region")[o])
            vc = table.column("vcpus")[o]
            for s, n in fit:
                n_region = math.ceil(n / (fw.ha_regions - 1)) if fw.ha_regions >= 2 else n
                # production (N+1 over nodes): the N slices the load needs in each half of a mirrored pool,
                # so one lost node or GPU leaves a whole half's N (gpufleet.fleet.pools.place_slices)
                # over ha_regions >= 2 the other regions are the spare (each sized for peak / (N - 1))
                mirror = needs_spare(w) and fw.node_spare
                load = n_region if mirror else 0
                ha_units = n_region if fw.region_loss_sized else 0
                n_region = 2 * n_region if mirror else n_region
                out.append(
                    Option(
                        key=f"{fw.name}#mig{start + len(out)}",
                        workload=fw.name,
                        provider=prov,
                        region=reg,
                        instance_type=str(table.column("instance_type")[o]),
                        gpu=g,
                        gpus_per_node=float(count[o]),
                        vcpus_per_node=float(vc) if vc is not None and np.isfinite(float(vc)) else 0.0,
                        arch=str(table.column("arch")[o] or ""),
                        nodes_per_replica=0,
                        replicas_peak=n_region,
                        blocks=(),
                        price_on_demand_usd_per_hour=float(od[o]),
                        price_spot_usd_per_hour=math.nan,
                        price_commit_1y_usd_per_hour=_finite(commit_prices, 0, o),
                        price_commit_3y_usd_per_hour=_finite(commit_prices, 1, o),
                        transfer_usd_per_month=transfer(prov, reg),
                        mig_profile=s.profile,
                        mig_slices=n_region,
                        mig_compute_slices=s.compute_slices,
                        mig_compute_slices_total=s.compute_slices_total,
                        replicas_needed=load,
                        region_loss_units=ha_units,
                    )
                )
    return out, tuple(sorted(notes))


def _finite(prices: Any, i: int, o: int) -> float:
    if prices is None:
        return math.nan
    v = float(prices[i][o])
    return v if math.isfinite(v) and v > 0 else math.nan


def options_for_levers(
    fleet: Fleet, options: Mapping[str, Sequence[Option]], sharing: bool
) -> dict[str, list[Option]]:
    """With sharing on: MIG options, and no whole-GPU options for ``sharing: mig`` workloads (when they have
    MIG options); with sharing off: whole-GPU options only (the savings waterfall's baseline)."""
    out: dict[str, list[Option]] = {}
    mode = {w.name: w.sharing for w in fleet.workloads}
    for name, opts in options.items():
        mig = [o for o in opts if o.is_mig]
        whole = [o for o in opts if not o.is_mig]
        if not sharing:
            out[name] = whole
        elif mode.get(name) == "mig" and mig:
            out[name] = mig
        else:
            out[name] = list(opts)
    return out


__all__ = ["MAX_POOLS_PER_GPU", "mig_options", "options_for_levers", "slices_needed"]
