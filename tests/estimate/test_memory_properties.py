"""Invariants of the memory estimator (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.estimate.memory import allowed_tp_degrees, estimate_memory, max_concurrent_sequences
from gpufleet.models import resolve_model

MODELS = [
    "llama-3.1-8b",
    "mixtral-8x7b",
    "deepseek-v3",
    "gemma-2-9b",
    "starcoder-15.5b",
    "gpt2",
    "qwen2.5-7b",
]
TASKS = ["inference", "pretrain", "full_finetune", "lora", "qlora"]
ENGINES = ["vllm", "trtllm", "transformers"]


@given(
    model=st.sampled_from(MODELS),
    task=st.sampled_from(TASKS),
    engine=st.sampled_from(ENGINES),
    batch=st.integers(1, 64),
    extra=st.integers(1, 64),
    seq_len=st.integers(1, 32768),
)
def test_monotone_in_batch(model: str, task: str, engine: str, batch: int, extra: int, seq_len: int) -> None:
    kw: dict[str, Any] = {
        "model": model,
        "task": task,
        "precision": "bf16",
        "gpu": "H100-SXM",
        "seq_len": seq_len,
        "engine": engine,
    }
    small = estimate_memory(batch=batch, **kw)
    big = estimate_memory(batch=batch + extra, **kw)
    assert big.per_gpu_gib >= small.per_gpu_gib
    assert big.allocated_gib >= small.allocated_gib


@given(
    model=st.sampled_from(MODELS),
    task=st.sampled_from(TASKS),
    engine=st.sampled_from(ENGINES),
    seq_len=st.integers(1, 32768),
    extra=st.integers(1, 32768),
    kv=st.sampled_from([None, "fp8"]),
)
def test_monotone_in_context(
    model: str, task: str, engine: str, seq_len: int, extra: int, kv: str | None
) -> None:
    kw: dict[str, Any] = {
        "model": model,
        "task": task,
        "precision": "bf16",
        "gpu": "H100-SXM",
        "batch": 2,
        "engine": engine,
        "kv_precision": kv,
    }
    short = estimate_memory(seq_len=seq_len, **kw)
    long = estimate_memory(seq_len=seq_len + extra, **kw)
    assert long.per_gpu_gib >= short.per_gpu_gib


@given(model=st.sampled_from(MODELS), data=st.data(), precision=st.sampled_from(["bf16", "fp8", "int4"]))
def test_tp_never_increases_weights(model: str, data: st.DataObject, precision: str) -> None:
    degrees = allowed_tp_degrees(resolve_model(model))
    lo = data.draw(st.sampled_from(degrees))
    hi = data.draw(st.sampled_from([d for d in degrees if d >= lo]))
    kw: dict[str, Any] = {"model": model, "task": "load", "precision": precision, "gpu": "H200", "seq_len": 1}
    assert (
        estimate_memory(tp=hi, **kw).breakdown_gib["weights"]
        <= estimate_memory(tp=lo, **kw).breakdown_gib["weights"]
    )


@given(
    model=st.sampled_from(MODELS),
    task=st.sampled_from(["pretrain", "full_finetune", "lora", "qlora"]),
    dp=st.integers(1, 64),
    stage=st.integers(0, 2),
    recompute=st.sampled_from(["none", "selective", "full"]),
    optimizer=st.sampled_from(["adamw", "adamw_8bit", "sgd", "sgd_momentum"]),
)
def test_zero_stage_never_increases_memory(
    model: str, task: str, dp: int, stage: int, recompute: str, optimizer: str
) -> None:
    kw: dict[str, Any] = {
        "model": model,
        "task": task,
        "precision": "bf16",
        "gpu": "H100-SXM",
        "seq_len": 2048,
        "dp": dp,
        "recompute": recompute,
        "optimizer": optimizer,
    }
    lower = estimate_memory(zero_stage=stage, **kw)
    higher = estimate_memory(zero_stage=stage + 1, **kw)
    # ZeRO-3 adds its working set (the largest module gathered whole with its gradient, DeepSpeed's
    # "4 x largest layer"): on a small model at low dp (gpt2, dp=2: the 50257 x 768 embedding is a third
    # of the model) that can outweigh what sharding the 16-bit weights saves, and nothing else may grow
    assert higher.per_gpu_gib <= lower.per_gpu_gib + higher.breakdown_gib.get("zero3_gathered", 0.0) + 1e-9


@given(model=st.sampled_from(MODELS), task=st.sampled_from([*TASKS, "load"]), engine=st.sampled_from(ENGINES))
def test_breakdown_sums_and_fits_consistent(model: str, task: str, engine: str) -> None:
    est = estimate_memory(
        model=model, task=task, precision="bf16", gpu="A100-SXM-80GB", seq_len=4096, engine=engine
    )
    assert abs(sum(est.breakdown_gib.values()) - est.per_gpu_gib) < 1e-9
    assert est.allocated_gib <= est.per_gpu_gib
    assert est.usable_gib <= est.capacity_gib
    if est.fits:
        assert est.allocated_gib <= est.usable_gib


@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-7b", "gemma-2-9b"]),
    engine=st.sampled_from(ENGINES),
    context=st.integers(1, 32768),
    data=st.data(),
)
def test_concurrency_never_drops_with_more_tp(
    model: str, engine: str, context: int, data: st.DataObject
) -> None:
    degrees = [d for d in allowed_tp_degrees(resolve_model(model)) if d <= 8]
    lo = data.draw(st.sampled_from(degrees))
    hi = data.draw(st.sampled_from([d for d in degrees if d >= lo]))
    kw: dict[str, Any] = {"model": model, "gpu": "H100-SXM", "precision": "bf16", "pp": 1, "engine": engine,
                          "context_len": context}  # fmt: skip
    assert max_concurrent_sequences(tp=hi, **kw) >= max_concurrent_sequences(tp=lo, **kw)
