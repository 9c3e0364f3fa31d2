"""MIG packing: small inference workloads on slices of shared GPUs, modelled exactly by configuration
patterns.

Geometry. A MIG-capable GPU has 7 compute slices and 8 memory slices (A100, H100, H200, B200, ...; 4 and 4
on A30 and RTX PRO 6000). A GPU-instance profile takes ``c`` compute slices and ``m`` memory slices, starting
at one of its allowed memory-slice positions (``fleet/data/mig_placements.csv``, NVIDIA MIG User Guide's
``nvidia-smi mig -lgipp`` listing). A *configuration* of one GPU is a set of instances on non-overlapping
memory-slice ranges at allowed starts using at most the GPU's compute slices; :func:`mig_configs` enumerates
them (only the maximal ones: a slot left empty is allowed).

Sizing. A slice is the GPU with its memory capacity (the profile's), memory bandwidth x memory slices / total
memory slices and compute x compute slices / total compute slices: the MIG User Guide, "Terminology": a memory
slice is "roughly one eighth of the total GPU memory resources, including both capacity and bandwidth", an SM
slice "roughly one seventh of the total number of SMs available in the GPU when configured in MIG mode". The
estimator (``gpufleet.estimate.estimate_inference``) runs on that slice as on a GPU of its own, with the
recommend engine's batch search (SLOs, concurrency) and throughput target, so the workload's demand and SLOs
hold on its slices.

The MILP (see :func:`add_pools`): per pool (one offer: provider, region, instance type) integer nodes ``n``
billed on demand for the whole month, integer GPUs per configuration ``g_c`` with ``sum_c g_c <= GPUs/node x
n``, and per profile ``sum_o slices_o x s_o <= sum_c count_c(profile) x g_c``: exact bin packing by patterns.
Each workload's slices are charged back by compute slices (node price x compute slices / (7 x GPUs per node));
the idle remainder of the pool is a line of its own, so a plan's lines still sum to what the nodes cost.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from gpufleet.fleet.problem import Problem
from gpufleet.fleet.types import Fleet, FleetWorkload, Option, PlanLine, SharedPool
from gpufleet.units import GB, GIB, HOURS_PER_MONTH

#: workload name and team of a pool's idle-capacity line
IDLE_WORKLOAD = "(idle MIG slices)"
SHARED_TEAM = "(shared)"
#: candidate pools per GPU model and workload: the cheapest offers per GPU-hour (a cap on the MILP's size)
MAX_POOLS_PER_GPU = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class MigShape:
    """One MIG GPU-instance profile of one GPU with its slice geometry."""

    gpu: str  # spec id
    profile: str  # e.g. "1g.10gb"
    memory_gib: float  # device-reported (nvidia-smi -lgip, smaller value of a driver range) or name GB -> GiB
    compute_slices: int
    compute_slices_total: int
    memory_slices: int
    memory_slices_total: int
    starts: tuple[int, ...]  # allowed first memory slice
    compute_share: float  # of the GPU's compute: SMs / the full profile's SMs (-lgip) where known, else c / 7


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("gpufleet.fleet").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@cache
def _placements() -> dict[tuple[int, int, int], tuple[tuple[int, ...], int]]:
    """(compute total, compute slices, memory slices) -> (starts, memory slices total)."""
    out = {}
    for r in _rows("mig_placements.csv"):
        key = (int(r["compute_slices_total"]), int(r["compute_slices"]), int(r["memory_slices"]))
        out[key] = (tuple(int(x) for x in r["placement_starts"].split()), int(r["memory_slices_total"]))
    return out


@cache
def mig_shapes() -> dict[str, tuple[MigShape, ...]]:
    """Spec id -> its plain MIG profiles with geometry, for GPUs whose every plain profile is verified and
    placed by ``mig_placements.csv`` (others are left out rather than guessed)."""
    by_gpu: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in _rows("mig_profiles.csv"):
        if not r["variant"].strip():
            by_gpu[r["gpu"]].append(r)
    out: dict[str, tuple[MigShape, ...]] = {}
    for gpu, rows in by_gpu.items():
        if not all(r["verified"].strip().lower() == "true" for r in rows):
            continue
        total = int(rows[0]["compute_slices_total"])
        full = [r for r in rows if int(r["compute_slices"]) == total]
        if not full:
            continue
        full_gb = float(full[0]["memory_gb"])
        full_sm = full[0]["sm_count_lgip"].strip()
        shapes = []
        ok = True
        for r in rows:
            cs = int(r["compute_slices"])
            mem_total = next((v[1] for k, v in _placements().items() if k[0] == total), 0)
            ms = round(float(r["memory_gb"]) / full_gb * mem_total)
            geo = _placements().get((total, cs, ms))
            if geo is None:
                ok = False
                break
            lgip = r["memory_gib_lgip"].strip()
            mem = float(lgip.split("-")[0]) if lgip else float(r["memory_gb"]) * GB / GIB
            sm = r["sm_count_lgip"].strip()
            share = cs / total
            if sm and full_sm:  # e.g. H100 SXM: 1g has 16 of 132 SMs (0.121 < 1/7)
                share = min(share, float(sm) / float(full_sm))
            shapes.append(
                MigShape(
                    gpu=gpu,
                    profile=r["profile"],
                    memory_gib=mem,
                    compute_slices=cs,
                    compute_slices_total=total,
                    memory_slices=ms,
                    memory_slices_total=geo[1],
                    starts=geo[0],
                    compute_share=share,
                )
            )
        if ok:
            out[gpu] = tuple(sorted(shapes, key=lambda s: (s.compute_slices, s.memory_slices)))
    return out


def shape_of(gpu: str, profile: str) -> MigShape | None:
    return next((s for s in mig_shapes().get(gpu, ()) if s.profile == profile), None)


Config = tuple[tuple[str, int], ...]  # (profile, count) pairs, profile order of mig_shapes


@cache
def mig_configs(gpu: str) -> tuple[Config, ...]:
    """The maximal valid MIG configurations of one ``gpu`` (none of them can take another instance)."""
    shapes = mig_shapes().get(gpu, ())
    if not shapes:
        return ()
    mem_total = shapes[0].memory_slices_total
    found: set[tuple[int, ...]] = set()

    def grow(first_free: int, used_mem: int, compute: int, counts: list[int]) -> None:
        found.add(tuple(counts))
        for i, s in enumerate(shapes):
            if compute + s.compute_slices > s.compute_slices_total:
                continue
            for st in s.starts:
                rng = ((1 << s.memory_slices) - 1) << st
                if st >= first_free and st + s.memory_slices <= mem_total and not used_mem & rng:
                    counts[i] += 1
                    grow(st + s.memory_slices, used_mem | rng, compute + s.compute_slices, counts)
                    counts[i] -= 1

    grow(0, 0, 0, [0] * len(shapes))
    vecs = sorted(found, reverse=True)
    maximal = [
        v
        for v in vecs
        if any(v) and not any(w != v and all(a >= b for a, b in zip(w, v, strict=True)) for w in vecs)
    ]
    return tuple(
        tuple((shapes[i].profile, n) for i, n in enumerate(v) if n) for v in sorted(maximal, reverse=True)
    )


def config_is_valid(gpu: str, counts: Mapping[str, int]) -> bool:
    """Can one ``gpu`` hold these instances at once? Independent of :func:`mig_configs`: places every
    instance (largest first) on a free allowed start by backtracking."""
    shapes = {s.profile: s for s in mig_shapes().get(gpu, ())}
    if not shapes or any(p not in shapes or n < 0 for p, n in counts.items()):
        return False
    items = sorted(
        (shapes[p] for p, n in counts.items() for _ in range(n)),
        key=lambda s: (-s.memory_slices, -s.compute_slices),
    )
    if not items:
        return True
    total = items[0].compute_slices_total
    if sum(s.compute_slices for s in items) > total:
        return False
    free = [True] * items[0].memory_slices_total

    def place(i: int) -> bool:
        if i == len(items):
            return True
        s = items[i]
        for st in s.starts:
            cells = range(st, st + s.memory_slices)
            if st + s.memory_slices <= len(free) and all(free[c] for c in cells):
                for c in cells:
                    free[c] = False
                if place(i + 1):
                    return True
                for c in cells:
                    free[c] = True
        return False

    return place(0)


# ------------------------------------------------------------------------------------------ slice sizing


def slice_spec(spec: Any, shape: MigShape) -> Any:
    """The accelerator spec of one MIG slice: the profile's memory, bandwidth by memory slices, compute by
    compute slices (MIG User Guide, Terminology), or by the SM counts of ``nvidia-smi mig -lgip`` where the
    table has them and they are smaller; no scale-up fabric (one slice, no tensor parallelism)."""
    cf = shape.compute_share
    mf = shape.memory_slices / shape.memory_slices_total

    def sc(v: float | None) -> float | None:
        return None if v is None else v * cf

    return replace(
        spec,
        memory_gib=shape.memory_gib,
        memory_gb_marketing=shape.memory_gib * GIB / GB,
        mem_bw_gb_per_s=spec.mem_bw_gb_per_s * mf,
        fp32_tflops=sc(spec.fp32_tflops),
        tf32_tflops=sc(spec.tf32_tflops),
        fp16_tflops=sc(spec.fp16_tflops),
        bf16_tflops=sc(spec.bf16_tflops),
        fp8_tflops=sc(spec.fp8_tflops),
        int8_tops=sc(spec.int8_tops),
        fp4_tflops=sc(spec.fp4_tflops),
        tdp_w=sc(spec.tdp_w),
        scaleup_interconnect="none",
        scaleup_bw_gb_per_s=0.0,
    )


class _SliceEstimator:
    """The recommend engine's estimator protocol on one MIG slice (the gpu name is ignored)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def inference(
        self, *, gpu: str, precision: str, gpu_count: int, tp: int, pp: int, batch: int | None, workload: Any
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
            allow_fallback=workload.allow_fallback,
        )

    def training(self, **_: Any) -> Any:  # pragma: no cover - slices are for inference only
        raise NotImplementedError("MIG slices are sized for inference only")


