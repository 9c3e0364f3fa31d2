"""recipes.training_options: a trainer preset's defaults with the user's optimizer and recompute on top, and
estimate_training / estimate_memory under those options."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.errors import InputError
from gpufleet.estimate.memory import estimate_memory
from gpufleet.estimate.memory_options import recipe_hint
from gpufleet.estimate.performance import estimate_training
from gpufleet.estimate.recipes import (
    RECIPES,
    TrainingOptions,
    estimate_recipe_memory,
    recipe_kwargs,
    training_options,
)

JOB: dict[str, Any] = {"model": "llama-3.1-8b", "gpu": "RTX-4090", "precision": "bf16",
                       "task": "full_finetune", "gpu_count": 1, "global_batch": 1,
                       "seq_len": 2048}  # fmt: skip


def test_no_choice_is_the_generic_defaults() -> None:
    opts = training_options(task="full_finetune", gpu_count=1)
    assert opts == TrainingOptions() and opts.is_generic
    assert opts.memory_kwargs() == {
        "optimizer": "adamw",
        "master_weights": True,
        "optimizer_in_backward": False,
        "chunked_loss": False,
        "adapter_fp32": True,
        "lora_dropout": "none",
        "offload_checkpoints": False,
        "kbit_upcast": False,
        "hf_eager": False,
    }  # fmt: skip  (estimate_memory's own defaults)


def test_hugging_face_recipes_size_memory_with_the_eager_model() -> None:
    """hf_trainer, trl, axolotl and bitsandbytes run transformers modeling code (Recipe.hf_modeling):
    their options carry ``hf_eager``; torchtune, unsloth and litgpt run their own model code."""
    for name in ("hf_trainer", "trl", "axolotl", "bitsandbytes"):
        assert training_options(task="lora", gpu_count=1, recipe=name).hf_eager
    for name in ("torchtune", "unsloth", "litgpt"):
        assert not training_options(task="lora", gpu_count=1, recipe=name).hf_eager
    assert training_options(task="lora", gpu_count=1, software="transformers").hf_eager


def test_recipe_sets_its_defaults_single_and_distributed() -> None:
    one = training_options(task="full_finetune", gpu_count=1, recipe="torchtune")
    assert (one.optimizer, one.master_weights, one.recompute) == ("paged_adamw8bit", False, "full")
    assert one.optimizer_in_backward and one.chunked_loss and one.activation_offloading
    assert one.zero_stage is None
    many = training_options(task="full_finetune", gpu_count=8, recipe="torchtune")
    # torchtune's distributed configs: torch AdamW, no optimizer-in-backward, FSDP (ZeRO-3)
    assert (many.optimizer, many.optimizer_in_backward, many.zero_stage) == ("adamw", False, 3)
    lora = training_options(task="lora", gpu_count=1, recipe="torchtune")
    assert lora.optimizer == "adamw" and not lora.adapter_fp32 and not lora.optimizer_in_backward


def test_explicit_optimizer_and_recompute_override_the_recipe() -> None:
    opts = training_options(task="full_finetune", gpu_count=1, recipe="torchtune", optimizer="sgd",
                            recompute="selective")  # fmt: skip
    assert (opts.recipe, opts.optimizer, opts.recompute) == ("torchtune", "sgd", "selective")
    assert opts.recompute_stated and not opts.activation_offloading  # recomputed as stated, not offloaded
    assert not opts.master_weights and opts.optimizer_in_backward  # the rest stays the recipe's


def test_optimizer_alone_implies_a_recipe_as_calibration_does() -> None:
    assert training_options(task="full_finetune", gpu_count=1, optimizer="paged_adamw8bit").recipe == (
        "bitsandbytes"
    )
    assert training_options(task="full_finetune", gpu_count=4, optimizer="adamw8bit").recipe is None
    assert training_options(task="qlora", gpu_count=4, optimizer="adamw").recipe == "bitsandbytes"
    assert training_options(task="lora", gpu_count=1, software="unsloth").recipe == "unsloth"
    # a QLoRA with no choice keeps the generic defaults (the CLI's default output does not move)
    assert training_options(task="qlora", gpu_count=1).recipe is None


def test_recipe_kwargs_is_what_calibration_uses() -> None:
    """predict._recipe_kwargs is recipe_kwargs of the case's recipe plus the case's optimizer."""
    from gpufleet.estimate.cases import parse_cases_csv
    from gpufleet.estimate.predict import _recipe_kwargs

    head = (
        "case_id,metric,model,task,gpu,gpu_count,precision,batch,seq_len,software,optimizer,measured,unit\n"
    )
    row = "X1,peak_memory_gib,llama-3.1-8b,full_finetune,RTX-4090,1,bf16,1,2048,torchtune,,20,GiB\n"
    (case,) = parse_cases_csv(head + row, "t.csv")
    assert _recipe_kwargs(case, {}) == recipe_kwargs(RECIPES["torchtune"], task="full_finetune", gpu_count=1)
    (sgd,) = parse_cases_csv(head + row.replace(",torchtune,,", ",torchtune,sgd,"), "t.csv")
    assert _recipe_kwargs(sgd, {})["optimizer"] == "sgd"


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"optimizer": "lion"}, ["Unknown optimizer 'lion'", "paged_adamw8bit", "adafactor"]),
        ({"recipe": "deepspeed"}, ["Unknown fine-tuning recipe", "torchtune", "bitsandbytes"]),
        ({"recompute": "some"}, ["Unknown recompute mode", "selective"]),
        ({"recipe": "unsloth", "software": "torchtune"}, ["contradicts", "'torchtune'"]),
    ],
)
def test_bad_choices_are_input_errors(kw: dict[str, str], words: list[str]) -> None:
    with pytest.raises(InputError) as err:
        training_options(task="full_finetune", gpu_count=1, **kw)
    for w in words:
        assert w in str(err.value)


def test_estimate_training_under_a_recipe_fits_the_4090() -> None:
    generic = estimate_training(**JOB)
    tt = estimate_training(
        **JOB, options=training_options(task="full_finetune", gpu_count=1, recipe="torchtune")
    )
    assert not generic.fits and tt.fits
    assert (tt.optimizer, tt.recipe, tt.memory.recipe) == ("paged_adamw8bit", "torchtune", "torchtune")
    assert (generic.optimizer, generic.recipe) == ("adamw", None)
    assert any(n.startswith("Fine-tuning options: recipe torchtune") for n in tt.notes)
    assert tt.memory.per_gpu_gib <= tt.memory.capacity_gib


def test_offloaded_activations_cost_memory_as_full_recompute_and_speed_as_none() -> None:
    """torchtune offloads activations instead of recomputing: faster than the same recipe with full
    recompute stated, and the same memory."""
    tt = estimate_training(
        **JOB, options=training_options(task="full_finetune", gpu_count=1, recipe="torchtune")
    )
    stated = training_options(task="full_finetune", gpu_count=1, recipe="torchtune", recompute="full")
    full = estimate_training(**JOB, options=stated)
    assert tt.memory.per_gpu_gib == pytest.approx(full.memory.per_gpu_gib)
    assert tt.step_time_s is not None and full.step_time_s is not None
    # full recompute replays the forward: 8N vs 6N FLOPs per token, so about 4/3 the compute
    assert full.step_time_s.central / tt.step_time_s.central == pytest.approx(4 / 3, rel=0.1)


def test_an_unstated_recipe_recompute_is_relaxed_to_full_where_it_does_not_fit() -> None:
    """HF Trainer keeps every activation by default; where that does not fit, the job runs with gradient
    checkpointing (as predict._recompute_that_fits assumes for measured jobs); a stated recompute is kept."""
    job = JOB | {"model": "llama-3.2-1b", "seq_len": 4096}
    hf = estimate_training(
        **job, options=training_options(task="full_finetune", gpu_count=1, recipe="hf_trainer")
    )
    assert hf.fits and hf.recompute == "full"
    assert any("does not fit: full recompute" in n for n in hf.notes)
    kept = estimate_training(
        **job,
        options=training_options(
            task="full_finetune", gpu_count=1, recipe="hf_trainer", recompute="selective"
        ),
    )
    assert not kept.fits and kept.recompute == "selective"


def test_options_and_explicit_optimizer_together_are_refused() -> None:
    with pytest.raises(InputError, match="both as arguments and in options"):
        estimate_training(**JOB, optimizer="adamw", options=TrainingOptions())


def test_generic_options_change_nothing() -> None:
    plain = estimate_training(**JOB | {"gpu_count": 8, "global_batch": 8})
    opts = estimate_training(**JOB | {"gpu_count": 8, "global_batch": 8}, options=TrainingOptions())
    assert plain == opts


def test_estimate_recipe_memory_labels_and_notes() -> None:
    opts = training_options(task="lora", gpu_count=1, recipe="unsloth")
    kw: dict[str, Any] = {"model": "llama-3.1-8b", "task": "lora", "precision": "bf16", "gpu": "RTX-4090",
                          "seq_len": 2048, "engine": "pytorch"}  # fmt: skip
    mem = estimate_recipe_memory(opts, recompute="full", **kw)
    plain = estimate_memory(recompute="full", **kw, **opts.memory_kwargs())
    assert (mem.recipe, mem.optimizer) == ("unsloth", "adamw8bit")
    assert mem.per_gpu_gib == plain.per_gpu_gib and mem.assumptions[0] == opts.summary
    assert estimate_memory(model="llama-3.1-8b", task="inference", precision="bf16", gpu="H100",
                           seq_len=2048).optimizer is None  # fmt: skip


def test_recipe_hint_is_verified() -> None:
    kw: dict[str, Any] = {"model": "llama-3.1-8b", "task": "full_finetune", "precision": "bf16",
                          "gpu": "RTX-4090", "seq_len": 2048, "engine": "pytorch"}  # fmt: skip
    hint = recipe_hint(recompute="selective", **kw)
    assert hint is not None and hint.startswith("--recipe torchtune")
    # forcing AdamW (bf16 moments under every preset) leaves no recipe that fits 8B on 24 GB
    assert recipe_hint(recompute="selective", choice={"optimizer": "adamw"}, **kw) is None
    assert recipe_hint(recompute="selective", **kw | {"task": "inference"}) is None
