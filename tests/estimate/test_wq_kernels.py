"""Issue 25 item 4: weight-only quantised decode kernels per engine (estimate.wq_kernels). vLLM and SGLang
run Marlin on compute capability 8.0+ (near the 16-bit kernels' bandwidth, Frantar et al. 2024); other
engines, and every engine before Ampere, run kernels at the fitted ``wq_bw_eff``; no kernel decodes faster
than the bandwidth roofline of its packed weights."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate import inference
from gpufleet.estimate.inference import estimate_inference
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.profile import load_profile, with_params
from gpufleet.estimate.wq_kernels import (
    EXLLAMA_MAX_FUSED_ROWS,
    MARLIN_BW_SHARE,
    RECONSTRUCTED_BYTES,
    WqKernel,
    wq_kernel,
)
from gpufleet.units import GB, GIB

JOB: dict[str, Any] = dict(
    model="llama-2-7b", precision="int4", input_len=128, output_len=256, batch=1, allow_fallback=True
)


def _weight_bytes(precision: str, gpu: str) -> float:
    mem = estimate_memory(model="llama-2-7b", task="load", precision=precision, gpu=gpu, seq_len=1)
    return mem.breakdown_gib["weights"] * GIB


def _tpot_s(gpu: str, software: str, **kw: Any) -> float:
    est = estimate_inference(gpu=gpu, software=software, **(JOB | kw))
    assert est.tpot_s is not None
    return est.tpot_s.central


@pytest.mark.parametrize(
    ("software", "gpu", "kernel"),
    [
        ("vllm", "A10G", "marlin"),
        ("sglang", "H100-SXM", "marlin"),
        ("vllm", "T4", "generic"),  # sm75: vLLM's exllama-derived gptq kernel
        ("vllm", "V100-SXM2-32GB", "generic"),
        ("tgi", "A10G", "exllama"),  # version not stated: ExLlama v1 as its published GPTQ runs (module doc)
        ("llamacpp", "RTX-4090", "generic"),
        ("transformers", "A100-SXM-80GB", "exllamav2"),  # AutoGPTQ/optimum default: exllama v2
        ("tgi", "MI300X", "generic"),  # ExLlama's CUDA kernels: NVIDIA only
    ],
)
def test_kernel_by_engine_and_generation(software: str, gpu: str, kernel: str) -> None:
    k = wq_kernel(software, get_spec(gpu), load_profile())
    assert k.name == kernel
    assert 0.0 < k.bw_share <= 1.0
    if kernel == "marlin":
        assert k.bw_share >= MARLIN_BW_SHARE


def test_marlin_does_not_read_the_generic_share() -> None:
    # a low generic share slows TGI and pre-Ampere vLLM, never vLLM's Marlin on Ampere
    slow = with_params(load_profile(), {"wq_bw_eff": 0.3})
    assert _tpot_s("A10G", "vllm", profile=slow) == pytest.approx(_tpot_s("A10G", "vllm"))
    assert _tpot_s("A10G", "tgi", profile=slow) > 1.5 * _tpot_s("A10G", "tgi")
    assert _tpot_s("T4", "vllm", profile=slow) > 1.5 * _tpot_s("T4", "vllm")


def test_marlin_int4_decode_gains_about_the_byte_ratio() -> None:
    # batch-1 decode is weight-read bound: int4 (4.25 bits, 16-bit LM head) over fp16 reads ~3.5x fewer
    # bytes; Marlin's near-ideal kernel gains most of it, the generic kernels less, neither more
    fp16 = _tpot_s("A10G", "vllm", precision="fp16")
    marlin = _tpot_s("A10G", "vllm")
    byte_ratio = _weight_bytes("fp16", "A10G") / _weight_bytes("int4", "A10G")
    assert 2.5 < fp16 / marlin < byte_ratio


@pytest.mark.parametrize(("software", "gpu"), [("vllm", "A10G"), ("vllm", "H100-SXM"), ("tgi", "A10G")])
def test_never_above_the_bandwidth_roofline(software: str, gpu: str) -> None:
    spec = get_spec(gpu)
    roofline_s = _weight_bytes("int4", gpu) / (spec.mem_bw_gb_per_s * GB)  # every packed byte read once
    assert _tpot_s(gpu, software) > roofline_s


def test_exllama_passes_over_the_weights_by_rows() -> None:
    # ExLlama v2: one pass per 8-row block up to 50 rows, then fp16 reconstruction + cuBLAS; v1 reconstructs
    # from 8 rows on; Marlin and the generic kernels read the weights once at any batch
    prof = load_profile()
    v2 = wq_kernel("transformers", get_spec("A100-SXM-80GB"), prof)
    v1 = wq_kernel("tgi", get_spec("A10G"), prof)
    wb = 4.25 / 8  # int4 with one fp16 scale per 128 weights [bytes/weight]
    assert [v2.weight_read_factor(r, wb) for r in (1, 8, 9, 20, EXLLAMA_MAX_FUSED_ROWS)] == [1, 1, 2, 3, 7]
    recons = 1.0 + 2.0 * RECONSTRUCTED_BYTES / wb * v2.bw_share
    assert v2.weight_read_factor(EXLLAMA_MAX_FUSED_ROWS + 1, wb) == pytest.approx(recons)
    assert v1.weight_read_factor(7, wb) == 1.0
    assert v1.weight_read_factor(8, wb) == pytest.approx(recons)
    # ExLlama is a GPTQ (int4) kernel: bitsandbytes nf4 under transformers keeps the generic one-pass kernel
    assert wq_kernel("transformers", get_spec("A100-SXM-80GB"), prof, "nf4").name == "generic"
    for k in (wq_kernel("vllm", get_spec("A10G"), prof), WqKernel("generic", 0.75)):
        assert k.weight_read_factor(64, wb) == 1.0


def _tgi_tok_s(precision: str, batch: int, software: str = "tgi", **kw: Any) -> float:
    est = estimate_inference(
        model="llama-2-7b", gpu="A10G", precision=precision, input_len=512, output_len=256, batch=batch,
        software=software, allow_fallback=True, ignore_memory=True, **kw,
    )  # fmt: skip
    assert est.output_tokens_per_s is not None
    return est.output_tokens_per_s.central


def test_tgi_gptq_on_a10g_at_batch_20_loses_its_speedup(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 25: TGI GPTQ on an A10G at ~20 concurrent requests was predicted 2.6x faster than measured with
    # the weights read once. ExLlama v1 rebuilds fp16 weights from 8 rows on (~8.5 packed-weight reads):
    # at batch 20 the estimate falls by 2-3x against the one-pass kernel, int4 is no faster than fp16
    # (Frantar et al. 2024 fig. 1: non-Marlin kernels lose the speed-up with batch), while at batch 1 the
    # fused kernel keeps int4's ~2x+ over fp16 and vLLM's Marlin keeps it at batch 20.
    exl_1, exl_20 = _tgi_tok_s("int4", 1), _tgi_tok_s("int4", 20)
    assert exl_20 <= _tgi_tok_s("fp16", 20)
    assert exl_1 > 2.0 * _tgi_tok_s("fp16", 1)
    assert _tgi_tok_s("int4", 20, software="vllm") > 1.1 * _tgi_tok_s("fp16", 20, software="vllm")

    def one_pass(software: str, spec: Any, prof: Any, precision: str = "int4") -> WqKernel:
        return WqKernel("generic", wq_kernel(software, spec, prof, precision).bw_share)

    monkeypatch.setattr(inference, "wq_kernel", one_pass)
    monkeypatch.setattr(inference, "_SETUPS", {})
    assert _tgi_tok_s("int4", 1) == pytest.approx(exl_1)  # the fused kernel below 8 rows: one pass
    assert 2.0 < _tgi_tok_s("int4", 20) / exl_20 < 3.0


def test_exllama_reconstruction_never_beats_its_byte_roofline() -> None:
    # above the fused threshold every weight is read packed, written and read back in fp16: the decode step
    # can never take less than those bytes at the datasheet bandwidth
    spec = get_spec("A10G")
    mem = estimate_memory(model="llama-2-7b", task="load", precision="int4", gpu="A10G", seq_len=1)
    packed = mem.breakdown_gib["weights"] * GIB
    params = packed / (4.25 / 8)
    floor_s = (packed + 2.0 * RECONSTRUCTED_BYTES * params * 0.9) / (spec.mem_bw_gb_per_s * GB)
    est = estimate_inference(gpu="A10G", software="tgi", **(JOB | {"batch": 16}))
    assert est.tpot_s is not None
    assert est.tpot_s.central > floor_s