_SLICES: dict[tuple[object, ...], tuple[int, str]] = {}


def slices_needed(w: Any, shape: MigShape) -> tuple[int, str]:
    """(slices of ``shape`` that carry workload ``w`` at its SLOs, concurrency and throughput target, why not
    when 0). One model replica per slice (TP = PP = 1)."""
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
        w.min_replicas,
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
            need = max(cfg.units, w.min_replicas)
            target = target_output_tokens_per_s(w)
            if target is not None and cfg.unit_output_tokens_per_s is not None:
                need = max(
                    need, math.ceil(target / rate_at_confidence(cfg.unit_output_tokens_per_s, w) - 1e-9)
                )
            out = (need, "")
    _SLICES[key] = out
    return out


def _contained(a: MigShape, b: MigShape) -> bool:
    """Every placement of ``b`` holds a placement of ``a`` (``a`` can replace ``b`` in any configuration)."""
    return a.compute_slices <= b.compute_slices and all(
        any(sa >= sb and sa + a.memory_slices <= sb + b.memory_slices for sa in a.starts) for sb in b.starts
    )


def useful_shapes(needs: Sequence[tuple[MigShape, int]]) -> list[tuple[MigShape, int]]:
    """Drop a profile when a smaller one fits inside it and needs no more slices (exact: the smaller one can
    take its place in every configuration)."""
    keep = []
    for s, k in needs:
        if not any(
            t is not s
            and _contained(t, s)
            and kt <= k
            and (kt < k or t.compute_slices < s.compute_slices or t.memory_slices < s.memory_slices)
            for t, kt in needs
        ):
            keep.append((s, k))
    return keep


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


