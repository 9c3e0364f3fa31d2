"""Resolve the accelerator name of one provider offer to a spec id, with the per-provider exceptions.

The generic mapping is ``data/gpu_aliases.csv``; its ``notes`` column documents where a provider means a
different part by the same spelling. Those exceptions live here as an explicit rule table (:data:`RULES`),
each
rule citing the note (or the provider document) it implements. Rules are checked in order; the first match
wins; otherwise the generic alias applies. ``gpu_memory_mib`` is the per-GPU memory the provider reports
[MiB], already normalised by the caller (see ``tools/build_catalog.py``); rules use it to tell 40 GB from
80 GB
parts and SXM from NVL hosts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.catalog.aliases import load_aliases
from gpufleet.catalog.specs import load_specs
from gpufleet.errors import UnknownNameError

#: Per-GPU memory above which an "A100"/"H100"/"GH200" host is the larger-memory part [MiB]. 40 GB parts
#: report 40960 MiB, 80 GB parts 81559-81920 MiB, H100 NVL 95830 MiB, GH200 96 GB 98304 MiB (catalog GpuInfo).
_A100_80GB_MIN_MIB = 61_440.0
_H100_NVL_MIN_MIB = 90_000.0
_GH200_144GB_MIN_MIB = 120_000.0


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferGpuRule:
    """One per-provider exception: when ``applies`` is true, the offer's GPU is ``spec_id``."""

    provider: str  # lower-case provider, or "*" for any provider
    name: str  # accelerator name as written in the catalog (exact)
    spec_id: str
    cites: str  # the alias note (or document) this rule implements
    instance_pattern: str = ""  # regex matched against the instance type; "" = any
    min_memory_mib: float | None = None  # rule applies only when per-GPU memory >= this [MiB]
    max_memory_mib: float | None = None  # rule applies only when per-GPU memory < this [MiB]

    def applies(self, name: str, provider: str, instance_type: str, gpu_memory_mib: float | None) -> bool:
        if name != self.name or self.provider not in ("*", provider):
            return False
        if self.instance_pattern and not re.search(self.instance_pattern, instance_type):
            return False
        if self.min_memory_mib is not None and (
            gpu_memory_mib is None or gpu_memory_mib < self.min_memory_mib
        ):
            return False
        return not (
            self.max_memory_mib is not None
            and (gpu_memory_mib is None or gpu_memory_mib >= self.max_memory_mib)
        )


_N_A100 = "gpu_aliases.csv A100 note"
_N_A100_80 = "gpu_aliases.csv A100-80GB note"
_N_H100 = "gpu_aliases.csv H100 note"

