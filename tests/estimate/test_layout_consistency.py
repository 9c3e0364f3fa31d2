"""Consistency rules that cut across layout choice, MoE parallelism and the calibration-case mapping."""

from __future__ import annotations

import dataclasses

import pytest

from gpufleet.estimate import estimate_inference, estimate_training
from gpufleet.estimate.calibration import predict_case
from gpufleet.estimate.cases import parse_cases_csv

HEADER = (
    "case_id,metric,model,task,gpu,gpu_count,precision,batch,seq_len,input_len,output_len,train_tokens,"
    "tp,pp,dp,ep,cp,software,measured,unit,note,source\n"
)


def test_saturated_ttft_equals_ttft_at_the_saturating_batch() -> None:
    kw = dict(model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=512, output_len=256)
    sat = estimate_inference(**kw)  # type: ignore[arg-type]
    given = estimate_inference(**kw, batch=sat.batch_per_replica)  # type: ignore[arg-type]
    assert sat.ttft_s is not None and given.ttft_s is not None
    assert sat.ttft_s.central == pytest.approx(given.ttft_s.central)
    assert sat.output_tokens_per_s is not None and given.output_tokens_per_s is not None
    assert sat.output_tokens_per_s.central == pytest.approx(given.output_tokens_per_s.central)


def test_ttft_grows_with_concurrency_under_inflight_batching() -> None:
    kw = dict(model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=1024, output_len=128)
    one = estimate_inference(**kw, batch=1)  # type: ignore[arg-type]
    many = estimate_inference(**kw, batch=64)  # type: ignore[arg-type]
    assert one.ttft_s is not None and many.ttft_s is not None
    assert many.ttft_s.central > one.ttft_s.central


def test_expert_parallelism_shards_expert_memory_and_is_not_slower() -> None:
    kw = dict(
        model="mixtral-8x7b", task="pretrain", gpu="H100-SXM", precision="bf16", gpu_count=64,
        global_batch=256, seq_len=4096, tp=1, pp=1, dp=64,
    )  # fmt: skip
    no_ep = estimate_training(**kw, ep=1)  # type: ignore[arg-type]
    ep8 = estimate_training(**kw, ep=8)  # type: ignore[arg-type]
    assert ep8.tokens_per_s_per_gpu is not None and no_ep.tokens_per_s_per_gpu is not None
    assert ep8.tokens_per_s_per_gpu.central >= no_ep.tokens_per_s_per_gpu.central
    # without EP every rank holds all experts, so the chooser needs ZeRO-3 to fit; with EP it does not
    assert no_ep.zero_stage == 3
    assert ep8.zero_stage != 3


def test_case_with_ep_listed_outside_dp_is_still_predicted() -> None:
    text = HEADER + (
        "S1,train_tokens_per_s_per_gpu,mixtral-8x7b,pretrain,H100-SXM,64,bf16,256,4096,,,,1,1,8,8,,"
        "megatron,3500,tok/s/gpu,,test\n"
    )
    (case,) = parse_cases_csv(text, "inline.csv")
    pred = predict_case(case)
    assert pred.predicted > 0
    assert 0.25 < case.measured / pred.predicted < 4.0


def test_inconsistent_stated_layout_falls_back_with_a_note() -> None:
    text = HEADER + (
        "S2,train_tokens_per_s_per_gpu,llama-3.1-8b,pretrain,H100-SXM,8,bf16,128,8192,,,,1,1,4,,,"
        "megatron,12000,tok/s/gpu,,test\n"
    )
    (case,) = parse_cases_csv(text, "inline.csv")
    pred = predict_case(case)
    assert pred.predicted > 0
    assert any("re-derived" in n for n in pred.notes)
    consistent = dataclasses.replace(case, dp=8)
    assert predict_case(consistent).predicted == pytest.approx(pred.predicted, rel=0.5)


