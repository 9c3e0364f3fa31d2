"""Vectorised sizing of GPU capacity workloads, with exact dominance pruning before any option is built.

Sizing a workload used to build one :class:`~gpufleet.fleet.types.Option` per fitting catalog offer (~800 per
workload) and prune them in Python. Here the offer table is indexed once per fleet (:class:`OfferIndex`:
codes, prices per kind, quota and existing-commitment matches as boolean matrices), and per workload the
same two exact dominance rules as :mod:`gpufleet.fleet.prune` run over numpy arrays of the fitting offers:

* *mirror*: offers of the same shape (same node blocks, quota units, spot availability, coupled rows) where
  one is at most the other on every cost component (regular and spot per block, transfer): the cheaper copies
  any pay split of the dearer;
* *bound*: offers touching the same coupled rows where one's all-regular cost is at most the other's best case
  and its all-regular quota use at most the other's lowest.

Only the survivors (under every lever set the plan and its savings waterfall solve with, and inside today's
provider/region for the right-size step) become options; :func:`gpufleet.fleet.prune.prune_options` then
runs on those few. Both rules are exact (a pruned offer is replaced by a kept one without raising cost or
breaking a row), and dominance is transitive, so pruning in two stages keeps the optimum.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offer_table import OfferTable
from gpufleet.cost.commitment import TERM_MONTHS, term_allowed
from gpufleet.fleet.model import Levers
from gpufleet.fleet.types import Block, Fleet, FleetWorkload
from gpufleet.recommend.deploy import DEFAULT_HOST_RULES
from gpufleet.units import HOURS_PER_MONTH

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B8 = npt.NDArray[np.bool_]
_EPS = 1e-9

ONPREM = "onprem"


def _codes(col: npt.NDArray[Any]) -> tuple[list[str], I64]:
    names, inv = np.unique(col.astype(str), return_inverse=True)
    return [str(s) for s in names], inv.astype(np.int64)


def _glob_mask(names: list[str], pattern: str, codes: I64, lower: bool) -> B8:
    pat = pattern.lower() if lower else pattern
    hit = np.array([fnmatch.fnmatchcase(n.lower() if lower else n, pat) for n in names], dtype=bool)
    return hit[codes] if len(codes) else np.zeros(0, dtype=bool)


def _finite_pos(a: F64) -> F64:
    out = np.array(a, dtype=float)
    with np.errstate(invalid="ignore"):
        out[~(np.isfinite(out) & (out > 0))] = np.nan
    return out


def _scale_out(table: OfferTable) -> B8:
    """Per offer: may one replica span several of its nodes (:attr:`OfferIndex.scale_out`)."""
    from gpufleet.catalog.capabilities import fabric_for
    from gpufleet.recommend.deploy import trains_across_nodes

    memo: dict[tuple[str, str, str], bool] = {}
    out = np.zeros(len(table), dtype=bool)
    cols = zip(table.column("provider"), table.column("instance_type"), table.column("gpu"), strict=True)
    for r, key in enumerate(cols):
        k = (str(key[0]), str(key[1]), str(key[2]))
        v = memo.get(k)
        if v is None:
            v = memo[k] = trains_across_nodes(fabric_for(*k))
        out[r] = v
    return out


def _same_place_dominated(live: B8, key_cols: list[npt.NDArray[Any]], prices: F64) -> B8:
    """Offers another offer of the same place and shape beats on every price (workload-independent, exact).

    Same provider, region, GPU, GPU count, vCPUs, RAM, quota and commitment matches: every workload sizes
    both alike (same filters, transfer, spot factor, node blocks, rows), and the cheaper-or-equal one on
    on-demand, spot, 1-year and 3-year (a missing price counts as infinite) copies any pay split of the other.
    """
    out = np.zeros(len(live), dtype=bool)
    rows = np.flatnonzero(live)
    if rows.size == 0:
        return out
    code = np.zeros(rows.size, dtype=np.int64)
    for col in key_cols:
        inv = np.unique(np.asarray(col)[rows], return_inverse=True)[1].reshape(-1)
        code = np.unique(code * (int(inv.max()) + 1) + inv, return_inverse=True)[1].reshape(-1)
    vals = np.where(np.isfinite(prices[rows]), prices[rows], np.inf)
    sums = np.where(np.isfinite(vals), vals, 1e12).sum(axis=1)
    for grp in _groups(code)[1]:
        v = vals[grp]

        def dom(p: int, v: F64 = v) -> B8:
            return np.asarray((v[p] <= v + _EPS).all(axis=1))

        kept = _front(v, np.argsort(sums[grp], kind="stable"), dom)
        out[rows[grp[~kept]]] = True
    return out


@dataclass(slots=True)
class OfferIndex:
    """The offer table as codes and price columns, with each quota's and commitment's matches (per fleet)."""

    table: OfferTable
    providers: list[str]
    provider: I64
    pairs: list[tuple[str, str]]  # (provider, region) per pair code
    pair: I64
    gpus: list[str]
    gpu: I64
    count: F64
    mem_gib: F64
    vcpus: F64  # 0 where unknown
    ram_gib: F64  # 0 where unknown
    od: F64  # USD/node-hour; NaN = no such price
    sp: F64
    c1: F64
    c3: F64
    base: B8  # whole GPUs (>= 1) with an on-demand price
    quota: B8  # (quotas, offers): the quota matches the offer
    quota_unit: list[str]
    quota_spot: list[bool]
    existing: B8  # (commitments, offers): the commitment matches the offer (term left >= 1 month)
    onprem: B8
    #: the offer may carry a replica that spans several nodes (an RDMA scale-out fabric >= 100 Gb/s per node
    #: or TPU Multislice, :func:`gpufleet.recommend.deploy.trains_across_nodes`; on-prem sites: as declared)
    scale_out: B8
    units: F64  # (offers, quotas): what one node counts against each quota (GPUs, vCPUs or 1)
    codes: dict[tuple[str, bool], I64]  # (rule, existing lever) -> coupled-row group code per offer
    _allowed: dict[tuple[object, ...], dict[int, bool]] = field(default_factory=dict)
    _gpu_sets: dict[tuple[str, ...], B8] = field(default_factory=dict)

    @classmethod
    def build(cls, fleet: Fleet, table: OfferTable, by_kind: dict[str, F64]) -> OfferIndex:
        providers, prov = _codes(table.column("provider"))
        regions, reg = _codes(table.column("region"))
        gpus, gpu = _codes(table.column("gpu"))
        itypes, it = _codes(table.column("instance_type"))
        pair_key = prov * (len(regions) + 1) + reg
        uniq, pair = np.unique(pair_key, return_inverse=True)
        pairs = [
            (providers[int(k) // (len(regions) + 1)], regions[int(k) % (len(regions) + 1)]) for k in uniq
        ]
        count = np.asarray(table.column("gpu_count"), dtype=float)
        vc = np.nan_to_num(np.asarray(table.column("vcpus"), dtype=float), nan=0.0)
        ram = np.nan_to_num(np.asarray(table.column("ram_gib"), dtype=float), nan=0.0)
        od = _finite_pos(by_kind["on_demand"])
        c = fleet.constraints
        n = len(table)
        q = np.zeros((len(c.quotas), n), dtype=bool)
        for i, qt in enumerate(c.quotas):
            pcode = providers.index(qt.provider) if qt.provider in providers else -1
            q[i] = (
                (prov == pcode)
                & _glob_mask(regions, qt.region, reg, lower=False)
                & _glob_mask(gpus, qt.gpu, gpu, lower=True)
                & _glob_mask(itypes, qt.instance_family, it, lower=True)
            )
        ex = np.zeros((len(c.existing), n), dtype=bool)
        for k, e in enumerate(c.existing):
            if e.term_left_months < 1.0 or e.provider not in providers:
                continue
            ex[k] = (
                (prov == providers.index(e.provider))
                & (reg == (regions.index(e.region) if e.region in regions else -1))
                & (it == (itypes.index(e.instance_type) if e.instance_type in itypes else -1))
            )
        with np.errstate(invalid="ignore"):
            base = (count >= 1) & (np.mod(count, 1.0) == 0) & np.isfinite(od)
        units = (
            np.stack(
                [count if qt.unit == "gpus" else vc if qt.unit == "vcpus" else np.ones(n) for qt in c.quotas],
                1,
            )
            if c.quotas
            else np.zeros((n, 0))
        )
        qunits = np.where(q.T, units, -1.0)  # mirror rule: same quota units (matching quotas only)
        qsig = (q.T & (units > 0)).astype(float)  # bound rule: same quotas touched
        prov_col = (prov if c.max_providers is not None else np.zeros(n, dtype=np.int64)).astype(float)[
            :, None
        ]
        codes = {}
        for with_ex in (False, True):
            exc = ex.T.astype(float) if with_ex else np.zeros((n, 0))
            for rule, cols in (("mirror", qunits), ("bound", qsig)):
                key = np.concatenate([cols, exc, prov_col], axis=1)
                codes[(rule, with_ex)] = (
                    np.unique(key, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
                )
        onprem = prov == (providers.index(ONPREM) if ONPREM in providers else -1)
        scale_out = _scale_out(table) | onprem
        sp, c1, c3 = (
            _finite_pos(by_kind["spot"]),
            _finite_pos(by_kind["commit_1y"]),
            _finite_pos(by_kind["commit_3y"]),
        )
        base &= ~_same_place_dominated(
            base & ~onprem,
            [prov, pair, gpu, count, vc, ram, scale_out, codes[("mirror", True)], codes[("bound", True)]],
            np.stack([od, sp, c1, c3], axis=1),
        )
        return cls(
            table=table,
            providers=providers,
            provider=prov,
            pairs=pairs,
            pair=pair.astype(np.int64),
            gpus=gpus,
            gpu=gpu,
            count=count,
            mem_gib=np.asarray(table.column("gpu_memory_gib"), dtype=float),
            vcpus=vc,
            ram_gib=ram,
            od=od,
            sp=sp,
            c1=c1,
            c3=c3,
            base=base,
            quota=q,
            quota_unit=[qt.unit for qt in c.quotas],
            quota_spot=[qt.spot for qt in c.quotas],
            existing=ex,
            onprem=onprem,
            scale_out=scale_out,
            units=units,
            codes=codes,
        )

    def gpu_mask(self, wanted: set[str]) -> B8:
        key = tuple(sorted(wanted))
        if key not in self._gpu_sets:
            hit = np.array([g in wanted for g in self.gpus], dtype=bool)
            self._gpu_sets[key] = hit[self.gpu]
        return self._gpu_sets[key]

    def allowed_pairs(self, fw: FleetWorkload, codes: I64, allowed: Callable[[str, str], bool]) -> B8:
        """Whether each pair code in ``codes`` is an allowed place for ``fw`` (memoised per filter)."""
        key = (fw.providers, fw.regions, fw.geos, fw.countries)
        memo = self._allowed.setdefault(key, {})
        out = np.empty(len(codes), dtype=bool)
        for j, cd in enumerate(codes.tolist()):
            v = memo.get(cd)
            if v is None:
                v = memo[cd] = allowed(*self.pairs[cd])
            out[j] = v
        return out


def host_vcpu_units(vcpus: F64, gpus_per_replica: int, *, job: bool) -> I64:
    """Replicas of ``gpus_per_replica`` GPUs a node of ``vcpus`` can drive under the recommender's host rule
    (:class:`gpufleet.recommend.deploy.HostRules`): serving needs 2 + 1 vCPU per GPU on the node (vLLM "CPU
    resources for GPU deployments"), a job 4 per GPU (trainer + DataLoader workers). Applied to capacity
    workloads that state no vCPUs: before, a production T4 replica was planned on GCP n1-standard-1 (1 vCPU,
    3.75 GB RAM) and a staging V100 on a 2-vCPU, 4 GB host, which no serving engine runs on."""
    h = DEFAULT_HOST_RULES
    if job:
        units = np.floor(vcpus / (h.vcpus_per_gpu_training * gpus_per_replica))
    else:
        units = np.floor((vcpus - h.vcpus_base_inference) / (h.vcpus_per_gpu_inference * gpus_per_replica))
    return np.maximum(units, 0).astype(np.int64)


@dataclass(slots=True)
class Candidates:
    """The offers that can carry one workload, in option order, with their shape."""

    offer: I64  # offer row per candidate
    units_per_node: I64
    nodes_per_unit: I64


def candidates(
    ix: OfferIndex, fw: FleetWorkload, wanted: set[str] | None, allowed: Callable[[str, str], bool]
) -> Candidates:
    """Offers that fit the workload's GPUs, memory, vCPUs, RAM and placement filters (table order)."""
    r = fw.resources
    assert r is not None
    m = ix.base & (ix.mem_gib >= r.min_gpu_memory_gib)
    if wanted is not None:
        m = m & ix.gpu_mask(wanted)
    idx = np.flatnonzero(m)
    if idx.size:
        codes, inv = np.unique(ix.pair[idx], return_inverse=True)
        idx = idx[ix.allowed_pairs(fw, codes, allowed)[inv]]
    g = ix.count[idx].astype(np.int64)
    gpr = r.gpus_per_replica
    whole = g >= gpr
    per = np.where(whole, g // max(gpr, 1), 1)
    if r.vcpus > 0:
        vc = ix.vcpus[idx]
        per = np.where(whole & (vc > 0), np.minimum(per, np.floor(vc / r.vcpus).astype(np.int64)), per)
    elif gpr > 0:  # no vCPUs stated: the recommender's host floor for the GPUs a node runs
        vc = ix.vcpus[idx]
        per = np.where(whole & (vc > 0), np.minimum(per, host_vcpu_units(vc, gpr, job=r.job)), per)
    if r.ram_gib > 0:
        ram = ix.ram_gib[idx]
        per = np.where(whole & (ram > 0), np.minimum(per, np.floor(ram / r.ram_gib).astype(np.int64)), per)
    elif gpr > 0:  # no RAM stated: at least the recommender's base (OS, CUDA host allocations, engine)
        ram = ix.ram_gib[idx]
        per = np.where(whole & (ram > 0) & (ram < DEFAULT_HOST_RULES.ram_base_gib), 0, per)
    # A replica larger than a node spans nodes only over an RDMA fabric (>= 100 Gb/s per node) or TPU
    # Multislice: data/tensor/pipeline traffic of one replica over a plain TCP NIC leaves it network-bound
    # (NVIDIA DGX SuperPOD reference architecture, NCCL GPUDirect RDMA docs, AWS "EFA for ML training"; vLLM
    # "Distributed inference": multi-node needs a fast interconnect such as InfiniBand; docs/recommend.md
    # rule 12). Before, an 8-GPU job was planned on 8 one-GPU VMs over ethernet.
    ok = np.where(whole, per >= 1, ix.scale_out[idx])
    npu = np.where(whole, 1, -(-gpr // np.maximum(g, 1)))
    return Candidates(offer=idx[ok], units_per_node=per[ok], nodes_per_unit=npu[ok])


def _front(vals: F64, order: I64, dominates: Callable[[int], B8]) -> B8:
    """Greedy exact front: walk ``order``; each survivor removes everything it dominates."""
    alive = np.ones(len(vals), dtype=bool)
    keep = np.zeros(len(vals), dtype=bool)
    for p in order.tolist():
        if not alive[p]:
            continue
        keep[p] = True
        alive &= ~dominates(p)
    return keep


def _groups(code: I64) -> tuple[I64, list[I64]]:
    """(rows alone in their code, [row indices of each code shared by several rows, in row order])."""
    if len(code) == 0:
        return np.zeros(0, dtype=np.int64), []
    order = np.argsort(code, kind="stable")
    cuts = np.flatnonzero(np.diff(code[order])) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(code)]])
    single = (ends - starts) == 1
    multi = [order[a:b] for a, b in zip(starts[~single].tolist(), ends[~single].tolist(), strict=True)]
    return order[starts[single]], multi


@dataclass(slots=True)
class ShapeData:
    blocks: tuple[Block, ...]
    nodes: F64
    hours: F64


def prefilter(ix: OfferIndex, fw: FleetWorkload, cand: Candidates, spot_factor: F64, transfer: F64) -> B8:
    """Candidates no candidate of the same shape, provider and coupled rows beats on every price and transfer.

    Lever-independent (exact for every lever set): the regular cost of a block is the cheapest allowed of
    on-demand, 1-year and 3-year, monotone in each price, and the spot cost is monotone in the expected spot
    price, so the cheaper-or-equal offer copies any pay split of the other (a missing price counts as
    infinite: the dearer never pays that way). HA workloads compare within one region only.
    """
    n = len(cand.offer)
    off = cand.offer
    vals = np.stack([ix.od[off], ix.sp[off] * spot_factor, ix.c1[off], ix.c3[off], transfer], axis=1)
    vals = np.where(np.isfinite(vals), vals, np.inf)
    pair = ix.pair[off] if fw.ha_regions > 1 else np.zeros(n, dtype=np.int64)
    code = (
        (
            (ix.codes[("mirror", True)][off] * (len(ix.providers) + 1) + ix.provider[off])
            * (len(ix.pairs) + 1)
            + pair
        )
        * 2**20
        + cand.units_per_node * 4096
        + cand.nodes_per_unit
    )
    keep = np.ones(n, dtype=bool)
    keep[ix.onprem[off]] = True
    sums = np.where(np.isfinite(vals), vals, 1e12).sum(axis=1)
    for grp in _groups(code)[1]:
        v = vals[grp]

        def dom(p: int, v: F64 = v) -> B8:
            return np.asarray((v[p] <= v + _EPS).all(axis=1))

        keep[grp] = _front(v, np.argsort(sums[grp], kind="stable"), dom)
    keep |= ix.onprem[off]
    return keep


def effective_levers(fw: FleetWorkload, fleet: Fleet, levers: Levers, any_existing: bool) -> tuple[bool, ...]:
    """What ``levers`` change for this workload's sizing: spot, 1-year, 3-year, existing commitments."""
    terms = fleet.constraints.commitment_terms
    return (
        levers.spot and fw.preemptible_fraction > 0,
        *(levers.commitments and term_allowed(k, terms, fw.lifetime_months) for k in TERM_MONTHS),
        levers.existing and any_existing,
    )


def survivors(
    ix: OfferIndex,
    fw: FleetWorkload,
    fleet: Fleet,
    cand: Candidates,
    shapes: dict[tuple[int, int], ShapeData],
    spot_factor: F64,
    transfer: F64,
    levers: Levers,
    subset: B8 | None = None,
    *,
    mirror: bool = True,
) -> B8:
    """Candidates no other candidate dominates under ``levers`` (mirror, then bound); on-prem always kept."""
    n = len(cand.offer)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    live = np.ones(n, dtype=bool) if subset is None else subset.copy()
    off = cand.offer
    onprem = ix.onprem[off]
    keep |= onprem & live
    live &= ~onprem
    c = fleet.constraints
    terms = c.commitment_terms
    od, sp = ix.od[off], ix.sp[off] * spot_factor
    allow = {k: levers.commitments and term_allowed(k, terms, fw.lifetime_months) for k in TERM_MONTHS}
    keep_od = 1.0 - c.commitment_margin_fraction  # a term pays only at <= this share of on-demand
    spot_ok = levers.spot and fw.preemptible_fraction > 0
    has_spot: B8 = np.asarray(np.isfinite(sp) & spot_ok, dtype=bool)
    ex_bits = ix.existing[:, off].T if levers.existing else np.zeros((n, 0), dtype=bool)
    has_ex: B8 = np.asarray(ex_bits.any(axis=1), dtype=bool)
    units = ix.units[off]
    qsig = ix.quota[:, off].T & (units > 0)
    npairs = len(ix.pairs) if fw.ha_regions > 1 else 1
    pair = ix.pair[off] if fw.ha_regions > 1 else np.zeros(n, dtype=np.int64)
    mcode = (ix.codes[("mirror", levers.existing)][off] * npairs + pair) * 2 + has_spot
    bcode = ix.codes[("bound", levers.existing)][off] * npairs + pair
    hi = np.full(n, np.inf)
    lo = np.full(n, np.inf)
    peak = np.zeros(n)
    spot_max = np.zeros(n)
    shape_id = np.zeros(n, dtype=np.int64)
    mirror_keep = np.zeros(n, dtype=bool)
    for sid, ((upn, npu), sd) in enumerate(shapes.items()):
        rows = np.flatnonzero(live & (cand.units_per_node == upn) & (cand.nodes_per_unit == npu))
        if rows.size == 0:
            continue
        shape_id[rows] = sid
        h = sd.hours[None, :]
        reg_od = od[rows, None] * h
        reg = reg_od
        for k, col in (("commit_1y", ix.c1), ("commit_3y", ix.c3)):
            if allow[k]:
                cm = col[off[rows]][:, None] * HOURS_PER_MONTH
                better = np.isfinite(cm) & (cm <= keep_od * reg_od + 1e-9) & (cm < reg - _EPS)
                reg = np.where(better, cm, reg)
        spot = np.where(has_spot[rows, None], sp[rows, None] * h, 0.0)
        nb = sd.nodes[None, :]
        tr = transfer[rows]
        cost_max = (reg * nb).sum(axis=1) + tr
        npk = float(sd.nodes.sum())
        sh = math.floor(fw.preemptible_fraction * npk + 1e-9)
        gains = np.where(has_spot[rows, None], np.maximum(0.0, reg - spot), 0.0)
        order = np.argsort(-gains, axis=1, kind="stable")
        gs = np.take_along_axis(gains, order, axis=1)
        ns = sd.nodes[order]
        before = np.cumsum(ns, axis=1) - ns
        take = np.clip(sh - before, 0.0, ns)
        save = np.where(has_ex[rows], (reg * nb).sum(axis=1), (gs * take).sum(axis=1))
        hi[rows] = cost_max
        lo[rows] = cost_max - save
        peak[rows] = npk
        spot_max[rows] = np.where(has_spot[rows], min(sh, npk), 0.0)
        if not mirror:  # the caller's prefilter applied a lever-independent form of it
            mirror_keep[rows] = True
            continue
        # mirror rule inside this shape
        vec = np.concatenate([reg, spot, tr[:, None]], axis=1)
        sums = vec.sum(axis=1)
        alone, multi = _groups(mcode[rows])
        mirror_keep[rows[alone]] = True
        for grp in multi:
            v = vec[grp]

            def mdom(p: int, v: F64 = v) -> B8:
                return np.asarray((v[p] <= v + _EPS).all(axis=1))

            kept = _front(v, np.argsort(sums[grp], kind="stable"), mdom)
            mirror_keep[rows[grp[kept]]] = True
    live &= mirror_keep
    rows = np.flatnonzero(live)
    if rows.size == 0:
        return keep
    spot_q = np.array(ix.quota_spot, dtype=bool)
    use_hi = np.where(qsig[rows], units[rows] * peak[rows, None], 0.0)
    use_lo = np.where(qsig[rows], units[rows] * (peak[rows] - spot_max[rows])[:, None], 0.0)
    if spot_q.any():
        use_hi[:, spot_q] = 0.0
        use_lo[:, spot_q] = 0.0
    h_, l_ = hi[rows], lo[rows]
    alone, multi = _groups(bcode[rows])
    keep[rows[alone]] = True
    for grp in multi:
        gh, gl, uh, ul = h_[grp], l_[grp], use_hi[grp], use_lo[grp]

        def bdom(p: int, gh: F64 = gh, gl: F64 = gl, uh: F64 = uh, ul: F64 = ul) -> B8:
            return np.asarray((gh[p] <= gl + _EPS) & (uh[p] <= ul + _EPS).all(axis=1))

        kept = _front(gh, np.lexsort((np.arange(grp.size), gl, gh)), bdom)
        keep[rows[grp[kept]]] = True
    return keep