# ---------------------------------------------------------------------------------------------- the MILP


#: months a workload must still run for a pool node on each commitment term
_TERM_MONTHS = {"commit_1y": 12.0, "commit_3y": 36.0}


def pool_pay_kinds(t: Option, terms: Sequence[str], commitments: bool = True) -> dict[str, float]:
    """Ways to pay a pool node [USD/h]: on demand, and 1y/3y commitments the fleet allows where cheaper.
    A pool runs all month, so a commitment is billed the same 730 h as on demand."""
    out = {"on_demand": t.price_on_demand_usd_per_hour}
    if commitments:
        for kind, price in (
            ("commit_1y", t.price_commit_1y_usd_per_hour),
            ("commit_3y", t.price_commit_3y_usd_per_hour),
        ):
            if kind.removeprefix("commit_") in terms and math.isfinite(price) and price < out["on_demand"]:
                out[kind] = price
    return out


def cheapest_pay(
    t: Option, terms: Sequence[str], lifetimes_months: Iterable[float], commitments: bool = True
) -> tuple[str, float]:
    """The cheapest way to pay a pool's nodes when tenants living ``lifetimes_months`` share it."""
    life = min(lifetimes_months, default=math.inf)
    kinds = pool_pay_kinds(t, terms, commitments)
    return min(((k, v) for k, v in kinds.items() if life >= _TERM_MONTHS.get(k, 0.0)), key=lambda kv: kv[1])


