"""Activation memory: training (stored for backward) and inference (transient working set).

Training follows Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
(arXiv:2205.05198), sec. 4: per layer sbh(34 + 5as/h) bytes at 2-byte activations without parallelism, from
attention 11sbh + 5as²b, MLP 19sbh and LayerNorms 4sbh (dropout masks are 1 byte per element). Adapted here,
term by term, to

- GQA/MQA and head_dim != h/a: K and V take kv_heads x head_dim, Q and the attention output heads x head_dim;
- MLA: Q/K take heads x (nope + rope), V heads x v_head_dim, plus the latent q/kv down-projection outputs;
- gated FFN (SwiGLU/GeGLU, Megatron fused ``bias_swiglu``): input h + fc1 output 2I + activation output I;
  plain GELU MLP: input h + GELU input I + GELU output I (the paper's 19sbh at I = 4h, with the mask);
- MoE (Megatron ``moe_layer``): the routed copies of the input (top-k x h), top-k experts' FFN activations,
  shared experts, and the fp32 router logits;
- flash attention (FlashAttention-2, Dao 2023): no s x s scores; stores the fp32 log-sum-exp per head instead;
- no dropout for RoPE-era LLMs (Llama/Mistral/Qwen/DeepSeek train without it), masks kept for models trained
  with dropout (GPT-2/3, BERT: ``ModelArch.dropout``);
- sequence parallelism divides every term by t (paper eq. 5: sbh(34/t + 5as/(ht))); without it the norms,
  block inputs and dropout masks (the paper's 10sbh) stay whole;
- recompute: none; selective (recompute core attention: drops the s² terms, which flash attention already
  never stores); full (only each layer's input 2sbh is kept, plus one layer's activations while it is
  recomputed).
"""

from __future__ import annotations

from typing import Literal

from gpufleet.errors import InputError
from gpufleet.models.arch import ModelArch
from gpufleet.precision import UNQUANTISED_BYTES_PER_ELEMENT as UNQUANTISED_BYTES

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")

#: bytes of a log-sum-exp value FlashAttention stores per (token, head) [bytes]
_LSE_BYTES = 4.0
#: bytes per element of a dropout mask (torch.bool) [bytes]; Korthikanti et al. 2022 sec. 4.1
_MASK_BYTES = 1.0
#: bytes per router logit: Megatron computes the router in fp32 [bytes]
_ROUTER_BYTES = 4.0


def check_recompute(recompute: str) -> str:
    if recompute not in RECOMPUTE_MODES:
        raise InputError(
            f"Unknown recompute mode {recompute!r}. Allowed: {', '.join(RECOMPUTE_MODES)}. "
            "Use 'selective' (the Megatron default) unless you know the run recomputes whole layers ('full')."
        )
    return recompute


def _ffn_widths(m: ModelArch, moe: bool) -> tuple[float, float]:
    """(FFN output-copy elements, FFN intermediate elements) per token, for the layer kind."""
    per_width = 3.0 if m.ffn_kind == "gated" else 2.0
    if moe:
        k = m.experts_per_token
        shared = m.num_shared_experts
        return k * m.hidden_size, (k + shared) * per_width * m.moe_intermediate_size
    return 0.0, per_width * m.intermediate_size


def _attn_dims(m: ModelArch) -> tuple[float, float]:
    """(elements of Q+K+V+attention-output, elements of latent projections) per token."""
    nh = m.num_attention_heads
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        return 2.0 * nh * qk + 2.0 * nh * m.v_head_dim, m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim
    q_dim, kv_dim = nh * m.head_dim, m.num_kv_heads * m.head_dim
    return 2.0 * q_dim + 2.0 * kv_dim, 0.0


