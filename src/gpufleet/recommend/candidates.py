"""Candidates: every eligible offer x placement (node count, TP/PP, replicas), costed with numpy.

Performance comes from :mod:`gpufleet.recommend.perf` once per unique (GPU, GPUs per node); prices, spot
expectations and costs are broadcast over all offers sharing that shape. Nothing here ranks; see ``rank.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offers import OfferTable
from gpufleet.catalog.regions import region_matches
from gpufleet.catalog.specs import load_specs
from gpufleet.cost.prices import node_prices_usd_per_hour, price_kind_for
from gpufleet.cost.schedule import Schedule
from gpufleet.cost.spot import (
    SpotAssumption,
    assumption_for,
    replica_availability,
    replicas_to_provision,
    spot_training,
)
from gpufleet.errors import GpufleetError, InputError
from gpufleet.estimate.comms import NodeNetwork
from gpufleet.models.registry import resolve_model
from gpufleet.recommend.deploy import (
    DEFAULT_HOST_RULES,
    STALE_PRICE_DAYS,
    HostRules,
    offer_info,
    trains_across_nodes,
)
from gpufleet.recommend.deployability import latency_bound, production_exclusion
from gpufleet.recommend.failure import needs_spare, units_with_spare_array
from gpufleet.recommend.filters import filter_mask
from gpufleet.recommend.perf import (
    Config,
    Estimator,
    at_confidence,
    configs_for,
    perf_cache_key,
    rate_at_confidence,
    slo_gap,
    target_output_tokens_per_s,
)
from gpufleet.recommend.types import Workload
from gpufleet.units import MILLION, SECONDS_PER_HOUR

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

#: accelerators never offered for training: AWS Inf1/Inf2 instance pages describe them as inference
#: accelerators (https://aws.amazon.com/ec2/instance-types/inf2/), training is Trn1/Trn2's role
INFERENCE_ONLY: tuple[str, ...] = ("Inferentia1", "Inferentia2")
#: accelerator vendors with no QLoRA stack: QLoRA's frozen NF4 base is bitsandbytes' 4-bit format (Dettmers
#: et al. 2023; PEFT, TRL, Axolotl and Unsloth load it with ``BitsAndBytesConfig(load_in_4bit=True,
#: bnb_4bit_quant_type="nf4")``), whose kernels exist for CUDA, ROCm and Intel XPU/Gaudi (bitsandbytes
#: "Installation", multi-backend support) but not for XLA/TPU or AWS Neuron: Hugging Face optimum-tpu and
#: optimum-neuron fine-tune with LoRA on a 16-bit base. Before, QLoRA of Llama-3.1-70B on spot was proposed
#: on TPU v6e slices.
NO_QLORA_VENDORS: tuple[str, ...] = ("Google", "AWS")
#: accelerators that serve no decoder (generative) LLM: first-generation Inferentia (NeuronCore-v1). AWS's LLM
#: libraries target NeuronCore-v2 and later (transformers-neuronx README: "large language model (LLM)
#: performant inference on second-generation Neuron hardware (See: NeuronCore-v2)"; NxD Inference supports
#: Inf2/Trn1/Trn2); Inf1 runs encoders and vision models through neuron-cc. Before, a spot Qwen2.5-0.5B
#: service was proposed on inf1.2xlarge.
NO_DECODER_SERVING: tuple[str, ...] = ("Inferentia1",)

_CONFIG_CACHE: dict[tuple[object, ...], tuple[Config, ...]] = {}
_CACHE_MAX = 100_000


def limit_estimate_caches(*, calls_max: int, configs_max: int) -> None:
    """Bound this process's estimator memo caches: ``calls_max`` estimator calls (``perf._CALLS``),
    ``configs_max`` configs lists and their cost columns; each cache is emptied when full, as with the
    defaults (500,000 and 100,000, sized for one CLI run). A long-running process needs lower bounds: one
    distinct workload's performance adds ~270 entries of ~8-10 KiB (tracemalloc, llama-3.1-8b, qwen2.5-7b,
    mistral-7b serving: +2.0-2.6 MiB each), so the defaults allow GiBs."""
    global _CACHE_MAX
    from gpufleet.recommend import perf

    if calls_max < 1 or configs_max < 1:
        raise InputError(
            f"Estimator cache bounds {calls_max} and {configs_max} are not allowed: both must be at least 1."
        )
    perf._CALLS_MAX, _CACHE_MAX = calls_max, configs_max
    for cache, cap in ((perf._CALLS, calls_max), (_CONFIG_CACHE, configs_max), (_COLUMNS, configs_max)):
        if len(cache) > cap:
            cache.clear()


def cached_configs(
    est: Estimator, w: Workload, gpu: str, g: int, network: NodeNetwork | None = None
) -> tuple[Config, ...]:
    """:func:`configs_for` memoised on (estimator, performance-relevant workload fields, gpu, g, network)."""
    key = (id(est), perf_cache_key(w), gpu, g, network)
    hit = _CONFIG_CACHE.get(key)
    if hit is None:
        if len(_CONFIG_CACHE) >= _CACHE_MAX:
            _CONFIG_CACHE.clear()
        hit = configs_for(est, w, gpu, g, network)
        _CONFIG_CACHE[key] = hit
    return hit


_SHAPES: dict[int, tuple[OfferTable, dict[tuple[str, int], I64]]] = {}


def shape_index(table: OfferTable) -> dict[tuple[str, int], I64]:
    """Row indices per (gpu, whole GPUs per node) of ``table``, computed once per table (tables are
    immutable). Fractional-GPU and CPU-only rows belong to no shape."""
    hit = _SHAPES.get(id(table))
    if hit is not None and hit[0] is table:
        return hit[1]
    gpu_names, gpu = table.codes("gpu")
    count = table.column("gpu_count")
    named = gpu != 0 if gpu_names and gpu_names[0] == "" else np.ones(len(gpu), dtype=bool)  # "" sorts first
    whole = named & (count >= 1) & (np.mod(count, 1.0) == 0)
    rows = np.flatnonzero(whole)
    span = int(count[rows].max()) + 1 if rows.size else 1
    keys = gpu[rows].astype(np.int64) * span + count[rows].astype(np.int64)  # (gpu, count) as one integer
    uniq, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    shapes = [(gpu_names[int(u) // span], int(u) % span) for u in uniq]
    index: dict[tuple[str, int], I64] = {}
    # in the order of the "gpu|count" text (the order the engine has always visited shapes in)
    for k in sorted(range(len(shapes)), key=lambda i: f"{shapes[i][0]}|{shapes[i][1]}"):
        index[shapes[k]] = rows[order[bounds[k] : bounds[k + 1]]].astype(np.int64)
    if len(_SHAPES) > 8:
        _SHAPES.clear()
    _SHAPES[id(table)] = (table, index)
    return index


_SUMMARY: dict[tuple[int, str], tuple[OfferTable, I64, I64, I64]] = {}


def _shape_summary(
    table: OfferTable, index: dict[tuple[str, int], I64], variant: str, elig: B, group_of: I64
) -> tuple[B, I64]:
    """Per shape of ``index`` (in its order): whether any of its rows is eligible, and the network group
    (``group_of``) all its rows share, or -1 when they differ (or all are -1: callers then group the rows
    themselves). The rows and groups are gathered once per (table, ``variant``): the table is immutable and
    ``group_of`` a function of its cached offer info and the variant (serving, training, training over RDMA
    only)."""
    hit = _SUMMARY.get((id(table), variant))
    if hit is None or hit[0] is not table:
        parts = list(index.values())
        rows = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        starts = np.cumsum([0] + [len(r) for r in parts[:-1]]).astype(np.int64)
        grp = group_of[rows]
        if rows.size:
            same = np.minimum.reduceat(grp, starts) == np.maximum.reduceat(grp, starts)
            const = np.where(same, grp[starts], -1).astype(np.int64)
        else:
            const = np.zeros(0, dtype=np.int64)
        if len(_SUMMARY) > 8:
            _SUMMARY.clear()
        hit = (table, rows, starts, const)
        _SUMMARY[(id(table), variant)] = hit
    _, rows, starts, const = hit
    if rows.size == 0:
        return np.zeros(0, dtype=bool), const
    return np.logical_or.reduceat(elig[rows], starts), const


_CODES: dict[int, tuple[OfferTable, dict[str, tuple[npt.NDArray[Any], I64]]]] = {}


def text_codes(table: OfferTable, column: str) -> tuple[npt.NDArray[Any], I64]:
    """(distinct values, code per row) of a text column, computed once per (immutable) table: the sorted
    distinct values as a str array and each row's index among them (``np.unique(..., return_inverse=True)``
    of the column, from :meth:`OfferTable.codes`)."""
    hit = _CODES.get(id(table))
    if hit is None or hit[0] is not table:
        if len(_CODES) > 8:
            _CODES.clear()
        hit = (table, {})
        _CODES[id(table)] = hit
    if column not in hit[1]:
        uniq, codes = table.codes(column)
        names = np.array(uniq, dtype=str) if uniq else np.zeros(0, dtype=str)
        hit[1][column] = (names, codes.astype(np.int64))
    return hit[1][column]


def distinct(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The sorted distinct values of an array, as ``np.unique(values)`` (asked for the first indices too,
    which keeps numpy 2 from importing ``numpy.ma`` to check for a masked array: ~5 ms per process)."""
    out: npt.NDArray[Any] = np.unique(values, return_index=True)[0]
    return out