@dataclass(slots=True)
class PoolVars:
    key: str
    template: Option  # any MIG option of the pool (offer facts)
    n: dict[str, int] = field(default_factory=dict)  # pay kind -> node variable
    price: dict[str, float] = field(default_factory=dict)  # pay kind -> USD per node-hour
    g: list[int] = field(default_factory=list)  # GPUs per configuration
    configs: tuple[Config, ...] = ()
    slot_terms: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # profile -> (s var, slices)


def add_pools(
    p: Problem,
    mig: Iterable[tuple[Option, int, int]],
    *,
    terms: Sequence[str] = ("1y", "3y"),
    commitments: bool = True,
    lifetime_months: Mapping[str, float] | None = None,
) -> dict[str, PoolVars]:
    """Pool variables and packing rows for the chosen-option variables of MIG options (team and workload
    budgets see a workload's slices at their on-demand chargeback, ``Option.mig_slice_usd_per_hour``).

    ``mig``: (option, its choice variable, how many identical workloads the variable counts). Pool nodes on a
    commitment need every workload placed on the pool to live for the term: a binary ``y`` per pool and term
    with ``s_o <= m (1 - y)`` for each shorter-lived workload's option and ``n_term <= ub y``.
    """
    life = lifetime_months or {}
    by_pool: dict[str, list[tuple[Option, int, int]]] = defaultdict(list)
    for o, s, mult in mig:
        by_pool[o.pool].append((o, s, mult))
    pools: dict[str, PoolVars] = {}
    for key, members in by_pool.items():
        t = members[0][0]
        gpn = int(t.gpus_per_node)
        worst: dict[str, int] = defaultdict(int)  # per workload, its largest slice count here
        for o, _s, mult in members:
            worst[o.workload] = max(worst[o.workload], o.mig_slices * mult)
        ub = math.ceil(sum(worst.values()) / gpn)
        pv = PoolVars(key=key, template=t)
        for kind, price in pool_pay_kinds(t, terms, commitments).items():
            pv.price[kind] = price
            pv.n[kind] = p.add_var(f"pool_nodes[{key},{kind}]", ub=float(ub), cost=price * HOURS_PER_MONTH)
            short = [
                (s, m) for o, s, m in members if life.get(o.workload, math.inf) < _TERM_MONTHS.get(kind, 0)
            ]
            if short:
                y = p.add_var(f"pool_commit[{key},{kind}]", ub=1.0)
                p.add_row(
                    f"pool {key} on {kind} only with y",
                    "mig_commit",
                    [(pv.n[kind], 1.0), (y, -float(ub))],
                    hi=0.0,
                    elastic=False,
                )
                for s, m in short:
                    p.add_row(
                        f"pool {key} on {kind}: tenants live the term",
                        "mig_commit",
                        [(s, 1.0), (y, float(m))],
                        hi=float(m),
                        elastic=False,
                    )
        pv.configs = mig_configs(t.gpu)
        pv.g = [
            p.add_var(f"pool_gpus[{key},{'+'.join(f'{n}x{q}' for q, n in c)}]", ub=float(ub * gpn))
            for c in pv.configs
        ]
        p.add_row(
            f"MIG GPUs of pool {key} (<= {gpn} per node)",
            "mig_gpus",
            [(v, 1.0) for v in pv.g] + [(v, -float(gpn)) for v in pv.n.values()],
            hi=0.0,
            elastic=False,
        )
        for o, s, _mult in members:
            pv.slot_terms.setdefault(o.mig_profile, []).append((s, float(o.mig_slices)))
        for prof, terms_ in pv.slot_terms.items():
            supply = [(v, -float(dict(c).get(prof, 0))) for v, c in zip(pv.g, pv.configs, strict=True)]
            p.add_row(
                f"MIG {prof} slices of pool {key}",
                "mig_slots",
                terms_ + [x for x in supply if x[1]],
                hi=0.0,
                elastic=False,
            )
        pools[key] = pv
    return pools


