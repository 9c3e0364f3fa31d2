"""Memory estimator: pinned facts, engine behaviour, training terms and every bad-input path."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError, UnknownNameError, UnsupportedError
from gpufleet.estimate.activations import activation_bytes_per_layer, logits_bytes
from gpufleet.estimate.memory import (
    MemoryEstimate,
    allowed_tp_degrees,
    estimate_memory,
    kv_cache_bytes,
    kv_cache_bytes_per_sequence,
    kv_cache_bytes_per_token,
    max_concurrent_sequences,
    optimizer_bytes_per_param,
    weights_bytes,
)
from gpufleet.models import count_params, resolve_model
from gpufleet.units import GB, GIB, KIB


def _est(**kw: Any) -> MemoryEstimate:
    base: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "task": "inference",
        "precision": "bf16",
        "gpu": "H100-SXM",
        "seq_len": 4096,
    }
    return estimate_memory(**(base | kw))


# ---- pinned facts ---------------------------------------------------------------------------------------


def test_llama2_7b_fp16_weights_12_55_gib() -> None:
    m = resolve_model("llama-2-7b")
    assert round(weights_bytes(count_params(m).total, "fp16") / GIB, 2) == 12.55
    est = estimate_memory(model=m, task="load", precision="fp16", gpu="A100-SXM-80GB", seq_len=1)
    assert round(est.breakdown_gib["weights"], 2) == 12.55
    assert est.allocated_gib == pytest.approx(est.breakdown_gib["weights"])


def test_llama31_70b_kv_320_kib_per_token() -> None:
    assert kv_cache_bytes_per_token("llama-3.1-70b", "bf16") == 320 * KIB
    assert kv_cache_bytes_per_token("llama-3.1-70b") == 320 * KIB  # default 16-bit
    assert kv_cache_bytes_per_token("llama-3.1-70b", "fp8") == 160 * KIB


def test_deepseek_v3_mla_kv_68_6_kib_per_token() -> None:
    assert kv_cache_bytes_per_token("deepseek-v3", "bf16") == 61 * 576 * 2
    assert round(kv_cache_bytes_per_token("deepseek-v3", "bf16") / KIB, 1) == 68.6


def test_mixed_precision_adam_16_bytes_per_param() -> None:
    assert optimizer_bytes_per_param("adamw", "bf16").total == 16
    assert optimizer_bytes_per_param("adamw", "bf16", fp32_grads=True).total == 18
    assert optimizer_bytes_per_param("adamw_8bit", "bf16").total == 10 + 8 / 256  # + fp32 absmax per 256
    assert optimizer_bytes_per_param("sgd", "bf16").total == 8
    assert optimizer_bytes_per_param("sgd_momentum", "bf16").total == 12
    assert optimizer_bytes_per_param("adamw", "fp32").total == 16
    assert optimizer_bytes_per_param("sgd", "fp32").total == 8


def test_kv_cache_pure_function() -> None:
    assert (
        kv_cache_bytes(num_layers=80, num_kv_heads=8, head_dim=128, tokens=1, bytes_per_element=2)
        == 320 * KIB
    )


def test_starcoder_transformers_matches_measured_allocation() -> None:
    # HF blog "Optimizing your LLM in production": 29.03 GiB torch max_memory_allocated, bf16, 20 in / 60 out
    est = estimate_memory(
        model="starcoder-15.5b",
        task="inference",
        precision="bf16",
        gpu="A100-SXM-40GB",
        seq_len=80,
        engine="transformers",
    )
    assert est.allocated_gib == pytest.approx(29.03, rel=0.02)
    assert est.fits


def test_bert_base_cased_fp32_weights_match_accelerate_mib() -> None:
    # accelerate estimate-memory: "413.18 MB" -- accelerate's convert_bytes divides by 1024, so MiB
    est = estimate_memory(
        model="bert-base-cased", task="load", precision="fp32", gpu="A100-SXM-80GB", seq_len=1
    )
    assert est.allocated_gib * 1024 == pytest.approx(413.18, rel=0.001)


def test_logits_buffer_6_gb_per_8k_sequence_at_128k_vocab() -> None:
    assert logits_bytes(resolve_model("llama-3.1-8b"), tokens=8192) / GB == pytest.approx(6.3, rel=0.01)


def test_korthikanti_34_plus_5as_over_h() -> None:
    """GPT-3 175B, no TP, no recompute, scores materialised: exactly sbh(34 + 5as/h) bytes per layer."""
    m = resolve_model("gpt3-175b")
    s, b, h, a = 2048, 1, 12288, 96
    got = activation_bytes_per_layer(m, seq_len=s, batch=b, recompute="none", flash_attention=False)
    assert got == s * b * h * (34 + 5 * a * s / h)
    sel = activation_bytes_per_layer(
        m, seq_len=s, batch=b, tp=8, recompute="selective", flash_attention=False
    )
    assert sel == s * b * h * 34 / 8  # eq. with sequence parallelism and selective recompute
    no_sp = activation_bytes_per_layer(
        m, seq_len=s, batch=b, tp=8, sequence_parallel=False, recompute="none", flash_attention=False
    )
    assert no_sp == s * b * h * (10 + 24 / 8 + 5 * a * s / (h * 8))
    full = activation_bytes_per_layer(m, seq_len=s, batch=b, tp=8, recompute="full")
    assert full == 2 * s * b * h / 8


# ---- inference behaviour --------------------------------------------------------------------------------


def test_vllm_reserve_and_usable_from_device_gib() -> None:
    est = _est()
    spec = get_spec("H100-SXM")
    assert est.capacity_gib == spec.memory_gib
    # vllm 0.33.0 request_memory: gpu_memory_utilization x total, counted from a snapshot taken after the
    # CUDA context exists, so the context sits outside the 0.9 budget
    assert est.usable_gib == pytest.approx(spec.memory_gib * 0.9)
    assert est.fits == (est.per_gpu_gib - est.breakdown_gib["cuda_context"] <= spec.memory_gib * 0.9)
    assert est.per_gpu_gib > est.allocated_gib


def test_transformers_no_pre_reservation() -> None:
    est = _est(engine="transformers")
    assert est.usable_gib == pytest.approx(est.capacity_gib - est.breakdown_gib["cuda_context"])
    assert "cuda_graphs" not in est.breakdown_gib


def test_trtllm_keeps_a_tenth_of_free_memory() -> None:
    est = _est(engine="trtllm", batch=1)
    free = (
        est.capacity_gib
        - 0.5
        - est.breakdown_gib["weights"]
        - est.breakdown_gib["activations"]
        - (est.breakdown_gib["logits"])
    )
    assert est.usable_gib == pytest.approx(est.capacity_gib - 0.5 - 0.1 * free)


def test_vllm_block_rounding() -> None:
    m = resolve_model("llama-3.1-8b")
    one = kv_cache_bytes_per_sequence(m, tokens=17, block_tokens=16)
    assert one == kv_cache_bytes_per_sequence(m, tokens=32)


def test_sliding_window_caps_kv() -> None:
    mistral = resolve_model("mistral-7b")
    assert kv_cache_bytes_per_sequence(mistral, tokens=32768) == kv_cache_bytes_per_sequence(
        mistral, tokens=4096
    )
    gemma = resolve_model("gemma-2-9b")
    long, short = (kv_cache_bytes_per_sequence(gemma, tokens=t) for t in (8192, 4096))
    assert long == pytest.approx(short * 1.5)  # half the layers stop growing at 4096


def test_kv_fp8_halves_the_cache() -> None:
    assert _est(kv_precision="fp8").breakdown_gib["kv_cache"] == pytest.approx(
        _est().breakdown_gib["kv_cache"] / 2
    )


def test_mla_cache_not_split_by_tp() -> None:
    a = _est(model="deepseek-v3", precision="fp8", gpu="H200", tp=8, batch=4)
    per_seq = kv_cache_bytes_per_token("deepseek-v3") * 4096 / GIB
    assert a.breakdown_gib["kv_cache"] == pytest.approx(4 * per_seq)


def test_gqa_kv_replicated_when_tp_exceeds_kv_heads() -> None:
    m = resolve_model("llama-3.1-70b")
    at8 = kv_cache_bytes_per_sequence(m, tokens=1000, tp=8)
    assert kv_cache_bytes_per_sequence(m, tokens=1000, tp=16) == at8  # one KV head per rank either way


def test_quantised_weights_keep_16_bit_embeddings() -> None:
    m = resolve_model("llama-3.1-8b")
    pc = count_params(m)
    est = _est(task="load", precision="int4")
    expect = (pc.total - pc.embedding - pc.lm_head - pc.final) * (0.5 + 4 / 128) + (
        pc.embedding + pc.lm_head + pc.final
    ) * 2
    assert est.breakdown_gib["weights"] * GIB == pytest.approx(expect)


def test_max_concurrent_sequences_matches_pool() -> None:
    n = max_concurrent_sequences(
        model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", tp=1, pp=1, context_len=4096
    )
    assert n >= 1
    fits = _est(batch=n)
    too_many = _est(batch=n + 1)
    assert fits.fits and not too_many.fits


def test_max_concurrent_sequences_zero_when_weights_do_not_fit() -> None:
    assert (
        max_concurrent_sequences(
            model="llama-3.1-70b", gpu="L4", precision="bf16", tp=1, pp=1, context_len=4096
        )
        == 0
    )


def test_max_concurrent_sequences_encoder_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="encoder-only"):
        max_concurrent_sequences(
            model="bert-base-uncased", gpu="L4", precision="fp16", tp=1, pp=1, context_len=512
        )


def test_encoder_inference_has_no_kv_cache() -> None:
    est = _est(model="bert-base-uncased", seq_len=512, batch=32, engine="transformers")
    assert "kv_cache" not in est.breakdown_gib and "logits" not in est.breakdown_gib


# ---- training -------------------------------------------------------------------------------------------


def test_pretrain_breakdown_adds_up_to_16_bytes_per_param() -> None:
    est = _est(task="pretrain", seq_len=2048)
    params = count_params(resolve_model("llama-3.1-8b")).total
    model_states = sum(est.breakdown_gib[k] for k in ("weights", "gradients", "optimizer_states"))
    assert model_states * GIB == pytest.approx(16 * params)
    assert not est.fits  # 8B full training needs > 120 GiB of model states on one GPU


def test_zero3_shards_everything_over_dp() -> None:
    z0 = _est(task="pretrain", dp=8, zero_stage=0)
    z3 = _est(task="pretrain", dp=8, zero_stage=3)
    for key in ("weights", "gradients", "optimizer_states"):
        assert z3.breakdown_gib[key] == pytest.approx(z0.breakdown_gib[key] / 8)
    assert z3.breakdown_gib["activations"] == z0.breakdown_gib["activations"]


def test_pipeline_reports_heaviest_stage() -> None:
    """Llama-3.1-70B, TP 8 x PP 4: stage 1 holds 20 layers + the embedding and 4 micro-batches (1F1B)."""
    m = resolve_model("llama-3.1-70b")
    pc = count_params(m)
    est = _est(model=m, task="pretrain", tp=8, pp=4, dp=1, batch=1, seq_len=8192)
    rep = pc.tp_replicated_per_layer
    stage1 = 20 * ((pc.dense_layer - rep) / 8 + rep) + pc.embedding / 8
    assert est.breakdown_gib["weights"] * GIB == pytest.approx(2 * stage1)
    assert "logits" not in est.breakdown_gib  # the last stage is lighter here
    one_mb = 20 * activation_bytes_per_layer(m, seq_len=8192, batch=1, tp=8)
    assert est.breakdown_gib["activations"] * GIB == pytest.approx(4 * one_mb)


def test_pipeline_last_stage_heaviest_with_large_vocab_logits() -> None:
    est = _est(model="gemma-2-2b", task="pretrain", pp=2, seq_len=8192, batch=4, recompute="full")
    assert "logits" in est.breakdown_gib  # 256k vocab logits outweigh stage 1's extra micro-batch


def test_recompute_full_uses_less_than_selective() -> None:
    full, sel = _est(task="pretrain", recompute="full"), _est(task="pretrain", recompute="selective")
    assert full.breakdown_gib["activations"] < sel.breakdown_gib["activations"] / 5


def test_lora_trainable_state_small_and_base_frozen() -> None:
    est = _est(task="lora")
    assert est.breakdown_gib["optimizer_states"] < 0.01 * est.breakdown_gib["weights"] * 16
    assert "activations" in est.breakdown_gib


def test_qlora_base_in_nf4() -> None:
    q, lo = _est(task="qlora", model="llama-2-70b"), _est(task="lora", model="llama-2-70b")
    assert q.breakdown_gib["weights"] < lo.breakdown_gib["weights"] / 3


def test_assumptions_are_stated() -> None:
    text = " ".join(_est(task="pretrain", tp=2, pp=2, dp=2, zero_stage=1).assumptions)
    for needle in ("CUDA context", "Korthikanti", "ZeRO stage 1", "fragmentation", "Heaviest pipeline"):
        assert needle in text


# ---- bad input ------------------------------------------------------------------------------------------


def test_tp_not_dividing_heads() -> None:
    with pytest.raises(InputError, match=r"Allowed TP degrees: 1, 2, 4, 8, 16, 32, 64"):
        _est(model="llama-3.1-70b", tp=3)


def test_tp_not_matching_kv_heads() -> None:
    # Phi-3-medium: 40 heads, 10 KV heads: TP 4 divides 40 but neither divides nor is a multiple of 10
    with pytest.raises(InputError, match="key/value heads"):
        _est(model="phi-3-medium", tp=4)
    assert allowed_tp_degrees(resolve_model("phi-3-medium")) == [1, 2, 5, 10, 20, 40]


def test_pp_more_than_layers() -> None:
    with pytest.raises(InputError, match="exceeds the 32 layers"):
        _est(pp=33)


@pytest.mark.parametrize("field", ["batch", "seq_len", "tp", "pp", "dp", "lora_rank"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_counts(field: str, value: int) -> None:
    with pytest.raises(InputError, match=field):
        _est(**{field: value})


def test_unknown_precision() -> None:
    with pytest.raises(InputError, match="Unknown precision"):
        _est(precision="fp12")


def test_unknown_kv_precision() -> None:
    with pytest.raises(InputError, match="Unknown precision"):
        _est(kv_precision="fp5")


def test_unsupported_kv_precision() -> None:
    with pytest.raises(UnsupportedError, match="KV cache in nf4"):
        _est(kv_precision="nf4")


def test_training_in_int4_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="qlora"):
        _est(task="pretrain", precision="int4")


def test_unknown_task() -> None:
    with pytest.raises(InputError, match="Unknown task"):
        _est(task="serve")


def test_unknown_engine() -> None:
    with pytest.raises(InputError, match="Unknown inference engine"):
        _est(engine="ollama")


def test_unknown_optimizer() -> None:
    with pytest.raises(InputError, match="Unknown optimizer"):
        _est(task="pretrain", optimizer="lion")


def test_bad_zero_stage() -> None:
    with pytest.raises(InputError, match="zero_stage"):
        _est(task="pretrain", zero_stage=4)


def test_bad_recompute() -> None:
    with pytest.raises(InputError, match="recompute"):
        _est(task="pretrain", recompute="some")


def test_unknown_gpu() -> None:
    with pytest.raises(UnknownNameError):
        _est(gpu="H900")


def test_unknown_model() -> None:
    with pytest.raises(UnknownNameError):
        _est(model="llama-9")


def test_bad_context_len() -> None:
    with pytest.raises(InputError, match="context_len"):
        max_concurrent_sequences(
            model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", tp=1, pp=1, context_len=0
        )


# ---- expert parallelism ---------------------------------------------------------------------------------


def test_expert_parallel_splits_routed_experts_only() -> None:
    m = resolve_model("mixtral-8x7b")
    pc = count_params(m)
    one = _est(model=m, task="load", ep=1)
    eight = _est(model=m, task="load", ep=8)
    routed = 32 * 8 * 3 * 4096 * 14336
    saved = (one.breakdown_gib["weights"] - eight.breakdown_gib["weights"]) * GIB
    assert saved == pytest.approx(routed * 7 / 8 * 2)
    assert eight.breakdown_gib["weights"] * GIB > (pc.total - routed) * 2


def test_zero_shards_experts_over_expert_data_parallel_group() -> None:
    kw: dict[str, Any] = {"model": "mixtral-8x7b", "task": "pretrain", "dp": 8, "zero_stage": 1}
    no_ep, ep8 = _est(**kw), _est(ep=8, **kw)
    # ep=8 of dp=8: experts split 8 ways by EP and not sharded again by ZeRO -> same optimizer state per GPU
    assert ep8.breakdown_gib["optimizer_states"] == pytest.approx(no_ep.breakdown_gib["optimizer_states"])
    assert ep8.breakdown_gib["weights"] < no_ep.breakdown_gib["weights"]


def test_expert_parallel_must_divide_experts() -> None:
    with pytest.raises(InputError, match="Allowed EP degrees: 1, 2, 4, 8"):
        _est(model="mixtral-8x7b", ep=3)


def test_expert_parallel_on_dense_model() -> None:
    with pytest.raises(InputError, match="dense models allow only 1"):
        _est(ep=2)
