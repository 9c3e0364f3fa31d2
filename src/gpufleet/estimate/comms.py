"""Collective-communication times: ring all-reduce, all-gather/reduce-scatter, all-to-all over GPU links.

Cost model (Thakur, Rabenseifner & Gropp 2005; NCCL's "bus bandwidth" convention, nccl-tests PERFORMANCE.md):
a ring all-reduce of ``B`` bytes over ``n`` ranks moves ``2 (n-1)/n B`` bytes through each rank's slowest link
and takes ``2 (n-1)`` latency hops; all-gather and reduce-scatter move ``(n-1)/n B`` in ``n-1`` hops; an
all-to-all moves ``(n-1)/n B``. Link rates are per direction, times an achieved-bandwidth efficiency
(``link_eff`` in the calibration profile, prior 0.8: nccl-tests on DGX A100 reach ~230 of 300 GB/s per
direction, DGX H100 ~360 of 450 GB/s).

Which path a group of ranks gets inside a node (:func:`intra_node_link`): NVSwitch NVLink at the full
per-GPU rate; a full-mesh fabric (AMD Infinity Fabric, Gaudi RoCE) at the share of the peer links the group
drives; an NVLink bridge only for the pair it joins; otherwise PCIe, with NCCL's P2P transport where the GPUs
have peer access within one socket, else its SHM transport through host memory (:func:`pcie_link`).
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
#: GbE per 8 chips = 600 Gb/s per chip; Intel Gaudi 2 and Gaudi 3 white papers) = 37.5 / 75 GB/s. TPU pods of
#: a Multislice job meet over the data-centre network (DCN): v6e hosts carry 4 x 200 Gb/s NICs per 8 chips
#: (25.6 Tb/s per 256-chip pod) = 12.5 GB/s per chip, v5e 2 x 100 Gb/s per 8 chips (6.4 Tb/s per pod) =
#: 3.125 GB/s (Cloud TPU v6e docs, system architecture table); v5p 50 Gb/s per chip = 6.25 GB/s (Cloud TPU
#: v5p docs, via the catalog's instance_network.csv).
INTERNODE_GB_PER_S_BY_ARCH: dict[str, float] = {
    "Hopper": 50.0, "Blackwell": 50.0, "Blackwell Ultra": 100.0, "CDNA 3": 50.0, "CDNA 4": 50.0,
    "Gaudi 2": 37.5, "Gaudi 3": 75.0, "TPU v5e": 3.125, "TPU v5p": 6.25, "TPU v6e (Trillium)": 12.5,
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

#: PCIe without a scale-up fabric (NCCL transports, NCCL docs "Environment variables": NCCL_P2P_LEVEL,
#: NCCL_P2P_DISABLE, NCCL_SHM_DISABLE). NCCL moves data between two GPUs of a node with its P2P transport
#: (direct PCIe writes through a switch or the CPU root complex) where the GPUs allow peer access, else with
#: its SHM transport (through a pinned host-memory buffer: the sender's copy into host memory and the
#: receiver's copy out of it are two PCIe transfers per chunk). P2P between CPU sockets (NCCL path "SYS",
#: across UPI) is off by default on Intel hosts (NCCL_P2P_LEVEL defaults to PHB there), so a group wider than
#: one socket's GPUs falls back to SHM. Named defaults:
#: GPUs per CPU socket / PCIe switch in 8-GPU dual-socket PCIe servers (4 per socket: Dell R760xa /
#: Supermicro SYS-421GE 8-GPU PCIe layouts); a TP group of more ranks crosses the socket interconnect
PCIE_P2P_DOMAIN_GPUS = 4
#: SHM share of the P2P bandwidth: CUDA samples ``p2pBandwidthLatencyTest`` reports GPU-to-GPU copies with
#: P2P disabled (staged through host memory) at ~0.4-0.6 of the P2P-enabled rate on PCIe Gen3/Gen4 hosts
SHM_BW_FACTOR = 0.5
#: form-factor words of parts without PCIe peer access (:func:`pcie_p2p_capable`)
PCIE_NO_P2P_FORM_FACTORS = ("consumer", "aws", "gcp", "azure")
#: full-mesh scale-up fabrics -> GPUs in the mesh: AMD Instinct MI300X/MI325X/MI355X platforms link every
#: OAM to each of its 7 peers with one Infinity Fabric link (AMD CDNA 3 white paper, "8-GPU platform:
#: fully connected"); HLS-Gaudi2/Gaudi3 boards link every chip to each of its 7 peers with 3 of its on-chip
#: RoCE ports (21 of 24; Intel Gaudi 2 and Gaudi 3 white papers). Collectives of n ranks use n-1 links.
MESH_FABRICS: tuple[tuple[str, int], ...] = (("infinity fabric (7 links", 8), ("roce on-chip", 8))
#: on-chip RoCE ports of a Gaudi chip that face the scale-out network rather than its node peers: HLS-1 wires
#: 7 of a Gaudi's 10 x 100 GbE ports to its 7 peers and 3 to scale-out (Habana HLS-1 system docs); HLS-Gaudi2
#: 21 of 24 x 100 GbE (3 per peer) and 3 to scale-out (Intel Gaudi 2 white paper, "HLS-Gaudi2 server");
#: HLS-Gaudi3 21 of 24 x 200 GbE and 3 (Intel Gaudi 3 white paper). The peers therefore share 21/24 of the
#: listed all-port figure: 262.5 GB/s per direction on Gaudi 2 (not 300), 525 on Gaudi 3 (not 600)
ROCE_SCALEOUT_PORTS = 3

#: GPUs in one scale-up domain when the caller gives none (HGX/DGX baseboards: 8; PCIe hosts: 8 slots at most)
DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One communication path: per-direction rate after efficiency [GB/s] and per-hop latency [s]."""

    bw_gb_per_s: float
    hop_latency_s: float
    kind: str  # "nvlink" | "pcie" (P2P) | "pcie_shm" (through host memory) | "network"


