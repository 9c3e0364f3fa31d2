"""Inference layout and concurrency mechanisms: llama.cpp's layer split and a case's system-wide batch."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate import compute as cx
from gpufleet.estimate.cases import CalibrationCase
from gpufleet.estimate.inference import estimate_inference
from gpufleet.estimate.predict import predict_case
from gpufleet.models.registry import resolve_model
from gpufleet.precision import bytes_per_element


def test_llamacpp_splits_layers_not_tensors_when_no_layout_is_given() -> None:
    # llama.cpp's default --split-mode layer: 70B Q4 on 2 x RTX 4090 is a 2-stage pipeline, not TP 2
    kw: dict[str, Any] = dict(
        model="llama-3-70b", gpu="RTX-4090", precision="int4", input_len=1, output_len=512, gpu_count=2,
        batch=1, software="llamacpp",
    )  # fmt: skip
    est = estimate_inference(**kw)
    assert (est.tp, est.pp, est.replicas) == (1, 2, 1)
    stated = estimate_inference(**kw, tp=1, pp=2)
    assert est.tpot_s is not None and stated.tpot_s is not None
    assert est.tpot_s.central == pytest.approx(stated.tpot_s.central)
    # batch 1 runs the stages in turn, so a token reads all ~70.6e9 x 0.53 B = ~37.5 GB through ONE GPU's
    # 1008 GB/s at a time: TPOT >= 37 ms (tensor parallelism would halve that bound to ~19 ms)
    m = resolve_model("llama-3-70b")
    body = cx.model_shape(m).matmul_active_params - cx.model_shape(m).lm_head_params
    bound_s = body * bytes_per_element("int4") / (get_spec("RTX-4090").mem_bw_gb_per_s * 1e9)
    assert bound_s == pytest.approx(0.037, rel=0.05)
    assert est.tpot_s.central > bound_s
    # an engine with tensor parallelism takes tp = 2 on the same GPUs
    assert estimate_inference(**(kw | {"software": "vllm"})).tp == 2


def test_llamacpp_layer_split_keeps_a_stated_tensor_parallel_layout() -> None:
    est = estimate_inference(
        model="llama-3-70b", gpu="RTX-4090", precision="int4", input_len=1, output_len=512, gpu_count=2,
        batch=1, software="llamacpp", tp=2,
    )  # fmt: skip
    assert (est.tp, est.pp) == (2, 1)


def _case(**kw: Any) -> CalibrationCase:
    base: dict[str, Any] = dict(
        case_id="Z1", metric="infer_output_tokens_per_s", model="llama-3.1-8b", task="inference",
        gpu="H100-SXM", gpu_count=8, precision="bf16", batch=8, seq_len=None, input_len=512.0,
        output_len=128.0, train_tokens=None, tp=None, pp=None, dp=None, ep=None, cp=None, software="vllm",
        measured=1000.0, unit="tok/s", note="", source="test",
    )  # fmt: skip
    return CalibrationCase(**(base | kw))


def _one_gpu_tok_s(batch: int) -> float:
    est = estimate_inference(
        model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=512, output_len=128, batch=batch,
        software="vllm", gpu_count=1,
    )  # fmt: skip
    assert est.output_tokens_per_s is not None
    return est.output_tokens_per_s.central


def test_case_batch_is_the_whole_systems_concurrency() -> None:
    # 8 concurrent sequences on 8 x H100 with an 8B model at a stated tp=1: 8 replicas of one GPU, one
    # sequence each, so 8 x the one-GPU batch-1 rate (not 8 replicas x 8 sequences each)
    assert predict_case(_case(batch=8, tp=1)).predicted == pytest.approx(8 * _one_gpu_tok_s(1), rel=1e-9)
    # one sequence keeps one replica busy: the one-GPU batch-1 rate
    assert predict_case(_case(batch=1, tp=1)).predicted == pytest.approx(_one_gpu_tok_s(1), rel=1e-9)
    # 20 sequences over 8 replicas: 3 on each busy replica, 20 / 3 replicas' worth of the 3-sequence rate
    twenty = predict_case(_case(batch=20, tp=1)).predicted
    assert twenty == pytest.approx(20 / 3 * _one_gpu_tok_s(3), rel=1e-9)


def test_case_with_a_stated_batch_and_no_layout_runs_one_instance_over_its_gpus() -> None:
    # a serving benchmark at concurrency 4 on 4 x H100: one vLLM instance with TP 4, not 4 replicas
    est = estimate_inference(
        model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=512, output_len=128, batch=4,
        software="vllm", gpu_count=4, tp=4,
    )  # fmt: skip
    pred = predict_case(_case(batch=4, gpu_count=4)).predicted
    assert pred == pytest.approx(est.output_tokens_per_s.central, rel=1e-9)
    # llama.cpp spreads its layers over every GPU it sees: 8B Q4 on 2 x RTX 4090 is a 2-stage pipeline
    two = estimate_inference(
        model="llama-3-8b", gpu="RTX-4090", precision="int4", input_len=1, output_len=512, batch=1,
        software="llamacpp", gpu_count=2, tp=1, pp=2,
    )  # fmt: skip
    case = _case(
        model="llama-3-8b", gpu="RTX-4090", gpu_count=2, precision="int4", batch=1, input_len=1.0,
        output_len=512.0, software="llamacpp",
    )  # fmt: skip
    assert predict_case(case).predicted == pytest.approx(two.output_tokens_per_s.central, rel=1e-9)


def test_case_batch_latency_is_that_of_one_replicas_share() -> None:
    tpot = predict_case(_case(metric="tpot_ms", unit="ms", measured=7.0, batch=16, tp=1)).predicted
    est = estimate_inference(
        model="llama-3.1-8b", gpu="H100-SXM", precision="bf16", input_len=512, output_len=128, batch=2,
        software="vllm",
    )  # fmt: skip
    assert est.tpot_loaded_s is not None
    assert tpot == pytest.approx(est.tpot_loaded_s.central * 1e3, rel=1e-9)


def _est(**kw: Any) -> Any:
    base: dict[str, Any] = dict(
        model="llama-3.1-8b", gpu="A100-SXM-80GB", precision="bf16", input_len=1024, output_len=128,
    )  # fmt: skip
    return estimate_inference(**(base | kw))


def test_loaded_tpot_with_separate_prefill_passes_adds_the_others_prompts() -> None:
    # TGI v1-v2: each of the other 19 requests' prompts is a forward pass of its own while this request
    # waits; one request's prompt pass = the batch-1 TTFT of a 1024-token prompt (one GPU, no queue):
    # loaded TPOT = TPOT(20) + 19 x prefill / 128 output tokens
    e20, e1 = _est(batch=20, software="tgi"), _est(batch=1, software="tgi", output_len=1)
    one = e1.ttft_s.central
    expected = e20.tpot_s.central + 19 * one / 128
    assert e20.tpot_loaded_s.central == pytest.approx(expected, rel=1e-9)
    # the throughput is the same cycle seen from all 20: b / throughput = TPOT + 20 prefills / 128
    assert 20 / e20.output_tokens_per_s.central == pytest.approx(e20.tpot_s.central + 20 * one / 128)


def test_loaded_tpot_with_in_flight_batching_lies_between_the_step_and_the_cycle() -> None:
    e1, e32 = _est(batch=1, software="vllm"), _est(batch=32, software="vllm")
    assert e1.tpot_loaded_s.central == e1.tpot_s.central  # alone: no one else's prompt
    per_token = 32 / e32.output_tokens_per_s.central  # a step carrying all 32 prompts' share
    assert e32.tpot_s.central < e32.tpot_loaded_s.central < per_token
    # 31 x 1024 / 128 = 248 prompt tokens ride on each step of 32 decodes: on an A100 (312 TFLOP/s bf16)
    # that is >= 248 x 2 x 8e9 / 312e12 = 12.7 ms of GEMM work beyond the decode step's weight read
    assert e32.tpot_loaded_s.central - e32.tpot_s.central > 0.0127 * 0.5


def test_kv_cache_default_follows_the_engine() -> None:
    from gpufleet.estimate.inference import default_kv_precision

    h100 = get_spec("H100-SXM")
    # TRT-LLM fp8 checkpoints quantise the KV cache; vLLM/SGLang --kv-cache-dtype auto keep 16 bit
    assert default_kv_precision("fp8", h100, "trtllm") == "fp8"
    assert default_kv_precision("fp8", h100, "unknown") == "fp8"
    for sw in ("vllm", "sglang", "tgi", "transformers", "llamacpp"):
        assert default_kv_precision("fp8", h100, sw) is None
    assert default_kv_precision("bf16", h100, "trtllm") is None


def test_vllm_fp8_weights_keep_a_16_bit_kv_cache_so_half_the_sequences_fit() -> None:
    # llama-3.1-8b KV per token: 32 layers x 8 KV heads x 128 x (K, V) x 2 B = 131072 B at 16 bit, half at
    # fp8; at 4096 + 1024 tokens the pool holds ~2x the sequences with the fp8 cache TRT-LLM applies
    kw: dict[str, Any] = dict(
        model="llama-3.1-8b", gpu="L40S", precision="fp8", input_len=4096, output_len=1024,
    )  # fmt: skip
    from gpufleet.estimate.kv_cache import kv_cache_bytes_per_token

    assert kv_cache_bytes_per_token("llama-3.1-8b", None) == 32 * 8 * 128 * 2 * 2
    vllm = estimate_inference(**kw, software="vllm").max_concurrency_per_replica
    vllm_fp8 = estimate_inference(**kw, software="vllm", kv_precision="fp8").max_concurrency_per_replica
    trt = estimate_inference(**kw, software="trtllm").max_concurrency_per_replica
    assert vllm_fp8 == pytest.approx(2 * vllm, abs=2)
    assert trt == pytest.approx(2 * vllm, rel=0.1)  # engines' pool sizes differ a little


def test_llamacpp_pipeline_runs_its_decode_batch_through_the_stages_in_turn() -> None:
    # llama.cpp waits for each decode call's logits: 4 slots on a 2-stage layer split do the one-GPU work in
    # sequence, so TPOT ~ the one-GPU TPOT at batch 4 (plus a 4 x 4096 x 2 B hand-off, microseconds), not two
    # micro-batches each paying the per-step overhead
    kw: dict[str, Any] = dict(
        model="llama-3-8b", gpu="RTX-4090", precision="int4", input_len=128, output_len=512, batch=4,
        software="llamacpp",
    )  # fmt: skip
    one = estimate_inference(**kw).tpot_s.central
    two = estimate_inference(**kw, gpu_count=2, tp=1, pp=2).tpot_s.central
    assert two == pytest.approx(one, rel=0.02)


def test_kv_heads_replicate_beyond_tp_equal_kv_heads() -> None:
    from dataclasses import replace

    from gpufleet.estimate.inference import _Infer, _kv_tp_split

    def split(model: str, tp: int) -> float:
        base = _Infer(
            model=resolve_model(model), rates=None, tp=1, pp=1, link=None, width=1.0, stack=1.0,  # type: ignore[arg-type]
            overhead_s=0.0, eta_bw=1.0, kv_bytes_per_token=1.0, head_bytes=2.0,
        )  # fmt: skip
        return _kv_tp_split(replace(base, tp=tp))

    assert split("llama-3.1-8b", 4) == 4  # 8 KV heads: 2 per rank
    assert split("starcoder-15.5b", 4) == 1  # MQA: every rank holds the one KV head
    assert split("qwen3-235b-a22b", 8) == 4  # 4 KV heads over 8 ranks: each head on 2 ranks
    assert split("deepseek-v3", 8) == 1  # MLA latent replicated


def test_decode_reads_the_whole_replicated_kv_cache_on_every_rank() -> None:
    # starcoder-15.5b (MQA): KV per token = 40 layers x 1 head x 128 x (K, V) x 2 B = 20480 B; TP 4 ranks
    # each hold and read all of it: 256 sequences x 7680 cached tokens x 20480 B = 40.3 GB per rank per step,
    # >= 12.0 ms at the H100's 3.35 TB/s, plus its quarter of the 30.9 GB of weights (2.3 ms)
    est = estimate_inference(
        model="starcoder-15.5b", gpu="H100-SXM", gpu_count=4, tp=4, precision="bf16", batch=256,
        input_len=7168, output_len=1024, software="vllm", ignore_memory=True,
    )  # fmt: skip
    kv_s = 256 * (7168 + 512) * 20480 / 3.35e12
    assert kv_s == pytest.approx(0.0120, rel=0.02)
    assert est.tpot_s.central > kv_s + 30.9e9 / 4 / 3.35e12


def test_sliding_window_layers_read_only_the_window_of_cached_keys() -> None:
    # mistral-7b attends the last 4096 keys on every layer: past the window, a longer context adds no KV
    # reads and no attention FLOPs, so the decode step stops growing
    def tpot(input_len: int) -> float:
        est = estimate_inference(
            model="mistral-7b", gpu="H100-SXM", precision="bf16", input_len=input_len, output_len=256,
            batch=32, software="vllm", ignore_memory=True,
        )  # fmt: skip
        return float(est.tpot_s.central)

    assert tpot(12_000) == pytest.approx(tpot(24_000), rel=1e-9)
    assert tpot(2_000) < tpot(12_000)
