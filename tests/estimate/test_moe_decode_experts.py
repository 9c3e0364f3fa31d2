"""MoE decode reads the distinct experts a step's tokens touch: the active ones at batch 1, nearly all of
them at large batch (``E (1 - (1 - k/E)^tokens)``), for the newer MoE models in the model data."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import compute as cx
from gpufleet.estimate.performance import estimate_inference
from gpufleet.models.registry import resolve_model
from gpufleet.precision import BYTES_PER_ELEMENT
from gpufleet.units import GB

NEW_MOE = [
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gpt-oss-120b",
    "llama-4-scout",
    "llama-4-maverick",
    "mixtral-8x7b",
]


@pytest.mark.parametrize(
    ("model", "tokens", "want_params"),
    [
        # Qwen3-30B-A3B: 48 MoE layers, 128 experts of 3 x 2048 x 768 = 4.72 M, top-8; 1.23 B non-routed
        ("qwen3-30b-a3b", 1.0, 1.2297e9 + 48 * 8 * 4718592),  # 3.04 B: the active experts only
        ("qwen3-30b-a3b", 64.0, 1.2297e9 + 48 * 128 * (1 - (1 - 8 / 128) ** 64) * 4718592),  # 125.9 experts
        # Llama 4 Maverick: 24 MoE layers (every other), 128 experts of 125.8 M, top-1
        ("llama-4-maverick", 64.0, 13.1298e9 + 24 * 128 * (1 - (1 - 1 / 128) ** 64) * 125829120),  # 50.5
    ],
)
def test_decode_reads_the_expected_distinct_experts(model: str, tokens: float, want_params: float) -> None:
    assert cx.decode_weight_params(resolve_model(model), tokens) == pytest.approx(want_params, rel=1e-4)


def test_touched_experts_hand_values() -> None:
    assert cx.moe_expected_experts(128, 8, 1) == pytest.approx(8.0)
    assert cx.moe_expected_experts(128, 8, 64) == pytest.approx(125.943, abs=1e-3)
    assert cx.moe_expected_experts(8, 2, 256) == pytest.approx(8.0)  # Mixtral: all experts at batch 256
    assert cx.moe_expected_experts(128, 4, 2) == pytest.approx(128 * (1 - (124 / 128) ** 2))  # gpt-oss


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(NEW_MOE),
    gpu=st.sampled_from(["H100-SXM", "H200-SXM", "B200", "MI300X", "L40S"]),
    precision=st.sampled_from(["bf16", "fp8", "fp4", "int4"]),
    batch=st.integers(1, 512),
    gpu_count=st.sampled_from([1, 2, 4, 8]),
)
def test_tp_moe_decode_never_beats_reading_its_touched_experts(
    model: str, gpu: str, precision: str, batch: int, gpu_count: int
) -> None:
    """TP decode (ep = 1) of ``batch`` sequences reads at least the touched experts' weights, at the
    format's bytes per weight, split over the replica's GPUs: TPOT never beats that bound, which grows
    with the batch until every expert is read."""
    arch = resolve_model(model)
    try:
        est = estimate_inference(
            model=model, gpu=gpu, precision=precision, input_len=256, output_len=256, gpu_count=gpu_count,
            batch=batch, ep=1, allow_fallback=True, ignore_memory=True,
        )  # fmt: skip
    except (UnsupportedError, InputError):
        assume(False)
    assume(est.tpot_s is not None)
    assert est.tpot_s is not None
    rows = est.batch_per_replica
    touched = cx.decode_weight_params(arch, float(rows)) - cx.model_shape(arch).lm_head_params
    bpe = BYTES_PER_ELEMENT[precision]
    bound = touched * bpe / est.gpus_per_replica / (get_spec(gpu).mem_bw_gb_per_s * GB)
    assert est.tpot_s.central >= bound * 0.999
