"""Deployability as data: provider class, cluster support and scale-out fabric of each offer.

Two sourced tables ship in ``catalog/data`` (copied from the project's reference data; sources, dates and the
``verified`` flag per row are in the files, see ``catalog/data/CAPABILITIES.md``):

- ``provider_capabilities.csv``: class (hyperscaler, gpu_cloud, marketplace, aggregator), whether ordinary
  instances form multi-node clusters, spot, SLA.
- ``instance_network.csv``: per instance type or family, the scale-out fabric (EFA, InfiniBand, RoCE,
  GPUDirect-TCPX, none) with its Gb/s per node, the ordinary NIC Gb/s, and multi-node support.

Rules (docs/recommend.md, "Deployability"):

- An offer can form a multi-node cluster only when its provider says ``yes`` (self-serve) AND its instance row
  (where the provider has instance rows) says ``yes``. ``partial`` (clusters by contract or a separate cluster
  product not in the catalog: RunPod Instant Clusters, Vast clusters on request, Verda Instant Clusters,
  DigitalOcean multi-node by contract) and unknown count as no: the catalog's rows are ordinary instances.
- Fabric bandwidth: the documented scale-out Gb/s per node for RDMA-class fabrics, else the ordinary NIC Gb/s;
  ``<=N`` bounds are read as N. Where the table gives none, a named assumption is used and flagged
  ``assumed`` (:data:`ASSUMED_RDMA_GBPS_PER_NODE`, :data:`ASSUMED_TCP_GBPS_PER_NODE`).
"""

from __future__ import annotations

import csv
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal, get_args

from gpufleet.errors import DataError

ProviderClass = Literal["hyperscaler", "gpu_cloud", "marketplace", "aggregator", "unknown"]
PROVIDER_CLASSES: tuple[str, ...] = get_args(ProviderClass)

#: Gb/s per node assumed for an RDMA-class fabric whose bandwidth the sources do not state (Nebius/Mithril
#: InfiniBand, Azure NC24rs_v3 RDMA): one 400 Gb/s NDR port per node, the smallest RDMA fabric in the table
#: (GPU clusters usually have 8 such ports; assuming one keeps the estimate conservative)
ASSUMED_RDMA_GBPS_PER_NODE = 400.0
#: Gb/s per node assumed for an ordinary TCP network the sources do not state: 25 Gb/s, the class of AWS g5/g6
#: mid sizes and Azure NC A100 v4 (instance_network.csv) and the estimator's small-VM assumption
ASSUMED_TCP_GBPS_PER_NODE = 25.0
#: GCP GPUDirect-TCPX (A3 High/Edge: 4 x 200 Gb/s GPU NICs) and TCPXO (A3 Mega: 8 x 200 Gb/s); the table
#: leaves them empty because two page versions conflict, so the lower documented figure of each is used
GPUDIRECT_TCPX_GBPS_PER_NODE: dict[str, float] = {"GPUDirect-TCPX": 800.0, "GPUDirect-TCPXO": 1600.0}

_RDMA_WORDS = ("efa", "infiniband", "rdma", "roce", "cluster fabric")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderCapability:
    """One provider's row of ``provider_capabilities.csv``."""

    provider: str
    provider_class: str  # one of PROVIDER_CLASSES
    multi_node: bool  # ordinary instances form multi-node clusters, self-serve
    multi_node_text: str  # the source's wording
    spot: str
    sla: str
    verified: bool
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Fabric:
    """How nodes of one offer reach each other."""

    kind: str  # "EFA", "InfiniBand NDR", "GPUDirect-TCPX", "TCP", ...
    rdma: bool  # a GPU-direct scale-out fabric (EFA, InfiniBand, RoCE, GPUDirect-TCPX/O)
    gbps_per_node: float  # scale-out bandwidth of one node [Gb/s, decimal]
    assumed: bool  # the bandwidth is a named assumption, not from the table
    multi_node: bool  # provider AND instance allow clusters of this offer
    source: str

    @property
    def label(self) -> str:
        """Short text for tables, e.g. ``EFA 3200 Gb/s`` or ``TCP 25 Gb/s (assumed), single node``."""
        text = f"{self.kind} {self.gbps_per_node:g} Gb/s" + (" (assumed)" if self.assumed else "")
        return text if self.multi_node else f"{text}, single node"


