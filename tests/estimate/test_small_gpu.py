"""Single-GPU / small-GPU / PCIe serving mechanisms: engines that prefill outside the decode steps (TGI v1-v2)
(docs/performance.md "Inference")."""

from __future__ import annotations

import pytest

from gpufleet.estimate import estimate_inference, estimate_training
from gpufleet.estimate import inference as inf
from gpufleet.estimate.calibration import load_profile


def test_tgi_prefills_each_prompt_in_a_pass_of_its_own() -> None:
    """TGI v1-v2: throughput at b sequences = b x out / (out x TPOT(b) + b x prefill of one prompt); the
    prefill of one prompt is the batch-1 TTFT (no decode step to wait for)."""
    kw = dict(model="llama-2-7b", gpu="A10G", precision="fp16", output_len=256, gpu_count=4, tp=4,
              software="tgi", allow_fallback=True)  # fmt: skip
    one = estimate_inference(input_len=512, batch=1, **kw)  # type: ignore[arg-type]
    b20 = estimate_inference(input_len=512, batch=20, **kw)  # type: ignore[arg-type]
    assert one.ttft_s is not None and b20.tpot_s is not None and b20.output_tokens_per_s is not None
    expect = 20 * 256 / (256 * b20.tpot_s.central + 20 * one.ttft_s.central)
    assert b20.output_tokens_per_s.central == pytest.approx(expect, rel=1e-9)
    assert "tgi" in inf.SEPARATE_PREFILL_STACKS and "vllm" not in inf.SEPARATE_PREFILL_STACKS


def test_separate_prefill_is_never_faster_than_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prefill pass of its own reads the weights again and pays an engine iteration; carrying the prompt
    inside the decode step shares both, so the same engine is never faster with separate prefills."""
    for batch in (1, 8, 64):
        kw = dict(model="llama-3.1-8b", gpu="L40S", precision="bf16", input_len=1024, output_len=128,
                  batch=batch, software="tgi", allow_fallback=True)  # fmt: skip
        sep = estimate_inference(**kw)  # type: ignore[arg-type]
        assert sep.output_tokens_per_s is not None
        with monkeypatch.context() as mp:
            mp.setattr(inf, "SEPARATE_PREFILL_STACKS", frozenset())
            mixed = estimate_inference(**kw)  # type: ignore[arg-type]
        assert mixed.output_tokens_per_s is not None
        assert sep.output_tokens_per_s.central <= mixed.output_tokens_per_s.central * (1 + 1e-9)


def test_optimizer_step_traffic_per_parameter() -> None:
    """2 W + G + 2 S bytes per trainable parameter: mixed-precision AdamW 2x2 + 2 + 2x(4 + 8) = 30,
    pure-bf16 8-bit Adam 2x2 + 2 + 2x(2 + 8/256 absmax) = 10.06, fp32 SGD 2x4 + 4 = 12."""
    from gpufleet.estimate.training import optimizer_step_bytes_per_param

    assert optimizer_step_bytes_per_param("adamw", "bf16", True) == pytest.approx(30.0)
    assert optimizer_step_bytes_per_param("paged_adamw8bit", "bf16", False) == pytest.approx(10.0 + 16 / 256)
    assert optimizer_step_bytes_per_param("sgd", "fp32", True) == pytest.approx(12.0)


def test_optimizer_step_streams_the_states_through_memory() -> None:
    """A single-GPU full fine-tune's step grows by params x (30 - 10.06) bytes / (BW x eta_bw) from 8-bit pure
    bf16 Adam to mixed-precision AdamW; LoRA's adapter states barely move the step."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.models import count_params, resolve_model

    prof = load_profile()
    kw = dict(model="llama-3.1-8b", gpu="A100-SXM-80GB", precision="bf16", gpu_count=1, global_batch=2,
              seq_len=2048, recompute="none", ignore_memory=True, profile=prof)  # fmt: skip
    mixed = estimate_training(task="full_finetune", optimizer="adamw", master_weights=True, **kw)  # type: ignore[arg-type]
    small = estimate_training(task="full_finetune", optimizer="paged_adamw8bit", master_weights=False, **kw)  # type: ignore[arg-type]
    assert mixed.step_time_s is not None and small.step_time_s is not None
    bw = get_spec("A100-SXM-80GB").mem_bw_gb_per_s * 1e9 * prof.param("eta_bw")
    expect = count_params(resolve_model("llama-3.1-8b")).total * (20.0 - 16 / 256) / bw
    assert mixed.step_time_s.central - small.step_time_s.central == pytest.approx(expect, rel=1e-6)
    lora_a = estimate_training(task="lora", optimizer="adamw", master_weights=True, **kw)  # type: ignore[arg-type]
    lora_b = estimate_training(task="lora", optimizer="paged_adamw8bit", master_weights=False, **kw)  # type: ignore[arg-type]
    assert lora_a.step_time_s is not None and lora_b.step_time_s is not None
    assert lora_a.step_time_s.central / lora_b.step_time_s.central < 1.01


