"""Which precision a GPU computes a stated weight precision in, and whether that needs a fallback.

One rule, shared by the memory model (``estimate_memory``) and the speed model (``performance.resolve_rates``)
so that both refuse, or fall back, identically:

* a precision with a published dense peak runs natively;
* weight-only formats (int4, nf4) compute in the GPU's 16-bit type (fp32 where it has none): not a fallback;
  nor is fp4 on NVIDIA Ampere or newer without fp4 compute (W4A16, as int4: vLLM's fp4 Marlin and MXFP4
  kernels);
* tf32 without a tf32 peak runs as fp32;
* anything else has no hardware support: :class:`UnsupportedError`, unless ``allow_fallback``, where bf16
  runs as fp16 (T4, V100) and fp8/fp4/int8 weights run as weight-only formats with 16-bit matmuls (fp8 on
  A100). Weight-only fp8/fp4 kernels need Ampere (sm80) or newer (vLLM's fp8/fp4 Marlin kernels: "supported
  on GPUs with compute capability >= 8.0"), so fp8/fp4 on Turing, Volta and older NVIDIA GPUs is refused
  even with the fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.catalog.specs import AcceleratorSpec, load_specs
from gpufleet.errors import UnsupportedError
from gpufleet.precision import check_precision

#: NVIDIA architectures before Ampere (compute capability < 8.0): no weight-only fp8/fp4 kernels (vLLM fp8
#: and fp4 Marlin need sm80+, vLLM docs "Supported Hardware" for quantization)
PRE_AMPERE_NVIDIA: tuple[str, ...] = ("Turing", "Volta", "Pascal", "Maxwell", "Kepler")
#: precisions whose weight-only fallback needs sm80+ on NVIDIA GPUs
_SM80_WEIGHT_ONLY = frozenset({"fp8", "fp4"})
#: 4-bit float weights that NVIDIA sm80+ GPUs without fp4 compute serve weight-only, not as a fallback: vLLM
#: 0.10 ``Mxfp4Config.get_min_capability()`` and ``is_fp4_marlin_supported()`` are compute capability 8.0
#: (the MXFP4 checkpoints of gpt-oss run on H100 and A100 that way: OpenAI's model card, "fits into a single
#: 80GB GPU"); fp8 weight-only (fp8 Marlin) stays a fallback: on Ampere it is a slower path an FP8 deployment
#: avoids
_WEIGHT_ONLY_FP4 = frozenset({"fp4"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionSupport:
    """How ``precision`` runs on one GPU."""

    precision: str  # as stated
    compute_precision: str  # what the matmuls run in (the peak column used)
    peak16_tflops: float | None  # 16-bit dense peak (published or derived); None when none can be had
    no16: bool  # no 16-bit peak at all: 16-bit work runs at the fp32 peak
    fallback: bool  # True when allow_fallback was needed
    notes: tuple[str, ...]  # derived peaks and fallbacks, for the user


def derived_peak16(spec: AcceleratorSpec) -> float | None:
    """16-bit peak for a spec that publishes none [TFLOP/s]: the median FLOP-per-byte of its architecture
    times its bandwidth; None when no GPU of that architecture publishes one."""
    ratios = sorted(
        (s.fp16_tflops or s.bf16_tflops or 0.0) / s.mem_bw_gb_per_s
        for s in load_specs().values()
        if s.architecture == spec.architecture and (s.fp16_tflops or s.bf16_tflops) and s.mem_bw_gb_per_s > 0
    )
    return ratios[len(ratios) // 2] * spec.mem_bw_gb_per_s if ratios else None


def _pre_ampere(spec: AcceleratorSpec) -> bool:
    return spec.vendor == "NVIDIA" and spec.architecture.startswith(PRE_AMPERE_NVIDIA)


def _ampere_or_newer(spec: AcceleratorSpec) -> bool:
    return spec.vendor == "NVIDIA" and not _pre_ampere(spec)


def precision_support(spec: AcceleratorSpec, precision: str, *, allow_fallback: bool) -> PrecisionSupport:
    """How ``precision`` computes on ``spec`` (module doc); :class:`UnsupportedError` when it cannot."""
    prec = check_precision(precision)
    notes: list[str] = []
    p16 = spec.bf16_tflops or spec.fp16_tflops
    no16 = False
    if p16 is None:
        p16 = derived_peak16(spec)
        if p16 is not None:
            notes.append(
                f"{spec.id} publishes no 16-bit peak; assumed {p16:.0f} TFLOP/s from the FLOP/byte ratio of "
                f"other {spec.architecture} GPUs (uncertain)."
            )
        elif spec.fp32_tflops:
            no16 = True
    compute_prec: str | None = prec if spec.dense_peak_tflops(prec) is not None else None
    unpublished = spec.bf16_tflops is None and spec.fp16_tflops is None and not no16
    sixteen = "fp32" if no16 else "fp16"
    if compute_prec is None and (prec in ("int4", "nf4") or (unpublished and prec in ("fp16", "bf16"))):
        compute_prec = sixteen  # weight-only formats compute in whichever 16-bit type exists
    elif compute_prec is None and prec in _WEIGHT_ONLY_FP4 and _ampere_or_newer(spec):
        # 4-bit float weights (MXFP4, NVFP4) on NVIDIA GPUs without fp4 compute run as weight-only W4A16
        # like int4: vLLM's fp4 Marlin kernels (min capability 80) and gpt-oss's MXFP4 MoE kernels
        compute_prec = sixteen
        notes.append(
            f"{spec.id} has no fp4 compute: fp4 weights run weight-only with 16-bit matmuls (vLLM fp4 Marlin "
            "and MXFP4 kernels, compute capability 8.0+), as int4 does."
        )
    elif compute_prec is None and prec == "tf32" and spec.fp32_tflops is not None:
        compute_prec = "fp32"
    fallback = False
    if compute_prec is None:
        what = "fp16" if prec == "bf16" else f"16-bit matmuls on {prec} weights (weight-only)"
        if prec in _SM80_WEIGHT_ONLY and _pre_ampere(spec):
            raise UnsupportedError(
                f"{spec.id} ({spec.architecture}) cannot run {prec} weights at all: it has no {prec} "
                f"compute, and weight-only {prec} kernels (vLLM Marlin) need Ampere (compute capability 8.0) "
                "or newer. "
                "Use fp16, int8 or int4 (AWQ/GPTQ) weights on this GPU, or choose an Ampere or newer GPU."
            )
        if not allow_fallback:
            raise UnsupportedError(
                f"{spec.id} has no hardware support for {prec} compute. Use a precision it supports (for "
                f"example fp16), or allow the fallback (--allow-fallback) to run {what} instead."
            )
        compute_prec, fallback = sixteen, True
        if no16:
            what = (
                "fp32 math on 16-bit weights" if prec in ("fp16", "bf16") else f"fp32 math on {prec} weights"
            )
        notes.append(f"{spec.id} has no {prec} compute: running {what} instead (fallback).")
    return PrecisionSupport(
        precision=prec, compute_precision=compute_prec, peak16_tflops=p16, no16=no16, fallback=fallback,
        notes=tuple(notes),
    )  # fmt: skip


__all__ = ["PRE_AMPERE_NVIDIA", "PrecisionSupport", "derived_peak16", "precision_support"]
