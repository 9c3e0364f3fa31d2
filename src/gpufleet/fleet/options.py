"""Options per workload: every offer x node count that can carry it, with its load blocks and its prices.

Model workloads are sized by the recommend engine's candidate generation
(:func:`gpufleet.recommend.candidates.build_candidates`, the same physics as ``gpufleet recommend``); capacity
workloads by filtering the offer table; CPU work by the AWS Graviton/x86 offers. On-premises sites become
offers of provider ``onprem`` priced by TCO.
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gpufleet.catalog.offers import Offer, OfferTable
from gpufleet.cost.prices import node_prices_usd_per_hour
from gpufleet.cost.spot import SpotAssumption, assumption_for, replica_availability, spot_training
from gpufleet.fleet.model import LEVER_SETS
from gpufleet.fleet.refdata import cpu_offers, egress_tiers, priced_gib, region_info, transfer_usd
from gpufleet.fleet.types import Block, Fleet, FleetWorkload, OnPremSite, Option
from gpufleet.recommend.failure import load_units, needs_spare, units_with_spare
from gpufleet.recommend.perf import Estimator
from gpufleet.recommend.types import Workload
from gpufleet.units import HOURS_PER_MONTH

ONPREM = "onprem"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadOptions:
    workload: str
    options: tuple[Option, ...]
    reason: str  # why there are none (empty when there are some)
    notes: tuple[str, ...] = ()
    generated: int = 0  # options before pruning dominated ones [count]


def on_prem_offers(sites: tuple[OnPremSite, ...]) -> list[Offer]:
    """Offer rows for on-prem sites; the hourly price is the TCO at full use (fixed / 730 h + energy)."""
    from gpufleet.catalog.specs import get_spec

    out = []
    for s in sites:
        spec = get_spec(s.gpu)
        out.append(
            Offer(
                provider=ONPREM,
                region=s.region,
                zone=None,
                instance_type=s.name,
                gpu=spec.id,
                gpu_count=float(s.gpus_per_node),
                gpu_memory_gib=spec.memory_gib,
                vcpus=s.vcpus_per_node or None,
                ram_gib=s.ram_gib_per_node or None,
                arch=None,
                price_on_demand_usd_per_hour=s.fixed_usd_per_node_month / HOURS_PER_MONTH
                + s.energy_usd_per_node_hour
                or 1e-6,
                price_spot_usd_per_hour=None,
                captured_at="fleet file",
                source="on-prem TCO from the fleet file",
            )
        )
    return out


def resolve_gpus(patterns: tuple[str, ...], workload: str) -> set[str]:
    """Spec ids matched by ``patterns``: globs over spec ids (``A100*``) or any known id/alias (``T4``)."""
    from gpufleet.catalog.specs import get_spec, load_specs
    from gpufleet.errors import GpufleetError, InputError

    ids = list(load_specs())
    out: set[str] = set()
    for pat in patterns:
        hits = {i for i in ids if fnmatch.fnmatchcase(i.lower(), pat.lower())}
        if not hits and not any(ch in pat for ch in "*?["):
            try:
                hits = {get_spec(pat).id}
            except GpufleetError:
                hits = set()
        if not hits:
            raise InputError(
                f"Workload {workload!r}: GPU {pat!r} matches no accelerator. Use a spec id or alias "
                "(`gpufleet catalog gpus` lists them) or a glob such as 'A100*'."
            )
        out |= hits
    return out


class _Prices:
    """Node prices per kind over one table, computed once."""

    def __init__(self, table: OfferTable) -> None:
        self.table = table
        self.by_kind = {
            k: node_prices_usd_per_hour(table, k) for k in ("on_demand", "spot", "commit_1y", "commit_3y")
        }


def _blocks(
    profile_hours: Callable[[int], float], units_peak: int, units_per_node: int, nodes_per_unit: int
) -> tuple[Block, ...]:
    """Blocks of nodes: node j is needed while its first unit is (units fill nodes bottom-up)."""
    blocks: list[Block] = []
    prev_nodes = 0
    for k in range(1, units_peak + 1):
        nodes = math.ceil(k / units_per_node) * nodes_per_unit
        if nodes == prev_nodes:
            continue
        h = profile_hours(k)
        add = nodes - prev_nodes
        prev_nodes = nodes
        if h <= 0:
            continue
        if blocks and abs(blocks[-1].hours_per_month - h) < 1e-9:
            blocks[-1] = Block(nodes=blocks[-1].nodes + add, hours_per_month=h)
        else:
            blocks.append(Block(nodes=add, hours_per_month=h))
    return tuple(blocks)


def _units_for(fw: FleetWorkload, units: int) -> int:
    """Units per region: HA over N >= 2 regions sizes each region to carry the peak with one region lost
    (ceil(peak / (N - 1)); production serving adds no N+1 spare on top, :attr:`FleetWorkload.node_spare`)."""
    if fw.ha_regions >= 2:
        return math.ceil(units / (fw.ha_regions - 1))
    return units


def _allowed_place(fw: FleetWorkload, provider: str, region: str, sites: dict[str, OnPremSite]) -> bool:
    if fw.providers and provider not in fw.providers:
        return False
    if fw.regions and not any(fnmatch.fnmatchcase(region.lower(), g.lower()) for g in fw.regions):
        return False
    if fw.geos or fw.countries:
        if provider == ONPREM:
            site = next((s for s in sites.values() if s.region == region), None)
            geo, country = (site.geo.lower(), site.country.upper()) if site else ("", "")
        else:
            info = region_info(provider, region)
            if info is None:
                return False  # residency cannot be proven for an unknown region
            geo, country = info.geo.lower(), info.country.upper()
        if fw.geos and geo not in fw.geos:
            return False
        if fw.countries and country not in fw.countries:
            return False
    return True


def _transfer(fw: FleetWorkload, provider: str, region: str, notes: set[str]) -> float:
    """Monthly egress of ``fw`` placed in provider/region; unpriced paths add a sentence to ``notes``."""
    if fw.data is None:
        return 0.0
    d = fw.data
    total = 0.0
    if d.size_gib > 0 and d.transfers_per_month > 0:
        usd = transfer_usd(d.provider, d.region, provider, region, d.size_gib)
        if usd is None:
            notes.add(f"no sourced egress price from {d.provider}/{d.region}: data moves priced at $0")
        else:
            total += usd * d.transfers_per_month
    if d.serving_egress_gib_per_month > 0:
        tiers = egress_tiers(provider, "internet_out", region)
        # over ha_regions = N regions each serves 1/N of the traffic (the data above is copied to each);
        # before the second review of 2026-11-29 every region was billed the whole month's responses
        share = d.serving_egress_gib_per_month / max(1, fw.ha_regions)
        if tiers:
            total += priced_gib(tiers, share)
        elif provider != ONPREM:
            notes.add(f"no sourced internet egress price for {provider}: serving traffic priced at $0")
    return total


def _spot_factor(
    provider: str, nodes_per_unit: int, training: bool, spot: dict[str, SpotAssumption]
) -> float:
    a = assumption_for(provider, spot)
    if training:
        st = spot_training(a, nodes=nodes_per_unit)
        return st.wall_time_factor if st.valid else math.nan
    return 1.0 / replica_availability(a, nodes_per_replica=nodes_per_unit)


def _option(
    fw: FleetWorkload,
    *,
    idx: int,
    provider: str,
    region: str,
    instance_type: str,
    gpu: str,
    gpus_per_node: float,
    vcpus: float,
    arch: str,
    units_peak: int,
    units_per_node: int,
    nodes_per_unit: int,
    prices: tuple[float, float, float, float],
    spot: dict[str, SpotAssumption],
    training: bool,
    sites: dict[str, OnPremSite],
    notes: set[str],
    blocks: tuple[Block, ...] | None = None,
    spot_factor: float | None = None,
    serving: Workload | None = None,
) -> Option | None:
    """One option; ``blocks`` and ``spot_factor`` may be given when the caller computed them already.
    ``serving``: the model workload whose ``units_peak`` carry the load; production serving adds the spare
    units (N+1, :func:`gpufleet.recommend.failure.units_with_spare`) at every hour with demand."""
    units = _units_for(fw, units_peak)
    load = 0
    if serving is None and fw.node_spare:  # capacity serving: one node's units spare (N+1)
        load = units
        units = load + _capacity_spare(units_per_node, nodes_per_unit)
        if blocks is None:
            blocks = _capacity_blocks(fw, load, units_per_node, nodes_per_unit)
    elif serving is not None and needs_spare(serving) and fw.node_spare:
        load = units
        spare = units_with_spare(load, serving) - load
        units = load + spare
        blocks = _blocks(
            lambda k: fw.demand.hours_needing(max(1, k - spare), load), units, units_per_node, nodes_per_unit
        )
    if blocks is None:
        blocks = _blocks(lambda k: fw.demand.hours_needing(k, units), units, units_per_node, nodes_per_unit)
    if not blocks:
        return None
    od, sp, c1, c3 = prices
    site = sites.get(instance_type) if provider == ONPREM else None
    if spot_factor is not None:
        factor = spot_factor
    else:
        factor = _spot_factor(provider, nodes_per_unit, training, spot) if provider != ONPREM else math.nan
    own: set[str] = set()
    transfer = _transfer(fw, provider, region, own)
    return Option(
        key=f"{fw.name}#{idx}",
        workload=fw.name,
        provider=provider,
        region=region,
        instance_type=instance_type,
        gpu=gpu,
        gpus_per_node=gpus_per_node,
        vcpus_per_node=vcpus,
        arch=arch,
        nodes_per_replica=nodes_per_unit,
        replicas_peak=units,
        blocks=blocks,
        price_on_demand_usd_per_hour=od if site is None else math.nan,
        price_spot_usd_per_hour=sp if site is None and math.isfinite(factor) else math.nan,
        price_commit_1y_usd_per_hour=c1 if site is None else math.nan,
        price_commit_3y_usd_per_hour=c3 if site is None else math.nan,
        spot_cost_factor=factor if math.isfinite(factor) else 1.0,
        transfer_usd_per_month=transfer,
        note="; ".join(sorted(own)),
        on_prem_site=site.name if site else None,
        on_prem_fixed_usd_per_node_month=site.fixed_usd_per_node_month if site else 0.0,
        on_prem_energy_usd_per_node_hour=site.energy_usd_per_node_hour if site else 0.0,
        replicas_needed=load,
        region_loss_units=units if fw.region_loss_sized else 0,
        units_per_node=units_per_node,
    )


def _capacity_spare(units_per_node: int, nodes_per_unit: int) -> int:
    """Units one lost node takes with it: all its units (one node) or the unit it belongs to."""
    return units_per_node if nodes_per_unit == 1 else 1


def _capacity_blocks(
    fw: FleetWorkload, load: int, units_per_node: int, nodes_per_unit: int
) -> tuple[Block, ...]:
    """Blocks of a production capacity workload: the units the demand needs plus one node's worth at every
    hour with demand."""
    spare = _capacity_spare(units_per_node, nodes_per_unit)
    return _blocks(
        lambda k: fw.demand.hours_needing(max(1, k - spare), load),
        load + spare,
        units_per_node,
        nodes_per_unit,
    )


def _price_tuple(p: _Prices, o: int) -> tuple[float, float, float, float]:
    def g(kind: str) -> float:
        v = float(p.by_kind[kind][o])
        return v if math.isfinite(v) and v > 0 else math.nan

    return g("on_demand"), g("spot"), g("commit_1y"), g("commit_3y")


class _Sizer:
    """Per-fleet caches for sizing GPU capacity workloads (see :mod:`gpufleet.fleet.sizing`)."""

    def __init__(
        self, fleet: Fleet, p: _Prices, spot: dict[str, SpotAssumption], sites: dict[str, OnPremSite]
    ):
        from gpufleet.fleet.sizing import OfferIndex

        self.fleet = fleet
        self.p = p
        self.spot = spot
        self.sites = sites
        self.ix = OfferIndex.build(fleet, p.table, p.by_kind)
        self.blocks: dict[tuple[object, ...], tuple[Block, ...]] = {}
        self.factor: dict[tuple[int, int, bool], float] = {}
        self.transfer: dict[tuple[object, int], float] = {}
        self.wanted: dict[tuple[str, ...], set[str]] = {}

    def options(self, fw: FleetWorkload, notes: set[str], *, prune: bool = True) -> tuple[list[Option], int]:
        """(surviving options, options generated before pruning) of a GPU capacity workload.

        ``prune=False`` builds every fitting offer (the reference the tests compare the pruning with).
        """
        from gpufleet.fleet.sizing import (
            Candidates,
            ShapeData,
            candidates,
            effective_levers,
            prefilter,
            survivors,
        )

        r = fw.resources
        assert r is not None
        ix = self.ix
        wanted = None
        if r.gpus:
            if r.gpus not in self.wanted:
                self.wanted[r.gpus] = resolve_gpus(r.gpus, fw.name)
            wanted = self.wanted[r.gpus]
        cand = candidates(ix, fw, wanted, lambda prov, reg: _allowed_place(fw, prov, reg, self.sites))
        n = len(cand.offer)
        if n == 0:
            return [], 0
        units = _units_for(fw, r.replicas)
        shapes: dict[tuple[int, int], ShapeData] = {}
        shape_code = cand.units_per_node * 4096 + cand.nodes_per_unit
        for sc in np.unique(shape_code).tolist():
            upn, npu = divmod(int(sc), 4096)
            key = (fw.demand, units, upn, npu, fw.node_spare)
            if key not in self.blocks:
                self.blocks[key] = (
                    _capacity_blocks(fw, units, upn, npu)
                    if fw.node_spare
                    else _blocks(lambda k: fw.demand.hours_needing(k, units), units, upn, npu)
                )
            bl = self.blocks[key]
            if not bl:
                return [], 0  # no demand hours: no shape has a block
            shapes[(upn, npu)] = ShapeData(
                blocks=bl,
                nodes=np.array([b.nodes for b in bl], dtype=float),
                hours=np.array([b.hours_per_month for b in bl], dtype=float),
            )
        prov = ix.provider[cand.offer]
        fcode = prov * 4096 + cand.nodes_per_unit
        uf, finv = np.unique(fcode, return_inverse=True)
        fvals = np.empty(len(uf))
        for j, fc in enumerate(uf.tolist()):
            pc, npu = divmod(int(fc), 4096)
            fk = (pc, npu, r.job)
            if fk not in self.factor:
                name = ix.providers[pc]
                self.factor[fk] = math.nan if name == ONPREM else _spot_factor(name, npu, r.job, self.spot)
            fvals[j] = self.factor[fk]
        factor = fvals[finv.reshape(-1)]
        transfer = np.zeros(n)
        if fw.data is not None:
            up, pinv = np.unique(ix.pair[cand.offer], return_inverse=True)
            tvals = np.empty(len(up))
            for j, pc in enumerate(up.tolist()):
                prov_name, region = ix.pairs[pc]
                tvals[j] = _transfer(fw, prov_name, region, set())
            transfer = tvals[pinv.reshape(-1)]
        pos = np.arange(n)  # option index = position among all fitting offers (stable keys)
        if prune and fw.current is None:
            pre = prefilter(ix, fw, cand, factor, transfer)
            pos = pos[pre]
            cand = Candidates(
                offer=cand.offer[pre],
                units_per_node=cand.units_per_node[pre],
                nodes_per_unit=cand.nodes_per_unit[pre],
            )
            factor, transfer, prov = factor[pre], transfer[pre], prov[pre]
        keep = np.full(len(pos), not prune)
        any_ex = bool(ix.existing[:, cand.offer].any())
        seen = set()
        for lv in LEVER_SETS if prune else ():
            eff = effective_levers(fw, self.fleet, lv, any_ex)
            if eff not in seen:  # lever sets that size this workload alike prune alike
                seen.add(eff)
                keep |= survivors(
                    ix, fw, self.fleet, cand, shapes, factor, transfer, lv, mirror=fw.current is not None
                )
        if prune and fw.current is not None:  # the waterfall's right-size step solves in today's place
            cur = fw.current
            same = prov == (ix.providers.index(cur.provider) if cur.provider in ix.providers else -1)
            regions = np.array([ix.pairs[pc][1] for pc in ix.pair[cand.offer].tolist()], dtype=object)
            here = same & np.array(
                [cur.region is None or fnmatch.fnmatchcase(str(rg), cur.region) for rg in regions], dtype=bool
            )
            for sub in (same, here):
                keep |= survivors(ix, fw, self.fleet, cand, shapes, factor, transfer, LEVER_SETS[0], sub)
        t = self.p.table
        out: list[Option] = []
        for j in np.flatnonzero(keep).tolist():
            o = int(cand.offer[j])
            vc = t.column("vcpus")[o]
            opt = _option(
                fw,
                idx=int(pos[j]),
                provider=str(t.column("provider")[o]),
                region=str(t.column("region")[o]),
                instance_type=str(t.column("instance_type")[o]),
                gpu=str(t.column("gpu")[o]),
                gpus_per_node=float(ix.count[o]),
                vcpus=float(vc) if vc is not None and np.isfinite(float(vc)) else 0.0,
                arch=str(t.column("arch")[o] or ""),
                units_peak=r.replicas,
                units_per_node=int(cand.units_per_node[j]),
                nodes_per_unit=int(cand.nodes_per_unit[j]),
                prices=_price_tuple(self.p, o),
                spot=self.spot,
                training=r.job,
                sites=self.sites,
                notes=notes,
                blocks=shapes[(int(cand.units_per_node[j]), int(cand.nodes_per_unit[j]))].blocks,
                spot_factor=float(factor[j]),
            )
            if opt is not None:
                out.append(opt)
        return out, n


def _cpu_options(fw: FleetWorkload, spot: dict[str, SpotAssumption], notes: set[str]) -> list[Option]:
    r = fw.resources
    assert r is not None
    out: list[Option] = []
    for c in cpu_offers():
        if r.arch and c.arch not in r.arch:
            continue
        if not _allowed_place(fw, "aws", c.region, {}):
            continue
        per_node = int(c.vcpus // r.vcpus)
        if r.ram_gib > 0:
            per_node = min(per_node, int(c.ram_gib // r.ram_gib))
        if per_node < 1:
            continue
        opt = _option(
            fw,
            idx=len(out),
            provider="aws",
            region=c.region,
            instance_type=c.instance_type,
            gpu="",
            gpus_per_node=0.0,
            vcpus=c.vcpus,
            arch=c.arch,
            units_peak=r.replicas,
            units_per_node=per_node,
            nodes_per_unit=1,
            prices=(c.price_on_demand_usd_per_hour, c.price_spot_usd_per_hour, math.nan, math.nan),
            spot=spot,
            training=False,
            sites={},
            notes=notes,
        )
        if opt is not None:
            out.append(opt)
    if out:
        notes.add(
            "CPU work is priced on AWS Graviton (arm64) and x86 offers only (aws_cpu_offers.csv); "
            "no commitment "
            "prices for them are shipped"
        )
    return out


def _model_options(
    fw: FleetWorkload,
    p: _Prices,
    est: Estimator,
    spot: dict[str, SpotAssumption],
    sites: dict[str, OnPremSite],
    notes: set[str],
) -> tuple[list[Option], str]:
    from gpufleet.recommend.candidates import build_candidates

    assert fw.workload is not None
    w = replace(
        fw.workload,
        pricing="on_demand",
        budget_usd_per_month=None,
        providers=fw.providers or fw.workload.providers,
        regions=fw.regions or fw.workload.regions,
    )
    cs = build_candidates(p.table, w, est, spot)
    if len(cs) == 0:
        return [], (
            f"no offer holds the model {w.model} ({w.precision}) under the filters; "
            f"`gpufleet recommend` on this workload says what would fit"
        )
    feasible = np.flatnonzero(cs.feasible)
    if feasible.size == 0:
        return (
            [],
            "offers fit in memory but none meets the workload's SLOs/deadline (see `gpufleet recommend`)",
        )
    best: dict[int, int] = {}
    for row in feasible.tolist():
        oi = int(cs.offer[row])
        if oi not in best or cs.total_nodes[row] < cs.total_nodes[best[oi]]:
            best[oi] = int(row)
    t = p.table
    out: list[Option] = []
    for o, row in best.items():
        prov, reg = str(t.column("provider")[o]), str(t.column("region")[o])
        if not _allowed_place(fw, prov, reg, sites):
            continue
        cfg = cs.configs[int(cs.cfg[row])]
        units = load_units(int(cs.replicas_needed[row]), w)  # the spare is added per region by _option
        vc = t.column("vcpus")[o]
        opt = _option(
            fw,
            idx=len(out),
            provider=prov,
            region=reg,
            instance_type=str(t.column("instance_type")[o]),
            gpu=str(t.column("gpu")[o]),
            gpus_per_node=float(t.column("gpu_count")[o]),
            vcpus=float(vc) if vc is not None and np.isfinite(float(vc)) else 0.0,
            arch=str(t.column("arch")[o] or ""),
            units_peak=units,
            units_per_node=1,
            nodes_per_unit=int(cfg.nodes_per_unit),
            prices=_price_tuple(p, o),
            spot=spot,
            training=w.is_training,
            sites=sites,
            notes=notes,
            serving=w,
        )
        if opt is not None:
            out.append(opt)
    return out, ""


def _mig_options(
    fw: FleetWorkload, p: _Prices, sites: dict[str, OnPremSite], notes: set[str]
) -> list[Option]:
    """MIG slice options of an inference workload that may share GPUs (:mod:`gpufleet.fleet.sharing`)."""
    from gpufleet.fleet.sharing import mig_options

    opts, mig_notes = mig_options(
        fw,
        p.table,
        p.by_kind["on_demand"],
        commit_prices=(p.by_kind["commit_1y"], p.by_kind["commit_3y"]),
        allowed=lambda prov, reg: _allowed_place(fw, prov, reg, sites),
        transfer=lambda prov, reg: _transfer(fw, prov, reg, notes),
    )
    notes.update(mig_notes)
    return opts


def _no_option_reason(fw: FleetWorkload) -> str:
    parts = []
    if fw.providers:
        parts.append(f"providers {', '.join(fw.providers)}")
    if fw.regions:
        parts.append(f"regions {', '.join(fw.regions)}")
    if fw.geos or fw.countries:
        parts.append(f"data residency {', '.join(fw.geos + fw.countries)}")
    what = "; ".join(parts) if parts else "no placement filter"
    return f"no offer in the catalog meets its resources under {what}"


def _prune_all(fleet: Fleet, fw: FleetWorkload, opts: list[Option]) -> list[Option]:
    """Options kept by :func:`~gpufleet.fleet.prune.prune_options` under any lever set the plan and its
    savings waterfall solve with, plus the best ones in today's provider/region (the right-size step)."""
    from gpufleet.fleet.prune import prune_options

    keep = {o.key for lv in LEVER_SETS for o in prune_options(fleet, fw, opts, lv)}
    if fw.current is not None:
        cur = fw.current
        same = [o for o in opts if o.provider == cur.provider]
        here = [o for o in same if cur.region is None or fnmatch.fnmatchcase(o.region, cur.region)]
        keep |= {o.key for sub in (same, here) for o in prune_options(fleet, fw, sub, LEVER_SETS[0])}
    return [o for o in opts if o.key in keep]


