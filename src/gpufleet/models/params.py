"""Parameter counting from the architecture, module by module as in each family's ``modeling_*.py``.

Formulas (h = hidden_size, I = FFN width, V = vocab, L = layers, q_dim = heads x head_dim,
kv_dim = kv_heads x head_dim; all counts include biases where the family has them):

- attention: h*q_dim (Q) + 2*h*kv_dim (K, V) + q_dim*h (O) [+ q_dim + 2*kv_dim (+ h) biases];
- MLA (DeepSeek-V2/V3, ``modeling_deepseek.py``): q_a h*q_lora + q_lora (norm) + q_b q_lora*heads*(nope+rope);
  kv_a h*(kv_lora+rope) + kv_lora (norm) + kv_b kv_lora*heads*(nope+v); O heads*v*h;
- FFN: gated 3*h*I (gate, up, down; SwiGLU/GeGLU), plain 2*h*I (+ I + h biases);
- MoE layer: experts x gated FFN(moe_I) + shared experts x FFN(moe_I) + router h*experts; active counts
  ``experts_per_token`` routed experts;
- norms: RMSNorm h, LayerNorm 2h (weight + bias), ``norms_per_layer`` per layer, + the final norm;
- embeddings: V*h (+ positions*h if learned, + type_vocab*h, + 2h embedding LayerNorm);
  lm_head V*h unless tied.
DeepSeek-V3's multi-token-prediction module is outside the config's layers and not counted (671B).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from gpufleet.models.arch import ModelArch
from gpufleet.validation import checked_output


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamCount:
    """Parameter counts of one model [count]."""

    total: int
    active: int  # per token: == total for dense models
    embedding: int  # token + position + token-type embeddings (+ embedding LayerNorm)
    lm_head: int  # untied output projection (+ bias); 0 when tied or encoder-only
    attention_per_layer: int
    ffn_per_layer: int  # one dense FFN layer (the dense-first layers of MoE models)
    moe_ffn_per_layer: int  # one MoE FFN: routed + shared experts + router; 0 for dense models
    moe_ffn_active_per_layer: int
    norms_per_layer: int
    final: int  # final norm + pooler
    num_dense_layers: int
    num_moe_layers: int
    tp_replicated_per_layer: int  # held in full by every TP rank: norms, MLA down-projections, router

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding - self.lm_head

    @property
    def dense_layer(self) -> int:
        return self.attention_per_layer + self.ffn_per_layer + self.norms_per_layer

    @property
    def moe_layer(self) -> int:
        return self.attention_per_layer + self.moe_ffn_per_layer + self.norms_per_layer


def _norm(m: ModelArch) -> int:
    return 2 * m.hidden_size if m.norm_kind == "layernorm" else m.hidden_size


def attention_params(m: ModelArch) -> int:
    """Attention parameters of one layer [count]."""
    h, nh = m.hidden_size, m.num_attention_heads
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nh * qk if m.q_lora_rank else h * nh * qk
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv += m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + nh * m.v_head_dim * h
    q_dim, kv_dim = nh * m.head_dim, m.num_kv_heads * m.head_dim
    n = 2 * h * q_dim + 2 * h * kv_dim
    if m.linear_bias or m.qkv_bias:
        n += q_dim + 2 * kv_dim
    if m.linear_bias:
        n += h
    return n


def ffn_params(m: ModelArch, width: int) -> int:
    """One FFN (or one expert) of ``width`` [count]."""
    h = m.hidden_size
    if m.ffn_kind == "gated":
        n = 3 * h * width
        return n + (2 * width + h if m.linear_bias or m.mlp_bias else 0)
    return 2 * h * width + (width + h if m.linear_bias or m.mlp_bias else 0)


@checked_output("parameter count")
@cache
def count_params(m: ModelArch) -> ParamCount:
    """Count every parameter of ``m`` (cached per architecture)."""
    h, v = m.hidden_size, m.vocab_size
    emb = v * h
    if m.position_kind == "learned":
        emb += m.max_position_embeddings * h
    emb += m.type_vocab_size * h + (2 * h if m.embedding_norm else 0)
    lm_head = 0 if m.tie_word_embeddings or not m.is_decoder else v * h + (v if m.lm_head_bias else 0)
    attn = attention_params(m)
    dense_ffn = ffn_params(m, m.intermediate_size)
    norms = m.norms_per_layer * _norm(m)
    final = (_norm(m) if m.final_norm else 0) + (h * h + h if m.pooler else 0)
    n_moe = m.num_moe_layers
    n_dense = m.num_layers - n_moe
    moe_total = moe_active = 0
    replicated = norms
    if m.is_moe:
        expert = ffn_params(m, m.moe_intermediate_size)
        router = h * m.num_experts
        moe_total = (m.num_experts + m.num_shared_experts) * expert + router
        moe_active = (m.experts_per_token + m.num_shared_experts) * expert + router
        replicated += router * n_moe // m.num_layers
    if m.is_mla:
        replicated += (
            h * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim) + m.q_lora_rank + m.kv_lora_rank
        )
    layers_total = n_dense * (attn + dense_ffn + norms) + n_moe * (attn + moe_total + norms)
    layers_active = n_dense * (attn + dense_ffn + norms) + n_moe * (attn + moe_active + norms)
    return ParamCount(
        total=emb + lm_head + final + layers_total,
        active=emb + lm_head + final + layers_active,
        embedding=emb,
        lm_head=lm_head,
        attention_per_layer=attn,
        ffn_per_layer=dense_ffn,
        moe_ffn_per_layer=moe_total,
        moe_ffn_active_per_layer=moe_active,
        norms_per_layer=norms,
        final=final,
        num_dense_layers=n_dense,
        num_moe_layers=n_moe,
        tp_replicated_per_layer=replicated,
    )


#: LoRA target modules: every linear projection of attention and MLP, as in QLoRA (Dettmers et al. 2023,
#: sec. 4: "LoRA on all linear transformer block layers") and PEFT's ``target_modules="all-linear"``.
LORA_TARGETS = "q, k, v, o (MLA: q_a, q_b, kv_a, kv_b, o) and gate, up, down (MLP: up, down) of every layer"


@cache
def lora_params(m: ModelArch, rank: int) -> int:
    """Trainable LoRA parameters at ``rank`` on :data:`LORA_TARGETS` [count]: r x (in + out) per module."""
    h, nh = m.hidden_size, m.num_attention_heads
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q_lora = m.q_lora_rank
        shapes = [(h, q_lora), (q_lora, nh * qk)] if q_lora else [(h, nh * qk)]
        shapes += [
            (h, m.kv_lora_rank + m.qk_rope_head_dim),
            (m.kv_lora_rank, nh * (m.qk_nope_head_dim + m.v_head_dim)),
        ]
        shapes.append((nh * m.v_head_dim, h))
    else:
        q_dim, kv_dim = nh * m.head_dim, m.num_kv_heads * m.head_dim
        shapes = [(h, q_dim), (h, kv_dim), (h, kv_dim), (q_dim, h)]
    attn = sum(a + b for a, b in shapes)

    def ffn(width: int) -> int:
        return (3 if m.ffn_kind == "gated" else 2) * (h + width)

    n_moe = m.num_moe_layers
    moe = (m.num_experts + m.num_shared_experts) * ffn(m.moe_intermediate_size) if m.is_moe else 0
    total = m.num_layers * attn + (m.num_layers - n_moe) * ffn(m.intermediate_size) + n_moe * moe
    return rank * total
