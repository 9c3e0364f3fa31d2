"""Full recompute replays the forward's element-wise kernels as well as its matmuls."""

from __future__ import annotations

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.calibration import load_profile, with_params
from gpufleet.estimate.performance import resolve_rates, training_step
from gpufleet.models import resolve_model


def _compute_s(elems: float, recompute: str) -> float:
    prof = with_params(load_profile(), {"train_elementwise_elems": elems})
    spec = get_spec("TPU-v6e")
    rates = resolve_rates(spec, "bf16", prof, allow_fallback=False)
    return training_step(
        model=resolve_model("llama-3.1-8b"), spec=spec, rates=rates, task="pretrain", tp=1, pp=1, dp=8, ep=1,
        global_batch=8, seq_len=4096, zero_stage=3, recompute=recompute, software="jax", gpus_per_node=8,
        profile=prof,
    ).compute_s  # fmt: skip


def test_full_recompute_streams_a_third_more_elementwise_bytes() -> None:
    """The element-wise time is linear in ``train_elementwise_elems``; with the forward's ~25h of the ~75h
    replayed, its slope under full recompute is 4/3 of the selective one: 100 more elements per token,
    layer and hidden unit cost 100 x 4096 (h) x 2 B x 32 layers x 4096 tokens / (1638 GB/s x eta_bw) per
    chip without recompute."""
    prof = load_profile()
    sel = _compute_s(200.0, "selective") - _compute_s(100.0, "selective")
    full = _compute_s(200.0, "full") - _compute_s(100.0, "full")
    assert sel == pytest.approx(100 * 4096 * 2 * 32 * 4096 / (1638e9 * prof.param("eta_bw")), rel=1e-9)
    assert full == pytest.approx(sel * 4.0 / 3.0, rel=1e-9)