#: below this many distinct workloads to size, worker processes cost more than they save
PARALLEL_MIN_WORKLOADS = 400

_Sized = tuple[list[Option], str, tuple[str, ...], int]  # options, reason, notes, generated


@dataclass(slots=True)
class _Context:
    """What sizing one workload needs; shared by forked workers through a module global (never pickled)."""

    fleet: Fleet
    prices: _Prices
    est: Estimator
    spot: dict[str, SpotAssumption]
    sites: dict[str, OnPremSite]
    sizer: _Sizer | None = None


_CTX: _Context | None = None  # set only around a forked pool (see _size_parallel)


def _cache_key(fw: FleetWorkload) -> object:
    """Workloads with equal keys size alike: every field sizing reads (not the name, team, priority or the
    autoscaling savings, which the model applies after sizing); None when a field cannot be hashed."""
    place = (
        fw.demand, fw.providers, fw.regions, fw.geos, fw.countries, fw.ha_regions, fw.data,
        fw.preemptible_fraction, fw.lifetime_months, fw.current,
    )  # fmt: skip
    if fw.resources is not None:
        key: tuple[object, ...] = (fw.resources, *place)
    elif fw.workload is not None:  # a model workload: sized by the recommend engine, which reads no name
        key = ("model", replace(fw.workload, name=""), fw.sharing, *place)
    else:
        return None
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _size_one(ctx: _Context, fw: FleetWorkload) -> _Sized:
    notes: set[str] = set()
    reason = ""
    generated = 0
    sized = False
    if fw.workload is not None:
        opts, reason = _model_options(fw, ctx.prices, ctx.est, ctx.spot, ctx.sites, notes)
    else:
        assert fw.resources is not None
        if fw.resources.cpu_only:
            opts = _cpu_options(fw, ctx.spot, notes)
        else:
            if ctx.sizer is None:
                ctx.sizer = _Sizer(ctx.fleet, ctx.prices, ctx.spot, ctx.sites)
            opts, generated = ctx.sizer.options(fw, notes)
            sized = True
    if not opts and not reason:
        reason = _no_option_reason(fw)
    generated = max(generated, len(opts))
    if not sized:  # GPU capacity options were pruned exactly (vectorised) by the sizer
        opts = _prune_all(ctx.fleet, fw, opts)
    if fw.workload is not None and fw.sharing != "none":  # MIG slices on shared GPUs (sharing.py)
        opts += _mig_options(fw, ctx.prices, ctx.sites, notes)
        reason = "" if opts else reason
    return opts, reason, tuple(sorted(notes)), generated


