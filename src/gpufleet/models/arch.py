"""The normalised architecture of a transformer model: the one type every estimator reads.

Built from shipped ``data/models.json`` entries, from any Hugging Face ``config.json`` (Llama, Mistral,
Mixtral, Qwen2, Gemma2, Phi3, DeepSeek-V3, GPT-2, GPT-J, GPTBigCode, Falcon, BERT field spellings), or from a
size class.
Field names follow the HF config where one exists; derived fields (``head_dim`` when absent, ``ffn_kind``) are
resolved once here, never re-derived downstream. Always use ``head_dim`` (Gemma-2-27B: 128, not 4608/32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FfnKind = Literal["gated", "mlp"]  # gated = SwiGLU/GeGLU (3 matrices); mlp = up/down with GELU (2 matrices)
PositionKind = Literal["rope", "learned", "alibi", "none"]
NormKind = Literal["rmsnorm", "layernorm"]  # rmsnorm: weight only; layernorm: weight + bias


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelArch:
    id: str
    name: str
    is_decoder: bool  # False for encoder-only models (BERT): no KV cache, no generation
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int  # == num_attention_heads for MHA, 1 for MQA, fewer for GQA
    head_dim: int
    intermediate_size: int  # dense FFN width (also the dense-first-layer width of MoE models)
    ffn_kind: FfnKind
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    position_kind: PositionKind = "rope"
    type_vocab_size: int = 0  # BERT token-type embeddings
    qkv_bias: bool = False  # Qwen2
    linear_bias: bool = False  # GPT-2/BERT/StarCoder biases on every linear layer
    parallel_block: bool = False  # attention and MLP in parallel from one norm (GPT-J, Falcon)
    mlp_bias: bool = False  # biases on the MLP linears only (GPT-J); implied by linear_bias
    lm_head_bias: bool = False  # GPT-J's lm_head has a bias [vocab_size]
    norm_kind: NormKind = "rmsnorm"
    norms_per_layer: int = 2  # Llama: 2; GPT-J / Falcon-7B: 1; Falcon-40B: 2; Gemma-2: 4
    qk_norm: bool = False  # RMSNorm over each head of q and k before RoPE (Qwen3, Gemma 3); weights uncounted
    embedding_norm: bool = False  # BERT: LayerNorm after the embeddings
    final_norm: bool = True  # decoders: a norm before lm_head; BERT (post-LN) has none
    pooler: bool = False  # BERT pooler dense h x h + bias (counted as in BertModel)
    dropout: bool = False  # trained with dropout (GPT-2/3, BERT): dropout masks are stored for backward
    # sliding-window attention: window in tokens and the fraction of layers that use it (1.0 = all, Mistral;
    # 0.5 = alternating local/global, Gemma-2); None = full attention everywhere
    sliding_window: int | None = None
    sliding_window_layer_fraction: float = 0.0
    # mixture of experts (0 = dense)
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0  # per-expert FFN width (== intermediate_size for Mixtral)
    num_shared_experts: int = 0
    first_k_dense_layers: int = 0  # DeepSeek-V3: first 3 layers are dense
    # every ``moe_layer_step``-th layer is MoE, the others dense (Llama 4 Maverick: 2, HF
    # ``interleave_moe_layer_step``; layer i is MoE when (i + 1) % step == 0, transformers Llama4TextModel)
    moe_layer_step: int = 1
    # multi-head latent attention (DeepSeek-V2/V3); 0 = standard attention
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # stated facts (from models.json) for checks; None when built from a bare config
    stated_params: float | None = None  # total parameters [count]
    stated_active_params: float | None = None
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer ``index`` (0-based) has routed experts."""
        return self.is_moe and index >= self.first_k_dense_layers and (index + 1) % self.moe_layer_step == 0

    def dense_layers_between(self, start: int, end: int) -> int:
        """Dense (non-MoE) layers among layers ``start`` .. ``end - 1`` [count] (closed form, O(1))."""
        a, b = max(start, 0), min(end, self.num_layers)
        if b <= a:
            return 0
        if not self.is_moe:
            return b - a
        lo = max(a, self.first_k_dense_layers)  # MoE layers: i in [lo, b) with (i + 1) % step == 0
        step = self.moe_layer_step
        moe = max(0, b // step - lo // step) if b > lo else 0
        return (b - a) - moe

    @property
    def num_moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        return self.num_layers - self.dense_layers_between(0, self.num_layers)