def test_gtx_16xx_has_no_tensor_core_speedups() -> None:
    """TU116 (GTX 1660 SUPER) lists packed-FP16 CUDA-core throughput: no GeForce tensor multiplier and no
    fp16-accumulate doubling for llama.cpp; GeForce parts with tensor cores keep both."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.rates import geforce_tensor_peak

    assert not geforce_tensor_peak(get_spec("GTX-1660S"))
    assert geforce_tensor_peak(get_spec("RTX-4090")) and geforce_tensor_peak(get_spec("RTX-3090"))
    assert not geforce_tensor_peak(get_spec("A10G")) and not geforce_tensor_peak(get_spec("L40S"))
    est = estimate_inference(model="llama-3.2-1b", gpu="GTX-1660S", precision="fp16", input_len=512,
                             output_len=1, batch=1, software="llamacpp", allow_fallback=True)  # fmt: skip
    assert not any("fp16-accumulate" in n for n in est.notes)
    rtx = estimate_inference(model="llama-3.2-1b", gpu="RTX-4090", precision="fp16", input_len=512,
                             output_len=1, batch=1, software="llamacpp", allow_fallback=True)  # fmt: skip
    assert any("fp16-accumulate" in n for n in rtx.notes)


def test_group_link_follows_the_gpus_a_group_spans() -> None:
    """PCIe: a data-parallel ring over 8 L40S crosses the CPU sockets (SHM at half rate), 4 stay on P2P, a
    pair spaced 4 apart spans 5 GPUs (SHM); NVLink bridges join adjacent pairs only; a mesh pipeline hop
    uses one of the 7 peer links; NVSwitch gives any group the full rate."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate import comms

    def link(gpu: str, group: int, stride: int, pairwise: bool = False) -> comms.Link:
        return comms.group_link(get_spec(gpu), group=group, stride=stride, gpus_per_node=8, link_eff=1.0,
                                pairwise=pairwise)  # fmt: skip

    assert link("L40S", 8, 1).kind == "pcie_shm" and link("L40S", 8, 1).bw_gb_per_s == pytest.approx(15.75)
    assert link("L40S", 4, 1).kind == "pcie" and link("L40S", 4, 1).bw_gb_per_s == pytest.approx(31.5)
    assert link("L40S", 2, 4).kind == "pcie_shm"
    assert link("L40S", 8, 1, pairwise=True).kind == "pcie"  # neighbouring stages stay on P2P
    assert link("RTX-A6000", 2, 1).kind == "nvlink" and link("RTX-A6000", 2, 2).kind == "pcie"
    mi = get_spec("MI300X")
    assert link("MI300X", 8, 1, pairwise=True).bw_gb_per_s == pytest.approx(mi.scaleup_bw_gb_per_s / 2 / 7)
    assert link("MI300X", 8, 1).bw_gb_per_s == pytest.approx(mi.scaleup_bw_gb_per_s / 2)
    h100 = get_spec("H100-SXM")
    assert link("H100-SXM", 2, 4).bw_gb_per_s == pytest.approx(h100.scaleup_bw_gb_per_s / 2)
    # serving pipelines: a stage hop spans tp + 1 GPUs
    l40s = get_spec("L40S")
    assert comms.pipeline_link(l40s, 4, 2, 8, 1.0).kind == "pcie_shm"
    assert comms.pipeline_link(l40s, 2, 2, 8, 1.0).kind == "pcie"
    assert comms.pipeline_link(get_spec("RTX-A6000"), 1, 2, 8, 1.0).kind == "nvlink"