RULES: tuple[OfferGpuRule, ...] = (
    # --- RunPod (SkyPilot fetch_runpod renames the PCIe parts) -------------------------------------------
    OfferGpuRule(
        provider="runpod", name="H100", spec_id="H100-PCIe", cites=f"{_N_H100}: RunPod 'H100' = PCIe"
    ),
    OfferGpuRule(
        provider="runpod",
        name="A100-80GB",
        spec_id="A100-PCIe-80GB",
        cites=f"{_N_A100_80}: RunPod = PCIe 80GB",
    ),
    # --- Cudo (SkyPilot cudo_utils) ---------------------------------------------------------------------
    OfferGpuRule(
        provider="cudo", name="H100", spec_id="H100-NVL", cites=f"{_N_H100}: Cudo 'H100' = H100 NVL"
    ),
    OfferGpuRule(
        provider="cudo", name="A100", spec_id="A100-PCIe-80GB", cites=f"{_N_A100}: Cudo 'A100' = 80GB PCIe"
    ),
    # --- Azure: by VM size ---------------------------------------------------------------------------------
    OfferGpuRule(
        provider="azure",
        name="H100",
        spec_id="H100-NVL",
        instance_pattern=r"^Standard_NC(40ads|80adis)_H100_v5$",
        cites=f"{_N_H100}: Azure NC40ads/NC80adis_H100_v5 = H100 NVL",
    ),
    OfferGpuRule(
        provider="azure",
        name="H100",
        spec_id="H100-NVL",
        instance_pattern=r"^Standard_NCC\d+ads_H100_v5$",
        cites="Microsoft Learn, NCCads H100 v5 series: confidential VMs on H100 NVL 94GB (as NCads)",
    ),
    OfferGpuRule(
        provider="azure",
        name="A100-80GB",
        spec_id="A100-PCIe-80GB",
        instance_pattern=r"^Standard_NC\d+ads_A100_v4$",
        cites=f"{_N_A100_80}: Azure NC24/48/96ads_A100_v4 = A100 PCIe 80GB",
    ),
    OfferGpuRule(
        provider="azure",
        name="V100",
        spec_id="V100-PCIe-16GB",
        instance_pattern=r"^Standard_NC(6|12|24|24r)s_v3$",
        cites="gpu_aliases.csv V100 note: Azure NCv3 (NC6s/12s/24s/24rs_v3) = V100 PCIe 16GB",
    ),
    # --- Lambda ---------------------------------------------------------------------------------------------
    OfferGpuRule(
        provider="lambda",
        name="H100",
        spec_id="H100-PCIe",
        instance_pattern=r"_h100_pcie$",
        cites=f"{_N_H100}: Lambda gpu_1x_h100_pcie = H100 PCIe",
    ),
    # --- Fluidstack: the instance type names the form factor ------------------------------------------------
    OfferGpuRule(
        provider="fluidstack",
        name="A100-80GB",
        spec_id="A100-PCIe-80GB",
        instance_pattern=r"A100_PCIE",
        cites=f"{_N_A100_80}: Fluidstack A100_PCIE_80GB::N types (SkyPilot fluidstack/vms.csv) = PCIe",
    ),
    # --- Vast: per row, from the host name and GpuInfo MiB --------------------------------------------------
    OfferGpuRule(
        provider="vast",
        name="A100",
        spec_id="A100-PCIe-80GB",
        instance_pattern=r"A100_PCIE",
        min_memory_mib=_A100_80GB_MIN_MIB,
        cites=f"{_N_A100}: Vast mixes A100_SXM4 40/80 GB and A100_PCIE 80 GB hosts",
    ),
    OfferGpuRule(
        provider="vast",
        name="H100",
        spec_id="H100-NVL",
        min_memory_mib=_H100_NVL_MIN_MIB,
        cites=f"{_N_H100}: Vast mixes H100_SXM (81559 MiB) and H100_NVL (95830 MiB) hosts",
    ),
    OfferGpuRule(
        provider="vast",
        name="RTX3060",
        spec_id="RTX-3060-Ti",
        instance_pattern=r"RTX_3060_Ti",
        cites="gpu_aliases.csv RTX3060 note: Vast 'RTX_3060_Ti' rows (8192 MiB) = RTX 3060 Ti",
    ),
    # --- Any provider: memory tells the part ----------------------------------------------------------------
    OfferGpuRule(
        provider="*",
        name="A100",
        spec_id="A100-SXM-80GB",
        min_memory_mib=_A100_80GB_MIN_MIB,
        cites=f"{_N_A100}: 'A100' is 40 GB SXM unless memory says 80 (Seeweb 81920 MiB, Vast SXM4 80 GB)",
    ),
    OfferGpuRule(
        provider="*",
        name="GH200",
        spec_id="GH200-144GB",
        min_memory_mib=_GH200_144GB_MIN_MIB,
        cites="gpu_aliases.csv GH200 note: 144 GB HBM3e systems map to GH200-144GB",
    ),
)


def _generic(name: str) -> str | None:
    specs = load_specs()
    if name in specs:
        return name
    aliases = load_aliases()
    for key in (name, name.lower()):
        if key in aliases:
            return aliases[key].spec_id
    lower = {k.lower(): k for k in specs}
    return lower.get(name.lower())


def resolve_offer_gpu(
    name: str, provider: str, instance_type: str = "", gpu_memory_mib: float | None = None
) -> str:
    """Spec id of accelerator ``name`` as listed by ``provider`` for ``instance_type``.

    ``gpu_memory_mib`` is the provider-reported per-GPU memory [MiB] (``None`` when unknown). Raises
    :class:`UnknownNameError` (with close matches) when the name maps to no spec.
    """
    prov = provider.strip().lower()
    for rule in RULES:
        if rule.applies(name, prov, instance_type, gpu_memory_mib):
            return rule.spec_id
    spec_id = _generic(name)
    if spec_id is None:
        raise UnknownNameError(
            "accelerator",
            name,
            list(load_specs()) + [a.alias for a in load_aliases().values()],
            hint=(
                f"(provider {provider!r}, instance type {instance_type!r}). Use a spec id from "
                "`gpufleet catalog gpus`, or add the spelling to gpu_aliases.csv with its source."
            ),
        )
    return spec_id


def rule_for(
    name: str, provider: str, instance_type: str = "", gpu_memory_mib: float | None = None
) -> OfferGpuRule | None:
    """The exception rule that decides this offer's GPU, or ``None`` when the generic alias applies."""
    prov = provider.strip().lower()
    return next((r for r in RULES if r.applies(name, prov, instance_type, gpu_memory_mib)), None)


__all__ = ["RULES", "OfferGpuRule", "resolve_offer_gpu", "rule_for"]