def test_peak_memory_under_a_preallocating_engine_is_its_pool() -> None:
    text = HEADER + (
        "P1,peak_memory_gib,llama-3.1-8b,inference,H100-SXM,1,bf16,1,,512,128,,1,1,1,,,vllm,72,GiB,,test\n"
        "P2,peak_memory_gib,llama-3.1-8b,inference,H100-SXM,1,bf16,1,,512,128,,1,1,1,,,transformers,16,GiB,,t\n"
    )
    vllm, hf = parse_cases_csv(text, "inline.csv")
    # vLLM reserves gpu_memory_utilization (0.9) of the device: ~0.9 x 79.65 GiB, whatever the model needs
    assert predict_case(vllm).predicted == pytest.approx(0.9 * 79.65, rel=0.02)
    assert predict_case(hf).predicted < 20.0


def test_training_peak_memory_uses_the_per_gpu_micro_batch() -> None:
    row = (
        "P3,peak_memory_gib,llama-2-7b,full_finetune,A100-SXM-80GB,8,bf16,{b},2048,,,,1,1,8,,,deepspeed,30,GiB,"
        "ZeRO-3,test\n"
    )
    (global8,) = parse_cases_csv(HEADER + row.format(b=8), "inline.csv")
    (global64,) = parse_cases_csv(HEADER + row.format(b=64), "inline.csv")
    p8, p64 = predict_case(global8), predict_case(global64)
    assert any("micro-batch 1 per GPU" in n for n in p8.notes)
    assert any("micro-batch 8 per GPU" in n for n in p64.notes)
    assert p64.predicted > p8.predicted


def test_fp4_training_runs_on_blackwell_faster_than_fp8_and_bf16() -> None:
    kw = dict(model="llama-3.1-8b", task="pretrain", gpu="B200", gpu_count=8, global_batch=64, seq_len=8192)
    speed = {}
    for prec in ("bf16", "fp8", "fp4"):
        est = estimate_training(**kw, precision=prec)  # type: ignore[arg-type]
        assert est.tokens_per_s_per_gpu is not None
        speed[prec] = est.tokens_per_s_per_gpu.central
        # low-precision GEMMs keep bf16 weights and fp32 master copies: same memory for weights
        assert est.memory.breakdown_gib["weights"] == pytest.approx(
            estimate_training(**kw, precision="bf16").memory.breakdown_gib["weights"]  # type: ignore[arg-type]
        )
    assert speed["bf16"] < speed["fp8"] < speed["fp4"]


def test_training_integer_weights_is_unsupported() -> None:
    from gpufleet.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="qlora"):
        estimate_training(
            model="llama-3.1-8b", task="pretrain", gpu="B200", gpu_count=8, global_batch=64, seq_len=8192,
            precision="int4",
        )  # fmt: skip


def test_small_cloud_vms_talk_over_a_slower_network_than_hgx_nodes() -> None:
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.comms import inter_node_link

    h100 = get_spec("H100-SXM")
    hgx = inter_node_link(h100, 1.0, gpus_per_node=8)
    vm = inter_node_link(h100, 1.0, gpus_per_node=1)
    assert vm.bw_gb_per_s < hgx.bw_gb_per_s / 10
    assert vm.hop_latency_s > hgx.hop_latency_s


def test_pipeline_across_single_gpu_vms_costs_network_time() -> None:
    kw = dict(
        model="llama-2-13b", task="full_finetune", gpu="H100-SXM", precision="bf16", gpu_count=8,
        global_batch=64, seq_len=4096, tp=1, pp=8, dp=1, software="megatron",
    )  # fmt: skip
    one_node = estimate_training(**kw, gpus_per_node=8)  # type: ignore[arg-type]
    eight_vms = estimate_training(**kw, gpus_per_node=1)  # type: ignore[arg-type]
    assert one_node.step_time_s is not None and eight_vms.step_time_s is not None
    assert eight_vms.step_time_s.central > one_node.step_time_s.central


def test_peak_memory_with_an_unstated_engine_is_the_need_not_a_pool() -> None:
    text = HEADER + (
        "P4,peak_memory_gib,llama-3.1-8b,inference,H100-SXM,1,bf16,1,,512,128,,1,1,1,,,,17,GiB,,test\n"
    )
    (case,) = parse_cases_csv(text, "inline.csv")
    assert predict_case(case).predicted < 25.0
