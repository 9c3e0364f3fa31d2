"""KV-cache sizes: per element, per token and per sequence, for MHA/GQA/MQA and MLA (docs/memory.md)."""

from __future__ import annotations

from gpufleet.errors import UnsupportedError
from gpufleet.models.arch import ModelArch
from gpufleet.models.registry import resolve_model
from gpufleet.precision import BYTES_PER_ELEMENT, check_precision

#: KV-cache element sizes: fp8/int8 KV uses per-tensor scales (vLLM ``kv_cache_dtype=fp8``, TRT-LLM) [bytes]
_KV_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": BYTES_PER_ELEMENT["fp4"]}


def kv_cache_bytes(
    *, num_layers: int, num_kv_heads: int, head_dim: int, tokens: float, bytes_per_element: float
) -> float:
    """MHA/GQA/MQA KV cache: 2 (K and V) x layers x kv_heads x head_dim x tokens x bytes [bytes]."""
    return 2.0 * num_layers * num_kv_heads * head_dim * tokens * bytes_per_element


def mla_kv_cache_bytes(
    *, num_layers: int, kv_lora_rank: int, qk_rope_head_dim: int, tokens: float, bytes_per_element: float
) -> float:
    """MLA latent cache (DeepSeek-V2 paper, sec. 2.1.2): layers x (kv_lora_rank + rope) x tokens x bytes."""
    return float(num_layers) * (kv_lora_rank + qk_rope_head_dim) * tokens * bytes_per_element


def kv_bytes_per_element(kv_precision: str | None) -> float:
    """KV-cache element size [bytes]; None = 16 bit (engines' ``kv_cache_dtype=auto`` on 16-bit models)."""
    if kv_precision is None:
        return 2.0
    prec = check_precision(kv_precision)
    if prec not in _KV_BYTES:
        raise UnsupportedError(
            f"KV cache in {prec} is not supported by vLLM or TRT-LLM. Allowed KV precisions: "
            f"{', '.join(_KV_BYTES)}. Use --kv-precision fp8 to halve the cache."
        )
    return _KV_BYTES[prec]


def kv_heads_per_rank(m: ModelArch, tp: int) -> float:
    """KV heads one TP rank holds: kv/tp, at least 1 (replicated when tp > kv heads, as in vLLM)."""
    return max(1.0, m.num_kv_heads / tp)


def kv_cache_bytes_per_token(model: ModelArch | str, kv_precision: str | None = None) -> float:
    """KV cache of one token of one sequence over all layers, no TP, no sliding window [bytes/token]."""
    m = resolve_model(model)
    return _kv_per_token_layer(m, 1, kv_bytes_per_element(kv_precision)) * m.num_layers


def _kv_per_token_layer(m: ModelArch, tp: int, bpe: float) -> float:
    if not m.is_decoder:
        return 0.0
    if m.is_mla:  # the latent is not split across TP ranks (vLLM and SGLang replicate it)
        return mla_kv_cache_bytes(
            num_layers=1,
            kv_lora_rank=m.kv_lora_rank,
            qk_rope_head_dim=m.qk_rope_head_dim,
            tokens=1,
            bytes_per_element=bpe,
        )
    return 2.0 * kv_heads_per_rank(m, tp) * m.head_dim * bpe


def kv_cache_bytes_per_sequence(
    m: ModelArch,
    *,
    tokens: int,
    kv_precision: str | None = None,
    tp: int = 1,
    num_layers: int | None = None,
    block_tokens: int = 1,
) -> float:
    """KV cache of one sequence of ``tokens`` on one TP rank over ``num_layers`` layers [bytes].

    Tokens round up to whole blocks; on sliding-window layers only the last ``sliding_window`` tokens are kept
    (vLLM's hybrid allocator, TRT-LLM cyclic KV).
    """
    layers = m.num_layers if num_layers is None else num_layers
    per_layer_token = _kv_per_token_layer(m, tp, kv_bytes_per_element(kv_precision))
    full = _round_up(tokens, block_tokens)
    if m.sliding_window:
        windowed = _round_up(min(tokens, m.sliding_window), block_tokens)
        frac = m.sliding_window_layer_fraction
        return per_layer_token * layers * ((1.0 - frac) * full + frac * windowed)
    return per_layer_token * layers * full


def _round_up(tokens: int, block: int) -> int:
    return -(-tokens // block) * block


__all__ = [
    "kv_bytes_per_element",
    "kv_cache_bytes",
    "kv_cache_bytes_per_sequence",
    "kv_cache_bytes_per_token",
    "kv_heads_per_rank",
    "mla_kv_cache_bytes",
]
