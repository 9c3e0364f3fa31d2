"""Issue 25 item 4: weight-only quantised decode kernels per engine (estimate.wq_kernels). vLLM and SGLang
run Marlin on compute capability 8.0+ (near the 16-bit kernels' bandwidth, Frantar et al. 2024); other
engines, and every engine before Ampere, run kernels at the fitted ``wq_bw_eff``; no kernel decodes faster
than the bandwidth roofline of its packed weights."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.inference import estimate_inference
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.profile import load_profile, with_params
from gpufleet.estimate.wq_kernels import MARLIN_BW_SHARE, wq_kernel
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
        ("tgi", "A10G", "generic"),  # version not stated: exllama/Triton (1.x) or Marlin (2.x+)
        ("llamacpp", "RTX-4090", "generic"),
        ("transformers", "A100-SXM-80GB", "generic"),  # AutoGPTQ/optimum default: exllama v2
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