def slice_line(
    o: Option, workload: str, team: str, unit_usd_per_compute_slice_hour: float | None = None
) -> PlanLine:
    """The chargeback line of a workload's slices: count in ``nodes``, the GPU share of one slice in
    ``gpus_per_node``, priced by compute slices at the pool's rate (on demand until the pool is priced)."""
    per_cs = (
        unit_usd_per_compute_slice_hour
        if unit_usd_per_compute_slice_hour is not None
        else o.price_on_demand_usd_per_hour / (o.mig_compute_slices_total * o.gpus_per_node)
    )
    unit = per_cs * o.mig_compute_slices
    return PlanLine(
        workload=workload,
        team=team,
        option=o.key,
        block=0,
        provider=o.provider,
        region=o.region,
        instance_type=o.instance_type,
        gpu=o.gpu,
        gpus_per_node=o.mig_compute_slices / o.mig_compute_slices_total,
        pay_kind="on_demand",
        nodes=o.mig_slices,
        hours_per_month=HOURS_PER_MONTH,
        billed_hours_per_month=HOURS_PER_MONTH,
        unit_price_usd_per_hour=unit,
        list_unit_price_usd_per_hour=o.mig_slice_usd_per_hour,
        cost_usd_per_month=o.mig_slices * unit * HOURS_PER_MONTH,
        pool=o.pool,
        mig_profile=o.mig_profile,
    )


