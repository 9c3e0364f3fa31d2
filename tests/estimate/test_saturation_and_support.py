"""Saturated inference agrees with its own concurrency; memory refuses precisions the GPU cannot run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpufleet.catalog.specs import load_specs
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate.calibration import load_profile
from gpufleet.estimate.memory import estimate_memory, max_concurrent_sequences
from gpufleet.estimate.performance import estimate_inference, resolve_rates
from gpufleet.precision import BYTES_PER_ELEMENT

# ---- saturated concurrency ---------------------------------------------------------------------------------


def test_405b_fp32_on_b300_saturated_concurrency_fits_when_asked_for() -> None:
    kw: dict[str, Any] = {
        "model": "llama-3.1-405b", "gpu": "B300", "precision": "fp32", "input_len": 1024, "output_len": 256,
        "gpu_count": 8,
    }  # fmt: skip
    sat = estimate_inference(**kw)
    assert sat.fits and sat.max_concurrency_per_replica > sat.batch_per_replica
    asked = estimate_inference(batch=sat.max_concurrency_per_replica, **kw)
    assert asked.fits and (asked.tp, asked.pp) == (sat.tp, sat.pp)
    over = estimate_inference(batch=sat.max_concurrency_per_replica + 1, tp=sat.tp, **kw)
    assert not over.fits


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b", "gemma-2-9b"]),
    gpu=st.sampled_from(["A100-SXM-80GB", "H100-SXM", "B300", "L4", "T4"]),
    precision=st.sampled_from(["fp32", "bf16", "fp16", "fp8", "int4"]),
    software=st.sampled_from(["vllm", "trtllm", "transformers"]),
    gpu_count=st.sampled_from([1, 2, 8]),
    input_len=st.integers(16, 8192),
)
def test_max_concurrency_always_fits(
    model: str, gpu: str, precision: str, software: str, gpu_count: int, input_len: int
) -> None:
    kw: dict[str, Any] = {
        "model": model, "gpu": gpu, "precision": precision, "input_len": input_len, "output_len": 256,
        "gpu_count": gpu_count, "software": software, "allow_fallback": True,
    }  # fmt: skip
    try:
        sat = estimate_inference(**kw)
    except UnsupportedError:
        assume(False)
        return
    assume(sat.fits)
    asked = estimate_inference(batch=sat.max_concurrency_per_replica, **kw)
    assert asked.fits, asked.notes
    assert (asked.tp, asked.pp, asked.ep) == (sat.tp, sat.pp, sat.ep)
    # the saturated memory breakdown describes the chosen concurrency, not one sequence
    assert sat.memory.fits
    again = estimate_inference(batch=sat.batch_per_replica, **kw)
    assert sat.memory.breakdown_gib["kv_cache"] == pytest.approx(again.memory.breakdown_gib["kv_cache"])


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "transformers"])
def test_max_concurrent_sequences_is_the_largest_fitting_batch(engine: str) -> None:
    kw: dict[str, Any] = {
        "model": "llama-3.1-8b", "gpu": "H100-SXM", "precision": "bf16", "tp": 1, "pp": 1, "engine": engine,
    }  # fmt: skip
    n = max_concurrent_sequences(context_len=512, **kw)
    assert n > 256  # past vLLM's profiled 256 sequences' logits: that term grows with the batch beyond
    mem = dict(model=kw["model"], gpu=kw["gpu"], precision="bf16", engine=engine, task="inference")
    assert estimate_memory(batch=n, seq_len=512, **mem).fits
    assert not estimate_memory(batch=n + 1, seq_len=512, **mem).fits


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "gemma-2-9b", "qwen2.5-7b"]),
    gpu=st.sampled_from(["A100-SXM-80GB", "H100-SXM", "B300", "L4", "T4", "MI300X"]),
    precision=st.sampled_from(["bf16", "fp16", "fp8", "int4"]),
    engine=st.sampled_from(["vllm", "trtllm", "transformers", "sglang"]),
    tp=st.sampled_from([1, 2, 4]),
    context_len=st.sampled_from([64, 512, 4096, 32768]),
)
def test_max_concurrent_sequences_is_the_largest_fitting_batch_anywhere(
    model: str, gpu: str, precision: str, engine: str, tp: int, context_len: int
) -> None:
    """The searched count (secant guess, then bisection) is where estimate_memory stops fitting."""
    kw: dict[str, Any] = {"model": model, "gpu": gpu, "precision": precision, "engine": engine, "tp": tp}
    try:
        n = max_concurrent_sequences(pp=1, context_len=context_len, allow_fallback=True, **kw)
    except InputError:
        assume(False)
        return
    mem = dict(task="inference", seq_len=context_len, allow_fallback=True, **kw)
    assert n == 0 or estimate_memory(batch=n, **mem).fits
    assert not estimate_memory(batch=n + 1, **mem).fits


def test_saturated_memory_shows_the_chosen_batch() -> None:
    est = estimate_inference(model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=1000,
                             output_len=1000)  # fmt: skip
    one = estimate_memory(model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", task="inference",
                          seq_len=2000)  # fmt: skip
    assert est.batch_per_replica > 1
    ratio = est.memory.breakdown_gib["kv_cache"] / one.breakdown_gib["kv_cache"]
    assert ratio == pytest.approx(est.batch_per_replica)


# ---- precision support in the memory model -----------------------------------------------------------------


def _mem(gpu: str, precision: str, **kw: Any) -> Any:
    return estimate_memory(
        model="llama-2-7b", task="inference", precision=precision, gpu=gpu, seq_len=2048, **kw
    )


@pytest.mark.parametrize("gpu", ["T4", "V100-SXM2-32GB", "Quadro-RTX-6000"])
@pytest.mark.parametrize("precision", ["fp8", "fp4"])
def test_fp8_fp4_on_pre_ampere_refused_even_with_fallback(gpu: str, precision: str) -> None:
    for allow in (False, True):
        with pytest.raises(UnsupportedError, match="Ampere"):
            _mem(gpu, precision, allow_fallback=allow)
        with pytest.raises(UnsupportedError, match="Ampere"):
            estimate_inference(
                model="llama-2-7b", gpu=gpu, precision=precision, input_len=128, output_len=128,
                allow_fallback=allow,
            )  # fmt: skip


def test_memory_fallbacks_match_the_speed_model() -> None:
    with pytest.raises(UnsupportedError, match="allow-fallback"):
        _mem("T4", "bf16")
    t4 = _mem("T4", "bf16", allow_fallback=True)
    assert any("fallback" in a and "fp16" in a for a in t4.assumptions)
    with pytest.raises(UnsupportedError, match="allow-fallback"):
        _mem("A100-SXM-80GB", "fp8")
    a100 = _mem("A100-SXM-80GB", "fp8", allow_fallback=True)
    assert any("fallback" in a and "weight-only" in a for a in a100.assumptions)
    assert a100.breakdown_gib["weights"] < _mem("A100-SXM-80GB", "bf16").breakdown_gib["weights"]
    assert not any("fallback" in a for a in _mem("H100-SXM", "fp8").assumptions)


def test_fp4_weights_run_weight_only_on_nvidia_ampere_and_newer() -> None:
    """fp4 (MXFP4/NVFP4) weights on an H100 or A100 run as W4A16, like int4 (vLLM fp4 Marlin / MXFP4 kernels,
    min capability 8.0): no fallback, 4-bit weights, 16-bit matmuls; AMD without fp4 compute still needs the
    fallback, and Blackwell computes fp4 natively."""
    prof = load_profile()
    for gpu in ("H100-SXM", "A100-SXM-80GB", "L40S"):
        mem = _mem(gpu, "fp4")
        assert not any("fallback" in a for a in mem.assumptions)
        assert mem.breakdown_gib["weights"] < 0.5 * _mem(gpu, "bf16").breakdown_gib["weights"]
        rates = resolve_rates(load_specs()[gpu], "fp4", prof, allow_fallback=False)
        int4 = resolve_rates(load_specs()[gpu], "int4", prof, allow_fallback=False)
        assert rates.peak_flops == pytest.approx(int4.peak_flops)
    with pytest.raises(UnsupportedError, match="allow-fallback"):
        _mem("MI300X", "fp4")
    blackwell = resolve_rates(load_specs()["B200"], "fp4", prof, allow_fallback=False)
    assert blackwell.peak_flops > 3 * resolve_rates(load_specs()["H100-SXM"], "fp4", prof,
                                                    allow_fallback=False).peak_flops  # fmt: skip


def test_memory_and_speed_agree_on_every_gpu_and_precision() -> None:
    prof = load_profile()
    for spec in load_specs().values():
        if not (spec.fp32_tflops or spec.fp16_tflops or spec.bf16_tflops):
            continue  # no compute peak: speed cannot be estimated at all
        for prec in BYTES_PER_ELEMENT:
            for allow in (False, True):
                try:
                    resolve_rates(spec, prec, prof, allow_fallback=allow)
                    speed_ok = True
                except UnsupportedError:
                    speed_ok = False
                try:
                    estimate_memory(model="gpt2", task="load", precision=prec, gpu=spec, seq_len=1,
                                    allow_fallback=allow)  # fmt: skip
                    mem_ok = True
                except UnsupportedError:
                    mem_ok = False
                assert speed_ok == mem_ok, (spec.id, prec, allow)
