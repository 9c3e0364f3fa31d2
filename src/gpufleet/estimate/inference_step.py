"""Step timing of one inference replica: decode step, prefill, pipeline stages, expert-parallel stages and
the per-layout timing at a batch (docs/performance.md; split from :mod:`gpufleet.estimate.inference`,
whose module docstring states the model)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.estimate import compute as cx
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.comms import (
    Link,
    all_reduce_s,
)
from gpufleet.estimate.kv_cache import kv_heads_per_rank
from gpufleet.estimate.rates import (
    ACT_BYTES,
    Rates,
)
from gpufleet.estimate.static_shapes import StaticShapes, mean_decode_context, padded_batch
from gpufleet.estimate.wq_kernels import WqKernel
from gpufleet.models.arch import ModelArch
from gpufleet.units import GB


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
    # routed rows padded per expert to the Triton fused_moe block (moe_serving.TRITON_FUSED_MOE_STACKS)
    expert_block_padding: bool = False
    expert_block_format: str = "bf16"  # the weights' format, which picks the fused_moe block rule
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
    efficiency (:func:`moe_serving.expert_width_factor`), padded per expert to the kernel's row block where
    the stack runs vLLM's Triton ``fused_moe`` (:func:`_expert_padding`).
    """
    m, r = c.model, c.rates
    if not m.is_moe or tokens <= 0.0:
        return 0.0, 0.0
    expert = cx.model_shape(m).expert_params
    touched = cx.moe_expected_experts(m.num_experts, m.experts_per_token, tokens)
    bw = r.mem_bw_bytes_per_s * c.eta_bw * c.wq_bw
    rate = r.peak_flops * r.eta * c.width * c.stack * c.wq_gemm * c.expert_width
    rows = tokens * m.experts_per_token * _expert_padding(c, tokens)
    read_s = moe_layers * touched * expert * r.weight_bytes / gpus / bw
    return read_s, 2.0 * rows * expert * moe_layers / gpus / rate


def _expert_padding(c: _Infer, tokens: float, kernel_rows: float | None = None) -> float:
    """Rows the routed grouped GEMMs compute over the rows they need when a step routes ``tokens`` tokens
    (:func:`moe_serving.expert_padding_factor`, each expert's rows ``Binomial(tokens, k / E)``) at the row
    block vLLM's ``fused_moe`` picks for the ``kernel_rows`` tokens it is called with (default ``tokens``;
    :func:`moe_serving.fused_moe_block_m`); 1 where the stack's MoE kernels are not the padded Triton ones
    (:data:`moe_serving.TRITON_FUSED_MOE_STACKS`) [-]."""
    m = c.model
    if not c.expert_block_padding or not m.is_moe or tokens <= 0.0:
        return 1.0
    block = moe.fused_moe_block_m(tokens if kernel_rows is None else kernel_rows, c.expert_block_format)
    return moe.expert_padding_factor(tokens, m.experts_per_token, m.num_experts, block)


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
    # padded to the kernel's row block (the rank's fused_moe is called with the copies routed to it)
    padding = _expert_padding(c, tokens, mean_routed)
    touched = cx.moe_expected_experts(m.num_experts, m.experts_per_token, tokens) / c.ep
    # the busiest rank's routed copies and its own tokens' combine through HBM around and inside the GEMMs
    io, glue = moe.routed_activation_elements(m, rows / c.tp, busiest)
    t_routed = max(  # narrow experts at their own width's GEMM efficiency (moe_serving.expert_width_factor)
        moe_layers * touched * shape.expert_params * r.weight_bytes / (bw * c.wq_bw)
        + moe_layers * io * ACT_BYTES / bw,
        busiest * padding * 2.0 * shape.expert_params * moe_layers / (gemm_rate * c.expert_width),
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
