"""Accelerators and placements the production tier leaves out, grown from picks engineers rejected
(docs/recommend.md, "Practitioners' rules we check", rules 34-38).

- End of support: NVIDIA CUDA 12.8 release notes ("Deprecated Architectures": Maxwell, Pascal and Volta are
  feature-complete and will be dropped in a future release) and CUDA 13.0 release notes (August 2025:
  offline compilation and library support for Maxwell, Pascal and Volta, compute capability below 7.5,
  removed; the R580 driver branch is the last to support them). Kepler went with CUDA 12.0. Current serving
  stacks follow the toolkit (vLLM and PyTorch wheels built with CUDA 12.8+/13 ship no sm_60/sm_70 kernels
  beyond the deprecated path), so a production service on these GPUs cannot take a security or engine update.
- Workstation cards (NVIDIA RTX A2000-A6000, RTX Ada, Quadro RTX, RTX PRO Workstation Edition): actively
  cooled desktop boards ("designed for professional desktop workstations", NVIDIA RTX A4000 datasheet), no
  NVLink on the A4000/A4500-class cards, and outside NVIDIA's data-centre product line (the data-centre
  counterparts are A10/A40/L4/L40S/RTX PRO 6000 Server Edition, passively cooled and qualified in NVIDIA-
  Certified servers). The issue that grew this rule: EU production chat on 2 x RTX A4000 split TP2 over PCIe.
- Trainium1 for latency-bound serving: AWS builds Trn1 "for high-performance deep learning training" (EC2
  Trn1 product page) and Inferentia2 (Inf2) for inference; the Neuron vLLM/TNx serving path targets Inf2 and
  Trn2. A latency-SLO service on Trn1 (shown by the issue: a reranker on Trainium1 on a 3-year commitment)
  is one engineers reject.
"""

from __future__ import annotations

from functools import cache

from gpufleet.catalog.specs import load_specs

#: NVIDIA architectures the current CUDA toolkits no longer build for (CUDA 12.0: Kepler; CUDA 13.0:
#: Maxwell, Pascal, Volta)
END_OF_SUPPORT_ARCHITECTURES: frozenset[str] = frozenset({"Kepler", "Maxwell", "Pascal", "Volta"})
#: accelerators left out of latency-bound (TTFT/TPOT SLO) production serving: training parts
TRAINING_ONLY_FOR_SERVING: frozenset[str] = frozenset({"Trainium1"})
#: least free device memory a production deployment keeps at its operating point (vLLM's default
#: ``gpu_memory_utilization`` 0.9 leaves the same 10 % outside the engine's budget; allocator
#: fragmentation, longer-than-average prompts and engine upgrades take it) [fraction of device memory]
PRODUCTION_MEMORY_HEADROOM = 0.10


@cache
def is_end_of_support(gpu: str) -> bool:
    """An NVIDIA GPU of an architecture CUDA dropped (:data:`END_OF_SUPPORT_ARCHITECTURES`)."""
    spec = load_specs().get(gpu)
    if spec is None or spec.vendor != "NVIDIA":
        return False
    arch = (spec.architecture or "").split(" ")[0]
    return arch in END_OF_SUPPORT_ARCHITECTURES


@cache
def is_workstation_gpu(gpu: str) -> bool:
    """A workstation (desktop) card: its form factor says so (gpu_specs.csv)."""
    spec = load_specs().get(gpu)
    return spec is not None and "workstation" in spec.form_factor.lower()


def latency_bound(ttft_s: float | None, tpot_s: float | None) -> bool:
    return ttft_s is not None or tpot_s is not None


def production_exclusion(gpu: str, *, serving: bool, latency: bool) -> str:
    """Why the production tier leaves ``gpu`` out ("" when it does not)."""
    if is_end_of_support(gpu):
        arch = load_specs()[gpu].architecture
        return f"{gpu} ({arch}) is dropped by current CUDA releases (CUDA 13.0)"
    if serving and is_workstation_gpu(gpu):
        return f"{gpu} is a workstation card, not a data-centre GPU"
    if serving and latency and gpu in TRAINING_ONLY_FOR_SERVING:
        return f"{gpu} is a training accelerator (AWS serves on Inferentia2/Trainium2)"
    return ""


__all__ = [
    "END_OF_SUPPORT_ARCHITECTURES",
    "PRODUCTION_MEMORY_HEADROOM",
    "TRAINING_ONLY_FOR_SERVING",
    "is_end_of_support",
    "is_workstation_gpu",
    "latency_bound",
    "production_exclusion",
]
