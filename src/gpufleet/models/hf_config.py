"""Hugging Face ``config.json`` -> :class:`ModelArch`, for every field spelling gpufleet knows.

Families and the facts taken from their ``modeling_*.py`` in transformers (v4.4x):

- Llama / Mistral / Mixtral / Qwen2 / Phi3 / Gemma2 / DeepSeek-V3: gated FFN (3 matrices), RoPE, RMSNorm,
  2 norms per layer (Gemma2: 4, pre- and post-norm around attention and MLP), no biases except Qwen2's q/k/v.
  ``head_dim`` is read from the config when present (Gemma-2-27B: 128, not 4608/32).
- GPT-2 / GPT-3-style (Megatron) / GPTBigCode: ``n_embd``/``n_layer``/``n_head``, ``n_inner`` null => 4h,
  2-matrix GELU MLP, learned positions, LayerNorm, biases on every linear, tied lm_head; GPTBigCode
  ``multi_query`` => one KV head.
- GPT-J: parallel attention + MLP from one LayerNorm, rotary, no attention biases, MLP biases, untied lm_head
  with a bias.
- Falcon: ``num_kv_heads`` with ``new_decoder_architecture`` (two LayerNorms per layer), else ``multi_query``
  (one KV head, one LayerNorm); FFN ``ffn_hidden_size`` or 4h; ``bias``; tied lm_head.
- BERT: encoder, learned positions + token-type embeddings, embedding LayerNorm, post-LN (2 LayerNorms per
  layer), biases everywhere, pooler; counted as ``BertModel`` (no MLM head).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import document_kind, parse_yaml_or_json, read_user_text
from gpufleet.models.arch import ModelArch
from gpufleet.validation import (
    MAX_EXPERTS,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_LAYERS,
    MAX_SEQUENCE_TOKENS,
    MAX_VOCAB,
)

_LLAMA_LIKE = ("deepseek", "mixtral", "qwen2", "phi3", "mistral", "gemma", "llama")
#: ``model_type`` values whose attention normalises each head of q and k (RMSNorm) before RoPE
QK_NORM_MODEL_TYPES = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text")
#: ``model_type`` values whose modules the counting above matches (qwen3 adds per-head q/k norms: 2 x head_dim
#: per layer, not counted; qwen3_moe = Mixtral-style routed experts of ``moe_intermediate_size``, no shared
#: expert; gemma3 = Gemma 2's four norms per layer with 5 of 6 layers on the sliding window; gpt_oss = routed
#: gated experts of ``intermediate_size`` with biases, attention with biases and per-head sink scalars (a
#: few thousand parameters, not counted), every other layer on a 128-token window)
SUPPORTED_MODEL_TYPES = (
    "bert", "deepseek_v2", "deepseek_v3", "falcon", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt2",
    "gpt_bigcode", "gptj", "gpt_oss", "llama", "llama4", "llama4_text", "mistral", "mixtral", "phi3", "qwen2",
    "qwen3", "qwen3_moe",
    "RefinedWeb", "RefinedWebModel",
)  # fmt: skip
#: share of layers on the sliding window by model_type where it is not all of them (config ``layer_types``);
#: Llama 4: chunked local attention (``attention_chunk_size``) on 3 of 4 layers, every 4th layer global
#: without RoPE (``no_rope_layers``; transformers ``Llama4TextAttention``), counted like a window
SLIDING_LAYER_FRACTION = {
    "gemma2": 0.5, "gemma3": 5 / 6, "gemma3_text": 5 / 6, "gpt_oss": 0.5, "llama4": 0.75, "llama4_text": 0.75,
}  # fmt: skip
#: model types whose MoE layers carry one always-on shared expert without a config field for it
#: (transformers ``Llama4TextMoe.shared_expert``)
ONE_SHARED_EXPERT_TYPES = frozenset({"llama4", "llama4_text"})


def detect_family(cfg: Mapping[str, Any], hint: str = "") -> str:
    """The config family: from ``model_type``/``architectures``, a hint, then distinctive field names."""
    archs = cfg.get("architectures") or []
    text = " ".join([str(cfg.get("model_type", "")), *map(str, archs), hint]).lower()
    if "deepseek" in text or "kv_lora_rank" in cfg:
        return "deepseek"
    if "bigcode" in text or ("multi_query" in cfg and "n_embd" in cfg):
        return "gpt_bigcode"
    if "gptj" in text or "gpt-j" in text or ("rotary_dim" in cfg and "n_embd" in cfg):
        return "gptj"
    if "falcon" in text or "refinedweb" in text or "new_decoder_architecture" in cfg or "num_kv_heads" in cfg:
        return "falcon"
    if "bert" in text or "type_vocab_size" in cfg:
        return "bert"
    if "gpt2" in text or "n_embd" in cfg:
        return "gpt2"
    if "gpt-style" in text or text.strip() in ("gpt", "openai-gpt"):
        return "gpt"
    for fam in _LLAMA_LIKE:
        if fam in text:
            return "gemma2" if fam == "gemma" and ("gemma2" in text or "gemma3" in text) else fam
    return "llama"


class _Reader:
    """Typed field access that collects every missing/bad field before raising one ConfigFileError."""

    def __init__(self, cfg: Mapping[str, Any], source: str) -> None:
        self.cfg = cfg
        self.source = source
        self.missing: list[str] = []

    def _fail(self, name: str, value: object, want: str) -> ConfigFileError:
        return ConfigFileError(
            f"{self.source}: field {name!r} has the value {value!r}, but it must be {want}. "
            "Fix that field in the config.json (copy it from the model's Hugging Face page)."
        )

    def int(self, *names: str, default: int | None = None, required: bool = True) -> int:
        for name in names:
            value = self.cfg.get(name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or int(value) != value
            ):
                raise self._fail(name, value, "a whole number")
            if value < 0 or (value == 0 and name not in _ZERO_OK):
                raise self._fail(name, value, "a positive whole number")
            limit = _MAXIMA.get(name, _MAX_ANY)
            if value > limit:
                raise self._fail(name, value, f"at most {limit:,} (far beyond any published model)")
            return int(value)
        if default is not None or not required:
            return default if default is not None else 0
        self.missing.append(" or ".join(repr(n) for n in names))
        return 1

    def bool(self, name: str, default: bool) -> bool:
        value = self.cfg.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._fail(name, value, "true or false")
        return value

    def check(self, family: str) -> None:
        if self.missing:
            raise ConfigFileError(
                f"{self.source}: the {family} config lacks required fields {', '.join(self.missing)}. "
                "A Hugging Face config.json for this architecture has them; add them (copy the model's "
                "config.json from its Hugging Face page) and try again."
            )


_ZERO_OK = {"n_shared_experts", "first_k_dense_replace", "q_lora_rank", "type_vocab_size", "sliding_window"}
#: Largest accepted config values: 10-100x the largest published models (hidden 18,432 / 61 layers / 128
#: heads / 256 experts for DeepSeek-V3; vocab 256k for Gemma; context 10M for Llama 4 Scout). They bound the
#: arithmetic (no overflow, no hang in layout searches) and catch typos such as 1e300.
_MAX_ANY = 1_000_000_000
#: Widest attention head accepted [dimensions]: 1,024. Released models use 64-256 (Gemma 256; DeepSeek-V3's
#: MLA 192 = 128 + 64); ``head_dim: 100000`` on a 4,096-wide model was estimated silently under the old bound
#: (the hidden-size limit).
MAX_HEAD_DIM = 1024
_MAXIMA: dict[str, int] = {
    "hidden_size": MAX_HIDDEN_SIZE,
    "n_embd": MAX_HIDDEN_SIZE,
    "d_model": MAX_HIDDEN_SIZE,
    "num_hidden_layers": MAX_LAYERS,
    "n_layer": MAX_LAYERS,
    "num_layers": MAX_LAYERS,
    "num_attention_heads": MAX_HEADS,
    "n_head": MAX_HEADS,
    "num_key_value_heads": MAX_HEADS,
    "num_kv_heads": MAX_HEADS,
    "head_dim": MAX_HEAD_DIM,
    "intermediate_size": 100 * MAX_HIDDEN_SIZE,
    "moe_intermediate_size": 100 * MAX_HIDDEN_SIZE,
    "n_inner": 100 * MAX_HIDDEN_SIZE,
    "vocab_size": MAX_VOCAB,
    "num_local_experts": MAX_EXPERTS,
    "n_routed_experts": MAX_EXPERTS,
    "num_experts": MAX_EXPERTS,
    "num_experts_per_tok": MAX_EXPERTS,
    "n_shared_experts": MAX_EXPERTS,
    "first_k_dense_replace": MAX_LAYERS,
    "interleave_moe_layer_step": MAX_LAYERS,
    "decoder_sparse_step": MAX_LAYERS,
    "intermediate_size_mlp": 100 * MAX_HIDDEN_SIZE,
    "attention_chunk_size": 10 * MAX_SEQUENCE_TOKENS,
    "max_position_embeddings": 10 * MAX_SEQUENCE_TOKENS,
    "n_positions": 10 * MAX_SEQUENCE_TOKENS,
    "sliding_window": 10 * MAX_SEQUENCE_TOKENS,
}


def arch_from_config(
    cfg: Mapping[str, Any],
    *,
    model_id: str,
    name: str,
    source: str,
    family_hint: str = "",
    stated_params: float | None = None,
    stated_active_params: float | None = None,
) -> ModelArch:
    """Normalise one config mapping; ``source`` names the file (or entry) in error messages."""
    if not isinstance(cfg, Mapping):
        raise ConfigFileError(f"{source}: expected a JSON object of config fields, got {document_kind(cfg)}.")
    if "peft_type" in cfg and "hidden_size" not in cfg:  # adapter_config.json of a LoRA (PEFT)
        base = cfg.get("base_model_name_or_path")
        raise ConfigFileError(
            f"{source} is a PEFT adapter config (peft_type {cfg['peft_type']!r}), not a model's config.json: "
            f"it holds the adapter's rank, not the architecture. Pass the base model"
            f"{f' ({base!r})' if isinstance(base, str) and base else ''} as --model (its id or config.json) "
            "and size the adapter with the task (lora, qlora)."
        )
    text_cfg = cfg.get("text_config")
    if isinstance(text_cfg, Mapping) and "hidden_size" not in cfg:  # multimodal wrapper (Llama 4, Gemma 3)
        cfg = {**text_cfg, "model_type": text_cfg.get("model_type") or cfg.get("model_type")}
    archs = cfg.get("architectures")
    if archs is not None and (not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)):
        raise ConfigFileError(
            f"{source}: field 'architectures' is {archs!r}, but it must be a list of class names such as "
            '["LlamaForCausalLM"]. Fix that field (copy it from the model\'s Hugging Face config.json) or '
            "remove it."
        )
    model_type = cfg.get("model_type")
    if model_type is not None and model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigFileError(
            f"{source}: field 'model_type' is {model_type!r}, an architecture gpufleet cannot count yet. "
            f"Supported model_type values: {', '.join(SUPPORTED_MODEL_TYPES)}. Use the closest shipped model "
            "or a size class instead."
        )
    family = detect_family(cfg, family_hint)
    r = _Reader(cfg, source)
    common: dict[str, Any] = {
        "id": model_id,
        "name": name,
        "source": source,
        "stated_params": stated_params,
        "stated_active_params": stated_active_params,
    }
    if family in ("gpt2", "gpt_bigcode", "gptj"):
        h = r.int("n_embd", "hidden_size")
        heads = r.int("n_head", "num_attention_heads")
        kw: dict[str, Any] = {
            "hidden_size": h,
            "num_layers": r.int("n_layer", "num_hidden_layers"),
            "num_attention_heads": heads,
            "intermediate_size": r.int("n_inner", "intermediate_size", default=4 * h),
            "vocab_size": r.int("vocab_size"),
            "max_position_embeddings": r.int("n_positions", "max_position_embeddings"),
            "ffn_kind": "mlp",
            "norm_kind": "layernorm",
            "dropout": True,
        }
        if family == "gptj":
            kw |= {
                "num_kv_heads": heads,
                "position_kind": "rope",
                "parallel_block": True,
                "norms_per_layer": 1,
                "mlp_bias": True,
                "lm_head_bias": True,
                "dropout": False,
                "tie_word_embeddings": r.bool("tie_word_embeddings", False),
            }
        else:
            mqa = family == "gpt_bigcode" and r.bool("multi_query", True)
            kw |= {
                "num_kv_heads": 1 if mqa else heads,
                "position_kind": "learned",
                "linear_bias": True,
                "tie_word_embeddings": r.bool("tie_word_embeddings", True),
            }
        kw["head_dim"] = _even_head_dim(h, heads, source)
    elif family == "falcon":
        h = r.int("hidden_size", "n_embd")
        heads = r.int("num_attention_heads", "n_head")
        new_arch = r.bool("new_decoder_architecture", False)
        mqa_kv = 1 if r.bool("multi_query", True) else heads
        kv = r.int("num_kv_heads", default=heads) if new_arch else mqa_kv
        kw = {
            "hidden_size": h,
            "num_layers": r.int("num_hidden_layers", "n_layer"),
            "num_attention_heads": heads,
            "num_kv_heads": kv,
            "head_dim": _even_head_dim(h, heads, source),
            "intermediate_size": r.int("ffn_hidden_size", default=4 * h),
            "vocab_size": r.int("vocab_size"),
            # Falcon-7B/40B configs carry no max_position_embeddings: trained at 2048 (TII model cards)
            "max_position_embeddings": r.int("max_position_embeddings", default=2048),
            "ffn_kind": "mlp",
            "position_kind": "alibi" if r.bool("alibi", False) else "rope",
            "norm_kind": "layernorm",
            "norms_per_layer": 2 if new_arch or not r.bool("parallel_attn", True) else 1,
            "parallel_block": r.bool("parallel_attn", True),
            "linear_bias": r.bool("bias", False),
            "tie_word_embeddings": r.bool("tie_word_embeddings", True),
        }
    elif family in ("bert", "gpt"):
        h = r.int("hidden_size")
        heads = r.int("num_attention_heads")
        kw = {
            "hidden_size": h,
            "num_layers": r.int("num_hidden_layers"),
            "num_attention_heads": heads,
            "num_kv_heads": r.int("num_key_value_heads", default=heads),
            "head_dim": r.int("head_dim", required=False) or _even_head_dim(h, heads, source),
            "intermediate_size": r.int("intermediate_size", default=4 * h),
            "vocab_size": r.int("vocab_size"),
            "max_position_embeddings": r.int("max_position_embeddings"),
            "ffn_kind": "mlp",
            "position_kind": "learned",
            "norm_kind": "layernorm",
            "linear_bias": True,
            "dropout": True,
            "tie_word_embeddings": r.bool("tie_word_embeddings", True),
        }
        if family == "bert":
            kw |= {
                "is_decoder": False,
                "type_vocab_size": r.int("type_vocab_size", default=2),
                "embedding_norm": True,
                "final_norm": False,
                "pooler": True,
            }
    else:
        kw = _llama_like(r, family)
    r.check(family)
    kw.setdefault("is_decoder", True)
    _check_heads(kw, source)
    return ModelArch(**(common | kw))


def _llama_like(r: _Reader, family: str) -> dict[str, Any]:
    mtype = str(r.cfg.get("model_type", "gemma2" if family == "gemma2" else ""))
    h = r.int("hidden_size")
    heads = r.int("num_attention_heads")
    kw: dict[str, Any] = {
        "hidden_size": h,
        "num_layers": r.int("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": r.int("num_key_value_heads", default=heads),
        "head_dim": r.int("head_dim", required=False)
        or (h // heads if r.cfg.get("kv_lora_rank") else _even_head_dim(h, heads, r.source)),
        # Llama 4: ``intermediate_size`` is the experts' width, ``intermediate_size_mlp`` the dense layers'
        "intermediate_size": r.int("intermediate_size_mlp", "intermediate_size"),
        "vocab_size": r.int("vocab_size"),
        "max_position_embeddings": r.int("max_position_embeddings"),
        "ffn_kind": "gated",
        "qkv_bias": family == "qwen2" or r.bool("attention_bias", False),
        "tie_word_embeddings": r.bool("tie_word_embeddings", family in ("gemma", "gemma2")),
        "norms_per_layer": 4 if family == "gemma2" else 2,
        # transformers 5.17.0 Qwen3Attention / Gemma3Attention: q_norm and k_norm over each head
        "qk_norm": mtype in QK_NORM_MODEL_TYPES,
    }
    window = r.int("sliding_window", "attention_chunk_size", required=False)
    if family == "qwen2" and not r.bool("use_sliding_window", False):
        window = 0
    if window:
        kw["sliding_window"] = window
        kw["sliding_window_layer_fraction"] = SLIDING_LAYER_FRACTION.get(mtype, 1.0)
    experts = r.int("num_local_experts", "n_routed_experts", "num_experts", required=False)
    if not experts and r.cfg.get("num_experts_per_tok") is not None:
        raise ConfigFileError(
            f"{r.source}: field 'num_experts_per_tok' is {r.cfg['num_experts_per_tok']!r}, but the config "
            "gives no number of experts ('num_local_experts', 'n_routed_experts' or 'num_experts'), so it "
            "is not a mixture of experts. Add the experts field of a MoE config, or remove "
            "'num_experts_per_tok' for a dense model."
        )
    if experts:
        kw |= {
            "num_experts": experts,
            "experts_per_token": r.int("num_experts_per_tok"),
            "moe_intermediate_size": r.int(
                "moe_intermediate_size", "intermediate_size", default=kw["intermediate_size"]
            ),
            "num_shared_experts": 1
            if mtype in ONE_SHARED_EXPERT_TYPES
            else r.int("n_shared_experts", required=False),
            "first_k_dense_layers": r.int("first_k_dense_replace", required=False),
            # Llama 4 ``interleave_moe_layer_step``, Qwen MoE ``decoder_sparse_step``: every n-th layer is MoE
            "moe_layer_step": r.int("interleave_moe_layer_step", "decoder_sparse_step", default=1),
        }
    kv_lora = r.int("kv_lora_rank", required=False)
    if kv_lora:
        nope, rope = r.int("qk_nope_head_dim"), r.int("qk_rope_head_dim")
        kw |= {
            "kv_lora_rank": kv_lora,
            "q_lora_rank": r.int("q_lora_rank", required=False),
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": r.int("v_head_dim"),
            "head_dim": nope + rope,
        }
    return kw


def _check_heads(kw: Mapping[str, Any], source: str) -> None:
    heads, kv = kw["num_attention_heads"], kw["num_kv_heads"]
    if kw.get("head_dim", 1) < 1:
        raise ConfigFileError(
            f"{source}: num_attention_heads ({heads}) is larger than hidden_size ({kw['hidden_size']}), so a "
            "head would have no width. Fix one of the two fields (heads <= hidden_size), or give head_dim."
        )
    if kv > heads:
        raise ConfigFileError(
            f"{source}: num_key_value_heads ({kv}) is larger than num_attention_heads ({heads}). Key/value "
            "heads are at most the attention heads; fix one of the two fields."
        )
    experts, per_token = kw.get("num_experts", 0), kw.get("experts_per_token", 0)
    if experts and per_token > experts:
        raise ConfigFileError(
            f"{source}: num_experts_per_tok ({per_token}) is larger than the number of experts ({experts}). "
            "A token is routed to at most every expert; fix one of the two fields."
        )
    shared = kw.get("num_shared_experts", 0)
    if experts and shared > experts:
        raise ConfigFileError(
            f"{source}: n_shared_experts ({shared}) is larger than the number of routed experts ({experts}). "
            "Published MoE models have a few shared experts (DeepSeek-V3: 1 of 256); fix one of the two "
            "fields."
        )
    step, layers = kw.get("moe_layer_step", 1), kw["num_layers"]
    if experts and step > layers:
        raise ConfigFileError(
            f"{source}: the MoE layer step ({step}, 'interleave_moe_layer_step' or 'decoder_sparse_step') is "
            f"larger than num_hidden_layers ({layers}), so no layer would hold the experts. Use a step "
            "between 1 and the number of layers, or remove the experts fields for a dense model."
        )
    dense = kw.get("first_k_dense_layers", 0)
    if dense > layers:
        raise ConfigFileError(
            f"{source}: first_k_dense_replace ({dense}) is larger than num_hidden_layers ({layers}). At most "
            "every layer is dense; fix one of the two fields."
        )
    if heads % kv:
        raise ConfigFileError(
            f"{source}: num_attention_heads ({heads}) is not a multiple of the number of key/value heads "
            f"({kv}). Grouped-query attention needs heads = k x kv_heads; fix one of the two fields."
        )


def _even_head_dim(hidden: int, heads: int, source: str) -> int:
    """``hidden // heads`` when ``head_dim`` is not given; an uneven split is an error, not a rounded
    width."""
    if heads <= hidden and hidden % heads:
        raise ConfigFileError(
            f"{source}: hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}), and the "
            "config gives no head_dim, so a head's width is not a whole number. Fix one of the two fields "
            "(hidden_size = heads x head width), or give head_dim when the heads are not hidden_size wide."
        )
    return hidden // heads


#: ``torch_dtype``/``dtype`` values a transformers config carries (``str(torch.dtype)`` without ``torch.``)
_TORCH_DTYPES = frozenset({
    "auto", "float32", "float", "float16", "half", "bfloat16", "float64", "double", "float8_e4m3fn",
    "float8_e5m2", "int8", "uint8",
})  # fmt: skip
#: bits per weight a ``quantization_config`` may give (GPTQ/AWQ/bitsandbytes/HQQ: 1-8; 16 = unquantised)
_MAX_QUANT_BITS = 16


def check_user_config(cfg: Mapping[str, Any], source: str) -> None:
    """Fields of a user's config.json that gpufleet does not count but that must still be well formed: a
    misspelt ``torch_dtype`` or a ``quantization_config`` that is not an object means the file is not the
    model's config as downloaded."""
    for key in ("torch_dtype", "dtype"):
        value = cfg.get(key)
        if value is not None and (
            not isinstance(value, str) or value.removeprefix("torch.") not in _TORCH_DTYPES
        ):
            raise ConfigFileError(
                f"{source}: field {key!r} is {value!r}, not a torch dtype. Allowed: "
                f"{', '.join(sorted(_TORCH_DTYPES))}. Fix it (copy the config.json from the model's Hugging "
                "Face page) or remove it."
            )
    rope = cfg.get("rope_scaling")
    factor = rope.get("factor") if isinstance(rope, Mapping) else None
    if (rope is not None and not isinstance(rope, Mapping)) or (
        factor is not None
        and (isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor < math.inf)
    ):
        raise ConfigFileError(
            f"{source}: field 'rope_scaling' is {rope!r}, but it must be null or an object whose 'factor' "
            'is a positive number, such as {"rope_type": "linear", "factor": 4.0}. Fix it (copy the '
            "config.json from the model's Hugging Face page) or remove it."
        )
    quant = cfg.get("quantization_config")
    if quant is None:
        return
    if not isinstance(quant, Mapping):
        raise ConfigFileError(
            f"{source}: field 'quantization_config' is {quant!r}, but it must be an object such as "
            '{"quant_method": "gptq", "bits": 4}. Fix it (copy the config.json from the model\'s Hugging '
            "Face page) or remove it; choose the weight precision with --precision."
        )
    method = quant.get("quant_method")
    if method is not None and (not isinstance(method, str) or not method.strip()):
        raise ConfigFileError(
            f"{source}: quantization_config.quant_method is {method!r}, but it must be the method's name "
            "(e.g. gptq, awq, bitsandbytes, fp8, mxfp4). Fix it or remove the quantization_config."
        )
    for key in ("bits", "w_bit", "weight_bits"):
        bits = quant.get(key)
        if bits is not None and (
            isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= _MAX_QUANT_BITS
        ):
            raise ConfigFileError(
                f"{source}: quantization_config.{key} is {bits!r}, but it must be a whole number of bits "
                f"per weight from 1 to {_MAX_QUANT_BITS} (GPTQ/AWQ use 4 or 8). Fix it or remove the "
                "quantization_config; choose the weight precision with --precision."
            )


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a config.json as a dict, raising :class:`ConfigFileError` naming the file on any problem."""
    text = read_user_text(path, what="model config")
    data = parse_yaml_or_json(
        path.with_suffix(".json"),
        text,
        lambda kind, error: (
            f"{path} is not valid {kind} ({error}). Pass a Hugging Face config.json exactly as downloaded."
        ),
    )
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: expected a JSON object of config fields, got {document_kind(data)}.")
    check_user_config(data, str(path))
    return data
