"""Deployability of each offer for the engine: class, fabric, price age, and the host RAM / vCPU rules.

Per-table arrays are computed once per (immutable) offer table. The host rules are sourced defaults that a
caller can override (:class:`HostRules`); docs/recommend.md ("Host RAM and vCPUs") gives the reasoning.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.capabilities import Fabric, fabric_for, offer_class
from gpufleet.catalog.offers import OfferTable
from gpufleet.estimate.comms import NodeNetwork
from gpufleet.units import gb_per_s_from_gbit_per_s

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

#: a price older than this (from its capture date to the catalog's newest capture) is stale [days]: GPU list
#: prices move about yearly (e.g. AWS cut P4/P5 on-demand prices by up to 45 % in June 2025, "Announcing up to
#: 45% price reduction for Amazon EC2 NVIDIA GPU-accelerated instances", AWS news blog 2025-06-05)
STALE_PRICE_DAYS = 365


@dataclass(frozen=True, slots=True, kw_only=True)
class HostRules:
    """Minimum host RAM and vCPUs of a node (overridable; docs/recommend.md "Host RAM and vCPUs").

    - RAM: ``ram_per_weight`` x the weights the node's GPUs hold + ``ram_base_gib``. Serving engines and
      trainers read the checkpoint through host memory (safetensors mmap into the page cache, then copy to
      the GPU: vLLM/TGI default loaders; PyTorch ``torch.load`` / ``from_pretrained``), and a training
      checkpoint is gathered to CPU to be written; so the node needs at least one copy of its share of the
      weights in RAM, plus the OS, CUDA host allocations and the engine process (8 GiB: vLLM's former default
      CPU swap space was 4 GiB per GPU; a base of 8 GiB is the smaller, per-node figure). Training counts
      the node's whole checkpoint state (weights, optimizer states, adapters): an asynchronous checkpoint
      copies every rank's model and optimizer state dict into host memory before writing it
      (``torch.distributed.checkpoint.async_save``: "the state_dict is first staged to CPU memory"; Megatron
      and NeMo async checkpointing do the same), so a 4 x H100 node holding ~300 GiB of training state with
      64 GiB of RAM cannot checkpoint without stalling or swapping.
    - vCPUs, inference: ``2 + GPUs`` (vLLM "CPU resources for GPU deployments": one busy process per GPU
      worker, plus the API server and the engine core).
    - vCPUs, training: ``vcpus_per_gpu_training`` x GPUs (the training process and 2-3 DataLoader workers per
      GPU; PyTorch DataLoader ``num_workers`` guidance; every cloud 8-GPU training node has >= 12 per GPU).
    - Offers with unknown host RAM or vCPUs (GCP TPU rows list none) are kept but carry a risk reason, and are
      excluded in the production tier.
    """

    ram_per_weight: float = 1.0
    ram_base_gib: float = 8.0
    vcpus_base_inference: float = 2.0
    vcpus_per_gpu_inference: float = 1.0
    vcpus_per_gpu_training: float = 4.0

    def ram_needed_gib(self, weights_on_node_gib: float) -> float:
        return self.ram_per_weight * weights_on_node_gib + self.ram_base_gib

    def vcpus_needed(self, gpus: int, *, training: bool) -> float:
        if training:
            return self.vcpus_per_gpu_training * gpus
        return self.vcpus_base_inference + self.vcpus_per_gpu_inference * gpus


DEFAULT_HOST_RULES = HostRules()

#: least scale-out bandwidth per node [Gb/s] for a training job over several nodes: every multi-node
#: recipe of the field runs data/pipeline parallel collectives over RDMA at >= 100 Gb/s per node (NCCL
#: over InfiniBand/RoCE/EFA: NVIDIA DGX SuperPOD reference architecture 8 x 400 Gb/s IB per node; AWS
#: "EFA for ML training" on p4d/p5; Azure ND-series InfiniBand; GCP GPUDirect-TCPX/RDMA on A3/A4); a plain
#: TCP NIC (25-100 Gb/s) leaves the all-reduce of a large model's gradients exposed for minutes per step
MIN_TRAINING_SCALE_OUT_GBPS = 100.0


def trains_across_nodes(f: Fabric) -> bool:
    """True where a training job may span several nodes of this offer: an RDMA fabric (InfiniBand, RoCE,
    EFA, GPUDirect-TCPX/RDMA) at >= :data:`MIN_TRAINING_SCALE_OUT_GBPS` per node, or TPU slices joined over
    Google's data-centre network (Multislice: data parallelism across slices over DCN, the documented
    scale-out of TPU training, cloud.google.com/tpu/docs/multislice-introduction). Plain TCP clusters are
    left to the ``dev`` tier (docs/recommend.md, "Practitioners' rules we check")."""
    if not f.multi_node:
        return False
    if f.kind.startswith("TPU"):
        return True
    return f.rdma and f.gbps_per_node >= MIN_TRAINING_SCALE_OUT_GBPS - 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferInfo:
    """Per-row deployability arrays of one offer table."""

    provider_class: npt.NDArray[Any]  # str per row
    fabric_index: I64  # into ``fabrics``
    fabrics: tuple[Fabric, ...]
    multi_node: B
    price_date: npt.NDArray[Any]  # ISO date str per row, "" unknown
    price_age_days: F64  # NaN unknown
    vcpus: F64
    ram_gib: F64
    local_zone: B  # an AWS Local Zone (region "<parent>-<metro>", tools/build_catalog.py)
    tie_rank: I64  # established first: hyperscaler < gpu_cloud < aggregator < unknown < marketplace, then
    # Local Zones after ordinary regions (the deterministic tie-break of the ranking)
    network_index: I64  # into ``networks``: the node network estimates run at (None = single node)
    networks: tuple[NodeNetwork | None, ...]

    def network(self, row: int) -> NodeNetwork | None:
        """The node network of a multi-node-capable offer, else None (single node only)."""
        f = self.fabrics[int(self.fabric_index[row])]
        return node_network(f)


#: per-node bandwidth classes [Gb/s] the estimator is run at: an offer's fabric is rounded DOWN to one of them
#: (conservative), so that offers with nearby bandwidths share one estimate (AWS alone lists ~20 distinct
#: figures between 2 and 6,400 Gb/s)
NETWORK_CLASSES_GBPS: tuple[float, ...] = (
    1.0,
    10.0,
    25.0,
    50.0,
    100.0,
    200.0,
    400.0,
    800.0,
    1600.0,
    3200.0,
    6400.0,
)


def node_network(f: Fabric) -> NodeNetwork | None:
    """The network an offer's multi-node estimate runs at (its bandwidth class), or None for single-node."""
    if not f.multi_node:
        return None
    gbps = max((c for c in NETWORK_CLASSES_GBPS if c <= f.gbps_per_node + 1e-9), default=f.gbps_per_node)
    return NodeNetwork(gb_per_s_per_node=gb_per_s_from_gbit_per_s(gbps), rdma=f.rdma)