def _size_chunk(indices: list[int]) -> list[_Sized | None]:
    """Sized workloads of one chunk; None where sizing raised (the parent re-sizes it in-process, so the
    user sees the original error: our exceptions need not survive pickling)."""
    assert _CTX is not None
    out: list[_Sized | None] = []
    for i in indices:
        try:
            out.append(_size_one(_CTX, _CTX.fleet.workloads[i]))
        except Exception:  # re-raised by the parent's serial re-run
            out.append(None)
    return out


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _size_parallel(
    ctx: _Context, todo: list[int], workers: int, done: Callable[[int], None]
) -> dict[int, _Sized]:
    """Size the workloads ``todo`` in ``workers`` forked processes (each inherits ``ctx``: the offer index
    and price arrays are built once, before the fork). Results do not depend on the split."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    global _CTX
    if any(ctx.fleet.workloads[i].resources is not None for i in todo) and ctx.sizer is None:
        ctx.sizer = _Sizer(ctx.fleet, ctx.prices, ctx.spot, ctx.sites)
    chunk = max(1, min(200, len(todo) // (workers * 8) or 1))
    parts = [todo[k : k + chunk] for k in range(0, len(todo), chunk)]
    out: dict[int, _Sized] = {}
    _CTX = ctx
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = {pool.submit(_size_chunk, part): part for part in parts}
            for fut in as_completed(futures):
                part = futures[fut]
                for i, res in zip(part, fut.result(), strict=True):
                    out[i] = _size_one(ctx, ctx.fleet.workloads[i]) if res is None else res
                done(len(part))
    finally:
        _CTX = None
    return out


def build_options(
    fleet: Fleet,
    table: OfferTable,
    est: Estimator,
    spot: dict[str, SpotAssumption],
    progress: Callable[[int, int, str], None] | None = None,
    workers: int | None = None,
) -> list[WorkloadOptions]:
    """Options for every workload of ``fleet`` (on-prem sites are added to ``table`` here).

    Workloads that size alike are sized once. With ``workers`` > 1 (default: the CPUs this process may use)
    and at least :data:`PARALLEL_MIN_WORKLOADS` distinct workloads, sizing runs in forked worker processes
    (Linux/macOS ``fork``); the options are the same either way.
    """
    sites = {s.name: s for s in fleet.on_prem}
    if sites:
        table = OfferTable.concat([table, OfferTable.from_offers(on_prem_offers(fleet.on_prem))])
    ctx = _Context(fleet=fleet, prices=_Prices(table), est=est, spot=spot, sites=sites)
    n = len(fleet.workloads)
    first: dict[object, int] = {}  # cache key -> the first workload with it
    rep = list(range(n))
    for i, fw in enumerate(fleet.workloads):
        key = _cache_key(fw)
        if key is not None:
            rep[i] = first.setdefault(key, i)
    todo = [i for i in range(n) if rep[i] == i]
    workers = _workers() if workers is None else workers
    count = 0

    def done(k: int) -> None:
        nonlocal count
        count += k
        if progress is not None:
            progress(count, len(todo), "")

    sized: dict[int, _Sized] = {}
    if workers > 1 and len(todo) >= PARALLEL_MIN_WORKLOADS and "fork" in _start_methods():
        sized = _size_parallel(ctx, todo, workers, done)
    else:
        for i in todo:
            sized[i] = _size_one(ctx, fleet.workloads[i])
            done(1)
    out: list[WorkloadOptions] = []
    for i, fw in enumerate(fleet.workloads):
        opts, reason, notes, generated = sized[rep[i]]
        if rep[i] != i:
            # the representative's option numbers, under this workload's name
            opts = [replace(o, key=f"{fw.name}#{o.key.rpartition('#')[2]}", workload=fw.name) for o in opts]
        out.append(
            WorkloadOptions(
                workload=fw.name, options=tuple(opts), reason=reason, notes=notes, generated=generated
            )
        )
    return out


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()
