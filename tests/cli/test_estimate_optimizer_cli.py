"""`gpufleet estimate train|memory --optimizer/--recipe`: fine-tuning optimizer and trainer presets, CLI.

The motivating case: Llama-3.1-8B full fine-tuning on one 24 GB RTX 4090 with torchtune's single-device recipe
(8B_full_single_device.yaml: bnb PagedAdamW8bit, optimizer_in_bwd, bf16 weights, activation offloading,
chunked loss) fits; with the generic defaults (AdamW + fp32 master: 16 bytes/param = 120 GiB) it does not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpufleet.cli.app import app
from gpufleet.estimate.memory import OPTIMIZERS
from gpufleet.estimate.recipes import RECIPES

from .test_estimate_cli import run, runner, user_error

TRAIN_4090 = ["train", "-m", "llama-3.1-8b", "-g", "rtx4090", "--gpus", "1", "--task", "full_finetune",
              "--batch", "1", "--seq-len", "2048"]  # fmt: skip
MEM_4090 = ["memory", "-m", "llama-3.1-8b", "-g", "rtx4090", "--task", "full_finetune", "--batch", "1",
            "--seq-len", "2048"]  # fmt: skip
GIB = 2**30


def ok_json(*args: str) -> dict[str, Any]:
    res = run(*args, "--format", "json")
    doc: dict[str, Any] = json.loads(res.stdout)
    assert res.exit_code == (0 if doc["fits"] else 5), res.output  # 5: does not fit (cli.exit_codes)
    return doc


# --- the 8B-on-4090 example ---------------------------------------------------------------------------------
def test_8b_full_finetune_fits_a_4090_with_torchtune_not_with_the_defaults() -> None:
    generic = ok_json(*TRAIN_4090)
    assert generic["fits"] is False
    assert (generic["optimizer"], generic["recipe"]) == ("adamw", None)
    # 8.03e9 params x (2 weights + 2 grads + 4 master + 8 Adam) = 128 GB = 120 GiB: far beyond 24 GB
    assert generic["memory"]["per_gpu_gib"] > 100

    tt = ok_json(*TRAIN_4090, "--recipe", "torchtune")
    assert tt["fits"] is True
    assert (tt["optimizer"], tt["recipe"]) == ("paged_adamw8bit", "torchtune")
    assert tt["memory"]["recipe"] == "torchtune" and tt["memory"]["optimizer"] == "paged_adamw8bit"
    parts = tt["memory"]["breakdown_gib"]
    # bf16 weights: 8.03e9 x 2 B = 16.06 GB = 14.96 GiB, no fp32 master copy
    assert parts["weights"] == pytest.approx(8.03e9 * 2 / GIB, rel=0.01)
    # optimizer in backward: one layer's gradient at a time (the 128256 x 4096 embedding, ~1 GB), not 16 GB
    assert parts["gradients"] < 1.2
    # 8-bit Adam: 2 B/param = 15 GiB, paged (bnb managed memory): only what is free stays on the GPU
    assert 0 < parts["optimizer_states_paged"] <= 8.03e9 * 2 / GIB
    assert tt["memory"]["allocated_gib"] < 20  # weights + one gradient + activations + chunked logits
    assert tt["step_time_s"] is not None and tt["mfu"] is not None


def test_8b_on_4090_memory_command_agrees() -> None:
    assert ok_json(*MEM_4090)["fits"] is False
    doc = ok_json(*MEM_4090, "--recipe", "torchtune")
    assert doc["fits"] is True
    assert (doc["optimizer"], doc["recipe"]) == ("paged_adamw8bit", "torchtune")


def test_software_naming_a_trainer_selects_its_recipe() -> None:
    """As calibration cases resolve theirs (recipes.recipe_for): `--software torchtune` runs the torchtune
    preset, and naming the same trainer twice is consistent."""
    sw = ok_json(*TRAIN_4090, "--software", "torchtune")
    both = ok_json(*TRAIN_4090, "--software", "torchtune", "--recipe", "torchtune")
    assert sw["recipe"] == both["recipe"] == "torchtune" and sw["fits"] is True
    assert sw["memory"]["per_gpu_gib"] == both["memory"]["per_gpu_gib"]


def test_contradicting_software_and_recipe_is_refused() -> None:
    user_error(*TRAIN_4090, "--software", "unsloth", "--recipe", "torchtune",
               fragments=("contradicts", "'unsloth'", "'torchtune'"))  # fmt: skip


# --- the override rule --------------------------------------------------------------------------------------
def test_explicit_optimizer_overrides_the_recipe() -> None:
    doc = ok_json(*TRAIN_4090, "--recipe", "torchtune", "--optimizer", "adamw")
    assert (doc["optimizer"], doc["recipe"]) == ("adamw", "torchtune")
    # torchtune's pure-bf16 AdamW keeps its moments in bf16 (4 B/param): 8B x 8 B > 24 GB
    assert doc["fits"] is False
    mem = ok_json(*MEM_4090, "--recipe", "torchtune", "--optimizer", "adamw")
    assert mem["optimizer"] == "adamw" and mem["recipe"] == "torchtune"
    assert "optimizer_states" in mem["breakdown_gib"]  # not paged any more


def test_explicit_recompute_overrides_the_recipe() -> None:
    tt = ok_json(*MEM_4090, "--recipe", "torchtune")
    sel = ok_json(*MEM_4090, "--recipe", "torchtune", "--recompute", "none")
    assert sel["breakdown_gib"]["activations"] > 3 * tt["breakdown_gib"]["activations"]
    train = ok_json(*TRAIN_4090, "--recipe", "torchtune", "--recompute", "selective")
    assert train["recompute"] == "selective"
    assert ok_json(*TRAIN_4090, "--recipe", "torchtune")["recompute"] == "full"


def test_optimizer_alone_on_one_gpu_runs_the_low_memory_recipe() -> None:
    """An 8-bit optimizer on one GPU implies the bitsandbytes recipe (recipes.implied_recipe), as in the
    calibration cases; on several GPUs no recipe is implied."""
    one = ok_json(*MEM_4090, "--optimizer", "adamw8bit")
    assert (one["optimizer"], one["recipe"]) == ("adamw8bit", "bitsandbytes")
    many = ok_json(*MEM_4090, "--optimizer", "sgd", "--dp", "2")
    assert (many["optimizer"], many["recipe"]) == ("sgd", None)


@pytest.mark.parametrize("command", ["train", "memory"])
@pytest.mark.parametrize("recipe", list(RECIPES))
def test_every_recipe_runs_on_both_commands(command: str, recipe: str) -> None:
    base = TRAIN_4090 if command == "train" else MEM_4090
    args = [*base[:1], "-m", "llama-3.2-1b", *base[3:]]
    doc = ok_json(*args, "--recipe", recipe)
    assert doc["recipe"] == recipe
    assert doc["optimizer"] == RECIPES[recipe].optimizer_full


@pytest.mark.parametrize("command", ["train", "memory"])
@pytest.mark.parametrize("optimizer", ["adamw", "adamw8bit", "paged_adamw8bit", "sgd", "adafactor"])
def test_every_optimizer_runs_on_both_commands(command: str, optimizer: str) -> None:
    base = TRAIN_4090 if command == "train" else MEM_4090
    doc = ok_json(*base[:1], "-m", "llama-3.2-1b", *base[3:], "--optimizer", optimizer)
    assert doc["optimizer"] == optimizer


def test_lighter_optimizer_needs_less_memory() -> None:
    adam = ok_json(*MEM_4090, "--optimizer", "adamw", "--dp", "2")
    sgd = ok_json(*MEM_4090, "--optimizer", "sgd", "--dp", "2")
    # SGD keeps no state: 8.03e9 x 12 B of fp32 master + Adam moments less (master kept: 4 B/param)
    assert adam["per_gpu_gib"] - sgd["per_gpu_gib"] == pytest.approx(8.03e9 * 8 / GIB, rel=0.03)


def test_table_shows_optimizer_and_recipe() -> None:
    out = run(*TRAIN_4090, "--recipe", "torchtune").stdout
    assert "paged_adamw8bit (recipe torchtune)" in out and "fits" in out
    assert "adamw (no recipe)" in run(*TRAIN_4090).stdout
    mem = run(*MEM_4090, "--recipe", "unsloth").stdout
    assert "adamw8bit (recipe unsloth)" in mem


# --- fit hints ----------------------------------------------------------------------------------------------
def test_does_not_fit_suggests_a_verified_lower_memory_recipe() -> None:
    notes = " ".join(ok_json(*TRAIN_4090)["notes"])
    assert "--recipe torchtune fits on these 1 GPU(s)" in notes
    mem_notes = " ".join(ok_json(*MEM_4090)["assumptions"])
    assert "--recipe torchtune" in mem_notes


def test_hints_respect_the_chosen_optimizer() -> None:
    """With AdamW forced, no recipe rescues the 4090 (bf16 moments alone are 4 B/param: 30 GiB), so no recipe
    hint is made; the GPU-count hint sizes the job with the chosen optimizer."""
    doc = ok_json(*TRAIN_4090, "--optimizer", "adamw", "--recipe", "torchtune")
    notes = " ".join(doc["notes"])
    assert "--recipe" not in notes
    assert "fits on 2 (--gpus 2)" in notes or "fits on 4 (--gpus 4)" in notes or "fits on 8" in notes


# --- bad values and refusals --------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [TRAIN_4090, MEM_4090])
def test_bad_optimizer_names_the_allowed_ones(command: list[str]) -> None:
    user_error(*command, "--optimizer", "lion", fragments=("Unknown optimizer 'lion'", *OPTIMIZERS))


@pytest.mark.parametrize("command", [TRAIN_4090, MEM_4090])
def test_bad_recipe_names_the_allowed_ones(command: list[str]) -> None:
    user_error(*command, "--recipe", "deepspeed", fragments=("Unknown fine-tuning recipe", *RECIPES))


@pytest.mark.parametrize("task", ["inference", "load"])
@pytest.mark.parametrize(("flag", "value"), [("--optimizer", "adamw8bit"), ("--recipe", "torchtune")])
def test_memory_refuses_fine_tuning_options_for_serving(task: str, flag: str, value: str) -> None:
    user_error("memory", "-m", "llama-3.1-8b", "-g", "h100", "--task", task, flag, value,
               fragments=(flag, "no effect", f"--task {task}"))  # fmt: skip


@pytest.mark.parametrize(("flag", "value"), [("--optimizer", "adamw"), ("--recipe", "torchtune")])
def test_infer_refuses_fine_tuning_options(flag: str, value: str) -> None:
    user_error("infer", "-m", "llama-3.1-8b", "-g", "h100", flag, value,
               fragments=(flag, "no effect on inference", "estimate train"))  # fmt: skip


def test_default_outputs_carry_the_generic_optimizer() -> None:
    """Without the new options nothing changes but the labels: AdamW, no recipe; inference has none."""
    assert ok_json("memory", "-m", "llama-3.1-8b", "-g", "h100")["optimizer"] is None
    doc = ok_json("memory", "-m", "llama-3.1-8b", "-g", "h100", "--task", "lora")
    assert (doc["optimizer"], doc["recipe"]) == ("adamw", None)
    assert not any(n.startswith("Fine-tuning options") for n in doc["assumptions"])


@pytest.mark.parametrize("command", ["train", "memory"])
def test_help_lists_every_optimizer_and_recipe(command: str) -> None:
    """The option help names the library's lists (memory.OPTIMIZERS, recipes.RECIPES): no drift."""
    res = runner.invoke(app, ["estimate", command, "--help"], env={"COLUMNS": "400"})
    flat = " ".join(res.stdout.split())
    for name in (*OPTIMIZERS, *RECIPES):
        assert f" {name} " in flat or f" {name}(" in flat, name


