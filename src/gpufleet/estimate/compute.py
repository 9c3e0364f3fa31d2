"""FLOPs and bytes of a transformer: the work the performance model divides by hardware rates.

Conventions (see ``docs/performance.md``):

* A matmul of an ``m x n`` weight costs ``2 m n`` FLOPs per token forward, ``4 m n`` backward (activation and
  weight gradients), so a full training step costs ``6 N`` per token for ``N`` matmul weights (Kaplan et al.
  2020, sec. 2.1; Narayanan et al. 2021, eq. 3). Embedding look-ups cost nothing; the LM head is a matmul.
* Attention scores and the weighted sum cost ``2 c d_qk + 2 c d_v`` FLOPs per token per layer forward against
  ``c`` keys. For model FLOPs in training (MFU) we follow PaLM (Chowdhery et al. 2022, App. B): the full
  sequence ``c = s`` (no causal halving), i.e. ``12 L s d`` per token for forward + backward. For inference
  time we count what causal kernels execute: ``c`` = the position, ``s/2`` on average over a prompt.
* LoRA/QLoRA freeze the base: backward computes activation gradients only (``2 N``), so ``4 N`` per token plus
  ``6 N_adapter`` on :data:`gpufleet.models.LORA_TARGETS` (Hu et al. 2021; Dettmers et al. 2023).
* Full recompute replays the transformer layers' forward (``+2 N`` less the LM head): hardware FLOPs, not
  model FLOPs (Korthikanti et al. 2022, sec. 5). Selective recompute replays only the attention core
  (Korthikanti et al. 2022, sec. 4.3), which FlashAttention's backward already does inside the 3x attention
  count (Dao 2022, sec. 3.1): no extra FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpufleet.models import count_params, ffn_params, lora_params
from gpufleet.models.arch import ModelArch


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelShape:
    """Per-token matmul sizes of a model, derived once from its parameter count [count of weights]."""

    attn_proj_params: float  # attention projections over all layers (incl. biases) [weights]
    ffn_active_params: (
        float  # FFN weights a token passes through, all layers (k routed + shared experts) [weights]
    )
    ffn_total_params: float  # all FFN weights, all experts, all layers [weights]
    dense_ffn_params: (
        float  # FFN weights outside routed experts (dense layers, shared experts, routers) [weights]
    )
    expert_params: float  # one routed expert of one MoE layer [weights]
    lm_head_params: (
        float  # hidden x vocab output projection (tied or not: it is a matmul either way) [weights]
    )
    attn_qk_dim: int  # query/key width summed over heads, per layer [elements]
    attn_v_dim: int  # value width summed over heads, per layer [elements]

    @property
    def matmul_active_params(self) -> float:
        """Weights every token multiplies through (forward FLOPs = 2 x this) [weights]."""
        return self.attn_proj_params + self.ffn_active_params + self.lm_head_params


@lru_cache(maxsize=256)
def model_shape(model: ModelArch) -> ModelShape:
    """The per-token matmul sizes of ``model`` from :func:`gpufleet.models.count_params` (cached)."""
    pc = count_params(model)
    if model.is_mla:
        qk_dim = model.num_attention_heads * (model.qk_nope_head_dim + model.qk_rope_head_dim)
        v_dim = model.num_attention_heads * model.v_head_dim
    else:
        qk_dim = v_dim = model.num_attention_heads * model.head_dim
    expert = float(ffn_params(model, model.moe_intermediate_size)) if model.is_moe else 0.0
    n_moe = pc.num_moe_layers
    ffn_total = float(pc.num_dense_layers * pc.ffn_per_layer + n_moe * pc.moe_ffn_per_layer)
    routed = n_moe * model.num_experts * expert
    return ModelShape(
        attn_proj_params=float(pc.attention_per_layer * model.num_layers),
        ffn_active_params=float(pc.num_dense_layers * pc.ffn_per_layer + n_moe * pc.moe_ffn_active_per_layer),
        ffn_total_params=ffn_total,
        dense_ffn_params=ffn_total - routed,
        expert_params=expert,
        lm_head_params=float(pc.lm_head or model.hidden_size * model.vocab_size),
        attn_qk_dim=qk_dim,
        attn_v_dim=v_dim,
    )


def decode_weight_params(model: ModelArch, tokens: float) -> float:
    """Weights read from memory by one decode step of ``tokens`` sequences [weights].

    Dense models read every matmul weight (embedding look-ups read ``tokens`` rows only: ignored). MoE layers
    read the expected distinct experts touched, :func:`moe_expected_experts`.
    """
    s = model_shape(model)
    base = s.attn_proj_params + s.lm_head_params + s.dense_ffn_params
    if not model.is_moe:
        return base
    touched = moe_expected_experts(model.num_experts, model.experts_per_token, tokens)
    return base + model.num_moe_layers * touched * s.expert_params


def attended_keys(model: ModelArch, context: float) -> float:
    """Keys attended per layer, averaged over layers, at ``context`` keys (windows cap it) [tokens]."""
    if model.sliding_window is None or model.sliding_window_layer_fraction <= 0.0:
        return context
    frac = model.sliding_window_layer_fraction
    return (1.0 - frac) * context + frac * min(context, float(model.sliding_window))


def attention_flops_per_token(model: ModelArch, context: float) -> float:
    """Forward attention-core FLOPs (QK^T, AV) of one token attending ``context`` keys, all layers [FLOP]."""
    s = model_shape(model)
    return 2.0 * attended_keys(model, context) * (s.attn_qk_dim + s.attn_v_dim) * model.num_layers


def decode_attention_flops_per_token(model: ModelArch, context: float) -> float:
    """Forward attention-core FLOPs of one *decode* token against ``context`` cached keys, all layers [FLOP].

    Standard attention: as :func:`attention_flops_per_token`. MLA (DeepSeek-V2/V3) decodes with the
    up-projections absorbed into the query and output (DeepSeek-V2 paper, sec. 2.1.3; FlashMLA, vLLM's and
    TRT-LLM's MLA decode kernels): every head scores the cached latent directly, ``2 c heads (kv_lora_rank +
    rope)`` for ``QK^T`` and ``2 c heads kv_lora_rank`` for the weighted sum, against only
    ``kv_lora_rank + rope`` cached elements per token, so MLA decode is compute-heavy (~2 x 128 x 1088
    FLOPs per cached element of DeepSeek-V3, far above a GPU's FLOP/byte ratio). The absorbed projection
    matrices have the same size as ``kv_b``, so the matmul FLOPs do not change. Prefill keeps the
    non-absorbed form (:func:`attention_flops_per_token`), as the engines do.
    """
    if not model.is_mla:
        return attention_flops_per_token(model, context)
    per_key = model.num_attention_heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim)
    return 2.0 * attended_keys(model, context) * per_key * model.num_layers


def prefill_flops(model: ModelArch, input_len: float) -> float:
    """Forward FLOPs to process a causal prompt of ``input_len`` tokens [FLOP].

    Matmuls ``2 N`` per token; attention at the mean causal context ``(input_len + 1) / 2`` (encoders attend
    the whole sequence).
    """
    s = model_shape(model)
    mean_ctx = (input_len + 1.0) / 2.0 if model.is_decoder else input_len
    return input_len * (2.0 * s.matmul_active_params + attention_flops_per_token(model, mean_ctx))


def decode_flops_per_token(model: ModelArch, context: float) -> float:
    """Forward FLOPs to generate one token with ``context`` tokens already cached [FLOP]."""
    return 2.0 * model_shape(model).matmul_active_params + attention_flops_per_token(model, context)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingFlops:
    """Training FLOPs per token, split by where they run [FLOP/token]."""

    model_matmul: float  # matmul FLOPs counted for MFU (no recompute)
    model_attention: float  # attention-core FLOPs counted for MFU (PaLM convention, full sequence)
    hw_matmul: float  # matmul FLOPs executed (with recompute)
    hw_attention: float  # attention-core FLOPs executed (with recompute)

    @property
    def model_total(self) -> float:
        return self.model_matmul + self.model_attention

    @property
    def hw_total(self) -> float:
        return self.hw_matmul + self.hw_attention


def training_flops_per_token(
    model: ModelArch, *, task: str, seq_len: int, recompute: str = "selective", lora_rank: int = 16
) -> TrainingFlops:
    """Model and hardware FLOPs per trained token for ``task`` and ``recompute`` (``none|selective|full``)."""
    s = model_shape(model)
    fwd_mm = 2.0 * s.matmul_active_params
    fwd_attn = attention_flops_per_token(model, float(seq_len))  # PaLM: full sequence
    if task in ("lora", "qlora"):
        adapter = float(lora_params(model, lora_rank))
        mm = 2.0 * fwd_mm + 6.0 * adapter  # forward + activation gradients; adapters train fully
    else:
        mm = 3.0 * fwd_mm
    attn = 3.0 * fwd_attn  # the attention core always back-propagates (activation gradients)
    # hardware attention FLOPs at the full sequence and GEMM speed: causal kernels compute only half the
    # score matrix (FlashAttention-2, Dao 2023 sec. 3.1.1) but at ~half the GEMM efficiency on Hopper
    # (FlashAttention-2 fwd+bwd ~335 of 989 TFLOP/s vs ~700 for GEMMs; FA-2 paper fig. 7), which is the
    # same time; a causal halving alone made the leave-one-out fit worse (lead's refit, 2026-11-26)
    hw_mm, hw_attn = mm, attn
    if recompute == "full":
        # the replay covers the transformer layers, not the LM head: HF gradient checkpointing wraps each
        # decoder layer (transformers ``GradientCheckpointingLayer``), Megatron's full recompute the
        # transformer blocks (``recompute_granularity=full``), and the head's output is the loss's input
        hw_mm += fwd_mm - 2.0 * s.lm_head_params
        hw_attn += fwd_attn
    return TrainingFlops(model_matmul=mm, model_attention=attn, hw_matmul=hw_mm, hw_attention=hw_attn)


#: GEMM passes of one training step per linear layer (``Y = X W``, ``X``: tokens x in, ``W``: in x out): the
#: forward reduces over the input width, the activation gradient ``dX = dY W^T`` over the output width, the
#: weight gradient ``dW = X^T dY`` over the tokens (Narayanan et al. 2021 sec. 3; each pass 2 x tokens x in x
#: out FLOPs). LoRA/QLoRA skip the frozen base's weight gradient; full recompute replays the forward.
def training_gemm_passes(task: str, recompute: str) -> tuple[int, int, int]:
    """(forward, activation-gradient, weight-gradient) GEMM passes over the base weights per step [count]."""
    forward = 2 if recompute == "full" else 1
    return forward, 1, 0 if task in ("lora", "qlora") else 1


def mean_inverse_reduction(model: ModelArch, *, task: str, recompute: str, micro_tokens: float) -> float:
    """FLOP-weighted mean of ``1 / K`` over the dense GEMMs of one training step [1/elements].

    ``K`` is each GEMM's reduction length: a cuBLAS/CUTLASS thread block computes one output tile by
    stepping through ``K`` in ``BK``-wide slices (NVIDIA Deep Learning Performance Guide, "Matrix
    Multiplication Background", sec. "GPU implementation"; CUTLASS docs "Efficient GEMM in CUDA": main loop
    between a prologue that fills the pipeline and an epilogue that writes the tile), so the fixed per-tile
    cost is amortised over ``K / BK`` steps and a short ``K`` runs below peak even when ``M`` (tokens) and
    ``N`` fill every SM; the guide's "Dimension quantization effects" are small at training's ``M``. A
    training step runs each linear layer three times with a different ``K`` (:func:`training_gemm_passes`):
    the input width forward, the output width for the activation gradient, the micro-batch's tokens for the
    weight gradient. ``h / (h + h0)`` (:func:`gpufleet.estimate.rates.width_factor`) is the special case of
    every ``K`` equal to ``h``; here ``1 / (1 + h0 x this)`` with the actual shapes: q, k, v, o projections
    (``h -> heads x head_dim``, ``h -> kv_heads x head_dim``, back to ``h``; MLA's low-rank projections at
    ``h``), the FFN (``h -> I`` for up and gate, ``I -> h`` for down) and the LM head (``h -> vocab``).
    ``micro_tokens``: tokens of one micro-batch on one GPU, the weight gradient's ``K``.
    """
    h = float(model.hidden_size)
    s = model_shape(model)
    layers = float(model.num_layers)
    gemms: list[tuple[float, float, float]] = []  # (weights, input width, output width)
    if model.is_mla:
        gemms.append((s.attn_proj_params, h, h))
    else:
        qd = float(model.num_attention_heads * model.head_dim)
        kvd = float(model.num_kv_heads * model.head_dim)
        gemms += [(layers * h * qd, h, qd), (2.0 * layers * h * kvd, h, kvd), (layers * qd * h, qd, h)]
    inter = float(model.intermediate_size)
    ffn = s.ffn_active_params
    up_share = 2.0 / 3.0 if model.ffn_kind == "gated" else 0.5  # gate + up of gate, up, down
    gemms += [(ffn * up_share, h, inter), (ffn * (1.0 - up_share), inter, h)]
    fwd, dgrad, wgrad = training_gemm_passes(task, recompute)
    k_tokens = max(micro_tokens, 1.0)
    weighted = sum(w * (fwd / a + dgrad / b + wgrad / k_tokens) for w, a, b in gemms)
    total = sum(w for w, _, _ in gemms) * (fwd + dgrad + wgrad)
    head = s.lm_head_params  # never replayed by the recompute (training_flops_per_token)
    weighted += head * (1.0 / h + dgrad / float(model.vocab_size) + wgrad / k_tokens)
    total += head * (1 + dgrad + wgrad)
    return weighted / total if total > 0 else 1.0 / h


def moe_expected_experts(num_experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected distinct routed experts a layer touches for ``tokens`` tokens, uniform routing [experts].

    ``E (1 - (1 - k/E)^b)``: each expert is missed by one token with probability ``1 - k/E``.
    """
    if num_experts <= 0:
        return 0.0
    missed = (1.0 - experts_per_token / num_experts) ** max(tokens, 0.0)
    return float(num_experts * (1.0 - missed))


__all__ = [
    "ModelShape",
    "TrainingFlops",
    "attended_keys",
    "attention_flops_per_token",
    "decode_attention_flops_per_token",
    "decode_flops_per_token",
    "decode_weight_params",
    "mean_inverse_reduction",
    "model_shape",
    "moe_expected_experts",
    "prefill_flops",
    "training_flops_per_token",
    "training_gemm_passes",
]
