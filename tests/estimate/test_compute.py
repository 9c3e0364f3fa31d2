"""FLOPs and bytes: hand-computed values for known models and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.estimate import compute as cx
from gpufleet.models import count_params, resolve_model


def test_dense_matmul_params_are_total_minus_embedding_and_norms() -> None:
    m = resolve_model("llama-2-7b")
    pc = count_params(m)
    shape = cx.model_shape(m)
    # untied Llama: every weight except the token embedding and the RMSNorm vectors is a matmul weight
    norms = pc.norms_per_layer * m.num_layers + pc.final
    assert shape.matmul_active_params == pytest.approx(pc.total - pc.embedding - norms)


def test_gpt3_training_flops_match_megatron_formula() -> None:
    # Narayanan et al. 2021 eq. 3 per token: 72 L h^2 (1 + s/(6h) + V/(12 h L)) / 1 (with the 4h MLP)
    m = resolve_model("gpt3-175b")
    s, h, L, V = 2048, m.hidden_size, m.num_layers, m.vocab_size
    megatron = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * h * L))
    fl = cx.training_flops_per_token(m, task="pretrain", seq_len=s, recompute="none")
    assert fl.model_total == pytest.approx(megatron, rel=0.01)  # biases make the 1 % difference


def test_palm_attention_term() -> None:
    m = resolve_model("llama-2-7b")
    fl = cx.training_flops_per_token(m, task="pretrain", seq_len=4096, recompute="none")
    assert fl.model_attention == pytest.approx(12 * m.num_layers * 4096 * m.num_attention_heads * m.head_dim)


def test_lora_is_about_two_thirds_of_full_training() -> None:
    m = resolve_model("llama-2-70b")
    full = cx.training_flops_per_token(m, task="pretrain", seq_len=2048, recompute="none")
    lora = cx.training_flops_per_token(m, task="lora", seq_len=2048, recompute="none")
    assert lora.model_matmul / full.model_matmul == pytest.approx(4 / 6, rel=0.02)


def test_full_recompute_adds_one_forward_to_hardware_flops_only() -> None:
    m = resolve_model("llama-3.1-8b")
    none = cx.training_flops_per_token(m, task="pretrain", seq_len=8192, recompute="none")
    full = cx.training_flops_per_token(m, task="pretrain", seq_len=8192, recompute="full")
    sel = cx.training_flops_per_token(m, task="pretrain", seq_len=8192, recompute="selective")
    assert full.model_total == none.model_total == sel.model_total
    assert full.hw_attention == pytest.approx(none.hw_attention * 4 / 3)
    assert sel.hw_total == none.hw_total


@pytest.mark.parametrize("name", ["llama-3.2-1b", "qwen2.5-0.5b", "llama-3.1-8b"])
def test_full_recompute_replays_the_layers_not_the_lm_head(name: str) -> None:
    """HF gradient checkpointing and Megatron's full recompute replay the decoder layers; the LM head runs
    once. With a 128-152k vocabulary the head is 12-28 % of a small model's matmul weights, so counting it
    in the replay (the old ``+2 N``) overstated the checkpointed step of exactly the models that were
    predicted too slow (llama-3.2-1b/3b, qwen2.5-0.5b on the H200 probe rows)."""
    m = resolve_model(name)
    s = cx.model_shape(m)
    none = cx.training_flops_per_token(m, task="full_finetune", seq_len=2048, recompute="none")
    full = cx.training_flops_per_token(m, task="full_finetune", seq_len=2048, recompute="full")
    replay = full.hw_matmul - none.hw_matmul
    assert replay == pytest.approx(2.0 * (s.matmul_active_params - s.lm_head_params))
    assert replay < 2.0 * s.matmul_active_params * (0.9 if name != "llama-3.1-8b" else 0.99)


def test_mixtral_active_params_near_stated() -> None:
    m = resolve_model("mixtral-8x7b")
    pc = count_params(m)
    shape = cx.model_shape(m)
    # stated 12.9 B active includes the 0.13 B embedding
    assert shape.matmul_active_params + pc.embedding == pytest.approx(12.9e9, rel=0.02)


def test_moe_decode_reads_more_experts_with_batch() -> None:
    m = resolve_model("mixtral-8x7b")
    one = cx.decode_weight_params(m, 1)
    many = cx.decode_weight_params(m, 256)
    assert one == pytest.approx(cx.model_shape(m).matmul_active_params)
    assert many > 3 * one


def test_sliding_window_caps_attention() -> None:
    m = resolve_model("mistral-7b")
    if m.sliding_window is None:
        pytest.skip("mistral-7b registry entry has no sliding window")
    far = cx.attention_flops_per_token(m, 10 * m.sliding_window)
    assert far <= cx.attention_flops_per_token(m, 10 * m.sliding_window + 1000)


@given(e=st.integers(1, 256), k=st.integers(1, 8), b1=st.integers(0, 500), b2=st.integers(0, 500))
def test_expected_experts_monotone_and_bounded(e: int, k: int, b1: int, b2: int) -> None:
    k = min(k, e)
    lo, hi = sorted((b1, b2))
    assert cx.moe_expected_experts(e, k, lo) <= cx.moe_expected_experts(e, k, hi) + 1e-9
    assert 0.0 <= cx.moe_expected_experts(e, k, hi) <= e


@given(a=st.integers(1, 32768), b=st.integers(1, 32768))
def test_prefill_flops_grow_with_length(a: int, b: int) -> None:
    m = resolve_model("llama-3.1-8b")
    lo, hi = sorted((a, b))
    assert cx.prefill_flops(m, lo) <= cx.prefill_flops(m, hi)