def test_hf_trainer_recipe_sizes_memory_as_the_transformers_code_measured_on_an_h200() -> None:
    """PEFT LoRA r=16 of Llama-3.1-8B, batch 2 x 2048, no checkpointing, measured at 47.98 GiB allocated on an
    H200 (shipped case P-lora-llama-3.1-8b-H200-SXM-b2-s2048-nockpt-mem): the hf_trainer recipe (which
    ``--software transformers`` selects on both commands) sizes it with the Hugging Face eager model; the
    generic default is ~26 % lower; pre-training takes no fine-tuning preset."""
    lora = ["-m", "llama-3.1-8b", "-g", "h200", "--task", "lora", "--batch", "2", "--seq-len", "2048",
            "--recompute", "none"]  # fmt: skip
    hf = ok_json("memory", *lora, "--recipe", "hf_trainer")
    assert hf["allocated_gib"] == pytest.approx(47.98, rel=0.03)
    assert ok_json("memory", *lora, "--software", "transformers")["allocated_gib"] == hf["allocated_gib"]
    assert ok_json("memory", *lora)["allocated_gib"] < 0.8 * hf["allocated_gib"]
    pre = [*lora[:5], "pretrain", *lora[6:]]
    assert ok_json("memory", *pre, "--software", "transformers")["recipe"] is None
    train = ok_json("train", *lora, "--gpus", "1", "--software", "transformers")
    assert train["recipe"] == "hf_trainer" and train["step_time_s"]["central"] > 0
