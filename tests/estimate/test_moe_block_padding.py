"""Grouped-GEMM row padding of vLLM's Triton ``fused_moe``: every expert's rows are padded to the kernel's
``BLOCK_SIZE_M`` and the padded rows are multiplied (moe_serving.padded_rows_per_expert). Checked against
hand values of the binomial expectation, its physical bounds, the vLLM block rule, and its effect on the
routed experts' compute in a serving step (only on the stacks and formats that run that kernel)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from gpufleet.estimate import inference as inf
from gpufleet.estimate import inference_step as step
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.inference import default_kv_precision, estimate_inference
from gpufleet.estimate.rates import resolve_inputs, resolve_rates


def _base(model: str, gpu: str, precision: str, software: str) -> inf._Infer:
    arch, spec, prof = resolve_inputs(model, gpu, None)
    rates = resolve_rates(spec, precision, prof, allow_fallback=False)
    kv = default_kv_precision(precision, spec, software)
    return inf._prepare(arch, spec, prof, precision, software, rates, kv, None, 8, None).base


def test_block_rule_is_vllms_default_config() -> None:
    """vllm 0.33.0 fused_moe.get_default_config: 16 / 32 / 64 / 128 rows at M <= 32 / 96 / 512 / above;
    block-quantised fp8: 16 rows to M = 64, then 64."""
    assert [moe.fused_moe_block_m(m) for m in (1, 32, 33, 96, 97, 512, 513, 8192)] == [
        16, 16, 32, 32, 64, 64, 128, 128,
    ]  # fmt: skip
    assert [moe.fused_moe_block_m(m, "fp8") for m in (1, 64, 65, 8192)] == [16, 16, 64, 64]


def test_padded_rows_hand_values() -> None:
    # one token, top-1 of 1 expert: one row padded to a whole block
    assert moe.padded_rows_per_expert(1, 1, 1, 16) == pytest.approx(16.0)
    # Qwen3-30B-A3B shape at 256 tokens: 128 experts, top-8, ~16 rows each, 64-row blocks. An expert gets
    # more than 64 rows with negligible probability, so padded = 64 x P(X > 0) = 64 x (1 - (1 - 1/16)^256)
    want = 64.0 * (1.0 - (1.0 - 8 / 128) ** 256)
    assert moe.padded_rows_per_expert(256, 8, 128, 64) == pytest.approx(want, rel=1e-9)
    assert moe.expert_padding_factor(256, 8, 128, 64) == pytest.approx(want / 16.0, rel=1e-9)
    assert 3.99 < want / 16.0 <= 4.0
    # every token to every expert: exactly ceil(n / B) x B rows each
    assert moe.padded_rows_per_expert(100, 8, 8, 64) == pytest.approx(128.0)


@pytest.mark.parametrize(
    ("tokens", "k", "experts", "block"),
    [(8, 8, 128, 16), (448, 8, 128, 64), (2048, 4, 128, 128), (793, 2, 8, 128), (100_000, 8, 128, 128)],
)
def test_padding_factor_is_bounded(tokens: int, k: int, experts: int, block: int) -> None:
    """Never below the rows needed; at most one extra block per expert over the mean (``E[ceil(X/B)] B <
    E[X] + B``); and never more than a whole block per expected row while experts are rarely reached."""
    mean = tokens * k / experts
    f = moe.expert_padding_factor(tokens, k, experts, block)
    assert f >= 1.0
    assert f * mean <= mean + block + 1e-9
    assert f <= max(1.0, block / mean) * (1.0 + 1e-9) or mean > block


def test_padding_vanishes_when_experts_fill_many_blocks() -> None:
    factors = [moe.expert_padding_factor(n, 8, 128, 128) for n in (4096, 16384, 65536)]
    assert factors == sorted(factors, reverse=True)
    assert factors[-1] < 1.05


def test_padding_is_exact_against_a_direct_binomial_sum() -> None:
    n, p, b = 300, 2 / 8, 64
    direct = sum(math.comb(n, x) * p**x * (1 - p) ** (n - x) * math.ceil(x / b) * b for x in range(n + 1))
    assert moe.padded_rows_per_expert(n, 2, 8, b) == pytest.approx(direct, rel=1e-9)


def test_only_triton_fused_moe_stacks_and_formats_pad() -> None:
    assert _base("qwen3-30b-a3b", "H100-SXM", "fp8", "vllm").expert_block_padding
    assert _base("qwen3-30b-a3b", "H100-SXM", "bf16", "sglang").expert_block_padding
    assert not _base("qwen3-30b-a3b", "H100-SXM", "fp8", "trtllm").expert_block_padding
    assert not _base("qwen3-30b-a3b", "B200", "fp4", "vllm").expert_block_padding  # fp4: other kernels
    assert not _base("llama-3.1-8b", "H100-SXM", "fp8", "vllm").expert_block_padding  # dense


def test_routed_compute_grows_by_the_padding_factor() -> None:
    """The routed experts' compute term (not their weight read) is the padded rows' FLOPs."""
    c = _base("qwen3-30b-a3b", "H100-SXM", "fp8", "vllm")
    flat = dataclasses.replace(c, expert_block_padding=False)
    tokens = 448.0
    read, mm = step._routed_s(c, tokens, 48, 1)
    read0, mm0 = step._routed_s(flat, tokens, 48, 1)
    assert read == read0
    f = moe.expert_padding_factor(tokens, 8, 128, moe.fused_moe_block_m(tokens, "fp8"))
    assert moe.fused_moe_block_m(tokens, "fp8") == 64
    assert mm == pytest.approx(mm0 * f)
    assert f > 2.0


def test_padding_slows_a_compute_bound_moe_step_and_spares_dense_models() -> None:
    """Mixtral (8 experts, top-2) at a large vLLM step is compute bound on its experts, so padding its
    ~200-row experts to 128-row blocks slows it; a memory-bound step and a dense model do not change."""
    kw = dict(gpu="MI325X", precision="fp8", input_len=300, output_len=143, software="vllm", batch=256)
    pad = estimate_inference(model="mixtral-8x7b", **kw)
    assert any("fused_moe" in n for n in pad.notes)
    c = _base("mixtral-8x7b", "MI325X", "fp8", "vllm")
    rows, prompt = 256.0, 256.0 * 300 / 143
    slow = step.decode_step_s(c, rows, 371.5, prompt, 300)
    fast = step.decode_step_s(dataclasses.replace(c, expert_block_padding=False), rows, 371.5, prompt, 300)
    assert 1.05 < slow / fast < 1.6
    dense = estimate_inference(model="llama-3.1-8b", **kw)
    assert not any("fused_moe" in n for n in dense.notes)