def pcie_gb_per_s(spec: AcceleratorSpec) -> float:
    """Per-direction host-link bandwidth from the spec's ``host_link`` text [GB/s]."""
    m = re.search(r"Gen\s*(\d)", spec.host_link)
    bw = PCIE_X16_GB_PER_S.get(int(m.group(1)), PCIE_DEFAULT_GB_PER_S) if m else PCIE_DEFAULT_GB_PER_S
    if "x8" in spec.host_link:
        bw /= 2.0
    return bw


def pcie_p2p_capable(spec: AcceleratorSpec) -> bool:
    """Whether NCCL can use its P2P transport between two of these GPUs over PCIe (see the module doc).

    Not on GeForce (consumer) parts, whose driver reports no PCIe peer access (NVIDIA forums on RTX 4090
    P2P; the tinygrad open-gpu-kernel-modules P2P patch README), nor on SKUs sold only inside cloud VMs (the
    form factor names the cloud, e.g. A10G "PCIe (AWS G5)"), whose hypervisors expose no peer access (vLLM's
    "custom allreduce is disabled because your platform lacks GPU P2P capability" on AWS g5 / g6 hosts).
    """
    ff = spec.form_factor.lower()
    return not any(k in ff for k in PCIE_NO_P2P_FORM_FACTORS)


def pcie_link(spec: AcceleratorSpec, link_eff: float, ranks: int | None = None) -> Link:
    """PCIe path of a group of ``ranks`` GPUs (None: a pair in one PCIe domain) [GB/s, s].

    P2P (GPU writes straight into the peer over the PCIe switch / root complex) at the link rate x
    ``link_eff``; where P2P is unavailable (:func:`pcie_p2p_capable`) or the group is wider than one CPU
    socket's PCIe domain (:data:`PCIE_P2P_DOMAIN_GPUS`), NCCL's SHM transport stages every chunk through host
    memory at :data:`SHM_BW_FACTOR` of that rate. The per-hop latency is the same PCIe-through-host figure.
    """
    bw = pcie_gb_per_s(spec) * link_eff
    if not pcie_p2p_capable(spec) or (ranks is not None and ranks > PCIE_P2P_DOMAIN_GPUS):
        return Link(bw_gb_per_s=bw * SHM_BW_FACTOR, hop_latency_s=PCIE_HOP_LATENCY_S, kind="pcie_shm")
    return Link(bw_gb_per_s=bw, hop_latency_s=PCIE_HOP_LATENCY_S, kind="pcie")


def scaleup_group_gpus(spec: AcceleratorSpec) -> int | None:
    """GPUs one scale-up link reaches: an NVLink bridge joins 2 (``(N-way)``: N), a switched or mesh fabric
    the whole node (None); GPUs beyond a bridge talk over PCIe."""
    text = spec.scaleup_interconnect.lower()
    if "bridge" not in text:
        return None
    m = re.search(r"(\d+)-way", text) or re.search(r"(\d+) gpus", text)
    return int(m.group(1)) if m else 2


def mesh_gpus(spec: AcceleratorSpec) -> int | None:
    """GPUs of a full-mesh scale-up fabric (point-to-point links to every peer, no switch), else None."""
    text = spec.scaleup_interconnect.lower()
    return next((n for k, n in MESH_FABRICS if k in text), None)


def roce_peer_share(spec: AcceleratorSpec) -> float:
    """Share of the listed scale-up bandwidth that reaches node peers: ``(ports - 3) / ports`` for on-chip
    RoCE fabrics (:data:`ROCE_SCALEOUT_PORTS`; 21/24 on Gaudi 2 and 3), 1 for every other fabric."""
    m = re.search(r"(\d+)\s*x\s*\d+\s*gbe roce on-chip", spec.scaleup_interconnect.lower())
    if m is None:
        return 1.0
    ports = int(m.group(1))
    return (ports - ROCE_SCALEOUT_PORTS) / ports if ports > ROCE_SCALEOUT_PORTS else 1.0


