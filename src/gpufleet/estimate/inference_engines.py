"""Serving-engine defaults the inference model reads: batch caps, batching and prefill styles, KV-cache
precision and fp16 accumulation per stack (split from :mod:`gpufleet.estimate.inference`)."""

from __future__ import annotations

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.estimate.rates import (
    Rates,
)
from gpufleet.precision import UNQUANTISED_BYTES_PER_ELEMENT

#: concurrent sequences an engine schedules at most, by default: vLLM ``max_num_seqs`` 256 (EngineArgs);
#: SGLang/TGI are bounded by KV tokens (taken as 512); TRT-LLM ``max_batch_size`` 2048 (trtllm-build default
#: since v0.11); HF transformers: a static batch chosen by the user (32 assumed); llama.cpp server 4 slots.
ENGINE_MAX_BATCH: dict[str, int] = {
    "vllm": 256, "sglang": 512, "tgi": 512, "trtllm": 2048, "transformers": 32, "llamacpp": 4, "unknown": 256,
}  # fmt: skip
#: stacks without in-flight (continuous) batching: HF transformers ``generate`` runs static batches
STATIC_BATCHING_STACKS = frozenset({"transformers"})
#: stacks whose decode step is bound by the host CPU (one Python forward per token, eager kernel launches):
#: the same H200 type gave llama-3.1-8b 22-38 ms per token on one machine and 46-59 ms on another with HF
#: transformers 5.17.0 eager generate (benchmarks/gpu_probe.py 2026-11-26; estimate/data/PROVENANCE.md)
HOST_BOUND_DECODE_STACKS = frozenset({"transformers"})
#: in-flight batching stacks that prefill new requests in forward passes of their own while the running
#: batch waits, instead of carrying prompt chunks inside the decode steps: TGI v1-v2 (router
#: ``batching_task``: a ``prefill`` call on the new entries, then the running batch resumes ``decode``;
#: text-generation-inference router/src/infer.rs; chunked prefill arrived with TGI v3.0, Dec 2024)
SEPARATE_PREFILL_STACKS = frozenset({"tgi"})
#: stacks that spread a model over several GPUs by whole layers unless told otherwise: llama.cpp's default
#: ``--split-mode layer`` ("split layers and KV across GPUs"; ``row`` splits tensors and must be asked for,
#: llama.cpp tools/server README and ``common/arg.cpp``), so a multi-GPU llama.cpp run with no stated
#: layout is a pipeline of stages (tp = 1, pp > 1) without tensor-parallel all-reduces or expert parallelism
LAYER_SPLIT_STACKS = frozenset({"llamacpp"})
#: memory-module engine used for each software stack's memory accounting
MEMORY_ENGINE: dict[str, str] = {"trtllm": "trtllm", "transformers": "transformers", "llamacpp": "pytorch"}


def _software_text(sw: str, engine: str) -> str:
    """The stack as the notes state it. With none given, the speed is the engine-agnostic calibration but the
    memory reserve and concurrency cap are still an engine's (vLLM: gpu_memory_utilization 0.9, max_num_seqs
    256, vLLM engine-args docs); say so, so the defaults behind "fits" and the batch are visible."""
    if sw != "unknown":
        return f"software {sw}"
    return (
        f"software not given: engine-agnostic speed, memory reserve and batch cap of {engine} "
        f"(max_num_seqs {ENGINE_MAX_BATCH['unknown']}); pass --engine to choose"
    )


#: quantised checkpoints keep the LM head in 16 bit (AWQ/GPTQ, vLLM/TRT-LLM fp8): bytes per element
HEAD_BYTES_QUANTISED = UNQUANTISED_BYTES_PER_ELEMENT


#: engines whose 16-bit GEMMs accumulate in fp16 (llama.cpp's CUDA backend calls cuBLAS with
#: CUBLAS_COMPUTE_16F for f16 and dequantised-to-f16 matrices, ggml-cuda ``ggml_cuda_op_mul_mat_cublas``)
FP16_ACCUMULATE_STACKS = frozenset({"llamacpp"})
#: GeForce tensor cores run fp16-accumulate MMA at twice the fp32-accumulate rate the catalog lists (NVIDIA
#: Ampere GA102 and Ada AD102 whitepapers, "Peak FP16 Tensor TFLOPS with FP16 Accumulate")
GEFORCE_FP16_ACCUMULATE_SPEEDUP = 2.0


def _fp16_accumulate(rates: Rates, spec: AcceleratorSpec) -> Rates:
    """``rates`` with the 16-bit peaks at the fp16-accumulate rate of a GeForce part (stated in notes)."""
    from dataclasses import replace

    k = GEFORCE_FP16_ACCUMULATE_SPEEDUP
    scale = rates.peak_flops <= rates.peak16_flops  # only 16-bit compute (incl. weight-only formats)
    return replace(
        rates,
        peak_flops=rates.peak_flops * (k if scale else 1.0),
        peak16_flops=rates.peak16_flops * k,
        notes=(*rates.notes, f"{spec.id}: fp16-accumulate GEMMs at {k:g}x the listed fp32-accumulate peak."),
    )


#: stacks whose KV cache stays 16 bit under fp8/fp4 weights unless fp8 KV is asked for: vLLM and SGLang
#: ``--kv-cache-dtype auto`` ("auto: use the model data type", vLLM EngineArgs; SGLang server args), TGI
#: ``--kv-cache-dtype`` unset = the model dtype, HF transformers' DynamicCache, llama.cpp ``-ctk f16``
KV16_DEFAULT_STACKS = frozenset({"vllm", "sglang", "tgi", "transformers", "llamacpp"})


def default_kv_precision(precision: str, spec: AcceleratorSpec, software: str = "unknown") -> str | None:
    """KV cache precision when none is given: fp8 with fp8/fp4 weights on GPUs with fp8 (TRT-LLM's fp8/fp4
    checkpoints carry ``kv_cache_quant_algo: FP8``, which it applies), except on stacks that keep a 16-bit
    cache by default (:data:`KV16_DEFAULT_STACKS`); else the engines' 16-bit default (None)."""
    if software in KV16_DEFAULT_STACKS:
        return None
    if precision in ("fp8", "fp4") and spec.fp8_tflops is not None:
        return "fp8"
    return None


def _engine_max(sw: str) -> int:
    return ENGINE_MAX_BATCH.get(sw, ENGINE_MAX_BATCH["unknown"])