def activation_bytes_per_layer(
    m: ModelArch,
    *,
    seq_len: int,
    batch: int,
    tp: int = 1,
    sequence_parallel: bool = True,
    recompute: str = "selective",
    flash_attention: bool = True,
    act_bytes: float = 2.0,
    moe_layer: bool | None = None,
    fp8_linear_inputs: bool = False,
) -> float:
    """Activations one transformer layer stores for backward, per GPU [bytes].

    ``moe_layer`` picks the layer kind of MoE models (default: MoE when the model has experts).
    ``fp8_linear_inputs``: fp8 training with Transformer Engine, whose linear layers keep the fp8 copy of
    their input that the weight-gradient GEMM reads instead of the 16-bit input
    (:func:`fp8_linear_input_savings`).
    """
    check_recompute(recompute)
    tokens = float(seq_len) * batch
    h = float(m.hidden_size)
    sp = tp if sequence_parallel else 1
    if recompute == "full":
        return tokens * h * act_bytes / sp
    moe = m.is_moe if moe_layer is None else moe_layer
    qkvo, latent = _attn_dims(m)
    copies, inter = _ffn_widths(m, moe)
    # replicated across TP ranks unless sequence parallel: norm inputs, attention and MLP block inputs, masks
    outer = (m.norms_per_layer + 2.0) * h * act_bytes
    if m.dropout:
        outer += 2.0 * h * _MASK_BYTES
    # split by TP: Q, K, V, attention output, latents, FFN internals, router logits
    inner = (qkvo + latent + copies + inter) * act_bytes
    if moe:
        inner += m.num_experts * _ROUTER_BYTES * tp  # router logits are not split by TP
    nh = float(m.num_attention_heads)
    if flash_attention:
        inner += nh * _LSE_BYTES
    elif recompute == "none":
        # softmax output (+ dropout mask and output): the paper's 5as²b at 2 bytes with dropout
        per_score = act_bytes + ((_MASK_BYTES + act_bytes) if m.dropout else 0.0)
        inner += nh * seq_len * per_score
    per_token = outer / sp + inner / tp
    if fp8_linear_inputs:
        outer_saved, inner_saved = fp8_linear_input_savings(m, moe)
        per_token -= outer_saved / sp + inner_saved / tp
    return tokens * per_token


#: bytes per element of the input copy a Transformer Engine linear layer keeps for its weight gradient in
#: fp8 training (E4M3 in the forward; MXFP8 adds one 8-bit scale per 32 elements, ~3 %, not counted)
FP8_SAVED_INPUT_BYTES = 1.0


def fp8_linear_input_savings(m: ModelArch, moe: bool) -> tuple[float, float]:
    """Bytes per token one layer's stored activations shrink by in fp8 training with Transformer Engine:
    (in the sequence-parallel part, in the tensor-parallel part) [bytes].

    TE's ``LayerNormLinear`` (QKV) and ``LayerNormMLP`` (FFN) cast the normalised input to fp8 for the GEMM
    and save that fp8 ``ln_out`` for the weight gradient, not a 16-bit copy; ``LayerNormMLP`` and Megatron's
    ``TEGroupedLinear`` experts save the activation output, fc2's input, in fp8 too (transformer_engine
    ``pytorch/module/layernorm_linear.py``, ``layernorm_mlp.py``, ``grouped_linear.py``: ``ctx.save_for_
    backward`` of the quantised inputs; Micikevicius et al. 2022, "FP8 Formats for Deep Learning"). So the
    two block inputs (2h), the FFN activation output (I per expert and shared expert) and the routed copies
    entering the experts (k h) go from 2 B to :data:`FP8_SAVED_INPUT_BYTES`. The attention output goes the
    other way: the fused attention kernel keeps its 16-bit output for its own backward and the output
    projection adds its fp8 copy (heads x head_dim more). The norm inputs, Q/K/V, the fc1 output (the
    activation's backward reads it) and the residual stream stay 16 bit.
    """
    drop = UNQUANTISED_BYTES - FP8_SAVED_INPUT_BYTES
    outer = 2.0 * m.hidden_size * drop
    if moe:
        inner = (m.experts_per_token + m.num_shared_experts) * m.moe_intermediate_size * drop
        inner += m.experts_per_token * m.hidden_size * drop
    else:
        inner = m.intermediate_size * drop
    attn_out = m.num_attention_heads * (m.v_head_dim if m.is_mla else m.head_dim)
    return outer, inner - attn_out * FP8_SAVED_INPUT_BYTES