#: AWS Local Zone regions as the catalog names them: parent region + metro code (us-east-1-atl2)
_LOCAL_ZONE_REGION = re.compile(r"^[a-z]{2}-[a-z]+-\d+-[a-z]+\d+$")
#: tie-break rank of provider classes: established clouds first (their regions are the established ones)
CLASS_RANK: dict[str, int] = {
    "hyperscaler": 0,
    "gpu_cloud": 1,
    "aggregator": 2,
    "unknown": 3,
    "marketplace": 4,
}

_DATE = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")


def _dates(captured: str) -> tuple[dt.date, dt.date] | None:
    """(first, last) day of a ``captured_at`` text: ``2026-05-20``, ``2026-08`` or ``2026-08/2026-11``."""
    parts = captured.split("/")
    out: list[dt.date] = []
    for i, part in enumerate(parts):
        m = _DATE.match(part.strip())
        if m is None:
            return None
        y, mo, d = int(m.group(1)), int(m.group(2)), m.group(3)
        if d is not None:
            out.append(dt.date(y, mo, int(d)))
        elif i == 0:
            out.append(dt.date(y, mo, 1))
        else:
            nxt = dt.date(y + mo // 12, mo % 12 + 1, 1)
            out.append(nxt - dt.timedelta(days=1))
    if len(out) == 1:
        out.append(out[0])
    return out[0], out[-1]


_INFO: dict[int, tuple[OfferTable, OfferInfo]] = {}


def offer_info(table: OfferTable) -> OfferInfo:
    """Deployability arrays of ``table`` (cached per table object)."""
    hit = _INFO.get(id(table))
    if hit is not None and hit[0] is table:
        return hit[1]
    prov_names, prov = table.codes("provider")
    inst_names, inst = table.codes("instance_type")
    gpu_names, gpu = table.codes("gpu")
    # each distinct (provider, instance, GPU) is classified once (rows repeat it per region and zone), in the
    # order of its first row, so that fabrics are numbered in first-seen row order
    key = (prov.astype(np.int64) * len(inst_names) + inst) * max(len(gpu_names), 1) + gpu
    combos, first, combo_of = np.unique(key, return_index=True, return_inverse=True)
    combo_of = combo_of.reshape(-1)
    class_of: dict[tuple[str, str], str] = {}
    combo_class = np.empty(len(combos), dtype=object)
    combo_fabric = np.zeros(len(combos), dtype=np.int64)
    fabrics: dict[Fabric, int] = {}
    for k in np.argsort(first, kind="stable").tolist():
        r = first[k]
        p, i, g = prov_names[prov[r]], inst_names[inst[r]], gpu_names[gpu[r]]
        c = class_of.get((p, i))
        if c is None:
            c = class_of[(p, i)] = offer_class(p, i)
        combo_class[k] = c
        combo_fabric[k] = fabrics.setdefault(fabric_for(p, i, g), len(fabrics))
    classes = combo_class[combo_of]
    idx = combo_fabric[combo_of]
    fab = tuple(fabrics)
    multi = np.array([f.multi_node for f in fab] or [False], dtype=bool)[idx]
    cap_names, cap = table.codes("captured_at")
    spans = [_dates(c) for c in cap_names]
    known = [s for s in spans if s is not None]
    as_of = max((s[1] for s in known), default=None)
    firsts = [sp[0] if sp is not None else None for sp in spans]
    pdate = np.array([d.isoformat() if d is not None else "" for d in firsts] or [""], dtype=object)[cap]
    age = np.array(
        [float((as_of - d).days) if d is not None and as_of is not None else np.nan for d in firsts] or [0.0],
        dtype=np.float64,
    )[cap]
    nets: dict[NodeNetwork | None, int] = {}
    fab_net = np.array([nets.setdefault(node_network(f), len(nets)) for f in fab] or [0], dtype=np.int64)
    region_names, region = table.codes("region")
    zone_region = np.array([_LOCAL_ZONE_REGION.match(r) is not None for r in region_names] or [False])
    is_aws = np.array([p == "aws" for p in prov_names] or [False])
    local = is_aws[prov] & zone_region[region]
    class_rank = np.array([CLASS_RANK.get(str(c), 3) for c in combo_class] or [0], dtype=np.int64)
    rank = class_rank[combo_of] * 2 + local
    info = OfferInfo(
        tie_rank=rank,
        network_index=fab_net[idx],
        networks=tuple(nets),
        provider_class=classes,
        fabric_index=idx,
        fabrics=fab,
        multi_node=multi,
        price_date=pdate,
        price_age_days=age,
        vcpus=table.column("vcpus").astype(float),
        ram_gib=table.column("ram_gib").astype(float),
        local_zone=local,
    )
    if len(_INFO) > 8:
        _INFO.clear()
    _INFO[id(table)] = (table, info)
    return info


__all__ = [
    "DEFAULT_HOST_RULES",
    "MIN_TRAINING_SCALE_OUT_GBPS",
    "STALE_PRICE_DAYS",
    "HostRules",
    "OfferInfo",
    "node_network",
    "offer_info",
    "trains_across_nodes",
]