_MATCHES: dict[tuple[object, ...], tuple[OfferTable, B]] = {}


def _match(table: OfferTable, column: str, keep: Any, key: tuple[object, ...] | None = None) -> B:
    """Rows whose ``column`` value satisfies ``keep(value)``: evaluated once per distinct value. ``key``: what
    ``keep`` depends on (hashable); the mask is then kept per (table, column, key), read-only."""
    ck = (id(table), column, key)
    if key is not None:
        hit = _MATCHES.get(ck)
        if hit is not None and hit[0] is table:
            return hit[1]
    names, inverse = text_codes(table, column)
    lut = np.array([bool(keep(str(n))) for n in names], dtype=bool)
    mask: B = lut[inverse]
    if key is not None:
        if len(_MATCHES) >= 256:
            _MATCHES.clear()
        mask.flags.writeable = False
        _MATCHES[ck] = (table, mask)
    return mask


#: stands for "forms clusters" in inference config caches (inference estimates do not read the network)
ANY_NETWORK = NodeNetwork(gb_per_s_per_node=0.0, rdma=False)

#: region strings that name no region (placeholders: the catalog writes "unspecified" for an empty Region,
#: Hyperbolic lists "default"; reference regions.csv geo "unknown"): never ranked
NO_REGION: frozenset[str] = frozenset({"", "unspecified", "default"})


