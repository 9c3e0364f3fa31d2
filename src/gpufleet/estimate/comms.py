"""Collective-communication times: ring all-reduce, all-gather/reduce-scatter, all-to-all over GPU links.

Cost model (Thakur, Rabenseifner & Gropp 2005; NCCL's "bus bandwidth" convention, nccl-tests PERFORMANCE.md):
a ring all-reduce of ``B`` bytes over ``n`` ranks moves ``2 (n-1)/n B`` bytes through each rank's slowest link
and takes ``2 (n-1)`` latency hops; all-gather and reduce-scatter move ``(n-1)/n B`` in ``n-1`` hops; an
all-to-all moves ``(n-1)/n B``. Link rates are per direction, times an achieved-bandwidth efficiency
(``link_eff`` in the calibration profile, prior 0.8: nccl-tests on DGX A100 reach ~230 of 300 GB/s per
direction, DGX H100 ~360 of 450 GB/s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.units import GB

#: PCIe x16 bandwidth per direction by generation [GB/s] (PCI-SIG base specs: 8/16/32/64 GT/s per lane x16,
#: 128b/130b encoding; Gen6 FLIT ~121 GB/s)
PCIE_X16_GB_PER_S: dict[int, float] = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
#: assumed when the host link names no generation [GB/s] (PCIe Gen4 x16)
PCIE_DEFAULT_GB_PER_S = 31.5

#: inter-node network per GPU, per direction [GB/s]: one 400 Gb/s NDR InfiniBand ConnectX-7 per GPU in
#: DGX H100 / H200 / B200 (NVIDIA DGX user guides; DGX SuperPOD reference architectures) = 50 GB/s; one
#: 800 Gb/s ConnectX-8 per GPU in DGX B300 = 100 GB/s; one 200 Gb/s HDR ConnectX-6 per GPU in DGX A100 (DGX
#: A100 user guide) = 25 GB/s, also the default for older or PCIe systems. A named assumption: cloud clusters
#: vary (AWS p4d 400 Gb/s per 8 GPUs with EFA, p5 3200 Gb/s per 8 GPUs). AMD Instinct MI300X/MI325X/MI355X
#: platforms: one 400 Gb/s NIC per GPU (Azure ND MI300X v5: 8 x 400 Gb/s InfiniBand per VM; AMD Pensando
#: Pollara 400 per GPU in MI350-series clusters) = 50 GB/s. Intel Gaudi: 3 of the on-chip RoCE ports per chip
#: face the scale-out network (HLS-Gaudi2: 6 x 400 GbE per 8 chips = 300 Gb/s per chip; HLS-Gaudi3: 6 x 800
#: GbE per 8 chips = 600 Gb/s per chip; Intel Gaudi 2 and Gaudi 3 white papers) = 37.5 / 75 GB/s.
INTERNODE_GB_PER_S_BY_ARCH: dict[str, float] = {
    "Hopper": 50.0, "Blackwell": 50.0, "Blackwell Ultra": 100.0, "CDNA 3": 50.0, "CDNA 4": 50.0,
    "Gaudi 2": 37.5, "Gaudi 3": 75.0,
}  # fmt: skip
INTERNODE_DEFAULT_GB_PER_S = 25.0
#: nodes with fewer GPUs than an HGX baseboard are cloud VMs on plain TCP Ethernet without RDMA, shared by
#: the node's GPUs [GB/s per node]: 25 Gb/s, the class of AWS g5/g6e small sizes (up to 10-25 Gbps), GCP
#: a2-highgpu-1g / g2 (24-32 Gbps) and single-GPU neocloud VMs (provider instance pages). A named assumption.
SMALL_NODE_NETWORK_GB_PER_S = 3.125
#: TCP per-hop latency of such VMs [s] (kernel network stack: tens of microseconds)
SMALL_NODE_HOP_LATENCY_S = 30e-6

#: per-hop latency of a collective step [s]: NVLink/NVSwitch ~5 us, PCIe through the host ~15 us, network
#: ~10 us (nccl-tests small-message all-reduce times on DGX A100/H100 and PCIe hosts)
NVLINK_HOP_LATENCY_S = 5e-6
PCIE_HOP_LATENCY_S = 15e-6
NETWORK_HOP_LATENCY_S = 10e-6

#: GPUs in one scale-up domain when the caller gives none (HGX/DGX baseboards: 8; PCIe hosts: 8 slots at most)
DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One communication path: per-direction rate after efficiency [GB/s] and per-hop latency [s]."""

    bw_gb_per_s: float
    hop_latency_s: float
    kind: str  # "nvlink" | "pcie" | "network"


def pcie_gb_per_s(spec: AcceleratorSpec) -> float:
    """Per-direction host-link bandwidth from the spec's ``host_link`` text [GB/s]."""
    m = re.search(r"Gen\s*(\d)", spec.host_link)
    bw = PCIE_X16_GB_PER_S.get(int(m.group(1)), PCIE_DEFAULT_GB_PER_S) if m else PCIE_DEFAULT_GB_PER_S
    if "x8" in spec.host_link:
        bw /= 2.0
    return bw