def logits_bytes(m: ModelArch, *, tokens: int, tp: int = 1, logits_bytes_per_element: float = 6.0) -> float:
    """Logits kept for the loss [bytes]: tokens x vocab x (2-byte logits + fp32 upcast = 6 B) / tp.

    At a 128k vocabulary this is 8192 x 128256 x 6 B = 6.3 GB per 8k-token sequence. Vocab-parallel cross
    entropy (Megatron ``vocab_parallel_cross_entropy``) splits it over TP ranks.
    """
    return float(tokens) * m.vocab_size * logits_bytes_per_element / tp


def inference_activation_bytes(m: ModelArch, *, tokens: int, tp: int = 1, act_bytes: float = 2.0) -> float:
    """Transient working set of one layer's forward pass over ``tokens`` tokens, per GPU [bytes].

    Nothing is stored across layers in inference, so the peak is the largest simultaneously live set in one
    layer: residual and normed hidden state (2h), Q/K/V and attention output, and the FFN intermediate
    (gated: fc1 2I + activation I; MoE: the routed copies and top-k experts' intermediates). FlashAttention /
    SDPA kernels never materialise the s x s scores.
    """
    h = float(m.hidden_size)
    qkvo, latent = _attn_dims(m)
    copies, inter = _ffn_widths(m, m.is_moe)
    if m.is_moe:
        copies_d, inter_d = _ffn_widths(m, False)
        copies, inter = max(copies, copies_d), max(inter, inter_d)
    per_token = 2.0 * h * act_bytes + (max(qkvo + latent, copies + inter)) * act_bytes / tp
    return float(tokens) * per_token


# ---- Hugging Face transformers eager training (docs/memory.md "HF eager training") -------------------

HfMode = Literal["amp_full", "bf16_full", "lora", "qlora"]
#: bytes per logit element alive at the end of the forward, inside ``torch.autocast``: the 16-bit logits
#: (2, held by the model output), their fp32 upcast (4, ``logits = logits.float()`` in transformers 5.17.0
#: loss/loss_utils.py ``ForCausalLMLoss``) and the fp32 ``log_softmax`` output that ``cross_entropy`` saves
#: for its backward (4)
HF_LOSS_FORWARD_BYTES = 10.0
#: bytes per logit element alive in the loss backward: the saved fp32 ``log_softmax`` output (4), the
#: gradient ``nll_loss_backward`` hands it (4) and the input gradient ``_log_softmax_backward_data`` makes
#: (4); the 16-bit logits are gone (nothing saves them: the upcast's backward saves nothing)
HF_LOSS_BACKWARD_BYTES = 12.0
#: bytes per element of the fp32 residual stream / RMSNorm upcast
_FP32 = 4.0
#: bytes per element of a 16-bit activation
_BF16 = 2.0
#: LoRA target modules per decoder layer of PEFT ``target_modules="all-linear"`` (q, k, v, o, gate, up, down)
_LORA_MODULES = 7


def hf_eager_supported(m: ModelArch) -> bool:
    """Whether :func:`hf_eager_layer_bytes` describes ``m``'s transformers decoder layer: a dense RoPE
    decoder with RMSNorm before attention and before a gated (SwiGLU) MLP (Llama, Mistral, Qwen2/2.5/3)."""
    return (
        m.is_decoder and not m.is_moe and not m.is_mla and m.ffn_kind == "gated" and m.norm_kind == "rmsnorm"
        and m.norms_per_layer == 2 and not m.parallel_block and not m.dropout
    )  # fmt: skip


