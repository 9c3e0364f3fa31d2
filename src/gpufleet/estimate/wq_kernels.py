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
- **ExLlama** (TGI's GPTQ path since 1.0, vendored as ``server/exllama_kernels`` and later
  ``exllamav2_kernels``; transformers/AutoGPTQ, whose default is v2: AutoGPTQ 0.7.1 README "AutoGPTQ
  defaults to using exllamav2 int4*fp16 kernel"): the fused kernel reaches the fitted ``wq_bw_eff`` at one
  row, but it is not a batch kernel. Past a row threshold it reconstructs the fp16 matrix (read the packed
  weight, write 2 bytes per weight) and calls cuBLAS (read them again): ``1 + 4 / weight_bytes``
  packed-weight equivalents, ~8.5 at 4.25 bits (:data:`RECONSTRUCTED_BYTES`). ExLlama v1 reconstructs
  from ``matmul_recons_thd`` = 8 rows (turboderp/exllama ``model.py`` ``ExLlamaConfig`` default, passed to
  the kernels' ``set_tuning_params`` by TGI 1.0's ``utils/gptq/exllama.py``): :data:`EXLLAMA_V1_FUSED_ROWS`.
  ExLlama v2 runs up to ``MAX_Q_GEMM_ROWS`` = 50 rows fused, cut into blocks of ``BLOCK_M_SIZE_MAX`` = 8
  along the grid's z axis, each block streaming and dequantising the whole weight again (the grid walks
  the weight, x and y, before z, so a matrix larger than L2 is read from DRAM once per block): ``ceil(rows
  / 8)`` passes (exllamav2 ``cuda/q_gemm.cu`` ``gemm_half_q_half_cuda``, and vLLM's copy
  ``csrc/quantization/gptq/q_gemm.cu``). Either way the int4 kernel loses its speed-up over fp16 as the
  batch grows (Frantar et al. 2024, fig. 1: exllamav2 against Marlin over batch 1-128 on an A10). A
  ``software="tgi"`` request does not state the version; TGI's published GPTQ measurements on A10G ran
  ExLlama v1 (TGI 1.0.x, Hugging Face's 2023 SageMaker benchmark) and an outside TGI GPTQ measurement at
  ~20 concurrent requests sits 2.6x below the one-pass model, as v1's reconstruction predicts (v2's three
  passes give 1.4x), so TGI keeps v1. TGI 1.1-2.0 (ExLlama v2) is faster from 8 to 50 rows, and TGI 2.1+
  repacks compatible GPTQ checkpoints for Marlin on sm80+ (``software="vllm"`` models that kernel).
