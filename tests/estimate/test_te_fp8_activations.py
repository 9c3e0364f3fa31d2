"""fp8 training with Transformer Engine keeps its linear layers' inputs in fp8 for the backward
(activations.fp8_linear_input_savings): the two normalised block inputs and the FFN activation output at
1 byte instead of 2, the attention output with one fp8 copy more. Checked by hand for Llama 3.1 405B and
against the two 405B fp8 runs in the cases, which the 16-bit count forced into full recompute."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.estimate.activations import activation_bytes_per_layer, fp8_linear_input_savings
from gpufleet.estimate.cases import read_cases, shipped_cases_path
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.predict import predict_case
from gpufleet.models.registry import resolve_model


def test_savings_hand_values_llama_405b() -> None:
    m = resolve_model("llama-3.1-405b")  # h 16384, FFN 53248, 128 heads x 128
    outer, inner = fp8_linear_input_savings(m, False)
    assert outer == pytest.approx(2 * 16384 * 1.0)  # QKV and fc1 inputs: 2 B -> 1 B
    assert inner == pytest.approx(53248 * 1.0 - 128 * 128 * 1.0)  # fc2 input saved, o_proj's fp8 copy added


def test_layer_bytes_shrink_by_the_savings_and_full_recompute_is_untouched() -> None:
    m = resolve_model("llama-3.1-405b")
    kw: dict[str, Any] = dict(seq_len=4096, batch=1, tp=4, sequence_parallel=True)
    bf16 = activation_bytes_per_layer(m, recompute="selective", **kw)
    fp8 = activation_bytes_per_layer(m, recompute="selective", fp8_linear_inputs=True, **kw)
    outer, inner = fp8_linear_input_savings(m, False)
    assert bf16 - fp8 == pytest.approx(4096 * (outer / 4 + inner / 4))
    assert 0.10 < 1.0 - fp8 / bf16 < 0.20  # ~13 % of a Llama layer's stored activations
    full = [activation_bytes_per_layer(m, recompute="full", fp8_linear_inputs=f, **kw) for f in (False, True)]
    assert full[0] == full[1]  # only the layer input (residual stream, 16 bit) is kept


def test_moe_layer_savings_count_the_routed_copies() -> None:
    m = resolve_model("deepseek-v3")
    outer, inner = fp8_linear_input_savings(m, True)
    k, s, i, h = m.experts_per_token, m.num_shared_experts, m.moe_intermediate_size, m.hidden_size
    assert inner == pytest.approx((k + s) * i + k * h - m.num_attention_heads * m.v_head_dim)
    assert outer == pytest.approx(2 * h)


def test_only_fp8_full_training_saves() -> None:
    kw: dict[str, Any] = dict(model="llama-3.1-70b", gpu="H100-SXM", tp=8, pp=1, dp=1, batch=1, seq_len=8192)
    fp8 = estimate_memory(task="pretrain", precision="fp8", **kw).breakdown_gib["activations"]
    bf16 = estimate_memory(task="pretrain", precision="bf16", **kw).breakdown_gib["activations"]
    assert fp8 < bf16
    lora8 = estimate_memory(task="lora", precision="fp8", **kw).breakdown_gib["activations"]
    lora16 = estimate_memory(task="lora", precision="bf16", **kw).breakdown_gib["activations"]
    assert lora8 == lora16  # a frozen base computes no weight gradient: nothing saved for it in fp8


@pytest.mark.parametrize(("case_id", "before"), [("N025", 0.678), ("N049", 1.43)])
def test_405b_fp8_runs_fit_selective_recompute(case_id: str, before: float) -> None:
    """Megatron-Bridge 405B fp8 on 256 GB200 (TP4 PP16) and MLPerf 405B fp8 on 512 H200 (TP4 PP8): with the
    16-bit count neither fit selective recompute, and full recompute put them 0.68x / 1.43x off."""
    case = next(c for c in read_cases(shipped_cases_path()) if c.case_id == case_id)
    p = predict_case(case)
    assert any("selective recompute" in n for n in p.notes)
    ratio = p.predicted / case.measured
    assert abs(ratio - 1.0) < abs(before - 1.0) - 0.2
