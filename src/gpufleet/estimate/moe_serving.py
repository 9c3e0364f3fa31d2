"""Mixture-of-experts serving: expert parallelism with attention data parallelism ("wide EP").

How the field deploys large MoE models (DeepSeek-V3 report sec. 3.4; SGLang ``--enable-dp-attention`` with
``--ep-size``; TensorRT-LLM ``enable_attention_dp`` with ``moe_expert_parallel_size``): one replica of ``ep``
GPUs (times ``pp`` stages) holds every routed expert once, ``E / ep`` experts per GPU, while attention, the
dense layers, the shared experts and the LM head run tensor parallel over groups of ``tp`` GPUs, and the
``ep / tp`` groups are data parallel for attention (each holds its own sequences and their KV cache). For
MLA models this is the point: the compressed latent cannot be split across TP ranks, so attention TP only
replicates it, while attention DP gives every GPU its own sequences.

Per MoE layer a token's hidden state is *dispatched* to the ranks holding its ``k`` routed experts and the
expert outputs are *combined* back (an all-to-all each way); the busiest rank sets the step because every
rank waits at the combine. This module holds the sourced pieces of that model; the step time that uses
them is :func:`gpufleet.estimate.inference.decode_step_s`.
"""

from __future__ import annotations

import math
from functools import lru_cache

from gpufleet.errors import InputError
from gpufleet.estimate.comms import Link, all_to_all_nodes_s
from gpufleet.models.arch import ModelArch

#: bytes per hidden element of the dispatch all-to-all: fp8 with one fp32 scale per 128 elements (DeepEP
#: low-latency/normal dispatch in FP8, DeepSeek-V3 report sec. 3.3.2 "activations before the MoE up-projection
#: quantised into FP8 before MoE dispatch", sec. 3.3.3 "Low-precision storage and communication";
#: TRT-LLM wide-EP fp8/nvfp4 dispatch)
DISPATCH_BYTES_PER_ELEMENT = 1.0 + 4.0 / 128.0
#: bytes per hidden element of the combine all-to-all: bf16 (DeepSeek-V3 report sec. 3.3.3: the combine stays
#: in BF16; DeepEP's combine kernels are bf16)
COMBINE_BYTES_PER_ELEMENT = 2.0
#: busiest EP rank's routed tokens over the mean caused by skewed expert popularity on real traffic, after
#: the redundant-expert placement engines apply (DeepSeek EPLB, github.com/deepseek-ai/EPLB; SGLang
#: ``--enable-eplb``; TRT-LLM wide-EP online EPLB). A named assumption of ~15 %: DeepSeek-V3's
#: auxiliary-loss-free balancing keeps per-expert load within tens of percent of the mean (DeepSeek-V3
#: report sec. 2.1.2 and the expert-load figures of its sec. 4.5 ablation), and EPLB's replicas of hot
#: experts are placed to flatten what remains. The statistical imbalance of finite batches comes on top
#: (:func:`busiest_rank_load`). Not fitted: no shipped case isolates it.
EXPERT_HOTSPOT_FACTOR = 1.15
#: format of the non-routed weights (attention, dense FFN layers, shared experts, router) of a MoE
#: checkpoint published in fp4: the fp4 MoE checkpoints quantise only the routed experts. NVIDIA's ModelOpt
#: NVFP4 checkpoints of DeepSeek-R1/V3 (huggingface.co/nvidia/DeepSeek-R1-FP4 model card: "Only the weights
#: and activations of the linear operators within transformer blocks in MoE are quantized"; the MLA
#: projections keep DeepSeek's FP8 block-scaled weights) and OpenAI's gpt-oss (model card sec. 2: MXFP4 for
#: the MoE weights, "90+% of the total parameter count", the rest in BF16; taken as fp8 here, the
#: recipe's format where the GPU has fp8). Dense fp4 checkpoints (nvidia/Llama-3.1-405B-Instruct-FP4)
#: quantise every linear layer of the blocks and are not affected.
FP4_MOE_NONROUTED_PRECISION = "fp8"


