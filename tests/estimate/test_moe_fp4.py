"""fp4 MoE checkpoints: only the routed experts are fp4; attention, dense layers, shared experts stay fp8."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import compute as cx
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.comms import Link
from gpufleet.estimate.inference import _Infer, _weight_bytes_read
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.performance import estimate_inference
from gpufleet.estimate.profile import load_profile
from gpufleet.estimate.rates import resolve_rates
from gpufleet.models import count_params, ffn_params
from gpufleet.models.registry import load_model_entries, resolve_model
from gpufleet.precision import BYTES_PER_ELEMENT
from gpufleet.units import GB, GIB

MOE_MODELS = sorted(m for m in load_model_entries() if resolve_model(m).is_moe)


@pytest.mark.parametrize(
    ("model", "precision", "want"),
    [
        ("deepseek-v3", "fp4", "fp8"),
        ("gpt-oss-120b", "fp4", "fp8"),
        ("deepseek-v3", "fp8", "fp8"),
        ("mixtral-8x7b", "bf16", "bf16"),
        ("llama-3.1-405b", "fp4", "fp4"),  # dense fp4 checkpoints quantise every block linear
    ],
)
def test_nonrouted_precision(model: str, precision: str, want: str) -> None:
    assert moe.nonrouted_precision(resolve_model(model), precision) == want


def test_fp4_moe_weights_hand_computed() -> None:
    """DeepSeek-V3 in fp4 on one GPU: 653.9 B routed-expert weights at 4.5 bits, the other 15.3 B layer
    weights at fp8, embedding + LM head + final norm at 16 bit = 360.3 GiB (not the 341 GiB of all-fp4
    layers)."""
    m = resolve_model("deepseek-v3")
    pc = count_params(m)
    routed = m.num_moe_layers * m.num_experts * ffn_params(m, m.moe_intermediate_size)
    edge = pc.embedding + pc.lm_head + pc.final
    assert routed == pytest.approx(653.9e9, rel=1e-3)
    assert pc.total - edge - routed == pytest.approx(15.26e9, rel=1e-3)
    want = routed * BYTES_PER_ELEMENT["fp4"] + (pc.total - edge - routed) * BYTES_PER_ELEMENT["fp8"]
    want += edge * 2.0
    est = estimate_memory(
        model=m, task="inference", precision="fp4", gpu="GB200", tp=1, pp=1, batch=1, seq_len=1024,
        engine="trtllm",
    )  # fmt: skip
    assert est.breakdown_gib["weights"] * GIB == pytest.approx(want, rel=1e-9)
    assert est.breakdown_gib["weights"] == pytest.approx(360.34, abs=0.01)
    assert any("only the routed experts are fp4" in a for a in est.assumptions)


def test_dense_fp4_weights_stay_all_fp4() -> None:
    m = resolve_model("llama-3.1-405b")
    pc = count_params(m)
    edge = pc.embedding + pc.lm_head + pc.final
    want = ((pc.total - edge) * BYTES_PER_ELEMENT["fp4"] + edge * 2.0) / 4
    est = estimate_memory(
        model=m, task="inference", precision="fp4", gpu="B200", tp=4, pp=1, batch=1, seq_len=1024,
        engine="trtllm",
    )  # fmt: skip
    assert est.breakdown_gib["weights"] * GIB == pytest.approx(want, rel=2e-3)


def test_fp4_moe_decode_reads_nonrouted_weights_at_fp8() -> None:
    """Batch-1 decode of DeepSeek-V3 fp4 on 8 B200 (TP8): the 8 routed experts per layer at 4.5 bits, the
    non-routed weights at fp8, the LM head at 16 bit, each GPU an eighth."""
    m = resolve_model("deepseek-v3")
    spec, prof = get_spec("B200"), load_profile()
    link = Link(bw_gb_per_s=900.0, hop_latency_s=5e-6, kind="nvlink")
    c = _Infer(
        model=m, rates=resolve_rates(spec, "fp4", prof, allow_fallback=False), tp=8, pp=1, link=link,
        width=1.0, stack=1.0, overhead_s=0.0, eta_bw=0.8, kv_bytes_per_token=0.0, head_bytes=2.0,
        nr_rates=resolve_rates(spec, "fp8", prof, allow_fallback=False),
    )  # fmt: skip
    shape = cx.model_shape(m)
    routed = m.num_moe_layers * m.experts_per_token * shape.expert_params  # 8 experts touched per layer
    nonrouted = cx.decode_weight_params(m, 0.0) - shape.lm_head_params
    want = routed * BYTES_PER_ELEMENT["fp4"] + nonrouted * BYTES_PER_ELEMENT["fp8"]
    want = (want + shape.lm_head_params * 2.0) / 8
    assert _weight_bytes_read(c, 1.0) == pytest.approx(want, rel=1e-9)
    all_fp4 = _weight_bytes_read(
        _Infer(**{**{f: getattr(c, f) for f in c.__dataclass_fields__}, "nr_rates": None}), 1.0
    )
    assert _weight_bytes_read(c, 1.0) - all_fp4 == pytest.approx(
        nonrouted * (BYTES_PER_ELEMENT["fp8"] - BYTES_PER_ELEMENT["fp4"]) / 8, rel=1e-9
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpu=st.sampled_from(["B200", "GB200", "B300", "MI355X", "H100-SXM"]),
    model=st.sampled_from(MOE_MODELS),
    batch=st.one_of(st.none(), st.integers(1, 1024)),
    input_len=st.integers(1, 4096),
    ep=st.sampled_from([None, 8]),
)
def test_fp4_moe_serving_never_beats_its_roofline(
    gpu: str, model: str, batch: int | None, input_len: int, ep: int | None
) -> None:
    """No fp4 MoE estimate beats the weight-read bound of the active weights (routed experts at fp4, the
    rest at fp8) or the compute bound at the fp4 peak."""
    arch = resolve_model(model)
    assume(ep is None or arch.num_experts % ep == 0)
    spec = get_spec(gpu)
    try:
        est = estimate_inference(
            model=model, gpu=gpu, precision="fp4", input_len=input_len, output_len=128, gpu_count=8,
            batch=batch, ep=ep, allow_fallback=True, ignore_memory=True, software="trtllm",
        )  # fmt: skip
    except (UnsupportedError, InputError):
        assume(False)
    assume(est.tpot_s is not None and est.output_tokens_per_s is not None)
    assert est.tpot_s is not None and est.output_tokens_per_s is not None
    shape = cx.model_shape(arch)
    routed = arch.num_moe_layers * arch.experts_per_token * shape.expert_params
    nonrouted = shape.matmul_active_params - routed
    active = routed * BYTES_PER_ELEMENT["fp4"] + nonrouted * BYTES_PER_ELEMENT["fp8"]
    gpus, b = est.gpus_per_replica, est.batch_per_replica
    bw = spec.mem_bw_gb_per_s * GB
    assert est.tpot_s.central >= active / gpus / bw * 0.999
    peak = (spec.dense_peak_tflops("fp4") or spec.dense_peak_tflops("fp8") or 1e9) * 1e12
    assert est.tpot_s.central >= b * 2.0 * shape.matmul_active_params / (gpus * peak) * 0.999
    assert est.output_tokens_per_s.central <= est.replicas * b / (active / gpus / bw) * 1.001