def build_pool(
    t: Option,
    nodes: Mapping[str, int],
    prices: Mapping[str, float],
    layouts: Sequence[tuple[Config, int]],
    slice_lines: Sequence[PlanLine],
) -> tuple[SharedPool, list[PlanLine]]:
    """The pool with ``nodes`` per pay kind (USD/node-hour in ``prices``), its slice lines re-priced at the
    pool's cost per compute slice, and its idle line: the lines sum to what the nodes cost."""
    gpn = int(t.gpus_per_node)
    total = t.mig_compute_slices_total
    n_all = sum(nodes.values())
    cost = sum(n * prices[k] * HOURS_PER_MONTH for k, n in nodes.items())
    kind = max(nodes, key=lambda k: (nodes[k], -prices[k])) if n_all else "on_demand"
    per_cs = cost / (n_all * gpn * total * HOURS_PER_MONTH) if n_all else 0.0
    out: list[PlanLine] = []
    used = 0
    for ln in slice_lines:
        shape = shape_of(t.gpu, ln.mig_profile)
        assert shape is not None
        used += shape.compute_slices * ln.nodes
        unit = per_cs * shape.compute_slices
        out.append(
            replace(
                ln,
                pay_kind=kind,
                unit_price_usd_per_hour=unit,
                cost_usd_per_month=ln.nodes * unit * HOURS_PER_MONTH,
            )
        )
    pool = SharedPool(
        key=t.pool,
        provider=t.provider,
        region=t.region,
        instance_type=t.instance_type,
        gpu=t.gpu,
        gpus_per_node=gpn,
        nodes=n_all,
        pay_kind=kind,
        nodes_by_pay_kind=tuple((k, n) for k, n in sorted(nodes.items()) if n),
        price_on_demand_usd_per_hour=t.price_on_demand_usd_per_hour,
        cost_usd_per_month=cost,
        layouts=tuple((c, n) for c, n in layouts if n > 0),
        slices=tuple((ln.workload, ln.mig_profile, ln.nodes) for ln in slice_lines),
    )
    idle = n_all * gpn * total - used
    if idle > 0:
        out.append(
            PlanLine(
                workload=IDLE_WORKLOAD,
                team=SHARED_TEAM,
                option=t.pool,
                block=0,
                provider=t.provider,
                region=t.region,
                instance_type=t.instance_type,
                gpu=t.gpu,
                gpus_per_node=1.0 / total,
                pay_kind=kind,
                nodes=idle,
                hours_per_month=HOURS_PER_MONTH,
                billed_hours_per_month=HOURS_PER_MONTH,
                unit_price_usd_per_hour=per_cs,
                list_unit_price_usd_per_hour=t.price_on_demand_usd_per_hour / (gpn * total),
                cost_usd_per_month=idle * per_cs * HOURS_PER_MONTH,
                pool=t.pool,
            )
        )
    return pool, out


def decode_pools(
    pools: Mapping[str, PoolVars], x: Sequence[float], lines: Sequence[PlanLine]
) -> tuple[list[SharedPool], list[PlanLine]]:
    """The pools of a MILP solution and the plan's lines with the MIG ones re-priced (plus idle lines)."""
    out: list[SharedPool] = []
    mig_lines: list[PlanLine] = []
    for key, pv in pools.items():
        nodes = {k: round(x[v]) for k, v in pv.n.items()}
        mine = [ln for ln in lines if ln.pool == key and ln.mig_profile]
        if not any(nodes.values()) and not mine:
            continue
        layouts = [(c, round(x[v])) for c, v in zip(pv.configs, pv.g, strict=True)]
        pool, priced = build_pool(pv.template, nodes, pv.price, layouts, mine)
        out.append(pool)
        mig_lines += priced
    return out, [ln for ln in lines if not ln.mig_profile] + mig_lines


# ------------------------------------------------------------------------------- independent re-checks


def _kind_price(t: Option, kind: str) -> float:
    return {
        "on_demand": t.price_on_demand_usd_per_hour,
        "commit_1y": t.price_commit_1y_usd_per_hour,
        "commit_3y": t.price_commit_3y_usd_per_hour,
    }.get(kind, math.nan)