def nonrouted_precision(model: ModelArch, precision: str) -> str:
    """Format of ``model``'s non-routed weights (attention, dense layers, shared experts) at ``precision``:
    :data:`FP4_MOE_NONROUTED_PRECISION` for a MoE model in fp4, else ``precision`` itself."""
    return FP4_MOE_NONROUTED_PRECISION if model.is_moe and precision == "fp4" else precision


def expert_width_factor(model: ModelArch, width_h0: float) -> float:
    """GEMM efficiency of a routed expert relative to the model's width factor ``h / (h + h0)`` [-].

    The width factor (:func:`gpufleet.estimate.rates.width_factor`, NVIDIA "Matrix multiplication
    background": narrow GEMMs underfill the SMs) is taken at the model width, which is the narrowest
    dimension of the dense layers' GEMMs (their FFN width is larger). A routed expert's GEMMs are
    ``h x i_e`` and ``i_e x h`` with the expert width ``i_e`` often far below ``h`` (Qwen3-30B-A3B 768 vs
    2048; DeepSeek-V3 2048 vs 7168), so they run at the factor of ``min(h, i_e)``: 1 when ``i_e >= h``
    (Mixtral, Llama 4, gpt-oss).
    """
    if not model.is_moe or model.moe_intermediate_size >= model.hidden_size or width_h0 <= 0.0:
        return 1.0
    d, h = float(model.moe_intermediate_size), float(model.hidden_size)
    return (d / (d + width_h0)) / (h / (h + width_h0))


#: stacks whose routed experts run vLLM's Triton ``fused_moe`` kernel, which pads every expert's rows to the
#: kernel's ``BLOCK_SIZE_M`` (:func:`fused_moe_block_m`): vLLM (``fused_experts`` for bf16/fp16, fp8 and
#: int8/int4 weights) and SGLang (``sglang.srt.layers.moe.fused_moe_triton``, vLLM's kernel and config files
#: carried over). fp4 MoE weights take other kernels (FlashInfer/TRT-LLM-gen, Marlin) and TRT-LLM autotunes
#: CUTLASS tiles per shape, so neither is padded here (no sourced tile rule).
TRITON_FUSED_MOE_STACKS = frozenset({"vllm", "sglang"})


def fused_moe_block_m(tokens: float, precision: str = "bf16") -> int:
    """``BLOCK_SIZE_M`` of vLLM's Triton ``fused_moe`` for a step of ``tokens`` tokens [rows].

    vllm 0.33.0 ``model_executor/layers/fused_moe/fused_moe.py`` ``get_default_config``: block-quantised fp8
    (``fp8_w8a8`` with a ``block_shape``) takes 16 rows for ``M <= 64`` tokens and 64 above; bf16/fp16 and the
    other formats take 16 rows for ``M <= 32``, 32 for ``M <= 96``, 64 for ``M <= 512`` and 128 above. fp8
    here means block-quantised: the published fp8 checkpoints of fine-grained MoE models are block-wise
    (DeepSeek-V3 and Qwen3 FP8 ``weight_block_size [128, 128]``). The tuned files keep that scale
    (``configs/E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json``,
    Qwen3-30B-A3B: 16 rows up to M = 128, 64 from M = 256 to 4096).
    """
    if precision == "fp8":
        return 16 if tokens <= 64 else 64
    if tokens <= 32:
        return 16
    if tokens <= 96:
        return 32
    if tokens <= 512:
        return 64
    return 128


def padded_rows_per_expert(tokens: float, experts_per_token: int, experts: int, block_m: int) -> float:
    """Expected rows the grouped GEMM computes for one expert when ``tokens`` tokens each pick
    ``experts_per_token`` of ``experts`` experts and every expert's rows are padded to ``block_m`` [rows].

    vLLM's ``moe_align_block_size`` sorts the routed copies by expert and pads each expert's count up to a
    multiple of ``BLOCK_SIZE_M`` (``csrc/moe/moe_align_sum_kernels.cu``; "pads the number of tokens of each
    expert to be divisible by block_size"), and ``fused_moe_kernel`` multiplies whole ``BLOCK_SIZE_M`` x
    ``BLOCK_SIZE_N`` tiles, masking the padded rows' loads but not their MMAs. An expert's count is
    ``X ~ Binomial(tokens, k / E)`` (uniform routing), so the expected padded count is
    ``B x E[ceil(X / B)] = B x sum_j P(X > j B)``; experts no token reaches cost nothing (their blocks are
    skipped). Summed exactly over the binomial mass within 12 standard deviations of the mean.
    """
    if tokens <= 0.0 or experts <= 0 or experts_per_token <= 0 or block_m <= 0:
        return 0.0
    return _padded_rows(round(tokens), min(experts_per_token / experts, 1.0), block_m)