#: the last eligible_mask: (table, workload, mask); the engine asks twice for one workload (offers considered,
#: then candidates). The workload is immutable and held here, so its identity cannot be reused meanwhile
_LAST_ELIGIBLE: list[tuple[OfferTable, Workload, B]] = []


def eligible_mask(table: OfferTable, w: Workload) -> B:
    """Offers passing the workload's filters: whole GPUs, a named region, provider, region globs, GPU vendor;
    no inference-only accelerator for training; the tier's exclusions (production: no marketplace or
    community hosts, no stale or undated prices, no host of unknown RAM/vCPUs, unless allowed). A new
    array on every call (callers narrow it in place)."""
    last = _LAST_ELIGIBLE[0] if _LAST_ELIGIBLE else None  # one read: another thread may replace it
    if last is not None and last[0] is table and last[1] is w:
        return last[2].copy()
    m = _eligible_mask(table, w)
    _LAST_ELIGIBLE[:] = [(table, w, m.copy())]
    return m


def is_consumer_gpu(gpu: str) -> bool:
    """Whether ``gpu`` is a consumer (GeForce) card, which the production tier leaves out: NVIDIA's GeForce
    driver licence excludes data-centre deployment ("No Datacenter Deployment. The SOFTWARE is not licensed
    for datacenter deployment, except that blockchain processing in a datacenter is permitted", NVIDIA
    GeForce Software License Agreement, sec. 2.1.3), and the cards have no ECC memory, no NVLink and
    consumer warranties (NVIDIA GeForce RTX 4090/5090 product specifications); no hyperscaler offers them."""
    specs = load_specs()
    return gpu in specs and "consumer" in specs[gpu].form_factor.lower()


def is_consumer_gpu_mask(table: OfferTable) -> B:
    """Rows of ``table`` on a consumer GPU (:func:`is_consumer_gpu`), read-only."""
    return _match(table, "gpu", is_consumer_gpu, ("consumer",))


def production_excluded_mask(table: OfferTable, w: Workload) -> B:
    """Rows the production tier leaves out for their accelerator (:mod:`gpufleet.recommend.deployability`:
    end-of-support GPUs; for serving, workstation cards and, under a latency SLO, Trainium1), read-only."""
    serving = not w.is_training
    latency = serving and latency_bound(w.ttft_p95_s, w.tpot_p95_s)
    return _match(
        table,
        "gpu",
        lambda g: bool(production_exclusion(g, serving=serving, latency=latency)),
        ("production accelerators", serving, latency),
    )