def intra_node_link(spec: AcceleratorSpec, link_eff: float, ranks: int | None = None) -> Link:
    """Link of a group of ``ranks`` GPUs of one node (None: the whole fabric): NVLink/IF (half the
    bidirectional per-GPU figure) or PCIe (:func:`pcie_link`).

    On a full-mesh fabric (:func:`mesh_gpus`) a group of ``ranks`` drives only its ``ranks - 1`` peer links,
    ``(ranks - 1) / (mesh - 1)`` of the per-GPU figure (of its peer-facing ports on Gaudi,
    :func:`roce_peer_share`); a group wider than an NVLink bridge
    (:func:`scaleup_group_gpus`) runs over PCIe.
    """
    bridge = scaleup_group_gpus(spec)
    if spec.has_scaleup_fabric and (ranks is None or bridge is None or ranks <= bridge):
        bw = spec.scaleup_bw_gb_per_s / 2.0
        mesh = mesh_gpus(spec)
        if mesh is not None and ranks is not None and 2 <= ranks < mesh:
            bw *= (ranks - 1) / (mesh - 1)
        bw *= roce_peer_share(spec)
        return Link(bw_gb_per_s=bw * link_eff, hop_latency_s=NVLINK_HOP_LATENCY_S, kind="nvlink")
    return pcie_link(spec, link_eff, ranks)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeNetwork:
    """The scale-out network of the nodes a job runs on, when the caller knows it (the offer's fabric from
    ``gpufleet.catalog.capabilities``): bandwidth per node, per direction [GB/s], and whether it is RDMA."""

    gb_per_s_per_node: float
    rdma: bool


def network_note(
    spec: AcceleratorSpec, gpus_per_node: int, gpus: int, network: NodeNetwork | None = None
) -> str | None:
    """The scale-out network a job over more than one node is timed with, as a stated assumption (None when
    the job fits one node): a multi-node answer depends on it (Megatron-LM and NeMo performance tables quote
    the fabric: 8 x 400 Gb/s InfiniBand per DGX H100 node), and `gpufleet recommend` uses each offer's own
    fabric instead, so the two can differ for the same GPU count."""
    if gpus <= gpus_per_node:
        return None
    if network is not None:
        kind = "RDMA" if network.rdma else "TCP"
        per_node = network.gb_per_s_per_node
        src = "the offer's fabric"
    elif gpus_per_node < DEFAULT_GPUS_PER_NODE:
        kind, per_node, src = "TCP", SMALL_NODE_NETWORK_GB_PER_S, "assumed for small cloud VMs"
    else:
        per_gpu = INTERNODE_GB_PER_S_BY_ARCH.get(spec.architecture, INTERNODE_DEFAULT_GB_PER_S)
        kind, per_node, src = (
            "RDMA",
            per_gpu * gpus_per_node,
            f"assumed for {spec.architecture} HGX/DGX nodes",
        )
    return (
        f"{-(-gpus // gpus_per_node)} nodes of {gpus_per_node} GPUs over {per_node * 8:,.0f} Gb/s {kind} per "
        f"node ({src}); `gpufleet recommend` uses each offer's documented fabric."
    )


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
    pairwise: bool = False,
) -> Link:
    """Slowest link of a group of ``group`` ranks spaced ``stride`` apart (TP innermost: stride 1).

    Inside a node the link depends on which GPUs the group spans (:func:`intra_node_link`): on PCIe the
    span decides whether it stays within one socket's P2P domain, and an NVLink bridge joins only adjacent
    pairs; on a full mesh the group drives its own ``group - 1`` peer links. ``pairwise``: point-to-point
    hops between neighbours (pipeline stages), which span ``stride + 1`` GPUs and use one peer link."""
    if group * stride <= gpus_per_node:
        members = 2 if pairwise else group
        span = (members - 1) * stride + 1
        return intra_node_link(spec, link_eff, members if mesh_gpus(spec) is not None else span)
    return inter_node_link(spec, link_eff, gpus_per_node, network)


def pipeline_link(spec: AcceleratorSpec, tp: int, pp: int, gpus_per_node: int, link_eff: float) -> Link:
    """Point-to-point link between consecutive pipeline stages (TP innermost, stages ``tp`` ranks apart):
    one peer link of the scale-up fabric (on a mesh one of its links; over PCIe P2P or SHM by the ``tp + 1``
    GPUs a hop spans, :func:`group_link`) while the ``tp x pp`` GPUs fit a node, else the network."""
    if tp * pp <= gpus_per_node:
        return group_link(
            spec, group=pp, stride=tp, gpus_per_node=gpus_per_node, link_eff=link_eff, pairwise=True
        )
    return inter_node_link(spec, link_eff, gpus_per_node)


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
    "MESH_FABRICS",
    "PCIE_NO_P2P_FORM_FACTORS",
    "PCIE_P2P_DOMAIN_GPUS",
    "ROCE_SCALEOUT_PORTS",
    "SHM_BW_FACTOR",
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
    "mesh_gpus",
    "network_note",
    "pcie_gb_per_s",
    "pcie_link",
    "pcie_p2p_capable",
    "pipeline_link",
    "roce_peer_share",
    "scaleup_group_gpus",
]