@lru_cache(maxsize=65536)
def _padded_rows(n: int, p: float, block: int) -> float:
    if n <= 0:
        return 0.0
    if p >= 1.0:
        return float(math.ceil(n / block) * block)
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    lo, hi = max(0, int(mean - 12.0 * sd) - 1), min(n, int(mean + 12.0 * sd) + 2)
    log_q, log_1q = math.log(p), math.log1p(-p)
    lg_n = math.lgamma(n + 1.0)
    total = 0.0
    for x in range(max(lo, 1), hi + 1):
        log_pmf = lg_n - math.lgamma(x + 1.0) - math.lgamma(n - x + 1.0) + x * log_q + (n - x) * log_1q
        total += math.exp(log_pmf) * math.ceil(x / block)
    return total * block


def expert_padding_factor(tokens: float, experts_per_token: int, experts: int, block_m: int) -> float:
    """Rows the padded grouped GEMM computes over the routed rows it needs, ``>= 1`` [-]:
    :func:`padded_rows_per_expert` over the mean ``tokens x k / E``. About ``B / (tokens x k / E)`` while
    experts get fewer rows than a block (Qwen3-30B-A3B at 256 tokens: 16 rows each, padded to 64: 4x),
    falling towards 1 once each expert fills many blocks."""
    mean = tokens * experts_per_token / experts if experts > 0 else 0.0
    if mean <= 0.0:
        return 1.0
    return max(1.0, padded_rows_per_expert(tokens, experts_per_token, experts, block_m) / mean)


def routed_activation_elements(
    model: ModelArch, tokens: float, routed_rows: float, tp: int = 1
) -> tuple[float, float]:
    """Activation elements the routed experts' kernel chain moves through HBM in one MoE layer on one GPU:
    (inside the grouped GEMMs, in the memory-bound kernels between them) [elements] (times
    :data:`gpufleet.estimate.rates.ACT_BYTES` for bytes).

    ``tokens``: tokens whose combined output this GPU writes; ``routed_rows``: routed copies (token, expert)
    its experts process; ``tp``: ranks each expert's width is split over (TP path; 1 with expert
    parallelism). The grouped GEMMs and the routing around them are separate kernels, so each tensor passed
    between kernels is written once and read once (vLLM ``fused_moe``: the up-projection gathers each
    routed copy's hidden state through ``sorted_token_ids`` and writes ``intermediate_cache1`` of ``2 i_e``
    per copy; ``silu_and_mul`` reads it and writes ``intermediate_cache2`` of ``i_e``; the down-projection
    reads that and writes ``intermediate_cache3`` of ``h`` per copy; ``moe_sum`` reads the ``k`` copies and
    writes the token's ``h``). The ``h``-wide tensors are whole on every TP rank, the ``i_e``-wide ones
    split. Inside the GEMMs, per copy ``2 h + 3 i_e / tp`` (their inputs and outputs: on the GEMMs'
    roofline with the expert weights); between them, per copy ``h + 3 i_e / tp`` (the gated activation's
    read and write, the combine's read) and per token ``h`` (the combine's write): kernels of their own
    that no GEMM compute hides. Counted at 16 bit: an upper count for the GEMM inputs where an fp8/fp4
    engine quantises them before the up-projection (TRT-LLM fp4 MoE), exact for vLLM's bf16 caches.
    """
    if not model.is_moe or tokens <= 0.0:
        return 0.0, 0.0
    h, i_e = float(model.hidden_size), float(model.moe_intermediate_size) / max(tp, 1)
    rows = max(routed_rows, 0.0)
    return rows * (2.0 * h + 3.0 * i_e), rows * (h + 3.0 * i_e) + tokens * h


