"""MoE serving: expert parallelism with attention data parallelism, all-to-all, imbalance, MLA decode."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpufleet.catalog.specs import load_specs
from gpufleet.errors import InputError, UnsupportedError
from gpufleet.estimate import compute as cx
from gpufleet.estimate import moe_serving as moe
from gpufleet.estimate.comms import Link
from gpufleet.estimate.performance import estimate_inference
from gpufleet.estimate.predict import note_hints
from gpufleet.models.registry import load_model_entries, resolve_model
from gpufleet.precision import BYTES_PER_ELEMENT
from gpufleet.units import GB, TERA

MOE_MODELS = sorted(m for m in load_model_entries() if resolve_model(m).is_moe)
DSV3 = resolve_model("deepseek-v3")


def test_busiest_rank_load_is_bounded_and_tends_to_the_hotspot_factor() -> None:
    assert moe.busiest_rank_load(100.0, 1) == 100.0
    for mean, ranks in [(1.0, 8), (10.0, 8), (1000.0, 72), (0.01, 64)]:
        busiest = moe.busiest_rank_load(mean, ranks)
        assert mean <= busiest <= mean * ranks
    # many tokens per rank: the statistical excess vanishes, the sourced skew remains
    assert moe.busiest_rank_load(1e7, 8) / 1e7 == pytest.approx(moe.EXPERT_HOTSPOT_FACTOR, rel=0.01)


def test_expected_ranks_per_token() -> None:
    assert moe.expected_ranks_per_token(8, 1) == 1.0
    assert moe.expected_ranks_per_token(1, 64) == pytest.approx(1.0)
    d = moe.expected_ranks_per_token(8, 8)  # DeepSeek top-8 on 8 GPUs: ~5.25 distinct ranks
    assert d == pytest.approx(8 * (1 - (7 / 8) ** 8))
    assert 1.0 < d < 8.0


def test_busiest_group_prompt_tokens() -> None:
    # fewer prompt tokens per step than one prompt: one attention-DP group does them all
    assert moe.busiest_group_prompt_tokens(512, 1024, 8) == 512
    # many prompts: they spread over the groups
    assert moe.busiest_group_prompt_tokens(80_000, 1024, 8) == 10_000
    assert moe.busiest_group_prompt_tokens(512, 1024, 1) == 512


def test_all_to_all_grows_with_tokens_and_prefers_the_scale_up_fabric() -> None:
    nvlink = Link(bw_gb_per_s=360.0, hop_latency_s=5e-6, kind="nvlink")
    ib = Link(bw_gb_per_s=40.0, hop_latency_s=10e-6, kind="network")
    kw: dict[str, Any] = {"ep": 16, "intra": nvlink, "inter": ib}
    one_domain = moe.moe_all_to_all_s(DSV3, tokens_per_gpu=128, ep_per_node=16, **kw)
    two_nodes = moe.moe_all_to_all_s(DSV3, tokens_per_gpu=128, ep_per_node=8, **kw)
    assert 0 < one_domain < two_nodes
    assert moe.moe_all_to_all_s(DSV3, tokens_per_gpu=256, ep_per_node=16, **kw) > one_domain
    # bytes: tokens x distinct ranks x hidden x (fp8 dispatch + bf16 combine), (ep-1)/ep leaves the GPU
    per = 128 * moe.expected_ranks_per_token(8, 16) * DSV3.hidden_size
    want = 15 / 16 * per * (moe.DISPATCH_BYTES_PER_ELEMENT + moe.COMBINE_BYTES_PER_ELEMENT) / (360 * GB)
    assert one_domain == pytest.approx(want + 2 * 5e-6)


#: DeepEP README, low-latency kernels on H800 (NVLink 400 GB/s, one 400 Gb/s CX7 per GPU): 128 tokens per
#: rank, hidden 7168, top-8, fp8 dispatch + bf16 combine; EP -> (dispatch us, combine us)
DEEPEP_LOW_LATENCY_US = {16: (118, 195), 32: (155, 273), 64: (173, 314), 128: (192, 369), 256: (194, 360)}


@pytest.mark.parametrize("ep", sorted(DEEPEP_LOW_LATENCY_US))
def test_decode_all_to_all_reproduces_deepep_low_latency_timings(ep: int) -> None:
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.comms import inter_node_link, intra_node_link

    spec = get_spec("H800")
    t = moe.moe_all_to_all_s(
        DSV3, tokens_per_gpu=0.0, decode_tokens_per_gpu=128.0, ep=ep, ep_per_node=8,
        intra=intra_node_link(spec, 0.8), inter=inter_node_link(spec, 0.8),
    )  # fmt: skip
    assert t * 1e6 == pytest.approx(sum(DEEPEP_LOW_LATENCY_US[ep]), rel=0.15)


def test_decode_tokens_go_once_per_expert_prompt_tokens_once_per_rank() -> None:
    link = Link(bw_gb_per_s=360.0, hop_latency_s=0.0, kind="nvlink")
    kw: dict[str, Any] = {"ep": 8, "ep_per_node": 8, "intra": link, "inter": link}
    decode = moe.moe_all_to_all_s(DSV3, tokens_per_gpu=0.0, decode_tokens_per_gpu=100.0, **kw)
    prompt = moe.moe_all_to_all_s(DSV3, tokens_per_gpu=100.0, **kw)
    assert decode / prompt == pytest.approx(8 / moe.expected_ranks_per_token(8, 8))
    both = moe.moe_all_to_all_s(DSV3, tokens_per_gpu=100.0, decode_tokens_per_gpu=100.0, **kw)
    assert both == pytest.approx(decode + prompt)


def test_mla_decode_uses_absorbed_attention() -> None:
    ctx = 4096.0
    absorbed = cx.decode_attention_flops_per_token(DSV3, ctx)
    assert absorbed == pytest.approx(2 * ctx * 128 * (2 * 512 + 64) * 61)
    assert absorbed > cx.attention_flops_per_token(DSV3, ctx)  # more FLOPs, far fewer bytes
    dense = resolve_model("llama-3.1-8b")
    assert cx.decode_attention_flops_per_token(dense, ctx) == cx.attention_flops_per_token(dense, ctx)


def _dsv3(**kw: Any) -> Any:
    base: dict[str, Any] = dict(
        model="deepseek-v3", gpu="H200-SXM", precision="fp8", input_len=1024, output_len=2048, gpu_count=8,
        software="trtllm",
    )  # fmt: skip
    return estimate_inference(**(base | kw))


def test_attention_dp_holds_more_mla_sequences_than_attention_tp() -> None:
    """The MLA latent cannot be split over TP ranks, so attention DP (each GPU its own sequences) holds
    ~tp times the sequences of attention TP on the same GPUs."""
    dp = _dsv3(ep=8, attention_dp=True)
    tp = _dsv3(tp=8)
    assert dp.ep == 8 and dp.tp == 1 and dp.attention_dp == 8 and dp.gpus_per_replica == 8
    assert tp.ep == 1 and tp.tp == 8
    assert dp.max_concurrency_per_replica > 4 * tp.max_concurrency_per_replica
    assert dp.output_tokens_per_s is not None and tp.output_tokens_per_s is not None
    assert dp.output_tokens_per_s.central > tp.output_tokens_per_s.central
    assert any("ep=8" in n for n in dp.notes)


def test_auto_layout_considers_expert_parallelism_for_moe_only() -> None:
    auto = _dsv3()
    given_tp = _dsv3(tp=8)
    assert auto.output_tokens_per_s is not None and given_tp.output_tokens_per_s is not None
    assert auto.output_tokens_per_s.central >= given_tp.output_tokens_per_s.central
    assert any("MoE layouts timed" in n for n in auto.notes)
    dense = estimate_inference(
        model="llama-3.1-70b", gpu="H100-SXM", precision="fp8", input_len=512, output_len=256, gpu_count=8
    )
    assert dense.ep == 1 and not any("MoE layouts" in n for n in dense.notes)


def test_a_single_ep_group_in_an_nvl72_rack_uses_nvlink() -> None:
    kw: dict[str, Any] = dict(gpu="GB200", precision="fp4", gpu_count=64, output_len=1024, batch=4096)
    in_rack = _dsv3(ep=64, attention_dp=True, **kw)
    over_ib = _dsv3(ep=64, attention_dp=True, gpus_per_node=4, **kw)
    assert in_rack.tpot_s is not None and over_ib.tpot_s is not None
    assert in_rack.tpot_s.central < over_ib.tpot_s.central


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"ep": 3}, "ep must divide"),
        ({"ep": 8, "tp": 3}, "not a multiple of tp"),
        ({"ep": 16}, "needs more than the 8 GPUs"),
        ({"attention_dp": True}, "needs expert parallelism"),
        ({"ep": 8, "tp": 4, "attention_dp": False}, "tp must be 8"),
        ({"ep": 0}, "ep"),
    ],
)
def test_bad_expert_parallel_requests_are_refused(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        _dsv3(**kw)


def test_ep_on_a_dense_model_is_refused() -> None:
    with pytest.raises(InputError, match="dense model"):
        estimate_inference(
            model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=128, output_len=128,
            gpu_count=8, ep=8,
        )  # fmt: skip


def test_case_note_names_attention_dp() -> None:
    assert note_hints("concurrency 1024, attention DP, max_batch_size 128")["attention_dp"] is True
    assert "attention_dp" not in note_hints("TP8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpu=st.sampled_from(["H100-SXM", "H200-SXM", "B200", "GB200", "MI300X", "A100-SXM-80GB"]),
    model=st.sampled_from(MOE_MODELS),
    precision=st.sampled_from(["bf16", "fp8", "fp4", "int4"]),
    ep=st.sampled_from([2, 4, 8]),
    attention_dp=st.booleans(),
    batch=st.one_of(st.none(), st.integers(1, 2048)),
    input_len=st.integers(1, 4096),
)
def test_expert_parallel_serving_never_beats_its_roofline(
    gpu: str, model: str, precision: str, ep: int, attention_dp: bool, batch: int | None, input_len: int
) -> None:
    spec = load_specs()[gpu]
    arch = resolve_model(model)
    assume(arch.num_experts % ep == 0)
    try:
        est = estimate_inference(
            model=model, gpu=gpu, precision=precision, input_len=input_len, output_len=128, gpu_count=8,
            batch=batch, ep=ep, attention_dp=attention_dp, allow_fallback=True, ignore_memory=True,
        )  # fmt: skip
    except (UnsupportedError, InputError):
        assume(False)
    assume(est.tpot_s is not None and est.ttft_s is not None and est.output_tokens_per_s is not None)
    assert est.ep == ep and est.gpus_per_replica == ep
    gpus, b = est.gpus_per_replica, est.batch_per_replica
    shape = cx.model_shape(arch)
    active_bytes = shape.matmul_active_params * min(BYTES_PER_ELEMENT[precision], 2.0)
    bw = spec.mem_bw_gb_per_s * GB
    peak = max(p for p in (spec.dense_peak_tflops(x) for x in ("fp4", "fp8", "int8", "bf16")) if p) * TERA
    assert est.tpot_s.central >= active_bytes / gpus / bw * 0.999
    assert est.tpot_s.central >= b * 2.0 * shape.matmul_active_params / (gpus * peak) * 0.999
    assert est.ttft_s.central >= input_len * 2.0 * shape.matmul_active_params / (gpus * peak) * 0.999
    bound = est.replicas * b / (active_bytes / gpus / bw)
    assert est.output_tokens_per_s.central <= bound * 1.001
    assert math.isfinite(est.output_tokens_per_s.central)


@given(
    experts=st.integers(1, 512),
    k=st.integers(1, 16),
    tokens=st.floats(1.0, 1e6, allow_nan=False),
)
def test_touched_experts_are_at_most_all_experts_and_at_most_k_per_token(
    experts: int, k: int, tokens: float
) -> None:
    """Active-expert weight reads at decode: min(all experts, k x tokens) bounds the expected distinct
    experts a step touches (a step carries at least one token)."""
    assume(k <= experts)
    touched = cx.moe_expected_experts(experts, k, tokens)
    assert touched <= min(experts, k * tokens) + 1e-9
    assert touched >= 0.0


def test_layout_note_states_the_saturated_ranking_and_the_asked_batch() -> None:
    """The kept layout is the fastest at saturation; with a batch given, the note shows both sets of
    figures, so a user sees why a layout faster at their batch was not kept."""
    asked = _dsv3(batch=1024)
    note = next(n for n in asked.notes if n.startswith("MoE layouts timed at saturation"))
    assert "at 1024 sequences per replica:" in note
    saturated = next(n for n in _dsv3().notes if n.startswith("MoE layouts timed at saturation"))
    assert "sequences per replica" not in saturated
