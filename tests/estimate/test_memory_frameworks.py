"""Memory model vs the frameworks' own formulas, each expected value computed here from the framework's code
(deepspeed 0.19.8, torch AdamW, peft 0.21.2, litgpt 0.5.13, torchtune 0.6.1, vllm 0.33.0), not from ours."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError
from gpufleet.estimate.cases import parse_cases_csv
from gpufleet.estimate.memory import estimate_memory, max_concurrent_sequences, optimizer_bytes_per_param
from gpufleet.estimate.predict import predict_case
from gpufleet.units import GIB

#: Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json): parameters, vocabulary x hidden (largest module)
P_8B = 8_030_261_248
EMBED_8B = 128_256 * 4_096
MODEL_STATES = ("weights", "gradients", "optimizer_states", "fp32_grad_partition", "zero3_gathered")


def _states_bytes(**kw: Any) -> float:
    est = estimate_memory(
        model="llama-3.1-8b", task="full_finetune", precision="bf16", gpu="H100-SXM", seq_len=1, batch=1,
        recompute="full", **kw,
    )  # fmt: skip
    return sum(est.breakdown_gib.get(k, 0.0) for k in MODEL_STATES) * GIB


@pytest.mark.parametrize("n", [8, 16, 64])
def test_zero2_model_states_match_deepspeed_estimator(n: int) -> None:
    # deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs(cpu_offload=False):
    # gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
    expected = 2 * P_8B + int(18 * P_8B / n)
    assert _states_bytes(dp=n, zero_stage=2) == pytest.approx(expected, rel=1e-3)
    # cpu_offload=True: gpu_mem = 2 * total_params
    assert _states_bytes(dp=n, zero_stage=2, cpu_offload=True) == pytest.approx(2 * P_8B, rel=1e-3)


@pytest.mark.parametrize("n", [8, 16, 64])
def test_zero3_model_states_match_deepspeed_estimator(n: int) -> None:
    # deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs: largest_layer_memory =
    # 4 * largest_layer_params; cpu_offload=False: gpu_mem = largest + int(18 * total_params / total_gpus);
    # cpu_offload=True, cpu_offload_params=False: largest + int(2 * total_params / total_gpus)
    largest = 4 * EMBED_8B
    assert _states_bytes(dp=n, zero_stage=3) == pytest.approx(largest + int(18 * P_8B / n), rel=1e-3)
    offload = _states_bytes(dp=n, zero_stage=3, cpu_offload=True)
    assert offload == pytest.approx(largest + int(2 * P_8B / n), rel=1e-3)
    # cpu_offload=True, cpu_offload_params=True: gpu_mem = largest_layer_memory
    params_too = _states_bytes(dp=n, zero_stage=3, cpu_offload=True, offload_params=True)
    assert params_too == pytest.approx(largest, rel=1e-3)


def test_fp32_gradient_copy_reuses_the_freed_activations() -> None:
    """The step's fp32 gradient partition (4P/N) is made after the backward has freed the activations, so
    at a long sequence it adds nothing: peak = 16-bit states + max(activations + logits, fp32 copy)."""
    est = estimate_memory(
        model="llama-3.1-8b", task="full_finetune", precision="bf16", gpu="H100-SXM", seq_len=8192, batch=1,
        dp=8, zero_stage=2, recompute="selective",
    )  # fmt: skip
    b = est.breakdown_gib
    assert (b["activations"] + b["logits"]) * GIB > 4 * P_8B / 8
    assert "fp32_grad_partition" not in b
    # ZeRO-2: 2 B weights + 2 B grads / 8 + 12 B fp32 master and moments / 8
    assert (b["weights"] + b["gradients"] + b["optimizer_states"]) * GIB == pytest.approx(
        2 * P_8B + 14 * P_8B / 8, rel=1e-3
    )


def test_pure_bf16_adamw_keeps_its_moments_in_bf16() -> None:
    # torch.optim.AdamW _init_group: exp_avg = zeros_like(p), exp_avg_sq = zeros_like(p) -> bf16 params give
    # 2 + 2 bytes of moments; with bf16 weights and grads 2 + 2 + 4 = 8 bytes per parameter
    bpp = optimizer_bytes_per_param("adamw", "bf16", master_weights=False)
    assert (bpp.weights, bpp.gradients, bpp.optimizer_states) == (2.0, 2.0, 4.0)
    # mixed precision keeps fp32 master + fp32 moments (12); 8-bit states are 1 byte each either way
    assert optimizer_bytes_per_param("adamw", "bf16").optimizer_states == 12.0
    assert (
        optimizer_bytes_per_param("adamw8bit", "bf16", master_weights=False).optimizer_states == 2 + 8 / 256
    )


@pytest.mark.parametrize(("fp32", "bytes_w", "bytes_states"), [(True, 4, 8), (False, 2, 4)])
def test_lora_adapter_dtype(fp32: bool, bytes_w: int, bytes_states: int) -> None:
    """PEFT upcasts adapters to fp32 (autocast_adapter_dtype=True); torchtune/litgpt keep them bf16. Rank-16
    LoRA on Llama-3.1-8B's q, k, v, o, gate, up, down: 32 x 16 x (2(4096+4096) + 2(4096+1024) +
    3(4096+14336)) = 41,943,040 parameters."""
    n = 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336))
    assert n == 41_943_040
    est = estimate_memory(
        model="llama-3.1-8b", task="lora", precision="bf16", gpu="H100-SXM", seq_len=2048, adapter_fp32=fp32
    )
    b = est.breakdown_gib
    assert b["lora_adapters"] * GIB == pytest.approx(n * bytes_w)
    assert b["gradients"] * GIB == pytest.approx(n * bytes_w)
    assert b["optimizer_states"] * GIB == pytest.approx(n * bytes_states)  # AdamW m + v in the adapter dtype


def test_litgpt_lora_dropout_stores_mask_and_dropped_input() -> None:
    """litgpt lora.py: ``F.linear(self.lora_dropout(x), self.lora_A)`` once on the QKV input (lora_dropout
    0.05): the bool mask (1 B) and the bf16 dropped input (2 B) per token x hidden, every layer."""
    kw: dict[str, Any] = {
        "model": "llama-2-7b", "task": "lora", "precision": "bf16", "gpu": "A100-SXM-40GB", "seq_len": 1304,
        "recompute": "none",
    }  # fmt: skip
    with_dropout = estimate_memory(lora_dropout="shared_input", **kw).breakdown_gib["activations"]
    without = estimate_memory(**kw).breakdown_gib["activations"]
    assert (with_dropout - without) * GIB == pytest.approx(3 * 1304 * 4096 * 32)
    per_module = estimate_memory(lora_dropout="per_module", **kw).breakdown_gib["activations"]
    # PEFT drops each target's input: q, k, v, gate, up (h each), o (32 x 128), down (11008)
    width = 5 * 4096 + 32 * 128 + 11008
    assert (per_module - without) * GIB == pytest.approx(3 * 1304 * width * 32)


def test_vllm_kv_blocks_and_concurrency() -> None:
    """vllm 0.33.0: available KV = gpu_memory_utilization x total - non-KV (weights, profiling peak, sampler
    logits) - CUDA-graph estimate, the CUDA context outside the budget (snapshot taken after it);
    num_blocks = available // (page per layer x layers); page = 2 x 16 x kv_heads x head_dim x 2 B; max
    concurrency = num_blocks / cdiv(max_model_len, 16)."""
    est = estimate_memory(
        model="llama-3.1-8b", task="inference", precision="bf16", gpu="H100-SXM", seq_len=8192, batch=1
    )
    b = {k: v * GIB for k, v in est.breakdown_gib.items()}
    assert b["weights"] == pytest.approx(2 * P_8B)
    non_kv = b["weights"] + b["activations"] + b["logits"]
    available = 0.9 * get_spec("H100-SXM").memory_gib * GIB - non_kv - b["cuda_graphs"]
    blocks = math.floor(available / (2 * 16 * 8 * 128 * 2 * 32))
    expected = blocks // (8192 // 16)
    got = max_concurrent_sequences(
        model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", tp=1, pp=1, context_len=8192
    )
    assert got == expected == 55


HEADER = "case_id,metric,model,task,gpu,gpu_count,precision,batch,seq_len,software,optimizer,measured,unit\n"


def test_torchtune_distributed_full_finetune_is_fsdp_with_bf16_adamw() -> None:
    """torchtune 0.6.1 llama3_1/8B_full.yaml: torch.optim.AdamW (bf16 moments, no fp32 master),
    optimizer_in_bwd False, activation checkpointing, FSDP fully_shard over the 8 ranks."""
    row = "T1,peak_memory_gib,llama-3.1-8b,full_finetune,H100-SXM,8,bf16,16,2048,torchtune,,30,GiB\n"
    (case,) = parse_cases_csv(HEADER + row, "t.csv")
    pred = predict_case(case)
    est = estimate_memory(
        model="llama-3.1-8b", task="full_finetune", precision="bf16", gpu="H100-SXM", dp=8, batch=2,
        seq_len=2048, zero_stage=3, optimizer="adamw", master_weights=False, recompute="full",
        chunked_loss=True, allow_fallback=True,
    )  # fmt: skip
    assert pred.predicted == pytest.approx(est.per_gpu_gib)
    b = est.breakdown_gib
    assert b["optimizer_states"] * GIB == pytest.approx(P_8B * 4 / 8, rel=1e-3)  # bf16 m + v, sharded
    assert b["weights"] * GIB == pytest.approx(P_8B * 2 / 8, rel=1e-3)
    assert "fp32_grad_partition" not in b  # pure bf16: the step uses the bf16 gradient


def test_unsloth_checkpoints_live_on_the_host() -> None:
    """unsloth_zoo UnslothCheckpointFunction copies each layer's input (s x b x h bf16) to pinned host
    buffers: with full recompute the GPU keeps one checkpoint instead of L (Llama-3.1-8B: 32 layers)."""
    kw: dict[str, Any] = {
        "model": "llama-3.1-8b", "task": "qlora", "precision": "nf4", "gpu": "RTX-4090", "seq_len": 2048,
        "batch": 2, "recompute": "full",
    }  # fmt: skip
    on_gpu = estimate_memory(**kw).breakdown_gib["activations"]
    offloaded = estimate_memory(offload_checkpoints=True, **kw).breakdown_gib["activations"]
    assert (on_gpu - offloaded) * GIB == pytest.approx(31 * 2048 * 2 * 4096 * 2)


def test_trl_preset_follows_sftconfig_defaults() -> None:
    from gpufleet.estimate.recipes import recipe_for

    trl = recipe_for(None, "TRL SFTTrainer, PEFT LoRA r=16")
    assert trl is not None and trl.name == "trl"
    assert trl.recompute == "full"  # trl 1.16.0 SFTConfig gradient_checkpointing=True
    assert not trl.master_weights and trl.adapter_fp32
    assert recipe_for(None, "ctrl-based model, HF Trainer") is not None
    ctrl = recipe_for(None, "ctrl-based model, HF Trainer")
    assert ctrl is not None and ctrl.name == "hf_trainer"  # "trl" only as a whole word


def test_hybrid_sharding_shards_within_a_node() -> None:
    """FSDP HYBRID_SHARD on 4 nodes x 8 GPUs: states sharded over the 8 GPUs of a node, replicated across
    nodes: Llama-3.1-8B mixed-precision AdamW optimizer states 12 B x P / 8, not / 32."""
    kw: dict[str, Any] = {
        "model": "llama-3.1-8b", "task": "full_finetune", "precision": "bf16", "gpu": "H100-SXM",
        "seq_len": 4096, "dp": 32, "zero_stage": 3, "recompute": "full",
    }  # fmt: skip
    hybrid = estimate_memory(shard_degree=8, **kw).breakdown_gib
    assert hybrid["optimizer_states"] * GIB == pytest.approx(12 * P_8B / 8)
    assert hybrid["weights"] * GIB == pytest.approx(2 * P_8B / 8)
    full = estimate_memory(**kw).breakdown_gib
    assert full["optimizer_states"] * GIB == pytest.approx(12 * P_8B / 32)
    row = "H1,peak_memory_gib,llama-3.1-8b,full_finetune,H100-SXM,32,bf16,32,4096,pytorch,,30,GiB,"
    row += "FSDP hybrid shard + full recompute\n"
    (case,) = parse_cases_csv(HEADER.replace("unit\n", "unit,note\n") + row, "t.csv")
    pred = predict_case(case)
    assert pred.predicted == pytest.approx(
        estimate_memory(shard_degree=8, allow_fallback=True, batch=1, **kw).allocated_gib
    )
    with pytest.raises(InputError, match="must divide dp"):
        estimate_memory(shard_degree=5, **kw)


def test_torchtune_fsdp_cpu_offload_moves_the_parameters() -> None:
    """torchtune 0.6.1 shard_model(cpu_offload=True) sets FSDP2 CPUOffloadPolicy: "FSDP will offload
    parameters, gradients, and optimizer states to CPU" (70B_full.yaml fsdp_cpu_offload: True)."""
    row = "T3,peak_memory_gib,llama-3.1-70b,full_finetune,A100-SXM-80GB,8,bf16,16,2048,torchtune,,13.9,GiB,"
    row += "CPU offload with fused optimizer\n"
    (case,) = parse_cases_csv(HEADER.replace("unit\n", "unit,note\n") + row, "t.csv")
    pred = predict_case(case)
    est = estimate_memory(
        model="llama-3.1-70b", task="full_finetune", precision="bf16", gpu="A100-SXM-80GB", dp=8, batch=2,
        seq_len=2048, zero_stage=3, optimizer="adamw", master_weights=False, recompute="full",
        chunked_loss=True, cpu_offload=True, offload_params=True, allow_fallback=True,
    )  # fmt: skip
    assert pred.predicted == pytest.approx(est.per_gpu_gib)
    b = est.breakdown_gib
    assert b["weights"] == b["gradients"] == b["optimizer_states"] == 0.0
    assert b["zero3_gathered"] * GIB == pytest.approx(4 * 128_256 * 8_192)  # the gathered embedding + grad
    with pytest.raises(InputError, match="offload_params"):
        estimate_memory(
            model="llama-3.1-70b", task="full_finetune", precision="bf16", gpu="A100-SXM-80GB", dp=8,
            seq_len=2048, zero_stage=2, cpu_offload=True, offload_params=True,
        )  # fmt: skip


