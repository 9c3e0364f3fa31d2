"""Inference and training time from FLOPs, bytes and links, at calibrated efficiencies (docs/performance.md).

Inference (one replica of ``tp x pp`` GPUs):

* prefill = max(matmul FLOPs / (peak x eta x w(h) x stack), weight read) + attention FLOPs / (16-bit peak x
  eta16 x stack) + TP all-reduces (2 per layer) + per-step overhead;
* decode step at batch ``b``, context ``c`` = max(weight bytes / (BW x eta_bw), GEMM FLOPs / (peak x eta x
  w(h) x stack)) + max(KV bytes / (BW x eta_bw), attention FLOPs / ...) + TP all-reduces + per-step
  overhead; weights read = all (MoE: the expected distinct experts); GEMMs and attention run in turn;
* throughput at concurrency ``b``: in-flight batching = b x out / (out x step(b decode + b x in / out prompt
  tokens per step)); static batching = b x out / (prefill of b prompts + out x TPOT(b, in + out/2)).

Training (per step): compute at the precision's dense peak x eta x w(h) x train_eff x stack factor, exposed
tensor-parallel and expert all-to-all time, pipeline bubble ``(p-1)/(v m)``, and the data-parallel gradient
reduce (or ZeRO-3 gathers) beyond what overlaps the backward.

``w(h) = h / (h + h0)``: narrow models run their GEMMs less efficiently. ``eta`` is shared per GPU generation
(fitted for Ampere and Hopper, derived for the others) and precision (fp8 keeps ``fp8_eff`` of the 16-bit
efficiency at twice the peak).

The model lives in three modules, re-exported here: :mod:`gpufleet.estimate.rates` (hardware rates and
efficiencies), :mod:`gpufleet.estimate.inference` and :mod:`gpufleet.estimate.training`.
"""

from __future__ import annotations

from gpufleet.estimate.inference import (
    ENGINE_MAX_BATCH,
    STATIC_BATCHING_STACKS,
    InferenceEstimate,
    decode_step_s,
    default_kv_precision,
    estimate_inference,
    prefill_s,
)
from gpufleet.estimate.inference import HEAD_BYTES_QUANTISED as HEAD_BYTES_QUANTISED
from gpufleet.estimate.inference import MEMORY_ENGINE as MEMORY_ENGINE
from gpufleet.estimate.inference import _Infer as _Infer
from gpufleet.estimate.inference import _tp_comm_s as _tp_comm_s
from gpufleet.estimate.inference import _weight_bytes_read as _weight_bytes_read
from gpufleet.estimate.rates import (
    ACT_BYTES,
    ARCH_EFFICIENCY,
    Rates,
    precision_class,
    resolve_inputs,
    resolve_rates,
    software_key,
    width_factor,
)
from gpufleet.estimate.rates import ARCH_EFFICIENCY_DEFAULT as ARCH_EFFICIENCY_DEFAULT
from gpufleet.estimate.rates import _arch_eta as _arch_eta
from gpufleet.estimate.rates import _widen as _widen
from gpufleet.estimate.rates import positive_float as positive_float
from gpufleet.estimate.rates import positive_int as positive_int
from gpufleet.estimate.rates import tp_link as tp_link
from gpufleet.estimate.training import (
    EP_OVERLAP_STACKS,
    GRAD_BYTES,
    INTERLEAVED_STACKS,
    PARAM_BYTES,
    QLORA_DEQUANT_OUT_BYTES,
    QLORA_DEQUANT_PASSES,
    StepBreakdown,
    TrainingEstimate,
    effective_time_fraction,
    estimate_training,
    training_step,
)

__all__ = [
    "ACT_BYTES",
    "ARCH_EFFICIENCY",
    "ENGINE_MAX_BATCH",
    "EP_OVERLAP_STACKS",
    "GRAD_BYTES",
    "INTERLEAVED_STACKS",
    "PARAM_BYTES",
    "QLORA_DEQUANT_OUT_BYTES",
    "QLORA_DEQUANT_PASSES",
    "STATIC_BATCHING_STACKS",
    "InferenceEstimate",
    "Rates",
    "StepBreakdown",
    "TrainingEstimate",
    "decode_step_s",
    "default_kv_precision",
    "effective_time_fraction",
    "estimate_inference",
    "estimate_training",
    "precision_class",
    "prefill_s",
    "resolve_inputs",
    "resolve_rates",
    "software_key",
    "training_step",
    "width_factor",
]