@dataclass(frozen=True, slots=True, kw_only=True)
class _InstanceRow:
    provider: str
    patterns: tuple[tuple[str, str], ...]  # (instance glob, GPU substring or "")
    fabric: str
    scale_out_gbps: float | None
    nic_gbps: float | None
    multi_node: bool
    source: str


def _gbps(raw: str) -> float | None:
    raw = raw.strip().lstrip("<=").strip()
    return float(raw) if raw else None


def _read(name: str) -> list[dict[str, str]]:
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", name).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(
            f"The shipped capability table {name} cannot be read ({exc}). Reinstall gpufleet to restore it."
        ) from exc
    return list(csv.DictReader(text.splitlines()))


@cache
def provider_capabilities() -> dict[str, ProviderCapability]:
    """Provider -> :class:`ProviderCapability` (shipped ``provider_capabilities.csv``)."""
    out: dict[str, ProviderCapability] = {}
    for r in _read("provider_capabilities.csv"):
        cls = r["class"].strip() or "unknown"
        if cls not in PROVIDER_CLASSES:
            raise DataError(f"provider_capabilities.csv: class {cls!r} of {r['provider']!r} is not one of "
                            f"{', '.join(PROVIDER_CLASSES)}. Reinstall gpufleet.")  # fmt: skip
        mn = r["multi_node"].strip()
        out[r["provider"].strip()] = ProviderCapability(
            provider=r["provider"].strip(),
            provider_class=cls,
            multi_node=mn.lower().startswith("yes"),
            multi_node_text=mn,
            spot=r["spot"].strip(),
            sla=r["sla"].strip(),
            verified=r["verified"].strip().lower() == "true",
            source=r["source"].strip(),
        )
    return out