def hf_eager_layer_bytes(m: ModelArch, *, tokens: int, mode: HfMode, lora_rank: int = 16) -> float:
    """Tensors autograd saves in one transformers decoder layer (no checkpointing) [bytes].

    Read from transformers 5.17.0 ``models/llama/modeling_llama.py`` (Qwen2/Qwen3/Mistral are copies) with
    SDPA attention, and measured with ``torch.autograd.graph.saved_tensors_hooks`` on CPU (torch 2.14,
    unique storages, 2-layer minus 1-layer models): llama-3.2-1b amp_full 129 160 B/token/layer, lora
    117 096, bf16_full 108 680; qwen2.5-0.5b amp_full 66 368 (formula: the same to the byte, bar the
    8-byte rsqrt values; reproduce with benchmarks/hf_saved_bytes.py).
    Per token, with q = heads x head_dim, kv = kv_heads x head_dim, I = FFN width:

    - RMSNorm (``LlamaRMSNorm.forward``: ``hidden_states.to(float32)``, ``* rsqrt(variance)``,
      ``self.weight * hidden_states.to(input_dtype)``): ``amp_full`` (fp32 model under ``torch.autocast``)
      saves the fp32 input and the fp32 normalised tensor (the weight is trained): 8h per norm;
      ``bf16_full`` (a bf16 model trained whole, no fp32 master: TRL, axolotl) saves the fp32 upcast and the
      bf16 normalised tensor the weight multiplies: 6h per norm; ``lora`` (bf16 base, frozen norm weight)
      saves only the fp32 upcast: 4h per norm.
    - linear inputs: autocast casts an activation to bf16 on every call and caches only leaf weights
      (torch ``autocast_mode.h`` ``cached_cast``: ``arg.is_leaf() && arg.requires_grad()``), so in
      ``amp_full`` q/k/v_proj and gate/up_proj each save their own bf16 copy (3 + 2 x 2h), o_proj the SDPA
      output (shared with SDPA's saved output) and down_proj the SwiGLU product (2I). ``bf16_full``: the
      activations are bf16 already, so q/k/v share one saved norm output and gate/up another (2 x 2h).
      ``lora``: the frozen
      base linear saves no input (no weight gradient), but PEFT ``LoraLayer.forward`` casts the input to
      the fp32 adapter dtype (peft 0.21.2 ``tuners/lora/layer.py`` ``_cast_input_dtype``) and autocast
      casts it back for ``lora_A``: one bf16 copy per adapted module (3 + 2 x 2h, o: 2q, down: 2I), plus
      the rank-r ``lora_A`` outputs (2r per module).
    - attention (``sdpa_attention_forward``, transformers 5.17.0 ``integrations/sdpa_attention.py``:
      without a padding mask ``use_gqa_in_sdpa`` passes ``enable_gqa=True``, so K/V are not expanded by
      ``repeat_kv``): SDPA's flash kernels save bf16 q, k, v (autocast's casts of the RoPE output, which is
      fp32 under AMP because the fp32 cos/sin promote it), the output and the fp32 log-sum-exp per head:
      2(q + 2kv) + 2q + 4 x heads.
    - SwiGLU MLP (``down_proj(act_fn(gate_proj(x)) * up_proj(x))``): silu saves the gate output, the
      product saves the silu output and the up output, down_proj (or its lora_A copy) the product: 4 x 2I.
    - per-head q/k RMSNorm (Qwen3 ``q_norm``/``k_norm`` on the 16-bit q_proj/k_proj outputs, ModelArch
      ``qk_norm``): the fp32 upcast (4 B) and, where the norm weight trains (``amp_full``, ``bf16_full``),
      the bf16 normalised tensor it multiplies (2 B): 6(q + kv), LoRA 4(q + kv). Measured (same method,
      qwen3-8b at 128 tokens): amp_full 256 296, lora 221 704, bf16_full 215 336 B/token/layer, the formula
      to within the 168 B of per-head rsqrt values.

    - ``qlora``: PEFT ``prepare_model_for_kbit_training`` (peft 0.21.2 ``utils/other.py``) casts every
      parameter that is not ``Params4bit`` to fp32 (embeddings, norms, lm_head), so the residual stream is
      fp32, and bitsandbytes' ``Linear4bit`` returns its output in its input's dtype: the LoRA terms above
      plus the SwiGLU's three saved tensors (gate output, up output, silu output) in fp32 instead of bf16,
      6I. The 4-bit base saves no input (bitsandbytes ``MatMul4Bit`` keeps only the quantised weight for
      the input gradient). Measured (same method, bitsandbytes 0.50.2 NF4 ``Linear4bit`` with bf16
      compute): llama-3.2-1b 166 248 B/token/layer (formula + the 8-byte rsqrt values); without the
      prepare step a QLoRA layer saves exactly what ``lora`` does (117 096).

    The residual additions save nothing (``add`` needs no inputs for its backward).
    """
    h = float(m.hidden_size)
    q = float(m.num_attention_heads * m.head_dim)
    kv = float(m.num_kv_heads * m.head_dim)
    inter = float(m.intermediate_size)
    attention = _BF16 * (q + 2.0 * kv) + _BF16 * q + _LSE_BYTES * m.num_attention_heads
    mlp = 4.0 * _BF16 * inter
    if mode == "amp_full":
        norms = 2.0 * 2.0 * _FP32 * h
        inputs = _BF16 * 5.0 * h  # q, k, v, gate, up casts; o_proj/down_proj inputs counted above
    elif mode == "bf16_full":
        norms = 2.0 * (_FP32 + _BF16) * h
        inputs = _BF16 * 2.0 * h  # one norm output shared by q, k, v; one by gate, up
    else:
        norms = 2.0 * _FP32 * h
        inputs = _BF16 * (5.0 * h + q) + _BF16 * _LORA_MODULES * lora_rank  # down's copy is the 4th 2I
        if mode == "qlora":
            mlp += 3.0 * (_FP32 - _BF16) * inter  # gate, up and silu outputs kept in fp32
    if m.qk_norm:
        norms += (_FP32 + (0.0 if mode in ("lora", "qlora") else _BF16)) * (q + kv)
    return float(tokens) * (norms + inputs + attention + mlp)