def expected_ranks_per_token(experts_per_token: int, ep: int) -> float:
    """Distinct EP ranks a token's ``k`` routed experts sit on, experts spread uniformly [ranks].

    ``ep (1 - (1 - 1/ep)^k)``: a token is sent once per destination rank (DeepEP and TRT-LLM de-duplicate
    per rank); DeepSeek's node-limited routing (at most 4 nodes) is a training constraint and not assumed.
    """
    if ep <= 1:
        return 1.0
    return ep * (1.0 - (1.0 - 1.0 / ep) ** experts_per_token)


def busiest_rank_load(mean_load: float, ranks: int) -> float:
    """Expected load of the busiest of ``ranks`` ranks at ``mean_load`` routed tokens each [tokens].

    Uniform random routing: the maximum of ``n`` bins at mean ``m`` is ``m + sqrt(2 m ln n)`` for
    ``m >> ln n`` (Raab & Steger 1998, "Balls into bins: a simple and tight analysis", Thm. 1), at least
    one token when any is routed; times the sourced :data:`EXPERT_HOTSPOT_FACTOR` for skewed popularity;
    never above every token on one rank.
    """
    if ranks <= 1 or mean_load <= 0.0:
        return max(mean_load, 0.0)
    statistical = mean_load + math.sqrt(2.0 * mean_load * math.log(ranks))
    return min(max(statistical * EXPERT_HOTSPOT_FACTOR, 1.0), mean_load * ranks)


#: how a MoE training run routes tokens: ``dropless`` (Megatron-Core's default: every token reaches its
#: ``k`` experts, so expert loads vary with the router), ``balanced`` (the router is overridden so every
#: expert gets the same load, Megatron-Core ``--moe-router-force-load-balancing``: NVIDIA's performance
#: tables benchmark with it, "force-balanced dropless routing")
MOE_ROUTING_MODES = ("dropless", "balanced")


def ep_rank_imbalance(
    mean_routed: float, ep: int, routing: str = "dropless", capacity_factor: float | None = None
) -> float:
    """Busiest expert-parallel rank's routed tokens over the mean, at ``mean_routed`` tokens per rank [-].

    Every rank waits for the busiest at the combine all-to-all, so its load sets the routed experts' time.
    ``dropless``: :func:`busiest_rank_load` (balls into bins, times :data:`EXPERT_HOTSPOT_FACTOR`, the
    skew DeepSeek-V3's expert-load figures leave after balancing); ``balanced``: 1. ``capacity_factor``
    ``C``: token dropping (GShard, Lepikhin et al. 2020 sec. 2.2; Switch Transformer, Fedus et al. 2022
    sec. 2.2; Megatron-Core ``--moe-expert-capacity-factor``) keeps at most ``C`` x the mean tokens per
    expert, so the busiest rank computes at most ``C`` x the mean (below 1 every expert is cut to ``C`` x
    the mean). 1 without expert parallelism.
    """
    if routing not in MOE_ROUTING_MODES:
        raise InputError(
            f"MoE routing {routing!r} is not known. Allowed: {', '.join(MOE_ROUTING_MODES)} (balanced: the "
            "router forced to equal expert loads, as benchmark runs do)."
        )
    if capacity_factor is not None and not (math.isfinite(capacity_factor) and capacity_factor > 0.0):
        raise InputError(
            f"MoE capacity factor {capacity_factor!r} must be a positive number (1.0-1.25 in Switch/GShard "
            "runs; above the busiest expert's load it drops nothing). Leave it unset for dropless routing."
        )
    if ep <= 1 or mean_routed <= 0.0 or routing == "balanced":
        return 1.0
    busiest = busiest_rank_load(mean_routed, ep) / mean_routed
    if capacity_factor is not None:
        busiest = min(busiest, capacity_factor)
    return busiest


def busiest_group_prompt_tokens(prompt_tokens: float, prompt_len: float, groups: int) -> float:
    """Prompt tokens the busiest attention-data-parallel group prefills in one step [tokens].

    A prompt is prefilled by the one group that owns its sequence; the ``prompt_tokens`` a step carries
    spread over the groups only when there are prompts for every group. With fewer, one group works through
    a whole prompt (chunk) while the others wait at the MoE all-to-all, so the step carries
    ``max(P / groups, min(P, prompt_len))``.
    """
    if groups <= 1 or prompt_tokens <= 0.0:
        return max(prompt_tokens, 0.0)
    return max(prompt_tokens / groups, min(prompt_tokens, prompt_len))