def check_pools(
    fleet: Fleet, options: Mapping[str, Option], lines: Sequence[PlanLine], pools: Sequence[SharedPool]
) -> list[str]:
    """What the plan's MIG lines and pools break: slice lines match their options, every GPU layout is a
    valid MIG configuration, layouts fit the pool's GPUs, each profile's slots cover the slices placed, pool
    commitments are allowed and outlived by every tenant, and the pool's lines (slices charged by compute
    slices, the idle rest) sum to its nodes' cost."""
    bad: list[str] = []
    by_key = {pl.key: pl for pl in pools}
    life = {w.name: w.lifetime_months for w in fleet.workloads}
    mig_lines: dict[str, list[PlanLine]] = defaultdict(list)
    idle_lines: dict[str, list[PlanLine]] = defaultdict(list)
    for ln in lines:
        if not ln.pool or ln.pay_kind == "data_transfer":
            continue
        if ln.pool not in by_key:
            bad.append(f"{ln.workload}: MIG line names pool {ln.pool} that the plan does not hold")
        elif ln.mig_profile:
            mig_lines[ln.pool].append(ln)
        else:
            idle_lines[ln.pool].append(ln)
    for pl in pools:
        shapes = {s.profile: s for s in mig_shapes().get(pl.gpu, ())}
        t = next((o for o in options.values() if o.is_mig and o.pool == pl.key), None)
        if not shapes or t is None:
            bad.append(f"pool {pl.key}: no MIG option or no known MIG geometry for {pl.gpu}")
            continue
        total = next(iter(shapes.values())).compute_slices_total
        cost = 0.0
        for kind, n in pl.nodes_by_pay_kind:
            price = _kind_price(t, kind)
            if not math.isfinite(price) or n < 0:
                bad.append(f"pool {pl.key}: {kind} has no price for {pl.instance_type}")
                continue
            cost += n * price * HOURS_PER_MONTH
            if kind in _TERM_MONTHS:
                if kind.removeprefix("commit_") not in fleet.constraints.commitment_terms:
                    bad.append(f"pool {pl.key}: {kind} is not an allowed commitment term")
                short = [
                    ln.workload for ln in mig_lines[pl.key] if life.get(ln.workload, 0) < _TERM_MONTHS[kind]
                ]
                if short:
                    bad.append(f"pool {pl.key}: {kind} outlives its tenants {', '.join(sorted(set(short)))}")
        if sum(n for _k, n in pl.nodes_by_pay_kind) != pl.nodes:
            bad.append(f"pool {pl.key}: nodes by pay kind do not add up to {pl.nodes}")
        if not math.isclose(cost, pl.cost_usd_per_month, rel_tol=1e-9, abs_tol=1e-6):
            bad.append(f"pool {pl.key}: costs ${pl.cost_usd_per_month:,.2f}, its nodes ${cost:,.2f}")
        per_cs = cost / (pl.nodes * pl.gpus_per_node * total * HOURS_PER_MONTH) if pl.nodes else 0.0
        gpus = 0
        supply: dict[str, int] = defaultdict(int)
        for layout, n in pl.layouts:
            if n < 0 or not config_is_valid(pl.gpu, dict(layout)):
                bad.append(f"pool {pl.key}: {dict(layout)} is not a valid MIG configuration of {pl.gpu}")
            gpus += n
            for prof, k in layout:
                supply[prof] += k * n
        if gpus > pl.nodes * pl.gpus_per_node:
            bad.append(f"pool {pl.key}: {gpus} GPUs configured on {pl.nodes} x {pl.gpus_per_node} GPUs")
        used: dict[str, int] = defaultdict(int)
        compute = 0
        for ln in mig_lines[pl.key]:
            o = options.get(ln.option)
            shape = shapes.get(ln.mig_profile)
            if o is None or o.pool != pl.key or o.mig_profile != ln.mig_profile or shape is None:
                bad.append(
                    f"{ln.workload}: MIG line {ln.option} does not match a MIG option of pool {pl.key}"
                )
                continue
            unit = per_cs * shape.compute_slices
            if ln.nodes != o.mig_slices or not (
                math.isclose(ln.unit_price_usd_per_hour, unit, rel_tol=1e-9, abs_tol=1e-12)
                and math.isclose(
                    ln.cost_usd_per_month, ln.nodes * unit * HOURS_PER_MONTH, rel_tol=1e-9, abs_tol=1e-9
                )
            ):
                bad.append(
                    f"{ln.workload}: {ln.nodes} x {ln.mig_profile} at {ln.unit_price_usd_per_hour}/h, "
                    f"its option needs {o.mig_slices} slices at {unit}/h"
                )
            used[ln.mig_profile] += ln.nodes
            compute += ln.nodes * shape.compute_slices
        for prof, k in used.items():
            if k > supply.get(prof, 0):
                bad.append(f"pool {pl.key}: {k} {prof} slices placed, {supply.get(prof, 0)} configured")
        if sorted(pl.slices) != sorted((ln.workload, ln.mig_profile, ln.nodes) for ln in mig_lines[pl.key]):
            bad.append(f"pool {pl.key}: its slice list differs from the plan's slice lines")
        idle = pl.nodes * pl.gpus_per_node * total - compute
        idle_n = sum(ln.nodes for ln in idle_lines[pl.key])
        if idle != idle_n:
            bad.append(f"pool {pl.key}: idle line counts {idle_n} compute slices, the pool has {idle} idle")
        lines_cost = sum(ln.cost_usd_per_month for ln in mig_lines[pl.key] + idle_lines[pl.key])
        if not math.isclose(cost, lines_cost, rel_tol=1e-7, abs_tol=1e-6):
            bad.append(f"pool {pl.key}: lines cost ${lines_cost:,.2f}, its {pl.nodes} nodes ${cost:,.2f}")
    return bad