def zones_mask(table: OfferTable, zones: int) -> B:
    """Rows whose instance type the catalog lists in at least ``zones`` zones of its region (a catalog
    without zones for a provider proves no spread), read-only."""
    key = (id(table), "zones", zones)
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is table:
        return hit[1]
    prov, reg, zone, inst = (table.column(c) for c in ("provider", "region", "zone", "instance_type"))
    seen: dict[tuple[str, str, str], set[str]] = {}
    for p_, r_, z_, i_ in zip(prov.tolist(), reg.tolist(), zone.tolist(), inst.tolist(), strict=True):
        if z_:
            seen.setdefault((str(p_), str(r_), str(i_)), set()).add(str(z_))
    mask: B = np.array(
        [
            len(seen.get((str(p_), str(r_), str(i_)), ())) >= zones
            for p_, r_, i_ in zip(prov.tolist(), reg.tolist(), inst.tolist(), strict=True)
        ],
        dtype=bool,
    )
    mask.flags.writeable = False
    if len(_MATCHES) >= 256:
        _MATCHES.clear()
    _MATCHES[key] = (table, mask)
    return mask


def serves_decoder(model: str) -> bool:
    """Whether ``model`` is a generative (decoder) model of the registry or a config.json; False for an
    encoder and for a name only the caller's estimator knows (the engine takes any :class:`Estimator`)."""
    try:
        return resolve_model(model).is_decoder
    except GpufleetError:
        return False


def _eligible_mask(table: OfferTable, w: Workload) -> B:
    count = table.column("gpu_count")
    m: B = (count >= 1) & (np.mod(count, 1.0) == 0) & _match(table, "gpu", lambda g: g != "", ("named",))
    m &= _match(table, "region", lambda r: r.strip().lower() not in NO_REGION, ("named",))
    if w.tier == "production":
        info = offer_info(table)
        if not w.allow_marketplace:
            m &= info.provider_class != "marketplace"
        if not w.allow_consumer_gpus:
            m &= ~is_consumer_gpu_mask(table)
        if not w.allow_stale_prices:
            with np.errstate(invalid="ignore"):
                m &= info.price_age_days <= STALE_PRICE_DAYS
        m &= np.isfinite(info.vcpus) & np.isfinite(info.ram_gib)
        m &= ~production_excluded_mask(table, w)
        if w.min_zones >= 2 and not w.is_training:
            m &= zones_mask(table, w.min_zones)
    if w.providers:
        wanted = {p.lower() for p in w.providers}
        m &= _match(table, "provider", lambda p: p in wanted, ("in", frozenset(wanted)))
    if w.regions:
        globs = [g.lower() for g in w.regions]

        def in_globs(r: str) -> bool:
            return any(region_matches(r, g) for g in globs)

        m &= _match(table, "region", in_globs, ("globs", *globs))
    if w.is_training:  # Inferentia is an inference accelerator: AWS positions Trn1/Trn2 for training
        m &= _match(table, "gpu", lambda g: g not in INFERENCE_ONLY, ("training",))
    if not w.is_training and serves_decoder(w.model):
        m &= _match(table, "gpu", lambda g: g not in NO_DECODER_SERVING, ("decoder serving",))
    if w.task == "qlora":
        specs_q = load_specs()
        m &= _match(
            table, "gpu", lambda g: g in specs_q and specs_q[g].vendor not in NO_QLORA_VENDORS, ("qlora",)
        )
    if w.gpu_vendors:
        specs = load_specs()
        wanted_v = {v.lower() for v in w.gpu_vendors}
        m &= _match(table, "gpu", lambda g: g in specs and specs[g].vendor.lower() in wanted_v)
    return m & filter_mask(table, w)  # geo, provider class, GPU, memory, GPUs per node, $/GPU-h


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateSet:
    """Column arrays, one row per (offer, placement).

    ``offer`` indexes ``table``; ``cfg`` indexes ``configs``.
    """

    table: OfferTable
    configs: tuple[Config, ...]
    price_kind: str
    offer: I64
    cfg: I64
    price_usd_per_node_hour: F64
    replicas_needed: I64  # units the target needs [count]
    replicas: I64  # units paid for (spot: over-provisioned) [count]
    total_nodes: I64
    cost_usd_per_hour: F64
    cost_usd_per_month: F64
    cost_usd_per_run: F64  # NaN for inference
    cost_usd_per_million_output_tokens_at_load: F64  # $/month / tokens/month at the user's load; NaN: none
    cost_usd_per_million_output_tokens_saturated: F64  # $/month / tokens/month at full capacity
    load_output_tokens_per_s: F64  # the user's load [output tokens/s]; NaN for training or no load
    saturated_output_tokens_per_s: F64  # every paid replica at its saturated batch [output tokens/s]
    runs_per_month: F64  # NaN for inference
    output_tokens_per_s: F64  # inference, deployment [tokens/s]; training: tokens/s
    time_to_train_s: F64  # NaN for inference; spot includes the expected slowdown
    spot_factor: F64  # training wall-time factor on spot (1 otherwise)
    speed: F64  # see Candidate.speed
    meets_slo: B
    within_budget: B
    slo_gap: F64
    notes: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.offer.shape[0])

    @property
    def feasible(self) -> B:
        return self.meets_slo & self.within_budget