def moe_all_to_all_s(
    model: ModelArch,
    *,
    tokens_per_gpu: float,
    ep: int,
    ep_per_node: int,
    intra: Link,
    inter: Link,
    decode_tokens_per_gpu: float = 0.0,
) -> float:
    """Dispatch + combine all-to-all time of one MoE layer [s].

    ``tokens_per_gpu``: prompt (prefill) tokens each GPU sends; their hidden states go once to each of
    :func:`expected_ranks_per_token` ranks, as DeepEP's normal (throughput) kernels and NCCL-based
    dispatchers deduplicate per rank. ``decode_tokens_per_gpu``: decode tokens, sent once per routed expert
    (``k`` copies), as the low-latency kernels that serve decode steps do (:func:`decode_copies_per_token`).
    Dispatch in fp8, combine in bf16; the share ``(g - 1)/ep`` to peers in the scale-up domain (NVLink: a
    whole NVL72 rack, or an 8-GPU HGX board) and ``(ep - g)/ep`` over the scale-out network at once
    (:func:`comms.all_to_all_nodes_s`).
    """
    if ep <= 1 or tokens_per_gpu + decode_tokens_per_gpu <= 0.0:
        return 0.0
    copies = max(tokens_per_gpu, 0.0) * expected_ranks_per_token(model.experts_per_token, ep) + max(
        decode_tokens_per_gpu, 0.0
    ) * decode_copies_per_token(model.experts_per_token)
    per_gpu = copies * model.hidden_size
    return sum(
        all_to_all_nodes_s(per_gpu * b, ep, ep_per_node, intra, inter)
        for b in (DISPATCH_BYTES_PER_ELEMENT, COMBINE_BYTES_PER_ELEMENT)
    )


def decode_copies_per_token(experts_per_token: int) -> float:
    """Hidden-state copies a decode token sends per MoE layer: one per routed expert [copies].

    The low-latency kernels that serve decode steps (DeepEP ``low_latency_dispatch``/``low_latency_combine``,
    used for decode by DeepSeek's inference system, SGLang ``--deepep-mode auto`` and vLLM's DeepEP
    low-latency backend) write each token into the receive buffer of every routed expert, so a token goes
    ``k`` times even when two of its experts share a rank. DeepEP's README times them at 128 tokens per rank,
    hidden 7168, top-8, fp8 dispatch / bf16 combine on H800 with 400 Gb/s RDMA: dispatch 118/155/173/192/194
    us and combine 195/273/314/369/360 us at EP 16/32/64/128/256, i.e. ``k`` copies at ~40-46 GB/s per GPU;
    :func:`moe_all_to_all_s` reproduces them within ~15 % (``tests/estimate/test_moe_serving.py``). Prefill
    tokens use the deduplicating normal kernels (:func:`expected_ranks_per_token`).
    """
    return float(experts_per_token)


def ep_degrees(model: ModelArch, gpu_count: int, limit: int) -> list[int]:
    """Expert-parallel degrees worth trying: powers of two > 1 dividing the routed experts, up to ``limit``
    GPUs (the scale-up domain) and ``gpu_count``."""
    if not model.is_moe:
        return []
    out, ep = [], 2
    while ep <= min(gpu_count, limit) and model.num_experts % ep == 0:
        out.append(ep)
        ep *= 2
    return out


__all__ = [
    "COMBINE_BYTES_PER_ELEMENT",
    "DISPATCH_BYTES_PER_ELEMENT",
    "EXPERT_HOTSPOT_FACTOR",
    "FP4_MOE_NONROUTED_PRECISION",
    "MOE_ROUTING_MODES",
    "TRITON_FUSED_MOE_STACKS",
    "busiest_group_prompt_tokens",
    "busiest_rank_load",
    "decode_copies_per_token",
    "ep_degrees",
    "ep_rank_imbalance",
    "expected_ranks_per_token",
    "expert_padding_factor",
    "expert_width_factor",
    "fused_moe_block_m",
    "moe_all_to_all_s",
    "nonrouted_precision",
    "padded_rows_per_expert",
    "routed_activation_elements",
]