def intra_node_link(spec: AcceleratorSpec, link_eff: float) -> Link:
    """Link between GPUs of one node: NVLink/IF (half the bidirectional per-GPU figure) or PCIe."""
    if spec.has_scaleup_fabric:
        return Link(
            bw_gb_per_s=spec.scaleup_bw_gb_per_s / 2.0 * link_eff,
            hop_latency_s=NVLINK_HOP_LATENCY_S,
            kind="nvlink",
        )
    return Link(bw_gb_per_s=pcie_gb_per_s(spec) * link_eff, hop_latency_s=PCIE_HOP_LATENCY_S, kind="pcie")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeNetwork:
    """The scale-out network of the nodes a job runs on, when the caller knows it (the offer's fabric from
    ``gpufleet.catalog.capabilities``): bandwidth per node, per direction [GB/s], and whether it is RDMA."""

    gb_per_s_per_node: float
    rdma: bool


def inter_node_link(
    spec: AcceleratorSpec,
    link_eff: float,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
    network: NodeNetwork | None = None,
) -> Link:
    """Network link per GPU between nodes.

    With ``network`` (the offer's documented fabric): its per-node bandwidth shared by the node's GPUs, RDMA
    or TCP hop latency. Without: full (8-GPU) nodes get an RDMA fabric per GPU
    (:data:`INTERNODE_GB_PER_S_BY_ARCH`); smaller VMs one TCP NIC shared by the node's GPUs
    (:data:`SMALL_NODE_NETWORK_GB_PER_S`)."""
    if network is not None:
        bw = network.gb_per_s_per_node / max(gpus_per_node, 1)
        lat = NETWORK_HOP_LATENCY_S if network.rdma else SMALL_NODE_HOP_LATENCY_S
        return Link(bw_gb_per_s=bw * link_eff, hop_latency_s=lat, kind="network")
    if gpus_per_node < DEFAULT_GPUS_PER_NODE:
        bw = SMALL_NODE_NETWORK_GB_PER_S / max(gpus_per_node, 1)
        return Link(bw_gb_per_s=bw * link_eff, hop_latency_s=SMALL_NODE_HOP_LATENCY_S, kind="network")
    bw = INTERNODE_GB_PER_S_BY_ARCH.get(spec.architecture, INTERNODE_DEFAULT_GB_PER_S)
    return Link(bw_gb_per_s=bw * link_eff, hop_latency_s=NETWORK_HOP_LATENCY_S, kind="network")


def group_link(
    spec: AcceleratorSpec,
    *,
    group: int,
    stride: int,
    gpus_per_node: int,
    link_eff: float,
    network: NodeNetwork | None = None,
) -> Link:
    """Slowest link of a group of ``group`` ranks spaced ``stride`` apart (TP innermost: stride 1)."""
    if group * stride <= gpus_per_node:
        return intra_node_link(spec, link_eff)
    return inter_node_link(spec, link_eff, gpus_per_node, network)


def all_reduce_s(n_bytes: float, ranks: int, link: Link) -> float:
    """Ring all-reduce of ``n_bytes`` over ``ranks`` [s]; 0 for one rank."""
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    return (
        2.0 * (ranks - 1) / ranks * n_bytes / (link.bw_gb_per_s * GB) + 2.0 * (ranks - 1) * link.hop_latency_s
    )


def all_gather_s(n_bytes: float, ranks: int, link: Link) -> float:
    """Ring all-gather (or reduce-scatter) producing ``n_bytes`` per rank [s]; 0 for one rank."""
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * n_bytes / (link.bw_gb_per_s * GB) + (ranks - 1) * link.hop_latency_s


def all_to_all_s(n_bytes: float, ranks: int, link: Link) -> float:
    """All-to-all where each rank holds ``n_bytes`` and keeps ``1/ranks`` of it [s]; 0 for one rank."""
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * n_bytes / (link.bw_gb_per_s * GB) + link.hop_latency_s


def all_to_all_nodes_s(n_bytes: float, ranks: int, ranks_per_node: int, intra: Link, inter: Link) -> float:
    """All-to-all over ``ranks`` placed ``ranks_per_node`` to a node [s].

    Uniform traffic: each rank keeps ``1/ranks`` of its ``n_bytes``, sends ``(ranks_per_node - 1)/ranks``
    to peers in its node over NVLink/PCIe and the rest over the network, both at once (NCCL sends intra-node
    peers over P2P and remote ones over the NIC concurrently); the slower path sets the time.
    """
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    local = max(1, min(ranks_per_node, ranks))
    if local >= ranks:
        return all_to_all_s(n_bytes, ranks, intra)
    t_intra = (local - 1) / ranks * n_bytes / (intra.bw_gb_per_s * GB)
    t_inter = (ranks - local) / ranks * n_bytes / (inter.bw_gb_per_s * GB)
    return max(t_intra, t_inter) + inter.hop_latency_s


__all__ = [
    "DEFAULT_GPUS_PER_NODE",
    "INTERNODE_DEFAULT_GB_PER_S",
    "INTERNODE_GB_PER_S_BY_ARCH",
    "SMALL_NODE_HOP_LATENCY_S",
    "SMALL_NODE_NETWORK_GB_PER_S",
    "Link",
    "NodeNetwork",
    "all_gather_s",
    "all_reduce_s",
    "all_to_all_nodes_s",
    "all_to_all_s",
    "group_link",
    "inter_node_link",
    "intra_node_link",
    "pcie_gb_per_s",
]
