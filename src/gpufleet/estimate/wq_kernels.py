"""Weight-only quantised decode kernels per serving engine (W4A16/W8A16: GPTQ, AWQ, fp8/fp4 weight-only).

A weight-only layer reads its packed weights and dequantises them to 16 bit in registers inside the GEMM;
at decode batch sizes the kernel is bandwidth bound, so its speed is the share of the 16-bit kernels'
bandwidth (``eta_bw``) it reaches. That share depends on the kernel the engine runs:

- **Marlin** (Frantar, Castro, Chen, Hoefler, Alistarh 2024, "MARLIN: Mixed-Precision Auto-Regressive
  Parallel Inference on Large Language Models", arXiv 2408.11743, abstract and fig. 1): "near-ideal ~4x
  speedups with batchsizes up to 16-32 tokens" over fp16 on an A10. At 4 bits plus one fp16 scale per
  128-weight group the ideal is 16 / 4.125 = 3.88x, so Marlin reaches about the whole bandwidth of the 16-bit
  kernels: :data:`MARLIN_BW_SHARE`. vLLM runs it for every GPTQ/AWQ checkpoint it can on compute capability
  8.0+ (``GPTQMarlinConfig`` / ``AWQMarlinConfig.get_min_capability()`` = 80, and
  ``override_quantization_method`` switches a compatible ``gptq``/``awq`` checkpoint to the Marlin
  method); SGLang imports vLLM's quantisation layers for them. Before Ampere vLLM falls back to its
  ``gptq`` kernel (adapted from exllama v2) and the AWQ GEMM kernels.
- **Everything else** (exllama v1/v2 and the Triton GPTQ-for-LLaMa kernels in TGI 1.x and transformers/
  AutoGPTQ, whose default is exllama v2: AutoGPTQ 0.7.1 README "AutoGPTQ defaults to using exllamav2
  int4*fp16 kernel"; AutoAWQ's GEMM/GEMV kernels; llama.cpp's k-quant kernels; TRT-LLM's weight-only
  kernels; any engine before Ampere): the fitted ``wq_bw_eff``, calibrated on the int4 decode cases (today
  llama.cpp's). TGI selects its GPTQ kernel by version (1.x: exllama on sm80+ or the Triton kernel; Marlin
  from 2.x on sm80+), which a ``software="tgi"`` request does not state, so it keeps the fitted share.

Neither share can exceed 1 (a dequantising kernel reads at most as fast as a 16-bit one) nor make decode
faster than the bandwidth roofline of its packed bytes (tests/estimate/test_wq_kernels.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.estimate.profile import CalibrationProfile
from gpufleet.estimate.support import PRE_AMPERE_NVIDIA

#: engines that run Marlin weight-only kernels on NVIDIA compute capability 8.0+ (module doc)
MARLIN_STACKS: tuple[str, ...] = ("vllm", "sglang")
#: share of the 16-bit kernels' bandwidth that Marlin's dequantising GEMV reaches up to batch 16-32: its
#: "near-ideal ~4x" speedup at 4.125 bits/weight against the ideal 3.88x (Frantar et al. 2024, abstract)
MARLIN_BW_SHARE = 0.95


@dataclass(frozen=True, slots=True)
class WqKernel:
    """The weight-only kernel family an engine runs on a GPU, and its bandwidth share."""

    name: str  # "marlin" or "generic"
    bw_share: float  # share of eta_bw its weight reads reach (at most 1)


def marlin_capable(spec: AcceleratorSpec) -> bool:
    """NVIDIA compute capability 8.0 or newer (Ampere and later): Marlin's minimum."""
    return spec.vendor == "NVIDIA" and not spec.architecture.startswith(PRE_AMPERE_NVIDIA)


def wq_kernel(software: str, spec: AcceleratorSpec, prof: CalibrationProfile) -> WqKernel:
    """The weight-only decode kernel ``software`` (a :func:`~gpufleet.estimate.rates.software_key`) runs on
    ``spec``, with its share of the 16-bit kernels' bandwidth (module doc)."""
    generic = min(1.0, prof.param("wq_bw_eff"))
    if software in MARLIN_STACKS and marlin_capable(spec):
        return WqKernel("marlin", max(generic, MARLIN_BW_SHARE))
    return WqKernel("generic", generic)


__all__ = ["MARLIN_BW_SHARE", "MARLIN_STACKS", "WqKernel", "marlin_capable", "wq_kernel"]