- **Everything else** (AutoAWQ's GEMM/GEMV kernels; llama.cpp's k-quant kernels; TRT-LLM's weight-only
  kernels; any engine before Ampere): the fitted ``wq_bw_eff``, calibrated on the int4 decode cases (today
  llama.cpp's), one pass over the weights at any batch.

Neither share can exceed 1 (a dequantising kernel reads at most as fast as a 16-bit one) nor make decode
faster than the bandwidth roofline of its packed bytes (tests/estimate/test_wq_kernels.py). Not modelled:
ExLlama's fused kernel multiplies on the CUDA cores (half2 FMAs), a compute bound below its weight reads on
the parts measured (A10G, 7B at 8 rows: ~3.5 ms of FMAs at the 31 TFLOP/s half2 rate against ~9 ms of reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.estimate.profile import CalibrationProfile
from gpufleet.estimate.support import PRE_AMPERE_NVIDIA

#: engines that run Marlin weight-only kernels on NVIDIA compute capability 8.0+ (module doc)
MARLIN_STACKS: tuple[str, ...] = ("vllm", "sglang")
#: share of the 16-bit kernels' bandwidth that Marlin's dequantising GEMV reaches up to batch 16-32: its
#: "near-ideal ~4x" speedup at 4.125 bits/weight against the ideal 3.88x (Frantar et al. 2024, abstract)
MARLIN_BW_SHARE = 0.95
#: engine -> ExLlama version of its int4 GPTQ decode (module doc)
EXLLAMA_STACKS: dict[str, int] = {"tgi": 1, "transformers": 2}
#: rows one pass of ExLlama's fused kernel computes; each pass streams the whole weight
#: (exllamav2 ``q_gemm.cu``: ``BLOCK_M_SIZE_MAX`` 8)
EXLLAMA_ROWS_PER_PASS = 8
#: most rows ExLlama v2 runs fused; above it reconstructs fp16 weights for cuBLAS (``MAX_Q_GEMM_ROWS`` 50)
EXLLAMA_MAX_FUSED_ROWS = 50
#: most rows ExLlama v1 runs fused: it reconstructs from ``matmul_recons_thd`` = 8 rows on
EXLLAMA_V1_FUSED_ROWS = 7
#: bytes per weight of the fp16 matrix ExLlama reconstructs (written once, read once by cuBLAS)
RECONSTRUCTED_BYTES = 2.0


@dataclass(frozen=True, slots=True)
class WqKernel:
    """The weight-only kernel family an engine runs on a GPU, and its bandwidth share."""

    name: str  # "marlin", "exllama" (v1), "exllamav2" or "generic"
    bw_share: float  # share of eta_bw its weight reads reach (at most 1)
    #: rows per pass over the weights (None: one pass at any batch); above ``fused_max_rows`` the matrix is
    #: reconstructed in 16 bit and multiplied by cuBLAS
    rows_per_pass: int | None = None
    fused_max_rows: int | None = None

    def weight_read_factor(self, rows: float, weight_bytes: float) -> float:
        """Packed-weight bytes streamed per forward of ``rows`` tokens, in units of the packed weights
        at the kernel's ``bw_share`` [ratio, >= 1]: ``ceil(rows / rows_per_pass)`` passes up to
        ``fused_max_rows``, then the fp16 reconstruction, one packed read plus ``2 x RECONSTRUCTED_BYTES``
        per weight written and read back by copy and cuBLAS kernels at the full 16-bit bandwidth, hence
        scaled by ``bw_share`` (module doc)."""
        if self.rows_per_pass is None or rows <= 0:
            return 1.0
        if self.fused_max_rows is not None and rows > self.fused_max_rows:
            return 1.0 + 2.0 * RECONSTRUCTED_BYTES / weight_bytes * self.bw_share
        return float(math.ceil(rows / self.rows_per_pass))


def marlin_capable(spec: AcceleratorSpec) -> bool:
    """NVIDIA compute capability 8.0 or newer (Ampere and later): Marlin's minimum."""
    return spec.vendor == "NVIDIA" and not spec.architecture.startswith(PRE_AMPERE_NVIDIA)


def wq_kernel(
    software: str, spec: AcceleratorSpec, prof: CalibrationProfile, precision: str = "int4"
) -> WqKernel:
    """The weight-only decode kernel ``software`` (a :func:`~gpufleet.estimate.rates.software_key`) runs on
    ``spec`` for ``precision`` weights, with its share of the 16-bit kernels' bandwidth (module doc). ExLlama
    is a GPTQ kernel: int4 only (nf4 is bitsandbytes', int8/fp8 weight-only other kernels: generic)."""
    generic = min(1.0, prof.param("wq_bw_eff"))
    if software in MARLIN_STACKS and marlin_capable(spec):
        return WqKernel("marlin", max(generic, MARLIN_BW_SHARE))
    if software in EXLLAMA_STACKS and spec.vendor == "NVIDIA" and precision == "int4":
        v1 = EXLLAMA_STACKS[software] == 1
        fused = EXLLAMA_V1_FUSED_ROWS if v1 else EXLLAMA_MAX_FUSED_ROWS
        return WqKernel("exllama" if v1 else "exllamav2", generic, EXLLAMA_ROWS_PER_PASS, fused)
    return WqKernel("generic", generic)


__all__ = [
    "EXLLAMA_MAX_FUSED_ROWS",
    "EXLLAMA_ROWS_PER_PASS",
    "EXLLAMA_STACKS",
    "EXLLAMA_V1_FUSED_ROWS",
    "MARLIN_BW_SHARE",
    "MARLIN_STACKS",
    "RECONSTRUCTED_BYTES",
    "WqKernel",
    "marlin_capable",
    "wq_kernel",
]