def hf_eager_head_bytes(m: ModelArch, *, tokens: int, mode: HfMode) -> float:
    """Saved tensors of the final RMSNorm and the lm_head input [bytes]: the norm as in
    :func:`hf_eager_layer_bytes` (8h / 6h / 4h), plus lm_head's bf16 input when lm_head is trained (2h:
    autocast's cast under AMP, the norm output in bf16); PEFT ``all-linear`` leaves lm_head frozen."""
    h = float(m.hidden_size)
    if mode == "amp_full":
        return float(tokens) * (2.0 * _FP32 + _BF16) * h
    if mode == "bf16_full":
        return float(tokens) * (_FP32 + 2.0 * _BF16) * h
    return float(tokens) * _FP32 * h


def hf_eager_checkpoint_bytes(m: ModelArch, *, tokens: int, mode: HfMode) -> float:
    """One checkpointed layer input under non-reentrant checkpointing [bytes]: transformers 5.17.0
    ``modeling_layers.GradientCheckpointingLayer`` calls ``torch.utils.checkpoint.checkpoint(...,
    use_reentrant=False)``, whose saved-tensor hooks drop everything the layer saves and keep its inputs:
    the residual stream, fp32 under AMP (fp32 embeddings, fp32 residual adds) and after QLoRA's fp32 upcast
    of the embeddings, bf16 in a bf16 model."""
    return float(tokens) * m.hidden_size * (_FP32 if mode in ("amp_full", "qlora") else _BF16)