def test_peft_kbit_training_upcasts_embeddings_and_lm_head() -> None:
    """peft 0.21.2 prepare_model_for_kbit_training: every fp16/bf16 parameter that is not Params4bit goes
    to fp32. Llama-3.1-8B (untied): embed_tokens + lm_head = 2 x 128256 x 4096 parameters, 2 -> 4 bytes."""
    kw: dict[str, Any] = {
        "model": "llama-3.1-8b", "task": "qlora", "precision": "nf4", "gpu": "RTX-4090", "seq_len": 2048,
    }  # fmt: skip
    peft = estimate_memory(kbit_upcast=True, **kw).breakdown_gib["weights"]
    plain = estimate_memory(**kw).breakdown_gib["weights"]
    # embed_tokens + lm_head + the final RMSNorm (4096); the per-layer norms (2 x 4096 x 32, 0.5 MB) are
    # counted with the layers at the base's bytes
    assert (peft - plain) * GIB == pytest.approx((2 * EMBED_8B + 4096) * (4 - 2))
    # a QLoRA case naming no trainer runs PEFT's k-bit preparation (the bitsandbytes preset)
    row = "Q1,peak_memory_gib,llama-3.1-8b,qlora,RTX-4090,1,nf4,1,2048,pytorch,,10,GiB\n"
    (case,) = parse_cases_csv(HEADER + row, "t.csv")
    assert any("fp32 (PEFT prepare_model_for_kbit_training)" in a for a in _assumptions_of(case))


def _assumptions_of(case: Any) -> tuple[str, ...]:
    from gpufleet.estimate.predict import _recipe_kwargs

    kw = _recipe_kwargs(case, {})
    kw.pop("speed_recompute")
    est = estimate_memory(
        model=case.model, task=case.task, precision=case.precision, gpu=case.gpu, seq_len=2048, **kw
    )
    return est.assumptions
