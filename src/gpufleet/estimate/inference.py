"""Inference speed (TTFT, TPOT, throughput) from FLOPs, bytes and links (docs/performance.md).

Inference (one replica of ``tp x pp`` GPUs):

* prefill = max(matmul FLOPs / (peak x eta x w(h) x stack), weight read) + attention FLOPs / (16-bit peak x
  eta16 x stack) + TP all-reduces (2 per layer) + per-step overhead;
* decode step at batch ``b``, context ``c`` = max(weight bytes / (BW x eta_bw), GEMM FLOPs / (peak x eta x
  w(h) x stack)) + max(KV bytes / (BW x eta_bw), attention FLOPs / ...) + TP all-reduces + per-step
  overhead; weights read = all (MoE: the expected distinct experts); GEMMs and attention run in turn;
* with ``pp`` stages, ``min(pp, b)`` micro-batches circulate, each one engine iteration per token, the LM
  head on the last stage (:func:`pipeline_step_s`); Gaudi stacks pad batch and context to static shapes
  (:mod:`gpufleet.estimate.static_shapes`);
* throughput at concurrency ``b``: in-flight batching = b x out / (out x step(b decode + b x in / out prompt
  tokens per step)); static batching = b x out / (prefill of b prompts + out x TPOT(b, in + out/2)); TGI
  v1-v2 prefill each prompt in a pass of its own (:data:`SEPARATE_PREFILL_STACKS`): b x out / (out x
  TPOT(b) + b x prefill of one prompt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpufleet.catalog.specs import AcceleratorSpec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import compute as cx
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.comms import (
    Link,
    all_reduce_s,
    inter_node_link,
    intra_node_link,
    network_note,
    pipeline_link,
)
from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token, kv_heads_per_rank
from gpufleet.estimate.memory import MemoryEstimate
from gpufleet.estimate.parallelism import (
    USEFUL_CONCURRENCY,
    InferenceLayout,
    _memory,
    choose_inference_layout,
    ep_inference_layouts,
)
from gpufleet.estimate.priors import PRIORS, stack_param
from gpufleet.estimate.profile import CalibrationProfile, make_interval
from gpufleet.estimate.rates import (
    ACT_BYTES,
    Rates,
    Widening,
    _widen,
    geforce_tensor_peak,
    positive_int,
    resolve_inputs,
    resolve_rates,
    scaleup_domain_gpus,
    software_arg,
    tp_link,
    width_factor,
)
from gpufleet.estimate.static_shapes import StaticShapes, mean_decode_context, padded_batch, serving_shapes
from gpufleet.estimate.types import Interval
from gpufleet.estimate.wq_kernels import WqKernel, wq_kernel
from gpufleet.models.arch import ModelArch
from gpufleet.precision import QUANTISED_FORMATS as _QUANTISED
from gpufleet.precision import UNQUANTISED_BYTES_PER_ELEMENT, check_precision
from gpufleet.units import GB
from gpufleet.validation import check_context, checked_output

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


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceEstimate:
    """Inference speed of ``replicas`` replicas of ``tp x pp`` GPUs; speed fields None when not fitting."""

    fits: bool
    memory: MemoryEstimate
    tp: int  # tensor-parallel degree of attention and the dense layers
    pp: int
    replicas: int
    ep: int = 1  # expert-parallel degree of the MoE layers (1 = experts split by TP)
    attention_dp: int = 1  # attention data-parallel groups per replica (ep / tp with EP, else 1)
    gpus_per_replica: int  # GPUs of one replica: max(tp, ep) x pp [GPUs]
    batch_per_replica: int  # concurrent sequences per replica [sequences]
    ttft_s: Interval | None  # time to first token of one request at this batch [s]
    tpot_s: Interval | None  # time per output token at this batch [s]
    output_tokens_per_s: Interval | None  # whole system, all replicas [tokens/s]
    requests_per_s: Interval | None  # whole system [requests/s]
    max_concurrency_per_replica: int  # KV-capacity bound at input+output context [sequences]
    notes: tuple[str, ...]
    # time per output token one request sees while the other batch - 1 keep arriving (closed loop at this
    # concurrency): its decode steps also carry the newcomers' prompts (:func:`_timing`) [s]
    tpot_loaded_s: Interval | None = None
    #: one replica's layout in words ("tp=2 pp=1", or the expert-parallel form) and the serving stack as
    #: the notes state it; :attr:`layout_note` is the note built from them (:func:`layout_note`), which a
    #: caller that places the replicas differently replaces by identity
    layout_text: str = ""
    stack_text: str = ""
    layout_note: str = ""


def layout_note(
    replicas: int, layout_text: str, batch: int, why: str, stack_text: str, where: str = ""
) -> str:
    """The layout note of an inference estimate: "R replica(s) [WHERE] of LAYOUT, B concurrent sequences each
    (WHY); STACK." (``where``: a placement such as "per node")."""
    placed = f"{replicas} replica(s) {where} of" if where else f"{replicas} replica(s) of"
    return f"{placed} {layout_text}, {batch} concurrent sequences each ({why}); {stack_text}."


