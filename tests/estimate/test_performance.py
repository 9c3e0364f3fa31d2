"""Inference and training estimators: physical invariants, fallbacks, errors and speed."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import GpufleetError, InputError, UnknownNameError, UnsupportedError
from gpufleet.estimate import InferenceEstimate, TrainingEstimate, estimate_inference, estimate_training


def _inf(**kw: Any) -> InferenceEstimate:
    base: dict[str, Any] = {
        "model": "llama-3.1-8b", "gpu": "H100-SXM", "precision": "bf16", "input_len": 512, "output_len": 256,
    }  # fmt: skip
    return estimate_inference(**(base | kw))


def _train(**kw: Any) -> TrainingEstimate:
    base: dict[str, Any] = {
        "model": "llama-3.1-8b", "task": "pretrain", "gpu": "H100-SXM", "precision": "bf16", "gpu_count": 8,
        "global_batch": 64, "seq_len": 4096,
    }  # fmt: skip
    return estimate_training(**(base | kw))


# ---- physical invariants -----------------------------------------------------------------------------------


@settings(max_examples=25)
@given(b1=st.integers(1, 400), b2=st.integers(1, 400))
def test_decode_throughput_never_falls_with_batch_until_memory_runs_out(b1: int, b2: int) -> None:
    lo, hi = sorted((b1, b2))
    a, b = _inf(batch=lo), _inf(batch=hi)
    if not b.fits:
        return
    assert a.output_tokens_per_s is not None and b.output_tokens_per_s is not None
    assert b.output_tokens_per_s.central >= a.output_tokens_per_s.central * (1 - 1e-9)


@settings(max_examples=25)
@given(l1=st.integers(1, 30000), l2=st.integers(1, 30000))
def test_ttft_grows_with_input_length(l1: int, l2: int) -> None:
    lo, hi = sorted((l1, l2))
    a, b = _inf(input_len=lo, batch=1), _inf(input_len=hi, batch=1)
    assert a.ttft_s is not None and b.ttft_s is not None
    assert b.ttft_s.central >= a.ttft_s.central


@settings(max_examples=20)
@given(factor=st.floats(1.0, 4.0), batch=st.integers(1, 256))
def test_more_bandwidth_never_makes_decode_slower(factor: float, batch: int) -> None:
    spec = get_spec("A100-SXM-80GB")
    faster = dataclasses.replace(spec, mem_bw_gb_per_s=spec.mem_bw_gb_per_s * factor)
    a = _inf(gpu=spec, precision="fp16", batch=batch)
    b = _inf(gpu=faster, precision="fp16", batch=batch)
    assert a.tpot_s is not None and b.tpot_s is not None
    assert b.tpot_s.central <= a.tpot_s.central


@settings(max_examples=15)
@given(dp1=st.sampled_from([1, 2, 4, 8, 16, 32, 64]), dp2=st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_data_parallel_scaling_is_never_super_linear(dp1: int, dp2: int) -> None:
    lo, hi = sorted((dp1, dp2))
    kw: dict[str, Any] = {"model": "llama-3.2-1b", "tp": 1, "pp": 1, "global_batch": 256, "seq_len": 2048,
                          "train_tokens": 1e10, "zero_stage": 1, "recompute": "selective"}  # fmt: skip
    a = _train(gpu_count=lo, dp=lo, **kw)
    b = _train(gpu_count=hi, dp=hi, **kw)
    assert a.time_to_train_s is not None and b.time_to_train_s is not None
    speedup = a.time_to_train_s.central / b.time_to_train_s.central
    assert 1.0 - 1e-9 <= speedup <= hi / lo * (1 + 1e-9)


def test_training_time_and_gpu_hours_consistent() -> None:
    e = _train(train_tokens=1e11)
    assert e.tokens_per_s is not None and e.time_to_train_s is not None and e.gpu_hours is not None
    assert e.time_to_train_s.central >= 1e11 / e.tokens_per_s.central  # failures only add time
    assert e.gpu_hours.central == pytest.approx(e.time_to_train_s.central * 8 / 3600)
    assert e.mfu is not None and 0.05 < e.mfu < 0.8


def test_intervals_bracket_the_central_value() -> None:
    e = _inf()
    for iv in (e.ttft_s, e.tpot_s, e.output_tokens_per_s, e.requests_per_s):
        assert iv is not None and iv.p10 < iv.central < iv.p90


def test_fp8_faster_than_bf16_but_less_than_twice() -> None:
    bf = _train(precision="bf16")
    f8 = _train(precision="fp8")
    assert bf.tokens_per_s is not None and f8.tokens_per_s is not None
    assert 1.0 < f8.tokens_per_s.central / bf.tokens_per_s.central < 2.0


def test_replicas_multiply_throughput() -> None:
    one, four = _inf(gpu_count=1, tp=1), _inf(gpu_count=4, tp=1)
    assert four.replicas == 4
    assert one.output_tokens_per_s is not None and four.output_tokens_per_s is not None
    assert four.output_tokens_per_s.central == pytest.approx(4 * one.output_tokens_per_s.central)


def test_saturated_batch_is_bounded_by_engine_and_kv() -> None:
    e = _inf(software="vllm")
    assert e.batch_per_replica == min(256, e.max_concurrency_per_replica)


def test_not_fitting_returns_none_fields() -> None:
    e = _inf(model="llama-3.1-70b", gpu="L4", tp=1)
    assert not e.fits and e.tpot_s is None and e.output_tokens_per_s is None
    t = _train(model="llama-3.1-70b", gpu_count=1, tp=1, pp=1, dp=1, global_batch=1)
    assert not t.fits and t.step_time_s is None and t.mfu is None


def test_chooser_picks_tp_for_big_models() -> None:
    e = _inf(model="llama-3.1-70b", gpu_count=8)
    assert e.fits and e.tp in (2, 4, 8) and e.replicas == 8 // e.tp


def test_moe_and_uncalibrated_get_wider_intervals() -> None:
    cal = _inf(gpu="H100-SXM")
    unc = _inf(gpu="MI300X")
    assert cal.tpot_s is not None and unc.tpot_s is not None
    # wider as a whole (p90/p10): the held-out latency deciles need not be symmetric about the central value
    assert unc.tpot_s.p90 / unc.tpot_s.p10 > cal.tpot_s.p90 / cal.tpot_s.p10


# ---- precision fallbacks -----------------------------------------------------------------------------------


def test_bf16_on_t4_raises_unless_fallback() -> None:
    with pytest.raises(UnsupportedError, match="allow-fallback"):
        _inf(gpu="T4", precision="bf16", model="llama-3.2-1b")
    e = _inf(gpu="T4", precision="bf16", model="llama-3.2-1b", allow_fallback=True)
    assert any("fp16" in n and "fallback" in n for n in e.notes)


def test_fp8_on_a100_falls_back_to_weight_only() -> None:
    with pytest.raises(UnsupportedError):
        _train(gpu="A100-SXM-80GB", precision="fp8")
    e = _inf(gpu="A100-SXM-80GB", precision="fp8", allow_fallback=True)
    assert any("weight-only" in n for n in e.notes)


def test_int4_weights_decode_faster_than_fp16() -> None:
    a = _inf(gpu="A10", precision="fp16", batch=1)
    b = _inf(gpu="A10", precision="int4", batch=1)
    assert a.tpot_s is not None and b.tpot_s is not None
    assert b.tpot_s.central < a.tpot_s.central


def test_unpublished_peak_is_derived_and_flagged() -> None:
    e = _inf(gpu="A10G", precision="fp16", tp=1, batch=1)
    assert e.fits and any("publishes no 16-bit peak" in n for n in e.notes)


# ---- bad input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "err"),
    [
        ({"input_len": 0}, InputError),
        ({"output_len": 0}, InputError),
        ({"gpu_count": 0}, InputError),
        ({"batch": 0}, InputError),
        ({"tp": 3}, InputError),
        ({"tp": 4, "gpu_count": 2}, InputError),
        ({"precision": "fp7"}, InputError),
        ({"gpu": "H900"}, UnknownNameError),
        ({"model": "no-such-model"}, UnknownNameError),
        ({"model": "bert-base-uncased"}, UnsupportedError),
    ],
)
def test_inference_bad_input(kw: dict[str, Any], err: type[GpufleetError]) -> None:
    with pytest.raises(err):
        _inf(**kw)


@pytest.mark.parametrize(
    ("kw", "err"),
    [
        ({"task": "inference"}, InputError),
        ({"seq_len": 0}, InputError),
        ({"global_batch": 0}, InputError),
        ({"global_batch": 4, "tp": 1, "pp": 1}, InputError),  # fewer sequences than data-parallel replicas
        ({"train_tokens": -5.0}, InputError),
        ({"recompute": "some"}, InputError),
        ({"tp": 3}, InputError),
        ({"tp": 2, "pp": 2, "dp": 3}, InputError),
        ({"gpu": "T4", "precision": "bf16"}, UnsupportedError),
    ],
)
def test_training_bad_input(kw: dict[str, Any], err: type[GpufleetError]) -> None:
    with pytest.raises(err):
        _train(**kw)


# ---- speed -------------------------------------------------------------------------------------------------


def test_eager_transformers_decode_says_it_is_host_bound() -> None:
    """The H200 probe's eager decode rows run 0.4-0.8x of the estimate and 2x apart between hosts: the
    estimate says so where the stack is HF transformers, and only there."""
    from gpufleet.estimate.inference import estimate_inference

    kw = dict(model="llama-3.1-8b", gpu="H200-SXM", precision="bf16", input_len=512, output_len=32, batch=1)
    eager = estimate_inference(software="transformers", **kw)  # type: ignore[arg-type]
    engine = estimate_inference(software="vllm", **kw)  # type: ignore[arg-type]
    assert any("bound by the host CPU" in n for n in eager.notes)
    assert not any("bound by the host CPU" in n for n in engine.notes)
