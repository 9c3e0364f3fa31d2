"""Issue 25 item 3: torchtune's README 'Memory and training speed' table runs the same single-device
recipes at about twice the memory on a 48 GB A6000 as on a 24 GB RTX 4090 (full 37.4 vs 18.9 GiB, LoRA
30.3 vs 16.2 GiB). The LoRA row has no paged optimizer and torchtune's statistic (torch's allocator) never
counts bitsandbytes' managed-memory states, so the mechanism is the activations kept on the GPU where they
fit (recipes.Recipe.fastest_fit_single_device), not paged states."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.estimate.calibration import predict_case
from gpufleet.estimate.cases import CalibrationCase, parse_cases_csv, shipped_cases_path
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.recipes import RECIPES


def _case(case_id: str) -> CalibrationCase:
    cases = parse_cases_csv(shipped_cases_path().read_text(), "cases.csv")
    return next(c for c in cases if c.case_id == case_id)


@pytest.mark.parametrize(("case_id", "measured"), [("N054", 37.4), ("N055", 30.3)])
def test_a6000_rows_keep_activations_on_the_gpu(case_id: str, measured: float) -> None:
    case = _case(case_id)
    assert case.measured == measured
    pred = predict_case(case)
    # 17.8 / 17.2 GiB (checkpointed, as on the 4090) before: -52 % / -43 %, the out-of-memory direction
    assert abs(pred.predicted / measured - 1.0) < 0.15
    assert any("activations kept on the GPU" in n for n in pred.notes)


@pytest.mark.parametrize(("case_id", "measured"), [("N040", 18.9), ("N041", 16.2), ("N042", 7.4)])
def test_4090_rows_still_need_the_memory_savers(case_id: str, measured: float) -> None:
    pred = predict_case(_case(case_id))
    # 0.10 before the chunked loss kept its 16-bit logits (memory_training.CHUNKED_LOSS_BYTES_PER_LOGIT,
    # +0.85 GiB here): the LoRA and QLoRA rows are now 11 % and 15 % over, on the safe side; what they
    # over-count is not the logits, which torchtune keeps alive (the full fine-tune row is 0.1 % off)
    assert abs(pred.predicted / measured - 1.0) < 0.16
    assert not any("activations kept on the GPU" in n for n in pred.notes)


def test_paged_states_never_enter_the_torch_allocated_view() -> None:
    # bitsandbytes get_paged: cudaMallocManaged wrapped by torch.frombuffer (a CPU tensor), so the
    # allocator statistics torchtune prints cannot see the states, resident or not
    kw: dict[str, Any] = dict(
        model="llama-3.1-8b", task="full_finetune", precision="bf16", batch=2, seq_len=2048,
        engine="pytorch", recompute="full", optimizer="paged_adamw8bit", master_weights=False,
        optimizer_in_backward=True, chunked_loss=True,
    )  # fmt: skip
    small, big = estimate_memory(gpu="RTX-4090", **kw), estimate_memory(gpu="RTX-A6000", **kw)
    assert small.allocated_gib == pytest.approx(big.allocated_gib)
    # the device view holds the 2 B/param states as far as the card has room: all of them on 48 GB
    assert big.breakdown_gib["optimizer_states_paged"] == pytest.approx(2 * 8.03e9 / 2**30, rel=0.01)
    assert small.breakdown_gib["optimizer_states_paged"] < big.breakdown_gib["optimizer_states_paged"]


def test_only_torchtune_claims_fastest_fit_rows() -> None:
    assert [r.name for r in RECIPES.values() if r.fastest_fit_single_device] == ["torchtune"]


def _torchtune_train(gpu: str, task: str = "full_finetune", **kw: Any) -> Any:
    from gpufleet.estimate.performance import estimate_training
    from gpufleet.estimate.recipes import training_options

    opts = training_options(task=task, gpu_count=1, recipe="torchtune", **kw)
    return estimate_training(
        model="llama-3.1-8b", task=task, gpu=gpu, precision="bf16", gpu_count=1, global_batch=2,
        seq_len=2048, options=opts,
    )  # fmt: skip


def test_the_product_path_keeps_activations_on_the_gpu_where_they_fit() -> None:
    """`estimate train --recipe torchtune` (and the recommender, through the same options) sized the A6000
    job with its activations offloaded, as on a 4090: 16.9 GiB where torchtune's own A6000 run held them
    on the GPU. Now the held setting is sized first on one GPU and kept where it fits at p90."""
    a6000, rtx4090 = _torchtune_train("RTX-A6000"), _torchtune_train("RTX-4090")
    assert a6000.fits and rtx4090.fits
    assert a6000.recompute == "none" and rtx4090.recompute == "full"
    assert a6000.memory.allocated_gib > 1.4 * rtx4090.memory.allocated_gib
    assert any("activations kept on the GPU" in n for n in a6000.notes)
    # speed is that of no recompute either way (offloading replays nothing): unchanged by the sizing
    assert a6000.tokens_per_s_per_gpu is not None
    # a stated recompute is kept as stated
    assert _torchtune_train("RTX-A6000", recompute="full").recompute == "full"


def test_the_p90_verdict_is_conservative_against_the_published_a6000_row() -> None:
    """The torchtune A6000 full fine-tune (N054: 37.4 GiB, torch allocator) sized the way `estimate memory
    --recipe torchtune` sizes it, at its micro-batch 2: the p90 the verdict uses is within 10 % of the
    measurement (it was 18 GiB, half of it, before: "fits" on cards the run does not fit)."""
    from gpufleet.estimate.memory import memory_p90_factor
    from gpufleet.estimate.recipes import training_options

    opts = training_options(task="full_finetune", gpu_count=1, recipe="torchtune")
    assert opts.fastest_fit
    kw: dict[str, Any] = dict(
        model="llama-3.1-8b", task="full_finetune", precision="bf16", gpu="RTX-A6000", batch=2, seq_len=2048,
    )  # fmt: skip
    held = estimate_memory(recompute="none", **kw, **opts.held_on_gpu().memory_kwargs())
    assert held.fits
    modelled = held.allocated_gib - held.breakdown_gib["weights"]
    p90_allocated = held.breakdown_gib["weights"] + modelled * memory_p90_factor()
    assert p90_allocated > 0.9 * 37.4
    offloaded = estimate_memory(recompute=opts.recompute or "full", **kw, **opts.memory_kwargs())
    assert offloaded.allocated_gib < 0.55 * 37.4  # what the product said before: 2x under


def test_the_cli_memory_estimate_matches() -> None:
    import json

    from typer.testing import CliRunner

    from gpufleet.cli.app import app

    res = CliRunner().invoke(
        app,
        ["estimate", "memory", "--model", "llama-3.1-8b", "--task", "full_finetune", "--gpu", "RTX-A6000",
         "--recipe", "torchtune", "--batch", "2", "--seq-len", "2048", "--format", "json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["allocated_gib"] > 0.85 * 37.4
