"""Fine-tuning recipes: optimizers, pure 16-bit weights, optimizer-in-backward, paged states, presets; the
schema's optional optimizer column."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.estimate.cases import parse_cases_csv
from gpufleet.estimate.memory import estimate_memory, optimizer_bytes_per_param
from gpufleet.estimate.recipes import RECIPES, get_recipe, recipe_for

FT: dict[str, Any] = {
    "model": "llama-3.1-8b", "task": "full_finetune", "precision": "bf16", "gpu": "RTX-4090", "batch": 2,
    "seq_len": 2048, "recompute": "full",
}  # fmt: skip


@pytest.mark.parametrize(
    ("optimizer", "master", "expected"),
    [("adamw", True, 12.0), ("adamw8bit", True, 6.0 + 8 / 256), ("paged_adamw8bit", False, 2.0 + 8 / 256),
     ("sgd", False, 0.0), ("adafactor", False, 0.05)],
)  # fmt: skip
def test_optimizer_state_bytes(optimizer: str, master: bool, expected: float) -> None:
    bpp = optimizer_bytes_per_param(optimizer, "bf16", master_weights=master)
    assert bpp.optimizer_states == pytest.approx(expected)
    assert bpp.weights == 2.0


def test_torchtune_low_memory_full_finetune_fits_a_24gb_card() -> None:
    """torchtune's single-device 8B full fine-tune (paged 8-bit AdamW, pure bf16, optimizer in backward)
    peaks near the weights (~15 GiB), where mixed-precision AdamW needs ~8x more."""
    low = estimate_memory(
        optimizer="paged_adamw8bit", master_weights=False, optimizer_in_backward=True, chunked_loss=True, **FT
    )
    default = estimate_memory(**FT)
    assert 14.0 < low.allocated_gib < 22.0
    assert default.allocated_gib > 5 * low.allocated_gib
    # the paged states are outside torch's allocator but may sit on the GPU while memory is free
    assert low.per_gpu_gib >= low.allocated_gib
    assert low.per_gpu_gib <= low.capacity_gib + 1e-9
    assert low.fits


def test_paged_states_never_make_a_layout_not_fit() -> None:
    paged = estimate_memory(
        optimizer="paged_adamw8bit", master_weights=False, optimizer_in_backward=True, **FT
    )
    resident = estimate_memory(optimizer="adamw8bit", master_weights=False, optimizer_in_backward=True, **FT)
    assert paged.fits and not resident.fits
    assert "optimizer_states_paged" not in resident.breakdown_gib
    # only the uint8 states page; their fp32 absmax block constants (2 x 4 B per 256) stay torch-allocated
    assert paged.breakdown_gib["optimizer_states"] == pytest.approx(8_030_261_248 * 8 / 256 / 2**30)
    assert resident.breakdown_gib["optimizer_states"] == pytest.approx(8_030_261_248 * (2 + 8 / 256) / 2**30)


def test_optimizer_in_backward_keeps_one_gradient() -> None:
    a = estimate_memory(optimizer="sgd", master_weights=False, **FT)
    b = estimate_memory(optimizer="sgd", master_weights=False, optimizer_in_backward=True, **FT)
    assert b.breakdown_gib["gradients"] < a.breakdown_gib["gradients"] / 10


def test_unknown_optimizer_is_refused_with_the_allowed_names() -> None:
    with pytest.raises(InputError, match="paged_adamw8bit"):
        estimate_memory(optimizer="lion", **FT)


def test_presets_resolve_from_software_or_note() -> None:
    assert recipe_for("torchtune") is RECIPES["torchtune"]
    assert recipe_for("pytorch", "torchtune LoRA single device") is RECIPES["torchtune"]
    assert recipe_for(None, "unsloth notebook, QLoRA") is RECIPES["unsloth"]
    assert recipe_for("pytorch", "plain FSDP run") is None
    assert get_recipe("Axolotl").optimizer_full == "adamw8bit"
    with pytest.raises(InputError, match="torchtune"):
        get_recipe("megatron")
    for r in RECIPES.values():
        assert r.source and r.recompute in ("none", "selective", "full")


HEADER = "case_id,metric,model,task,gpu,gpu_count,precision,batch,seq_len,software,optimizer,measured,unit\n"


def test_optimizer_column_is_optional_and_checked() -> None:
    row = "A1,peak_memory_gib,llama-3.1-8b,full_finetune,RTX-4090,1,bf16,2,2048,pytorch,"
    row += "paged_adamw8bit,18.9,GiB\n"
    (case,) = parse_cases_csv(HEADER + row, "t.csv")
    assert case.optimizer == "paged_adamw8bit"
    (blank,) = parse_cases_csv(HEADER + row.replace("paged_adamw8bit", ""), "t.csv")
    assert blank.optimizer is None
    without = "case_id,metric,model,task,gpu,gpu_count,precision,measured,unit\n"
    (old,) = parse_cases_csv(
        without + "A2,peak_memory_gib,llama-2-7b,load,H100-SXM,1,bf16,12.6,GiB\n", "t.csv"
    )
    assert old.optimizer is None
    with pytest.raises(ConfigFileError, match="unknown optimizer"):
        parse_cases_csv(HEADER + row.replace("paged_adamw8bit", "lion"), "t.csv")


def test_new_software_values_are_accepted() -> None:
    for sw in ("sglang", "jax", "torchtune", "unsloth", "axolotl"):
        row = f"S1,train_tokens_per_s_per_gpu,llama-3.1-8b,lora,H100-SXM,1,bf16,2,2048,{sw},,1000,tok/s/gpu\n"
        (case,) = parse_cases_csv(HEADER + row, "t.csv")
        assert case.software == sw


def test_cpu_offload_moves_the_optimizer_states_to_the_host() -> None:
    on = estimate_memory(cpu_offload=True, **FT)
    off = estimate_memory(**FT)
    assert on.breakdown_gib["optimizer_states"] == 0.0
    assert off.allocated_gib - on.allocated_gib == pytest.approx(off.breakdown_gib["optimizer_states"])
    assert any("host memory" in a for a in on.assumptions)


def test_lora_on_a_4bit_base_is_qlora_in_memory_speed_and_cases() -> None:
    """A LoRA whose frozen base is int4/nf4 is QLoRA (Dettmers et al. 2023): the same estimate either way."""
    from gpufleet.estimate.training import estimate_training

    kw: dict[str, Any] = {"model": "llama-3.1-8b", "gpu": "RTX-4090", "precision": "nf4", "seq_len": 2048}
    assert estimate_memory(task="lora", batch=1, **kw).per_gpu_gib == pytest.approx(
        estimate_memory(task="qlora", batch=1, **kw).per_gpu_gib
    )
    lora = estimate_training(task="lora", gpu_count=1, global_batch=4, **kw)
    qlora = estimate_training(task="qlora", gpu_count=1, global_batch=4, **kw)
    assert lora.tokens_per_s_per_gpu is not None and qlora.tokens_per_s_per_gpu is not None
    assert lora.tokens_per_s_per_gpu.central == pytest.approx(qlora.tokens_per_s_per_gpu.central)


def test_lora_on_an_8bit_base_runs_on_gpus_and_full_int8_training_stays_refused() -> None:
    """bitsandbytes 8-bit bases (LLM.int8, PEFT load_in_8bit) are frozen: 16-bit compute after dequantising,
    so the job runs on any GPU; only training the weights in int8 matmuls is TPU-only."""
    from gpufleet.errors import UnsupportedError
    from gpufleet.estimate.training import estimate_training

    kw: dict[str, Any] = {"model": "llama-3.1-8b", "gpu": "H100-SXM", "seq_len": 2048}
    int8 = estimate_memory(task="lora", precision="int8", batch=1, **kw)
    nf4 = estimate_memory(task="lora", precision="nf4", batch=1, **kw)
    bf16 = estimate_memory(task="lora", precision="bf16", batch=1, recompute="full", **kw)
    assert nf4.breakdown_gib["weights"] < int8.breakdown_gib["weights"] < bf16.breakdown_gib["weights"]
    est = estimate_training(task="lora", precision="int8", gpu_count=1, global_batch=4, **kw)
    ref = estimate_training(task="lora", precision="bf16", gpu_count=1, global_batch=4, **kw)
    assert est.tokens_per_s_per_gpu is not None and ref.tokens_per_s_per_gpu is not None
    assert est.tokens_per_s_per_gpu.central < ref.tokens_per_s_per_gpu.central  # dequantised per matmul
    with pytest.raises(UnsupportedError, match="int8 training"):
        estimate_training(task="full_finetune", precision="int8", gpu_count=1, global_batch=4, **kw)


def test_lora_cases_on_quantised_bases_are_predicted() -> None:
    from gpufleet.estimate.predict import predict_case

    text = (
        "case_id,metric,model,task,gpu,gpu_count,precision,batch,seq_len,measured,unit,source\n"
        "Q1,train_tokens_per_s_per_gpu,llama-3.1-8b,lora,A100-SXM-80GB,1,int8,4,2048,1000,tok/s/gpu,x\n"
        "Q2,peak_memory_gib,llama-3.1-8b,lora,RTX-4090,1,nf4,1,2048,10,GiB,x\n"
    )
    for case in parse_cases_csv(text, "q.csv"):
        assert predict_case(case).predicted > 0