def _patterns(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for alt in text.split("|"):
        alt = re.sub(r"\(.*?\)", "", alt).strip()
        if not alt:
            continue
        glob, _, gpu = alt.partition("+")
        out.append((glob.strip(), gpu.strip()))
    return tuple(out)


@cache
def _instance_rows() -> dict[str, tuple[_InstanceRow, ...]]:
    rows: dict[str, list[_InstanceRow]] = {}
    for r in _read("instance_network.csv"):
        pat = r["instance_type_pattern"]
        if "not in snapshot" in pat:
            continue  # product rows kept for context (cluster products the catalog does not list)
        rows.setdefault(r["provider"].strip(), []).append(
            _InstanceRow(
                provider=r["provider"].strip(),
                patterns=_patterns(pat),
                fabric=r["scale_out_fabric"].strip(),
                scale_out_gbps=_gbps(r["scale_out_gbps_per_node"]),
                nic_gbps=_gbps(r["nic_gbps"]),
                multi_node=r["multi_node_supported"].strip().lower().startswith("yes"),
                source=r["source"].strip(),
            )
        )
    return {k: tuple(v) for k, v in rows.items()}


#: a pattern: (text, GPU substring, what ``fnmatch.fnmatchcase(name, text)`` tests as ``match(name) is not
#: None``, or None for a plain name, which matches only itself)
_Glob = tuple[str, str, Callable[[str], object] | None]


@cache
def _globs(provider: str) -> tuple[tuple[_InstanceRow, tuple[_Glob, ...]], ...]:
    """The provider's instance rows with their glob patterns compiled once (fnmatch's own translation)."""
    return tuple(
        (row, tuple((g, sub, re.compile(fnmatch.translate(g)).match if any(c in g for c in "*?[") else None)
                    for g, sub in row.patterns))
        for row in _instance_rows().get(provider, ())
    )  # fmt: skip


@cache
def _by_text(provider: str) -> dict[str, tuple[tuple[str, _InstanceRow], ...]]:
    """Pattern text -> (GPU substring, row) of the provider's rows that list it, in file order."""
    out: dict[str, list[tuple[str, _InstanceRow]]] = {}
    for row, pats in _globs(provider):
        for g, sub, _ in pats:
            out.setdefault(g, []).append((sub, row))
    return {g: tuple(v) for g, v in out.items()}


def _match(provider: str, instance_type: str, gpu: str) -> _InstanceRow | None:
    # exact names first (the first row in file order listing the name), then globs (file order)
    for sub, row in _by_text(provider).get(instance_type, ()):
        if not sub or sub in gpu:
            return row
    for row, pats in _globs(provider):  # a plain name matching here would have matched above
        if any(
            m is not None and m(instance_type) is not None and (not sub or sub in gpu) for _, sub, m in pats
        ):
            return row
    return None


def provider_class(provider: str) -> str:
    """The provider's class; ``unknown`` for a provider not in the table (e.g. a user catalog's)."""
    cap = provider_capabilities().get(provider)
    return cap.provider_class if cap else "unknown"


#: instance-name suffixes of peer-hosted tiers inside a gpu_cloud provider: RunPod Community Cloud is
#: "peer-hosted" (provider_capabilities.csv note on runpod; RunPod docs, Community vs Secure Cloud)
COMMUNITY_SUFFIXES: dict[str, tuple[str, ...]] = {"runpod": ("_COMMUNITY",)}


def offer_class(provider: str, instance_type: str) -> str:
    """The class of one offer: its provider's, except peer-hosted tiers (RunPod Community), which are
    ``marketplace``."""
    if instance_type.endswith(COMMUNITY_SUFFIXES.get(provider, ())):
        return "marketplace"
    return provider_class(provider)


@cache
def fabric_for(provider: str, instance_type: str, gpu: str = "") -> Fabric:
    """The scale-out network of one offer (module doc for the rules)."""
    cap = provider_capabilities().get(provider)
    rows = _instance_rows().get(provider, ())
    row = _match(provider, instance_type, gpu) if rows else None
    prov_ok = cap is not None and cap.multi_node
    if row is None:
        # no instance row: the provider's own wording decides (only where it has no instance rows at all)
        return Fabric(kind="TCP", rdma=False, gbps_per_node=ASSUMED_TCP_GBPS_PER_NODE, assumed=True,
                      multi_node=prov_ok and not rows,
                      source=cap.source if cap else "not in provider_capabilities.csv")  # fmt: skip
    kind = row.fabric if row.fabric and row.fabric.lower() not in ("none", "none (default)") else "TCP"
    rdma = any(w in kind.lower() for w in _RDMA_WORDS) or kind in GPUDIRECT_TCPX_GBPS_PER_NODE
    if rdma:
        gbps = row.scale_out_gbps or GPUDIRECT_TCPX_GBPS_PER_NODE.get(kind)
        default = ASSUMED_RDMA_GBPS_PER_NODE
    else:
        gbps = row.nic_gbps
        default = ASSUMED_TCP_GBPS_PER_NODE
    return Fabric(
        kind=kind,
        rdma=rdma,
        gbps_per_node=gbps if gbps else default,
        assumed=not gbps,
        multi_node=prov_ok and row.multi_node,
        source=row.source,
    )


__all__ = [
    "ASSUMED_RDMA_GBPS_PER_NODE",
    "ASSUMED_TCP_GBPS_PER_NODE",
    "PROVIDER_CLASSES",
    "Fabric",
    "ProviderCapability",
    "fabric_for",
    "offer_class",
    "provider_capabilities",
    "provider_class",
]
