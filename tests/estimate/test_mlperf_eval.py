"""MLPerf evaluation overhead from the benchmarks' evaluation schedules (priors.MLPERF_EVAL_RULES)."""

from __future__ import annotations

import pytest

from gpufleet.estimate import compute as cx
from gpufleet.estimate.predict import mlperf_eval_factor, mlperf_round
from gpufleet.estimate.profile import load_profile
from gpufleet.models.registry import resolve_model


def test_llama31_405b_six_evaluations_at_a_third_of_a_training_sequence() -> None:
    # 276,480 sequences / 46,080 = 6 evaluations of 5,760 sequences, forward-only = 1/3 of a training
    # sequence (6N vs 2N, attention 3x vs 1x): 1 + 6 x 5760 / (3 x 276480) = 1.041667
    f, note = mlperf_eval_factor(
        model="llama-3.1-405b", task="pretrain", seq_len=8192, global_batch=1152,
        train_tokens=276480 * 8192, recompute="selective", profile=load_profile(), round_=5.0,
    )  # fmt: skip
    assert f == pytest.approx(1.0 + 6 * 5760 / (3 * 276480), rel=1e-9)
    assert "6 evaluations" in note


def test_llama31_405b_evaluates_every_18432_sequences_from_round_5_1() -> None:
    # v5.1 and later: 276,480 / 18,432 = 15 evaluations of 5,760 sequences; a case naming no round gets
    # the newest schedule
    kw = dict(
        model="llama-3.1-405b", task="pretrain", seq_len=8192, global_batch=1152,
        train_tokens=276480 * 8192, recompute="selective", profile=load_profile(),
    )  # fmt: skip
    f51, note = mlperf_eval_factor(**kw, round_=5.1)  # type: ignore[arg-type]
    assert f51 == pytest.approx(1.0 + 15 * 5760 / (3 * 276480), rel=1e-9)
    assert "15 evaluations" in note
    assert mlperf_eval_factor(**kw)[0] == f51  # type: ignore[arg-type]
    assert mlperf_eval_factor(**kw, round_=6.0)[0] == f51  # type: ignore[arg-type]


def test_llama31_8b_evaluates_1024_sequences_every_12288() -> None:
    arch = resolve_model("llama-3.1-8b")
    fl = cx.training_flops_per_token(arch, task="pretrain", seq_len=8192, recompute="none")
    fwd = 2.0 * cx.model_shape(arch).matmul_active_params + cx.attention_flops_per_token(arch, 8192.0)
    share = fwd / (fl.hw_matmul + fl.hw_attention)
    # 184,320 sequences / 12,288 = 15 evaluations of 1,024 sequences
    f, note = mlperf_eval_factor(
        model="llama-3.1-8b", task="pretrain", seq_len=8192, global_batch=32, train_tokens=184320 * 8192,
        recompute="none", profile=load_profile(), round_=5.1,
    )  # fmt: skip
    assert f == pytest.approx(1.0 + 15 * 1024 * share / 184320, rel=1e-9)
    assert "llama31_8b" in note


def test_round_is_read_from_the_source() -> None:
    assert mlperf_round("MLPerf Training v5.0 (mlcommons/training_results_v5.0) NVIDIA/results/x") == 5.0
    assert mlperf_round("mlcommons/training_results_v5.1 AMD") == 5.1
    assert mlperf_round("MLPerf Inference v5.0") is None
    assert mlperf_round("Llama 3 paper") is None


def test_gpt3_full_recompute_makes_evaluation_a_quarter_of_a_step() -> None:
    # 589,824 sequences / 24,576 = 24 evaluations of 11,590,004 / 2048 = 5659.2 sequences; full recompute
    # replays the decoder layers' forward (not the LM head), so a training sequence costs just under 4
    # forwards: 1 + 24 x 5659.2 x share / 589824 with share = forward / step FLOPs, a little above 1/4
    arch = resolve_model("gpt3-175b")
    fl = cx.training_flops_per_token(arch, task="pretrain", seq_len=2048, recompute="full")
    fwd = 2.0 * cx.model_shape(arch).matmul_active_params + cx.attention_flops_per_token(arch, 2048.0)
    share = fwd / (fl.hw_matmul + fl.hw_attention)
    assert 0.25 < share < 0.2505  # GPT-3's 50k-vocabulary head is 0.3 % of its matmul weights
    f, _ = mlperf_eval_factor(
        model="gpt3-175b", task="pretrain", seq_len=2048, global_batch=2048, train_tokens=589824 * 2048,
        recompute="full", profile=load_profile(),
    )  # fmt: skip
    assert f == pytest.approx(1.0 + 24 * (11590004 / 2048) * share / 589824, rel=1e-9)


def test_llama2_lora_skips_the_first_evaluations() -> None:
    # 3,150 sequences / 384 = 8 evaluations, the first floor(0.125 x 8 + 2) = 3 skipped: 5 of 173 sequences,
    # forward (2N + attention) over the LoRA step (4N + 6 N_adapter + 3 x attention)
    arch = resolve_model("llama-2-70b")
    fl = cx.training_flops_per_token(arch, task="lora", seq_len=8192, recompute="selective")
    fwd = 2.0 * cx.model_shape(arch).matmul_active_params + cx.attention_flops_per_token(arch, 8192.0)
    share = fwd / (fl.hw_matmul + fl.hw_attention)
    assert 1 / 3 < share < 1 / 2
    f, note = mlperf_eval_factor(
        model="llama-2-70b", task="lora", seq_len=8192, global_batch=8, train_tokens=3150 * 8192,
        recompute="selective", profile=load_profile(),
    )  # fmt: skip
    assert f == pytest.approx(1.0 + 5 * 173 * share / 3150, rel=1e-9)
    assert "5 evaluations" in note
    # a larger global batch skips more: GBS 32 skips floor(4 + 2) = 6 of the 8
    f32, _ = mlperf_eval_factor(
        model="llama-2-70b", task="lora", seq_len=8192, global_batch=32, train_tokens=3150 * 8192,
        recompute="selective", profile=load_profile(),
    )  # fmt: skip
    assert f32 == pytest.approx(1.0 + 2 * 173 * share / 3150, rel=1e-9)


def test_benchmark_without_a_schedule_takes_the_flat_prior() -> None:
    prof = load_profile()
    f, note = mlperf_eval_factor(
        model="mixtral-8x7b", task="pretrain", seq_len=8192, global_batch=32, train_tokens=1e9,
        recompute="selective", profile=prof,
    )  # fmt: skip
    assert f == prof.param("mlperf_eval_overhead")
    assert "flat prior" in note