def build_candidates(
    table: OfferTable,
    w: Workload,
    est: Estimator,
    spot_assumptions: dict[str, SpotAssumption],
    host_rules: HostRules = DEFAULT_HOST_RULES,
) -> CandidateSet:
    """Cost every eligible offer x fitting placement for ``w``. Non-fitting placements are left out, and so
    are placements whose host RAM or vCPUs break ``host_rules`` (unknown host sizes pass, flagged as risk);
    multi-node placements exist only on offers whose provider and instance form clusters, costed with the
    offer's fabric; an inference replica spans nodes only when no eligible offer holds it on one node."""
    kind = price_kind_for(w.pricing)
    sched = Schedule(hours_per_month=w.hours_per_month)
    billed_h = sched.billed_hours_per_month(kind)
    elig = eligible_mask(table, w)
    prices = node_prices_usd_per_hour(table, kind, w.commitments_file)
    with np.errstate(invalid="ignore"):
        elig &= np.isfinite(prices) & (prices > 0)
    notes: list[str] = []
    prov_names, prov_codes = text_codes(table, "provider")
    rows_by_provider = [assumption_for(str(p), spot_assumptions) for p in prov_names]
    train_luts: dict[int, tuple[F64, B]] = {}
    paid_luts: dict[tuple[int, int], I64] = {}

    def spot_train_lut(nodes: int) -> tuple[F64, B]:
        if nodes not in train_luts:
            sts = [spot_training(a, nodes=nodes) for a in rows_by_provider]
            train_luts[nodes] = (
                np.array([s.wall_time_factor for s in sts]),
                np.array([s.valid for s in sts]),
            )
        return train_luts[nodes]

    def spot_paid_lut(units: int, nodes: int) -> I64:
        if (units, nodes) not in paid_luts:
            paid_luts[(units, nodes)] = np.array(
                [replicas_to_provision(units, replica_availability(a, nodes_per_replica=nodes))
                 for a in rows_by_provider], dtype=np.int64)  # fmt: skip
        return paid_luts[(units, nodes)]

    configs: list[Config] = []
    blocks: list[F64] = []  # per-config values (_columns) of ``configs``, block by block
    offer_parts: list[I64] = []
    sizes: list[int] = []
    info = offer_info(table)
    # training estimates depend on the offer's network; inference ones only on whether it forms clusters.
    # A training job spans nodes only over an RDMA fabric at >= 100 Gb/s (or TPU Multislice); plain TCP
    # clusters run it on one node, except in the dev tier (deploy.trains_across_nodes)
    group_of = info.network_index if w.is_training else info.multi_node.astype(np.int64)
    if w.is_training and w.tier != "dev":
        scale_out = np.array([trains_across_nodes(f) for f in info.fabrics] or [False], dtype=bool)
        group_of = np.where(scale_out[info.fabric_index], group_of, -1)
        tcp = elig & info.multi_node & ~scale_out[info.fabric_index]
        if w.max_nodes > 1 and tcp.any():
            notes.append(
                f"{int(tcp.sum())} offers form clusters only over TCP or below 100 Gb/s per node (e.g. "
                f"{_some_offer(table, tcp)}): training runs on one node of them; multi-node training needs "
                "an RDMA fabric (InfiniBand, RoCE, EFA, GPUDirect) or TPU Multislice. tier: dev allows it "
                "(high risk)."
            )
    index = shape_index(table)
    # the groups of a training workload outside the dev tier mask TCP clusters (-1): another summary
    variant = "train-rdma" if w.is_training and w.tier != "dev" else ("train" if w.is_training else "serve")
    shape_any, shape_group = _shape_summary(table, index, variant, elig, group_of)
    for k, ((gpu, g), rows) in enumerate(index.items()):
        if not shape_any[k]:  # no eligible offer of this shape
            continue
        offers = rows[elig[rows]]
        if shape_group[k] >= 0:  # every offer of the shape has the same group
            lo = hi = int(shape_group[k])
        else:
            grp = group_of[offers]
            lo, hi = int(grp.min()), int(grp.max())
        for n_i in (lo,) if lo == hi else distinct(grp):
            sub = offers if lo == hi else offers[grp == n_i]
            if w.is_training:
                net = info.networks[int(n_i)] if n_i >= 0 else None
            else:
                net = ANY_NETWORK if n_i else None
            entry = cached_configs(est, w, gpu, g, net)
            for cfg in entry:
                if cfg.fits:
                    configs.append(cfg)
                    offer_parts.append(sub)
                    sizes.append(int(sub.size))
            if any(cfg.fits for cfg in entry):
                blocks.append(_columns(entry, w))
    offer = np.concatenate(offer_parts) if offer_parts else np.zeros(0, dtype=np.int64)
    cfg_i = np.repeat(np.arange(len(configs), dtype=np.int64), sizes)
    cols = np.concatenate(blocks) if blocks else np.zeros((0, _NCOLS))
    ok = _host_ok(cols, cfg_i, w, host_rules, info.ram_gib[offer], info.vcpus[offer])
    host_dropped = int((~ok).sum())
    offer, cfg_i = offer[ok], cfg_i[ok]
    if host_dropped:
        notes.append(
            f"{host_dropped} offer placements dropped for too little host RAM or too few vCPUs (host RAM >= "
            f"{host_rules.ram_per_weight:g} x the node's weights"
            + (" and optimizer states (the checkpoint staged in RAM)" if w.is_training else "")
            + f" + {host_rules.ram_base_gib:g} GiB; vCPUs >= "
            + (f"{host_rules.vcpus_per_gpu_training:g} per GPU" if w.is_training else
               f"{host_rules.vcpus_base_inference:g} + {host_rules.vcpus_per_gpu_inference:g} per GPU")
            + "; docs/recommend.md)."
        )  # fmt: skip
    if not w.is_training and cfg_i.size:  # a replica is not split over nodes when one node can hold it
        nodes_of = _col(cols, cfg_i, _NODES)
        if (nodes_of == 1).any() and (nodes_of > 1).any():
            keep = nodes_of == 1
            offer, cfg_i = offer[keep], cfg_i[keep]
    need = _col(cols, cfg_i, _UNITS).astype(np.int64)
    target = target_output_tokens_per_s(w)
    if not w.is_training and target is not None and cfg_i.size:
        unit_tput = _col(cols, cfg_i, _TPUT_CONF)
        need = np.maximum(need, np.ceil(target / unit_tput - 1e-9).astype(np.int64))
    if needs_spare(w) and cfg_i.size:  # N+1: one node (or zone) lost leaves the units the load needs
        need = units_with_spare_array(need, w)
    paid = need.copy()
    factor = np.ones(offer.shape)
    valid = np.ones(offer.shape, dtype=bool)
    if kind == "spot" and cfg_i.size:
        codes = prov_codes[offer]
        nodes = _col(cols, cfg_i, _NODES).astype(np.int64)
        if w.is_training:
            for n in distinct(nodes):
                sel = nodes == n
                lut_f, lut_v = spot_train_lut(int(n))
                factor[sel] = lut_f[codes[sel]]
                valid[sel] = lut_v[codes[sel]]
        else:
            pair = need * 1024 + nodes
            for key in distinct(pair):
                sel = pair == key
                paid[sel] = spot_paid_lut(int(key // 1024), int(key % 1024))[codes[sel]]
    if not valid.all():
        notes.append(
            "Some spot placements were dropped: expected work lost to interruptions exceeds half the "
            "run (lambda (tau/2 + R) > 0.5), where the first-order spot model is not valid."
        )
    offer, cfg_i, need, paid, factor = offer[valid], cfg_i[valid], need[valid], paid[valid], factor[valid]
    return _cost(
        table, w, tuple(configs), cols, kind, billed_h, prices, offer, cfg_i, need, paid, factor, notes
    )


def _some_offer(table: OfferTable, mask: B) -> str:
    """'provider instance' of the first row of ``mask``."""
    r = int(np.flatnonzero(mask)[0])
    return f"{table.column('provider')[r]} {table.column('instance_type')[r]}"


def _host_ok(cols: F64, cfg_i: I64, w: Workload, rules: HostRules, ram_gib: F64, vcpus: F64) -> B:
    """Rows (offer host RAM, vCPUs per node) meeting the host rules for their config; unknown sizes pass."""
    weights_node = _col(cols, cfg_i, _WEIGHTS_NODE)
    gpus = _col(cols, cfg_i, _GPN)
    ram_need = rules.ram_per_weight * weights_node + rules.ram_base_gib
    if w.is_training:
        cpu_need = rules.vcpus_per_gpu_training * gpus
    else:
        cpu_need = rules.vcpus_base_inference + rules.vcpus_per_gpu_inference * gpus
    with np.errstate(invalid="ignore"):
        ok: B = ~(ram_gib < ram_need - 1e-9) & ~(vcpus < cpu_need - 1e-9)
    return ok


#: columns of :func:`_columns`, one per value the costing reads from a config
(
    _NODES,
    _UNITS,
    _WEIGHTS_NODE,
    _GPN,
    _TPUT_CONF,
    _TPS,
    _TTT,
    _TTT_CONF,
    _GAP,
    _TPUT,
    _SAT,
    _SPEED,
    _STREAM,
) = range(13)
_NCOLS = 13
_COLUMNS: dict[int, tuple[tuple[Config, ...], F64]] = {}


def _columns(entry: tuple[Config, ...], w: Workload) -> F64:
    """Values the costing reads from each fitting config of ``entry`` (a :func:`cached_configs` result), one
    row per config, one column per value (``_NODES`` ...; NaN where a value does not apply), kept per entry.
    The values read only the workload fields of :func:`perf_cache_key` (confidence, SLOs, deadline), which
    the entry was built for, so they are the same for every workload sharing it."""
    hit = _COLUMNS.get(id(entry))
    if hit is not None and hit[0] is entry:
        return hit[1]
    nan = np.nan
    rows = [
        (
            c.nodes_per_unit,
            c.units,
            max(c.weights_per_gpu_gib, c.checkpoint_per_gpu_gib) * c.gpus_per_node,
            c.gpus_per_node,
            rate_at_confidence(c.unit_output_tokens_per_s, w) if c.unit_output_tokens_per_s else nan,
            c.tokens_per_s.central if c.tokens_per_s else nan,
            c.time_to_train_s.central if c.time_to_train_s else nan,
            at_confidence(c.time_to_train_s, w) if c.time_to_train_s else nan,
            slo_gap(c, w),
            c.unit_output_tokens_per_s.central if c.unit_output_tokens_per_s else nan,
            c.saturated_unit_output_tokens_per_s or nan,
            1.0 / c.tpot_s.central if c.tpot_s else 0.0,
            _stream_output_tokens_per_s(c),
        )
        for c in entry
        if c.fits
    ]
    cols = np.array(rows, dtype=float).reshape(len(rows), _NCOLS)
    if len(_COLUMNS) >= _CACHE_MAX:
        _COLUMNS.clear()
    _COLUMNS[id(entry)] = (entry, cols)
    return cols


def _stream_output_tokens_per_s(c: Config) -> float:
    """Output tokens/s one request stream receives at the config's operating batch (central): the unit's
    throughput shared by its replicas x concurrent sequences; NaN where it does not apply."""
    if c.unit_output_tokens_per_s is None or not c.batch_per_replica or not c.replicas_per_unit:
        return np.nan
    return c.unit_output_tokens_per_s.central / (c.replicas_per_unit * c.batch_per_replica)


def load_output_tokens_per_s(w: Workload, stream_output_tokens_per_s: F64) -> F64:
    """The user's load as output tokens/s (central), per row: the target rate (requests/s x output length, or
    the output tokens/s given); for a concurrency, the streams x what one stream receives at the operating
    batch (closed loop); NaN where the workload states no load (docs/contracts.md "Figures and labels")."""
    target = target_output_tokens_per_s(w)
    if target is not None:
        return np.full(stream_output_tokens_per_s.shape, target)
    if w.concurrency is not None:
        return w.concurrency * stream_output_tokens_per_s
    return np.full(stream_output_tokens_per_s.shape, np.nan)


def _col(cols: F64, cfg_i: I64, k: int) -> F64:
    """Column ``k`` of :func:`_columns` for each row's config ``cfg_i``."""
    return cols[cfg_i, k] if cfg_i.size else np.zeros(0)


def _cost(
    table: OfferTable,
    w: Workload,
    configs: tuple[Config, ...],
    cols: F64,
    kind: str,
    billed_h: float,
    prices: F64,
    offer: I64,
    cfg_i: I64,
    need: I64,
    paid: I64,
    factor: F64,
    notes: list[str],
) -> CandidateSet:
    nodes_per_unit = _col(cols, cfg_i, _NODES).astype(np.int64)
    total_nodes = paid * nodes_per_unit
    node_price = prices[offer]
    cost_h = node_price * total_nodes
    cost_month = cost_h * billed_h
    nan = np.full(offer.shape, np.nan)
    per_mtok_sat = nan
    load = nan
    sat_tput = nan
    runs = nan
    if w.is_training:
        tps = _col(cols, cfg_i, _TPS)
        ttt = _col(cols, cfg_i, _TTT)
        ttt = ttt * factor
        ttt_conf = _col(cols, cfg_i, _TTT_CONF) * factor
        tput = tps / factor
        ttt_h = ttt / SECONDS_PER_HOUR
        # one cost semantics: $/run, runs/month, $/month = runs x $/run (docs/recommend.md "Training cost")
        runs = (
            np.full(offer.shape, w.runs_per_month)
            if w.runs_per_month is not None
            else np.minimum(1.0, w.hours_per_month / ttt_h)
        )
        run_billed_h = ttt_h
        if kind not in ("on_demand", "spot"):  # committed nodes bill every hour; idle hours go to the runs
            run_billed_h = np.maximum(ttt_h, billed_h / runs)
        cost_run = cost_h * run_billed_h
        cost_month = cost_run * runs
        per_mtok = nan
        speed = 1.0 / ttt
        gap = _col(cols, cfg_i, _GAP)
        if w.deadline_h is not None:  # spot slowdown can break the deadline
            gap = np.maximum(gap, ttt_conf / (w.deadline_h * SECONDS_PER_HOUR))
        if w.runs_per_month is not None:  # the runs must fit the schedule's hours
            gap = np.maximum(gap, w.runs_per_month * ttt_h / w.hours_per_month)
    else:
        unit_tput = _col(cols, cfg_i, _TPUT)
        tput = unit_tput * need
        # one unit-cost semantics: USD per month / output tokens per month over the service hours
        # (docs/contracts.md "Figures and labels"): at the user's load, and at full capacity (every replica
        # paid for at its saturated batch)
        service_s = w.hours_per_month * SECONDS_PER_HOUR
        load = load_output_tokens_per_s(w, _col(cols, cfg_i, _STREAM))
        sat_tput = _col(cols, cfg_i, _SAT) * paid
        with np.errstate(invalid="ignore", divide="ignore"):
            per_mtok = cost_month / (load * service_s) * MILLION
            per_mtok_sat = cost_month / (sat_tput * service_s) * MILLION
        # where full capacity is below the load the load's tokens are not made: no unit cost at the load
        per_mtok = np.where(sat_tput >= load * (1.0 - 1e-9), per_mtok, np.nan)
        cost_run = nan
        ttt = nan
        speed = _col(cols, cfg_i, _SPEED)
        gap = _col(cols, cfg_i, _GAP)
    meets = gap <= 1.0 + 1e-12
    budget = w.budget_usd_per_month
    within = cost_month <= budget if budget is not None else np.ones(offer.shape, dtype=bool)
    return CandidateSet(
        table=table,
        configs=configs,
        price_kind=kind,
        offer=offer,
        cfg=cfg_i,
        price_usd_per_node_hour=node_price,
        replicas_needed=need,
        replicas=paid,
        total_nodes=total_nodes,
        cost_usd_per_hour=cost_h,
        cost_usd_per_month=cost_month,
        cost_usd_per_run=cost_run,
        cost_usd_per_million_output_tokens_at_load=per_mtok,
        cost_usd_per_million_output_tokens_saturated=per_mtok_sat,
        load_output_tokens_per_s=load,
        saturated_output_tokens_per_s=sat_tput,
        runs_per_month=runs,
        output_tokens_per_s=tput,
        time_to_train_s=ttt,
        spot_factor=factor,
        speed=speed,
        meets_slo=meets,
        within_budget=within,
        slo_gap=gap,
        notes=tuple(notes),
    )