def min_gpus(gpu: str, demand: Mapping[str, int]) -> tuple[int, list[tuple[Config, int]]]:
    """Fewest GPUs whose MIG configurations hold ``demand`` (profile -> slices), with a layout (memoised)."""
    n, layout = _min_gpus(gpu, tuple(sorted(demand.items())))
    return n, list(layout)


@cache
def _min_gpus(gpu: str, items: tuple[tuple[str, int], ...]) -> tuple[int, tuple[tuple[Config, int], ...]]:
    """Fewest GPUs whose MIG configurations hold ``demand`` (profile -> slices), with a layout; by dynamic
    programming over the remaining demand (independent of the MILP; for brute force and tests)."""
    demand = dict(items)
    configs = mig_configs(gpu)
    profs = sorted(demand)
    start = tuple(demand[p] for p in profs)
    vecs = [tuple(dict(c).get(p, 0) for p in profs) for c in configs]
    memo: dict[tuple[int, ...], tuple[int, int]] = {}

    def f(rem: tuple[int, ...]) -> tuple[int, int]:
        if not any(rem):
            return 0, -1
        if rem in memo:
            return memo[rem]
        best = (10**9, -1)
        for i, v in enumerate(vecs):
            if not any(r and a for r, a in zip(rem, v, strict=True)):
                continue
            nxt = tuple(max(0, r - a) for r, a in zip(rem, v, strict=True))
            cand = f(nxt)[0] + 1
            if cand < best[0]:
                best = (cand, i)
        memo[rem] = best
        return best

    n, _ = f(start)
    layout: dict[int, int] = defaultdict(int)
    rem = start
    while any(rem):
        _, i = f(rem)
        layout[i] += 1
        rem = tuple(max(0, r - a) for r, a in zip(rem, vecs[i], strict=True))
    return n, tuple((configs[i], k) for i, k in sorted(layout.items()))


def k8s_resource(profile: str) -> str:
    """The extended resource a MIG slice is requested as under the NVIDIA GPU Operator's *mixed* strategy
    (k8s-device-plugin: ``nvidia.com/mig-<profile>``, e.g. ``nvidia.com/mig-1g.10gb``)."""
    return f"nvidia.com/mig-{profile}"


__all__ = [
    "IDLE_WORKLOAD",
    "SHARED_TEAM",
    "MigShape",
    "add_pools",
    "build_pool",
    "check_pools",
    "config_is_valid",
    "decode_pools",
    "k8s_resource",
    "mig_configs",
    "mig_options",
    "mig_shapes",
    "min_gpus",
    "options_for_levers",
    "slice_line",
    "slices_needed",
]
