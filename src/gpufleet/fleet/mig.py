"""MIG geometry: NVIDIA's GPU-instance profiles with their slice placements, the valid configurations of one
GPU, and the fewest GPUs that hold a set of slices.

A MIG-capable GPU has 7 compute slices and 8 memory slices (A100, H100, H200, B200, ...; 4 and 4 on A30
and RTX PRO 6000). A GPU-instance profile takes ``c`` compute slices and ``m`` memory slices, starting at one
of its allowed memory-slice positions (``fleet/data/mig_placements.csv``, NVIDIA MIG User Guide's
``nvidia-smi mig -lgipp`` listing). A *configuration* of one GPU is a set of instances on non-overlapping
memory-slice ranges at allowed starts using at most the GPU's compute slices; :func:`mig_configs` enumerates
the maximal ones (a slot left empty is allowed), :func:`config_is_valid` checks one independently.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from gpufleet.units import GB, GIB


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


__all__ = [
    "Config",
    "MigShape",
    "config_is_valid",
    "k8s_resource",
    "mig_configs",
    "mig_shapes",
    "min_gpus",
    "shape_of",
    "slice_spec",
    "useful_shapes",
]