@dataclass(frozen=True, slots=True, kw_only=True)
class _Infer:
    """Everything a decode/prefill time needs for one replica, resolved once per call."""

    model: ModelArch
    rates: Rates
    tp: int
    pp: int
    link: Link
    width: float
    stack: float  # software multiplier on efficiencies
    overhead_s: float  # per forward step [s]
    eta_bw: float
    kv_bytes_per_token: float  # all layers [bytes/token]
    head_bytes: float  # bytes per LM-head weight
    wq_bw: float = 1.0  # weight-only quantised GEMV: share of eta_bw its dequantising kernels reach
    wq_gemm: float = 1.0  # weight-only quantised GEMM: share of the 16-bit GEMM speed (dequantisation)
    # weight-only kernel's passes over the packed weights at a row count (wq_kernels.WqKernel; None: one pass)
    wq_kernel: WqKernel | None = None
    ep: int = 1  # expert-parallel degree (1: routed experts split by TP like dense layers)
    ep_per_node: int = 1  # EP ranks within one scale-up domain
    ep_intra: Link | None = None  # scale-up link of the all-to-all
    ep_inter: Link | None = None  # scale-out link of the all-to-all
    pp_link: Link | None = None  # link between consecutive pipeline stages (None: ``link``)
    # non-routed weights of a fp4 MoE checkpoint (attention, dense layers, shared experts) at their own
    # format (moe_serving.nonrouted_precision); None: every weight at ``rates``
    nr_rates: Rates | None = None
    nr_wq_bw: float = 1.0  # as wq_bw, for the non-routed weights
    nr_wq_gemm: float = 1.0  # as wq_gemm, for the non-routed weights
    # routed experts' GEMM efficiency relative to ``width`` (narrow experts, moe_serving.expert_width_factor)
    expert_width: float = 1.0
    # decode micro-batches circulate through the pipeline stages (False: one batch passes the stages in turn,
    # llama.cpp, :data:`LAYER_SPLIT_STACKS`)
    pp_overlap: bool = True

    @property
    def attn_dp(self) -> int:
        """Attention data-parallel groups of ``tp`` GPUs in the replica's EP group."""
        return max(self.ep // self.tp, 1) if self.ep > 1 else 1


def _weight_bytes_read(c: _Infer, tokens: float) -> float:
    """Weight bytes one forward of ``tokens`` sequences reads on one GPU [bytes]."""
    shape = cx.model_shape(c.model)
    return (_body_bytes(c, tokens) + shape.lm_head_params * c.head_bytes) / (c.tp * c.pp)


def _body_bytes(c: _Infer, tokens: float) -> float:
    """Weight bytes (all layers, LM head excluded) one forward of ``tokens`` sequences reads, the non-routed
    weights of a fp4 MoE checkpoint at their own format, scaled to the routed kernels' bandwidth share
    (``wq_bw``) so callers divide by one bandwidth [bytes]."""
    shape = cx.model_shape(c.model)
    body = cx.decode_weight_params(c.model, tokens) - shape.lm_head_params
    if c.nr_rates is None:
        return body * c.rates.weight_bytes
    routed = (
        c.model.num_moe_layers
        * cx.moe_expected_experts(c.model.num_experts, c.model.experts_per_token, tokens)
        * shape.expert_params
    )
    nonrouted = (body - routed) * c.nr_rates.weight_bytes * c.wq_bw / c.nr_wq_bw
    return routed * c.rates.weight_bytes + nonrouted


def _wq_read_factor(c: _Infer, rows: float) -> float:
    """Passes a weight-only kernel makes over the packed weights for ``rows`` tokens (ExLlama re-reads them
    per 8-row block: :meth:`gpufleet.estimate.wq_kernels.WqKernel.weight_read_factor`); 1 otherwise."""
    if c.wq_kernel is None:
        return 1.0
    return c.wq_kernel.weight_read_factor(rows, c.rates.weight_bytes)


def _nr_gemm_rate(c: _Infer) -> float:
    """GEMM rate of the non-routed weights (fp4 MoE: at their own format) [FLOP/s]."""
    r = c.nr_rates or c.rates
    wq = c.nr_wq_gemm if c.nr_rates is not None else c.wq_gemm
    return r.peak_flops * r.eta * c.width * c.stack * wq


def _routed_s(c: _Infer, tokens: float, moe_layers: float, gpus: float) -> tuple[float, float]:
    """(weight-read, compute) time of the routed experts of ``moe_layers`` MoE layers for ``tokens`` tokens,
    split evenly over ``gpus`` GPUs (TP slices every expert) [s].

    A roofline of their own (Williams, Waterman & Patterson 2009, "Roofline"): the grouped GEMMs are kernels
    of their own, so their weight reads cannot hide behind the attention or dense GEMMs' compute, nor these
    behind the experts' reads. Reads: the distinct experts the tokens touch
    (:func:`compute.moe_expected_experts`); compute: the routed rows ``tokens x k`` at the expert width's
    efficiency (:func:`moe_serving.expert_width_factor`).
    """
    m, r = c.model, c.rates
    if not m.is_moe or tokens <= 0.0:
        return 0.0, 0.0
    expert = cx.model_shape(m).expert_params
    touched = cx.moe_expected_experts(m.num_experts, m.experts_per_token, tokens)
    bw = r.mem_bw_bytes_per_s * c.eta_bw * c.wq_bw
    rate = r.peak_flops * r.eta * c.width * c.stack * c.wq_gemm * c.expert_width
    rows = tokens * m.experts_per_token
    read_s = moe_layers * touched * expert * r.weight_bytes / gpus / bw
    return read_s, 2.0 * rows * expert * moe_layers / gpus / rate


def _routed_active_params(m: ModelArch) -> float:
    """Routed-expert weights one token passes through, all MoE layers [weights]."""
    return m.num_moe_layers * m.experts_per_token * cx.model_shape(m).expert_params if m.is_moe else 0.0


def _tp_comm_s(c: _Infer, tokens: float, layers: float) -> float:
    """Two all-reduces of the hidden state per layer (attention out, MLP out) (Shoeybi et al. 2019) [s]."""
    return 2.0 * layers * all_reduce_s(tokens * c.model.hidden_size * ACT_BYTES, c.tp, c.link)


def _kv_tp_split(c: _Infer) -> float:
    """Shares the TP ranks split the KV cache into: each rank holds ``max(1, kv_heads / tp)`` KV heads, so
    beyond ``tp = kv_heads`` the heads are replicated and the split stops growing (vLLM
    ``QKVParallelLinear``: "if tp_size >= total_num_kv_heads, each rank holds one replicated KV head";
    the memory model counts the same, :func:`kv_cache.kv_heads_per_rank`); an MLA latent is replicated on
    every TP rank (vLLM, SGLang and TRT-LLM keep the whole latent per rank)."""
    m = c.model
    if m.is_mla:
        return 1.0
    return m.num_kv_heads / kv_heads_per_rank(m, c.tp)


def _kv_read_tokens(m: ModelArch, context: float) -> float:
    """Cached tokens a decode step reads per sequence, averaged over the layers [tokens]: sliding-window
    layers attend (and their kernels load) only the last ``sliding_window`` keys (FlashAttention
    ``window_size``; vLLM/TRT-LLM sliding-window attention), as the attention FLOPs count them
    (:func:`compute.attention_flops_per_token`) and the memory model keeps them (:mod:`kv_cache`)."""
    return cx.attended_keys(m, context)


def _kv_split(c: _Infer) -> float:
    """Shares one replica's KV cache is split into over its TP ranks and PP stages (:func:`_kv_tp_split`)."""
    return _kv_tp_split(c) * c.pp


def _ep_stage_s(
    c: _Infer, decode_seqs: float, context: float, prompt_tokens: float, prompt_len: float
) -> float:
    """One pipeline stage's step with expert parallelism and attention data parallelism [s].

    ``decode_seqs`` and ``prompt_tokens``: this stage's work across the whole EP group. Attention, dense
    layers, shared experts and the LM head run TP over groups of ``tp`` GPUs, ``ep / tp`` groups data
    parallel, the busiest group setting the step (:func:`moe_serving.busiest_group_prompt_tokens`); the
    routed experts are split over the ``ep`` GPUs, ``E / ep`` each, the busiest rank setting the step
    (:func:`moe_serving.busiest_rank_load`); each MoE layer adds a dispatch and a combine all-to-all
    (:func:`moe_serving.moe_all_to_all_s`). Weights read per GPU: its share of the non-routed weights and
    the distinct experts of its own that the step's tokens touch. Phases run in turn (no overlap assumed).
    """
    m, r = c.model, c.rates
    shape = cx.model_shape(m)
    groups = c.attn_dp
    layers = m.num_layers / c.pp
    moe_layers = m.num_moe_layers / c.pp
    bw = r.mem_bw_bytes_per_s * c.eta_bw
    gemm_rate = r.peak_flops * r.eta * c.width * c.stack * c.wq_gemm
    # attention group (tp GPUs): its share of the decode sequences plus the busiest group's prompt tokens
    dec = decode_seqs / groups
    prompt = moe.busiest_group_prompt_tokens(prompt_tokens, prompt_len, groups)
    rows = dec + prompt
    routed_active = _routed_active_params(m)
    nonrouted_params = cx.decode_weight_params(m, 0.0)  # attention, dense FFNs, shared experts, router, head
    nr = c.nr_rates or r
    nr_wq_bw = c.nr_wq_bw if c.nr_rates is not None else c.wq_bw
    nonrouted_bytes = (nonrouted_params - shape.lm_head_params) * nr.weight_bytes + shape.lm_head_params * (
        c.head_bytes
    )
    # logits only for the sampled positions, the LM head at its own rate, as on the TP path (_gemm_s)
    body = shape.matmul_active_params - routed_active - shape.lm_head_params
    head_rows = dec + prompt / max(prompt_len, 1.0)
    t_dense = max(
        nonrouted_bytes / (c.tp * c.pp) / (bw * nr_wq_bw),
        _gemm_s(c, rows, body, head_rows, shape.lm_head_params) / (c.tp * c.pp),
    )
    attn = dec * cx.decode_attention_flops_per_token(m, context)
    if prompt > 0:
        attn += prompt * cx.attention_flops_per_token(m, (prompt_len + 1.0) / 2.0)
    kv_bytes = dec * _kv_read_tokens(m, context) * c.kv_bytes_per_token / _kv_split(c)
    t_attn = max(kv_bytes / bw, attn / (c.tp * c.pp) / (r.peak16_flops * r.eta16 * c.stack))
    # routed experts over the ep GPUs: the busiest rank's tokens, each GPU's touched experts
    tokens = decode_seqs + prompt_tokens
    mean_routed = tokens * m.experts_per_token / c.ep
    busiest = moe.busiest_rank_load(mean_routed, c.ep)
    touched = cx.moe_expected_experts(m.num_experts, m.experts_per_token, tokens) / c.ep
    # the busiest rank's routed copies and its own tokens' combine through HBM around and inside the GEMMs
    io, glue = moe.routed_activation_elements(m, rows / c.tp, busiest)
    t_routed = max(  # narrow experts at their own width's GEMM efficiency (moe_serving.expert_width_factor)
        moe_layers * touched * shape.expert_params * r.weight_bytes / (bw * c.wq_bw)
        + moe_layers * io * ACT_BYTES / bw,
        busiest * 2.0 * shape.expert_params * moe_layers / (gemm_rate * c.expert_width),
    )
    # dispatch + combine per MoE layer; TP ranks of a group send disjoint shares of its tokens
    assert c.ep_intra is not None and c.ep_inter is not None
    t_a2a = moe_layers * moe.moe_all_to_all_s(
        m, tokens_per_gpu=prompt / c.tp, decode_tokens_per_gpu=dec / c.tp, ep=c.ep,
        ep_per_node=c.ep_per_node, intra=c.ep_intra, inter=c.ep_inter,
    )  # fmt: skip
    t_act = moe_layers * glue * ACT_BYTES / bw
    return t_dense + t_attn + t_routed + t_act + t_a2a + _tp_comm_s(c, rows, layers)


def _gemm_s(
    c: _Infer, rows: float, body_params: float, head_rows: float, head_params: float, routed: float = 0.0
) -> float:
    """Compute-bound GEMM time of ``rows`` tokens through ``body_params`` weights and ``head_rows`` through
    the LM head's ``head_params``, on one GPU's worth of FLOPs [s].

    Engines compute logits only for the positions they sample (one per decoding sequence and one per
    finished prompt: vLLM's logits processor on the sample indices, TRT-LLM ``gather_context_logits`` off by
    default). A quantised checkpoint keeps its LM head in 16 bit (AWQ/GPTQ, TRT-LLM/vLLM fp8 and fp4
    recipes exclude ``lm_head``), so it runs at the 16-bit rate without dequantisation. ``routed``: the
    routed-expert share of ``body_params``; with a fp4 MoE checkpoint only it runs at the fp4 rate, the rest
    at the non-routed weights' rate (:func:`moe_serving.nonrouted_precision`)."""
    r = c.rates
    rate = r.peak_flops * r.eta * c.width * c.stack * c.wq_gemm
    head_rate = r.peak16_flops * r.eta16 * c.width * c.stack if c.head_bytes > r.weight_bytes else rate
    body_s = body_params / rate
    if c.nr_rates is not None:
        body_s = routed / rate + (body_params - routed) / _nr_gemm_rate(c)
    return 2.0 * (rows * body_s + head_rows * head_params / head_rate)


def prefill_s(c: _Infer, requests: float, input_len: float, *, latency: bool) -> float:
    """Time to prefill ``requests`` prompts of ``input_len`` tokens on one replica [s].

    ``latency``: the prompt passes the ``pp`` stages in turn (TTFT); otherwise stages work in parallel on
    different requests (throughput).
    """
    tokens = requests * input_len
    if c.ep > 1:  # the layers pass the pp stages in turn (latency) or all stages work at once (throughput)
        stage = _ep_stage_s(c, 0.0, 0.0, tokens / (1.0 if latency else c.pp), input_len)
        return stage * (c.pp if latency else 1) + c.overhead_s
    shape = cx.model_shape(c.model)
    gpus = c.tp * (1 if latency else c.pp)
    attn = (
        requests
        * (cx.prefill_flops(c.model, input_len) - input_len * 2.0 * shape.matmul_active_params)
        / gpus
    )
    r = c.rates
    t_mm = _gemm_s(
        c,
        tokens,
        shape.matmul_active_params - shape.lm_head_params,
        requests,
        shape.lm_head_params,
        _routed_active_params(c.model),
    )
    t_mm /= gpus
    t_attn = attn / (r.peak16_flops * r.eta16 * c.stack)
    read = _body_bytes(c, tokens) * _wq_read_factor(c, tokens) + shape.lm_head_params * c.head_bytes
    t_weights = read / gpus / (r.mem_bw_bytes_per_s * c.eta_bw * c.wq_bw)
    layers = c.model.num_layers / (1 if latency else c.pp)
    t_gemm = max(t_mm, t_weights)
    if c.model.is_moe:  # the routed experts on a roofline of their own (_routed_s)
        t_gemm = _moe_gemm_s(c, tokens, requests, t_weights, c.model.num_moe_layers, gpus, 1.0)
    return t_gemm + t_attn + _tp_comm_s(c, tokens, layers) + c.overhead_s


def _moe_gemm_s(
    c: _Infer, rows: float, head_rows: float, weights_s: float, moe_layers: float, gpus: float, share: float
) -> float:
    """GEMM time of ``share`` of a MoE model's layers (and the LM head when ``head_rows`` > 0 and the share
    holds it) on one of ``gpus`` GPUs: the non-routed weights' roofline plus the routed experts' own
    (:func:`_routed_s`) [s]. ``weights_s``: the whole weight read (both parts) as the dense path times it."""
    shape = cx.model_shape(c.model)
    routed_read, routed_mm = _routed_s(c, rows, moe_layers, gpus)
    body = (shape.matmul_active_params - shape.lm_head_params) * share - _routed_active_params(
        c.model
    ) * share
    head = shape.lm_head_params if head_rows > 0.0 else 0.0
    nonrouted_mm = _gemm_s(c, rows, body, head_rows, head) / gpus
    io_s, glue_s = _routed_act_s(c, rows, moe_layers, gpus)
    return max(weights_s - routed_read, nonrouted_mm) + max(routed_read + io_s, routed_mm) + glue_s


def _routed_act_s(c: _Infer, tokens: float, moe_layers: float, gpus: float) -> tuple[float, float]:
    """HBM time of the routed experts' activations for ``tokens`` tokens through ``moe_layers`` MoE layers:
    (the grouped GEMMs' inputs and outputs, the memory-bound kernels between them)
    (:func:`moe_serving.routed_activation_elements`), the TP ranks each moving the whole ``h``-wide
    tensors, pipeline stages (``gpus / tp``) sharing the layers [s]."""
    m = c.model
    if not m.is_moe or tokens <= 0.0:
        return 0.0, 0.0
    io, glue = moe.routed_activation_elements(m, tokens, tokens * m.experts_per_token, c.tp)
    per_elem = moe_layers * ACT_BYTES * c.tp / gpus / (c.rates.mem_bw_bytes_per_s * c.eta_bw)
    return io * per_elem, glue * per_elem


def decode_step_s(
    c: _Infer, batch: float, context: float, prefill_tokens: float = 0.0, prefill_len: float = 1.0
) -> float:
    """One decode step at ``batch`` sequences with ``context`` cached tokens [s].

    ``prefill_tokens``: prompt tokens (of prompts of ``prefill_len``) processed in the same step, as in-flight
    batching with chunked prefill does (TRT-LLM, vLLM): they share the step's weight read and GEMMs. With
    pipeline stages the batch runs as micro-batches through the stages (:func:`pipeline_step_s`).
    """
    if c.ep > 1:
        micro = max(batch / c.pp, 1.0)
        return c.pp * _ep_stage_s(c, micro, context, prefill_tokens / c.pp, prefill_len) + c.overhead_s
    if c.pp == 1:
        return _dense_stage_s(c, batch, prefill_tokens, context, prefill_len, c.model.num_layers, True) + (
            c.overhead_s
        )
    return pipeline_step_s(c, batch, context, prefill_tokens, prefill_len)


def _dense_stage_s(
    c: _Infer, micro: float, prompt: float, context: float, prefill_len: float, layers: float, head: bool
) -> float:
    """One pipeline stage of ``layers`` layers (``head``: and the LM head) on its ``tp`` GPUs, for ``micro``
    decode sequences and ``prompt`` prompt tokens [s]: GEMMs (weight-streaming or compute bound) and
    attention (KV-streaming bound) one after the other, then the stage's TP all-reduces."""
    r, m = c.rates, c.model
    shape = cx.model_shape(m)
    share = layers / m.num_layers
    rows = micro + prompt
    bw = r.mem_bw_bytes_per_s * c.eta_bw
    head_params = shape.lm_head_params if head else 0.0
    w_bytes = (_body_bytes(c, rows) * share * _wq_read_factor(c, rows) + head_params * c.head_bytes) / c.tp
    attn = micro * cx.decode_attention_flops_per_token(m, context)
    if prompt > 0:
        attn += prompt * cx.attention_flops_per_token(m, (prefill_len + 1.0) / 2.0)
    kv_bytes = micro * _kv_read_tokens(m, context) * c.kv_bytes_per_token * share / _kv_tp_split(c)
    body_params = (shape.matmul_active_params - shape.lm_head_params) * share
    head_rows = micro + prompt / max(prefill_len, 1.0)
    mm_s = _gemm_s(c, rows, body_params, head_rows, head_params, _routed_active_params(m) * share) / c.tp
    t_gemm = max(w_bytes / (bw * c.wq_bw), mm_s)
    if m.is_moe:  # the routed experts on a roofline of their own (_routed_s)
        head_rows_here = head_rows if head else 0.0
        t_gemm = _moe_gemm_s(
            c, rows, head_rows_here, w_bytes / (bw * c.wq_bw), m.num_moe_layers * share, c.tp, share
        )
    t_attn = max(kv_bytes / bw, attn * share / c.tp / (r.peak16_flops * r.eta16 * c.stack))
    return t_gemm + t_attn + _tp_comm_s(c, rows, layers)


def pipeline_step_s(
    c: _Infer, batch: float, context: float, prefill_tokens: float = 0.0, prefill_len: float = 1.0
) -> float:
    """Time for every one of ``batch`` sequences to advance one token through ``pp`` stages [s].

    How TRT-LLM (one micro-batch per pipeline rank in flight, ``num_micro_batches = pp``) and vLLM (``pp``
    virtual engines, each scheduling its own micro-batch) serve with pipeline parallelism: ``M = min(pp, b)``
    micro-batches of ``b / M`` sequences circulate; a micro-batch's next token needs its last one sampled on
    the last stage, so each is one engine iteration (scheduling, sampling, launches: the per-step overhead)
    per token. Layers split evenly, the remainder to the earlier stages, the LM head on the last stage
    (TRT-LLM ``pp_layers``; vLLM ``get_pp_indices``), so the last stage is usually the slowest. The step is
    the longer of (a) the slowest stage busy with all ``M`` micro-batches and (b) one micro-batch's loop:
    every stage, ``pp - 1`` activation hand-offs of ``b/M x h`` over the stage link (split over the TP ranks,
    as in training) and the sampled tokens' return. With equal stages and no overhead this is ``pp x
    stage(b/pp)``, the pipeline kept full at saturation (no flush between steps, unlike 1F1B training's
    bubble). llama.cpp keeps its decode batch whole: its pipeline overlaps only the ubatches of one large
    batch (``n_ubatch`` 512 by default, prompt processing), and each decode call waits for its logits before
    the next (llama.cpp PR #6017 "pipeline parallelism"), so there ``M = 1`` and the stages run in turn.
    """
    pp, m = c.pp, c.model
    n_micro = min(float(pp), max(math.ceil(batch), 1.0)) if c.pp_overlap else 1.0
    micro, prompt = batch / n_micro, prefill_tokens / n_micro
    base, extra = divmod(m.num_layers, pp)
    wide = _dense_stage_s(c, micro, prompt, context, prefill_len, base + 1, False) if extra else 0.0
    narrow = _dense_stage_s(c, micro, prompt, context, prefill_len, base, False) if pp - 1 > extra else 0.0
    last = _dense_stage_s(c, micro, prompt, context, prefill_len, base, True)
    slowest = max(wide, narrow, last)
    link = c.pp_link if c.pp_link is not None else c.link
    handoff = (micro + prompt) * m.hidden_size * ACT_BYTES / c.tp / (link.bw_gb_per_s * GB)
    loop = extra * wide + (pp - 1 - extra) * narrow + last + (pp - 1) * handoff + pp * link.hop_latency_s
    return max(n_micro * (slowest + c.overhead_s), loop + c.overhead_s)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Setup:
    """The part of an inference estimate that does not depend on the batch, the lengths or the layout (rates,
    links, software factors, notes), kept per (model, GPU, profile, precision, stack, ...) by
    :func:`estimate_inference` so that estimates differing only in batch or lengths skip it."""

    rates: Rates
    kv_prec: str | None
    notes: tuple[str, ...]
    base: _Infer
    shapes: StaticShapes | None
    static: bool
    widen: Widening
    infers: dict[tuple[int, int, int], _Infer]  # (tp, pp, ep) -> ``base`` for that layout (_run_layout)


_SETUPS: dict[tuple[object, ...], tuple[ModelArch, AcceleratorSpec, CalibrationProfile, _Setup]] = {}
_SETUPS_MAX = 4096


def _setup_key(
    arch: ModelArch,
    spec: AcceleratorSpec,
    prof: CalibrationProfile,
    prec: str,
    sw: str,
    kv_precision: object,
    allow_fallback: object,
    gpn: object,
    static_batching: object,
) -> tuple[object, ...] | None:
    """Cache key of :class:`_Setup`: the objects by identity (the cache entry holds them, so an id is not
    reused while it lives), the other arguments by value and type; None when one is not hashable."""
    loose = (kv_precision, allow_fallback, gpn, static_batching)
    key = (id(arch), id(spec), id(prof), prec, sw, loose, tuple(type(x) for x in loose))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _prepare(
    arch: ModelArch,
    spec: AcceleratorSpec,
    prof: CalibrationProfile,
    prec: str,
    sw: str,
    rates: Rates,
    kv_prec: str | None,
    kv_precision: str | None,
    gpn: int,
    static_batching: bool | None,
) -> _Setup:
    """The batch- and layout-independent part of :func:`estimate_inference` (see :class:`_Setup`)."""
    notes = list(rates.notes)
    if kv_prec != kv_precision:
        notes.append(f"KV cache assumed {kv_prec} (the engine recipe for {prec} weights).")
    stack_name = stack_param("infer", sw)
    # weight-only quantisation: weights stored below 16 bit, matmuls in 16 bit (int4/nf4, or a fallback)
    weight_only = (
        rates.weight_bytes < UNQUANTISED_BYTES_PER_ELEMENT and rates.peak_flops <= rates.peak16_flops
    )
    kernel = wq_kernel(sw, spec, prof, prec)
    if weight_only:
        notes.append(
            f"{prec} weights dequantised to 16 bit inside the GEMMs ({kernel.name} kernels): weight reads at "
            f"{kernel.bw_share:.2f} of the 16-bit kernels' bandwidth, compute-bound GEMMs at "
            f"{prof.param('wq_gemm_eff'):.2f} of their speed."
        )
        if kernel.rows_per_pass is not None:
            notes.append(
                f"{kernel.name} kernels re-read the packed weights for every {kernel.rows_per_pass} tokens "
                f"of a step and rebuild 16-bit weights above {kernel.fused_max_rows} (wq_kernels module)."
            )
    nr_rates, nr_weight_only = None, False
    nr_prec = moe.nonrouted_precision(arch, prec)
    if nr_prec != prec:  # a fp4 MoE checkpoint: routed experts fp4, the rest at nr_prec
        nr_rates = resolve_rates(spec, nr_prec, prof, allow_fallback=True)
        nr_weight_only = (
            nr_rates.weight_bytes < UNQUANTISED_BYTES_PER_ELEMENT
            and nr_rates.peak_flops <= nr_rates.peak16_flops
        )
        notes.append(
            f"{prec} MoE checkpoint: routed experts in {prec}, attention, dense layers and shared experts in "
            f"{nr_prec} (as the published fp4 MoE checkpoints)."
        )
    link_eff = prof.param("link_eff")
    base = _Infer(
        model=arch, rates=rates, tp=1, pp=1, link=tp_link(spec, 1, gpn, prof), width=width_factor(arch, prof),
        stack=prof.param(stack_name) if stack_name else 1.0,
        overhead_s=prof.param("step_overhead_s") * (prof.param(f"overhead_mult_{sw}")
                                                     if f"overhead_mult_{sw}" in PRIORS else 1.0),
        eta_bw=prof.param("eta_bw"),
        kv_bytes_per_token=kv_cache_bytes_per_token(arch, kv_prec),
        head_bytes=HEAD_BYTES_QUANTISED if prec in _QUANTISED else rates.weight_bytes,
        wq_bw=kernel.bw_share if weight_only else 1.0,
        wq_gemm=prof.param("wq_gemm_eff") if weight_only else 1.0,
        wq_kernel=kernel if weight_only and nr_prec == prec else None,
        ep_intra=intra_node_link(spec, link_eff), ep_inter=inter_node_link(spec, link_eff, gpn),
        nr_rates=nr_rates, nr_wq_bw=kernel.bw_share if nr_weight_only else 1.0,
        nr_wq_gemm=prof.param("wq_gemm_eff") if nr_weight_only else 1.0,
        expert_width=moe.expert_width_factor(arch, prof.param("width_h0")),
        pp_overlap=sw not in LAYER_SPLIT_STACKS,
    )  # fmt: skip
    shapes = serving_shapes(spec, sw)
    if static_batching is not None:
        static = static_batching
    else:
        static = sw in STATIC_BATCHING_STACKS or (shapes is not None and shapes.static_batching)
    if shapes is not None:
        notes.append(
            f"{spec.id} serves with static shapes ({shapes.stack}): decode batches padded to multiples of "
            f"{shapes.batch_bucket}, attention over the context padded to {shapes.context_bucket}-token "
            f"buckets{', one static batch' if static else ''}."
        )
    widen = _widen(rates, spec, stack_name, prof, arch)
    return _Setup(
        rates=rates, kv_prec=kv_prec, notes=tuple(notes), base=base,
        shapes=shapes, static=static, widen=widen, infers={},
    )  # fmt: skip


@checked_output("inference estimate")
def estimate_inference(
    *,
    model: ModelArch | str,
    gpu: AcceleratorSpec | str,
    precision: str,
    input_len: int,
    output_len: int,
    gpu_count: int = 1,
    batch: int | None = None,
    tp: int | None = None,
    pp: int = 1,
    ep: int | None = None,
    attention_dp: bool | None = None,
    kv_precision: str | None = None,
    software: str | None = None,
    profile: CalibrationProfile | None = None,
    allow_fallback: bool = False,
    gpus_per_node: int | None = None,
    ignore_memory: bool = False,
    static_batching: bool | None = None,
) -> InferenceEstimate:
    """Estimate TTFT, TPOT and throughput for serving ``model`` on ``gpu_count`` x ``gpu`` (see module doc).

    ``batch`` None = saturated: as many concurrent sequences as the KV cache and the engine allow (per
    replica). ``static_batching``: the batch prefills together and then decodes (None: by stack, static for
    HF transformers, in-flight batching otherwise). ``ignore_memory``: estimate speed even where the memory
    model says the configuration does not fit (``fits`` stays False, a note says so); for measured cases,
    which evidently ran.

    Mixture-of-experts models (:mod:`gpufleet.estimate.moe_serving`): ``ep`` > 1 splits the routed experts
    over ``ep`` GPUs per replica (expert parallelism) with attention TP ``tp`` inside it (``ep`` a multiple
    of ``tp``); ``attention_dp=True`` means attention data parallel (``tp`` = 1 within the EP group, TRT-LLM
    ``enable_attention_dp``, SGLang ``--enable-dp-attention``). With neither ``tp`` nor ``ep`` given, a MoE
    model's expert-parallel layouts within the scale-up domain are timed beside the TP layout and the fastest
    (output tokens/s) is kept, as a tuned deployment would.
    """
    arch, spec, prof = resolve_inputs(model, gpu, profile)
    prec = check_precision(precision)
    for name, v in (
        ("input_len", input_len),
        ("output_len", output_len),
        ("gpu_count", gpu_count),
        ("pp", pp),
    ):
        positive_int(name, v)
    positive_int("batch", batch, allow_none=True)
    positive_int("tp", tp, allow_none=True)
    positive_int("ep", ep, allow_none=True)
    if not arch.is_decoder:
        raise UnsupportedError(
            f"{arch.id} is an encoder-only model: it generates no tokens, so TTFT/TPOT/throughput do not "
            "apply. Estimate its memory with task 'load', or choose a decoder model."
        )
    check_context(arch.id, arch.max_position_embeddings, input_len, output_len)
    _check_ep(arch, ep, tp, attention_dp, gpu_count, pp)
    sw = software_arg(software)
    gpn = gpus_per_node or scaleup_domain_gpus(spec, gpu_count)
    key = _setup_key(arch, spec, prof, prec, sw, kv_precision, allow_fallback, gpn, static_batching)
    hit = _SETUPS.get(key) if key is not None else None
    st = hit[3] if hit is not None and hit[0] is arch and hit[1] is spec and hit[2] is prof else None
    if st is not None:  # the per-(model, GPU, precision, stack, node) part of an earlier call
        rates, kv_prec = st.rates, st.kv_prec
    else:
        rates = resolve_rates(spec, prec, prof, allow_fallback=allow_fallback)
        if sw in FP16_ACCUMULATE_STACKS and geforce_tensor_peak(spec):
            rates = _fp16_accumulate(rates, spec)
        kv_prec = kv_precision if kv_precision is not None else default_kv_precision(prec, spec, sw)
    engine = MEMORY_ENGINE.get(sw, "vllm")
    context = input_len + output_len
    lay_kw: dict[str, Any] = dict(
        model=arch, spec=spec, precision=prec, gpu_count=gpu_count, context_len=context, batch=batch,
        kv_precision=kv_prec, engine=engine, gpus_per_node=gpn, pp=pp, allow_fallback=allow_fallback,
    )  # fmt: skip
    layouts: list[InferenceLayout] = []
    layer_split = sw in LAYER_SPLIT_STACKS
    if ep is None or ep == 1:
        layouts.append(choose_inference_layout(tp=tp, layer_split=layer_split, **lay_kw))
    auto_ep = ep is None and tp is None and attention_dp is not False and not layer_split
    if arch.is_moe and ((ep is not None and ep > 1) or auto_ep):
        attn_tp = 1 if attention_dp else tp
        layouts += ep_inference_layouts(ep=ep, tp=attn_tp, **lay_kw)
    if st is None:
        st = _prepare(arch, spec, prof, prec, sw, rates, kv_prec, kv_precision, gpn, static_batching)
        if key is not None:
            if len(_SETUPS) >= _SETUPS_MAX:
                _SETUPS.clear()
            _SETUPS[key] = (arch, spec, prof, st)
    notes = list(st.notes)
    base, shapes, static = st.base, st.shapes, st.static
    run_kw: dict[str, Any] = dict(
        gpu_count=gpu_count, gpn=gpn, input_len=input_len, output_len=output_len, engine_max=_engine_max(sw),
        static=static, ignore_memory=ignore_memory, spec=spec, prof=prof, shapes=shapes,
        separate_prefill=sw in SEPARATE_PREFILL_STACKS, infers=st.infers,
    )  # fmt: skip
    runs = [_run_layout(base, lay, batch=batch, **run_kw) for lay in layouts]
    # layouts rank by their saturated throughput, whatever batch is asked, so asking for the concurrency a
    # saturated estimate reported gives the same layout; a layout that fits the batch comes first
    ranks = (
        runs
        if batch is None or len(runs) == 1
        else [_run_layout(base, x, batch=None, **run_kw) for x in layouts]
    )
    best = runs[
        max(
            range(len(runs)),
            key=lambda i: (runs[i].fits, runs[i].tok_s is not None, ranks[i].tok_s or 0.0, -i),
        )
    ]
    if best.tok_s is None or best.ttft is None or best.tpot is None:
        return InferenceEstimate(
            fits=False, memory=best.layout.memory, tp=best.layout.tp, pp=best.layout.pp,
            replicas=best.replicas, ep=best.layout.ep, attention_dp=best.layout.attention_dp,
            gpus_per_replica=best.layout.gpus, batch_per_replica=best.batch, ttft_s=None, tpot_s=None,
            output_tokens_per_s=None, requests_per_s=None,
            max_concurrency_per_replica=best.layout.max_concurrency, notes=(*notes, *best.notes),
        )  # fmt: skip
    lay = best.layout
    memory = lay.memory
    if batch is None:  # saturated: the breakdown describes the b sequences chosen, not the batch-1 probe
        memory = _memory(  # estimate_memory, cached (placements at other GPU counts ask the same)
            model=arch, task="inference", precision=prec, gpu=spec, tp=lay.tp, pp=lay.pp,
            batch=-(-best.batch // lay.attention_dp), seq_len=context, kv_precision=kv_prec, engine=engine,
            allow_fallback=allow_fallback, ep=lay.memory_ep,
        )  # fmt: skip
    widen = st.widen.spanning(best.replicas * lay.gpus, gpn)  # + multinode past one domain
    notes += best.notes
    if sw in HOST_BOUND_DECODE_STACKS:
        notes.append(
            "Eager decode is bound by the host CPU (one Python forward per token, its cost growing with the "
            "layers): the same GPU type measured ~2x apart on two hosts, and TPOT here may be low by up to "
            "2x (H200, transformers 5.17: 0.4-0.8 of measured); compile or serve with an engine for speed."
        )
    layout_text = f"tp={lay.tp} pp={lay.pp}"
    if lay.ep > 1:
        layout_text = (
            f"ep={lay.ep} (routed experts {arch.num_experts // lay.ep} per GPU) with attention tp={lay.tp} x "
            f"dp={lay.attention_dp}, pp={lay.pp}"
        )
    if len(runs) > 1:  # the kept layout is the fastest saturated; say too what each does at the batch asked
        timed = ", ".join(f"{r.layout.label} {r.tok_s or 0:,.0f} tok/s" for r in ranks)
        given = ""
        if ranks is not runs:
            given = f" (at {batch} sequences per replica: " + ", ".join(f"{r.tok_s or 0:,.0f}" for r in runs)
            given += " tok/s)"
        notes.append(f"MoE layouts timed at saturation: {timed}; the fastest kept{given}.")
    stack_text = _software_text(sw, engine)
    why = "given" if batch else "saturated: KV cache / engine limit"
    placed = layout_note(best.replicas, layout_text, best.batch, why, stack_text)
    notes.append(placed)
    if (net := network_note(spec, gpn, lay.gpus)) is not None:  # a replica over nodes: state the fabric
        notes.append(net)
    return InferenceEstimate(
        fits=best.fits, memory=memory, tp=lay.tp, pp=lay.pp, replicas=best.replicas, ep=lay.ep,
        attention_dp=lay.attention_dp, gpus_per_replica=lay.gpus, batch_per_replica=best.batch,
        ttft_s=make_interval(best.ttft, "latency", prof, widen),
        tpot_s=make_interval(best.tpot, "latency", prof, widen),
        tpot_loaded_s=make_interval(best.tpot_loaded or best.tpot, "latency", prof, widen),
        output_tokens_per_s=make_interval(best.tok_s, "throughput", prof, widen),
        requests_per_s=make_interval(best.tok_s / output_len, "throughput", prof, widen),
        max_concurrency_per_replica=lay.max_concurrency, notes=tuple(notes), layout_text=layout_text,
        stack_text=stack_text, layout_note=placed,
    )  # fmt: skip


def _engine_max(sw: str) -> int:
    return ENGINE_MAX_BATCH.get(sw, ENGINE_MAX_BATCH["unknown"])


def _check_ep(
    arch: ModelArch, ep: int | None, tp: int | None, attention_dp: bool | None, gpu_count: int, pp: int
) -> None:
    """Reject expert-parallel requests that cannot be laid out, saying what is allowed."""
    if ep is None or ep == 1:
        if attention_dp:
            raise InputError(
                "attention_dp needs expert parallelism: give ep > 1 (the GPUs the routed experts are split "
                "over), or leave attention_dp unset."
            )
        return
    if not arch.is_moe or arch.num_experts % ep:
        allowed = [d for d in range(2, arch.num_experts + 1) if arch.num_experts % d == 0]
        raise InputError(
            f"ep={ep} does not fit {arch.id}: expert parallelism splits the routed experts, so ep must "
            f"divide them ({arch.num_experts}). Allowed: {allowed or 'none (a dense model)'}; leave ep unset "
            "for TP."
        )
    attn_tp = 1 if attention_dp else tp
    if attn_tp is not None and ep % attn_tp:
        raise InputError(
            f"ep={ep} is not a multiple of tp={attn_tp}: attention runs TP inside the EP group, so the group "
            "of ep GPUs must hold whole TP groups. Give tp dividing ep (tp=1 is attention data parallel)."
        )
    if attention_dp is False and tp is not None and tp != ep:
        raise InputError(
            f"attention_dp=False with ep={ep} means attention TP over the whole EP group: tp must be {ep}, "
            f"not {tp}. Leave tp unset or set attention_dp."
        )
    if ep * pp > gpu_count:
        raise InputError(
            f"ep={ep} x pp={pp} needs more than the {gpu_count} GPUs given. Use ep x pp <= gpu_count."
        )


#: (id(_Infer), batch, input_len, output_len) -> (that _Infer, TPOT, TTFT, cycle) of :func:`_timing`, for the
#: layouts of a :class:`_Setup` (which fixes static batching, shapes and separate prefill); the entry holds
#: the _Infer, so its id is not reused while the entry lives
_TIMINGS: dict[tuple[int, int, int, int], tuple[_Infer, float, float, float, float]] = {}
_TIMINGS_MAX = 100_000


def _timing(
    c: _Infer,
    b: int,
    input_len: int,
    output_len: int,
    *,
    static: bool,
    shapes: StaticShapes | None,
    separate_prefill: bool,
) -> tuple[float, float, float, float]:
    """(TPOT, TTFT, cycle, loaded TPOT) of one replica of ``c`` at ``b`` sequences [s]: the cycle is the time
    for each of the ``b`` sequences to produce ``output_len`` tokens, new prompts included (see
    :func:`_run_layout`). TPOT is the decode step alone; the loaded TPOT is what one request sees between its
    tokens while the other ``b - 1`` sequences finish and are replaced (a closed-loop benchmark at
    concurrency ``b``, whose TPOT is ``(latency - TTFT) / (output - 1)``, vLLM ``benchmark_serving``): with
    in-flight batching its steps also carry the others' prompt tokens, ``(b - 1) x in / out`` per step;
    with separate prefill passes (TGI v1-v2) it waits ``(b - 1) / out`` of them per token; with static
    batching prompts run before the first token, so nothing is added. Prefill-decode interference: Zhong et
    al. 2024 "DistServe" sec. 2.2; Agrawal et al. 2024 "Sarathi-Serve" sec. 3 ("generation stalls")."""
    # decode rows and mean attention context, padded where the stack runs static shapes (static_shapes)
    rows = padded_batch(shapes, float(b))
    ctx = mean_decode_context(shapes, float(input_len), float(output_len))
    tpot = decode_step_s(c, rows, ctx)
    # TTFT at concurrency b (queueing excluded): with static batching the whole batch prefills before the
    # first token; with in-flight batching a new prompt is prefilled alongside the other b-1 sequences'
    # decode step, so it waits for its own prefill plus one shared step. Same rule given or saturated.
    if static:
        ttft = prefill_s(c, float(b), float(input_len), latency=True)
    else:
        ttft = prefill_s(c, 1.0, float(input_len), latency=True)
        if b > 1:
            ttft += decode_step_s(c, padded_batch(shapes, float(b - 1)), ctx)
    loaded = tpot
    if static:  # the whole batch prefills, then decodes together
        cycle = prefill_s(c, float(b), float(input_len), latency=False) + output_len * tpot
    elif separate_prefill:  # each newcomer's prompt is a forward pass of its own; the running batch waits
        one = prefill_s(c, 1.0, float(input_len), latency=False)
        cycle = output_len * tpot + b * one
        loaded = tpot + (b - 1) * one / output_len
    else:  # in-flight batching: each step also carries its share of the newcomers' prompt tokens
        step = decode_step_s(c, rows, ctx, b * input_len / output_len, input_len)
        cycle = output_len * step
        if b > 1:
            loaded = decode_step_s(c, rows, ctx, (b - 1) * input_len / output_len, input_len)
    return tpot, ttft, cycle, loaded


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    """One layout timed: throughput and latencies at its batch (None when it does not fit)."""

    layout: InferenceLayout
    fits: bool
    replicas: int
    batch: int
    tok_s: float | None
    ttft: float | None
    tpot: float | None
    notes: tuple[str, ...]
    tpot_loaded: float | None = None


def _run_layout(
    base: _Infer,
    lay: InferenceLayout,
    *,
    batch: int | None,
    gpu_count: int,
    gpn: int,
    input_len: int,
    output_len: int,
    engine_max: int,
    static: bool,
    ignore_memory: bool,
    spec: AcceleratorSpec,
    prof: CalibrationProfile,
    shapes: StaticShapes | None = None,
    separate_prefill: bool = False,
    infers: dict[tuple[int, int, int], _Infer] | None = None,
) -> _Run:
    """Time ``lay``: TTFT, TPOT and output tokens/s at ``batch`` (None: saturated) sequences per replica.
    ``infers``: ``base`` per (tp, pp, ep) already built for these ``base``, ``gpn``, ``spec`` and ``prof``
    (:class:`_Setup`, which also fixes ``static``, ``shapes`` and ``separate_prefill``); with it the timings
    are kept (:data:`_TIMINGS`)."""
    from dataclasses import replace

    notes: list[str] = []
    context = input_len + output_len
    replicas = gpu_count // lay.gpus
    if replicas >= 1 and gpu_count % lay.gpus:  # said, not silent: the spare GPUs serve nothing
        notes.append(
            f"{gpu_count % lay.gpus} of the {gpu_count} GPUs stay idle: each replica uses tp x pp = "
            f"{lay.gpus}; give a multiple of {lay.gpus} GPUs to use them all."
        )
    cap = min(lay.max_concurrency, engine_max * lay.attention_dp)
    b = batch if batch is not None else cap
    fits = lay.memory.fits and lay.max_concurrency >= 1 and replicas >= 1
    if batch is not None and batch > lay.max_concurrency:
        fits = False
        notes.append(f"{batch} sequences of {context} tokens exceed the KV cache ({lay.max_concurrency}).")
    if not fits and ignore_memory and replicas >= 1:
        b = batch if batch is not None else max(cap, USEFUL_CONCURRENCY * lay.attention_dp)
        notes.append(
            f"the memory model says {lay.label} does not fit ({lay.memory.per_gpu_gib:.1f} GiB per GPU, KV "
            f"room for {lay.max_concurrency} sequences); speed estimated anyway at {b} sequences."
        )
    elif not fits:
        return _Run(layout=lay, fits=False, replicas=replicas, batch=b, tok_s=None, ttft=None, tpot=None,
                    notes=tuple(notes))  # fmt: skip
    whole = type(lay.tp) is int and type(lay.pp) is int and type(lay.ep) is int
    c = infers.get((lay.tp, lay.pp, lay.ep)) if infers is not None and whole else None
    if c is None:
        ep_per_node = max(1, min(lay.ep, gpn))
        c = replace(
            base, tp=lay.tp, pp=lay.pp, link=tp_link(spec, lay.tp, gpn, prof), ep=lay.ep,
            ep_per_node=ep_per_node, pp_link=pipeline_link(spec, lay.tp, lay.pp, gpn, prof.param("link_eff")),
        )  # fmt: skip
        if infers is not None and whole:
            infers[(lay.tp, lay.pp, lay.ep)] = c
    keep = infers is not None and whole and type(b) is int and type(input_len) is int
    keep = keep and type(output_len) is int
    tkey = (id(c), b, input_len, output_len)
    hit = _TIMINGS.get(tkey) if keep else None
    if hit is not None and hit[0] is c:
        tpot, ttft, cycle, loaded = hit[1:]
    else:
        tpot, ttft, cycle, loaded = _timing(
            c, b, input_len, output_len, static=static, shapes=shapes, separate_prefill=separate_prefill
        )
        if keep:
            if len(_TIMINGS) >= _TIMINGS_MAX:
                _TIMINGS.clear()
            _TIMINGS[tkey] = (c, tpot, ttft, cycle, loaded)
    tok_s = replicas * b * output_len / cycle
    return _Run(layout=lay, fits=fits, replicas=replicas, batch=b, tok_s=tok_s, ttft=ttft, tpot=tpot,
                notes=tuple(notes), tpot_loaded=loaded)  # fmt: skip


__all__ = [
    "ENGINE_MAX_BATCH",
    "FP16_ACCUMULATE_STACKS",
    "GEFORCE_FP16_ACCUMULATE_SPEEDUP",
    "HEAD_BYTES_QUANTISED",
    "LAYER_SPLIT_STACKS",
    "MEMORY_ENGINE",
    "SEPARATE_PREFILL_STACKS",
    "STATIC_BATCHING_STACKS",
    "InferenceEstimate",
    "decode_step_s",
    "default_kv_precision",
    "estimate_inference",
    "prefill_s",
]
