"""Fine-tuning ``recipe`` / ``optimizer`` of recommend's workload: the file fields, their checks, and what
they do to the picks on the shipped catalog (the estimator's recipe memory models, recipes.py).

The motivating cases: a PEFT LoRA of Llama-3.1-8B with Hugging Face's Trainer allocates more than the
estimator's generic defaults assume (48.4 GiB at 4,096 tokens per micro-batch on one GPU, the transformers
eager model measured on an H200, against 36.0 GiB), and torchtune's single-device full fine-tune (paged AdamW
8-bit stepped in the backward, bf16 weights) fits Llama-3.1-8B on one 24 GB RTX 4090, where AdamW with an fp32
master copy (16 bytes/param, 120 GiB) fits on no node of 1, 2 or 4 of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.estimate.memory import OPTIMIZERS
from gpufleet.estimate.recipes import RECIPES
from gpufleet.recommend import api
from gpufleet.recommend.types import Workload
from gpufleet.recommend.workload import read_workload_file, workload_from_dict

LORA_8B: dict[str, Any] = {"model": "llama-3.1-8b", "task": "lora", "train_tokens": 1e8}
FFT_8B: dict[str, Any] = {"model": "llama-3.1-8b", "task": "full_finetune", "train_tokens": 1e8}


# --- the workload fields ----------------------------------------------------------------------------------
def test_fields_are_read_normalised_and_default_to_none(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "workloads:\n"
        "  hf:\n    model: llama-3.1-8b\n    task: lora\n    train_tokens: 1e8\n    recipe: HF_Trainer\n"
        "  tt:\n    model: llama-3.1-8b\n    task: full_finetune\n    train_tokens: 1e8\n"
        "    recipe: torchtune\n"
        "    optimizer: ' AdamW8bit '\n"
        "  plain:\n    model: llama-3.1-8b\n    task: qlora\n    train_tokens: 1e8\n",
        encoding="utf-8",
    )
    ws = read_workload_file(path)
    assert (ws["hf"].recipe, ws["hf"].optimizer) == ("hf_trainer", None)
    assert (ws["tt"].recipe, ws["tt"].optimizer) == ("torchtune", "adamw8bit")
    assert (ws["plain"].recipe, ws["plain"].optimizer) == (None, None)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_is_accepted_on_every_fine_tuning_task(recipe: str) -> None:
    for task in ("full_finetune", "lora", "qlora"):
        assert workload_from_dict({**LORA_8B, "task": task, "recipe": recipe}).recipe == recipe


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_every_optimizer_is_accepted(optimizer: str) -> None:
    assert workload_from_dict({**LORA_8B, "optimizer": optimizer.upper()}).optimizer == optimizer


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("recipe", "deepspeed", ["'deepspeed'", "unknown fine-tuning recipe", *RECIPES]),
        ("recipe", "adamw", ["'adamw'", "unknown fine-tuning recipe", "torchtune"]),
        ("optimizer", "lion", ["'lion'", "unknown optimizer", *OPTIMIZERS]),
        ("optimizer", "torchtune", ["'torchtune'", "unknown optimizer", "paged_adamw8bit"]),
    ],
)
def test_unknown_values_are_refused_naming_the_allowed(field: str, value: str, words: list[str]) -> None:
    with pytest.raises(ConfigFileError) as exc:
        workload_from_dict({**LORA_8B, field: value}, source="w.yaml", entry="ft")
    msg = str(exc.value)
    assert "w.yaml" in msg and "'ft'" in msg and f"field '{field}'" in msg
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"model": "llama-3.1-8b", "recipe": "torchtune"}, ["an inference workload takes no recipe"]),
        ({"model": "llama-3.1-8b", "optimizer": "adamw"}, ["an inference workload takes no optimizer"]),
        (
            {"model": "llama-3.2-1b", "task": "pretrain", "train_tokens": 1e10, "recipe": "litgpt",
             "optimizer": "adamw"},
            ["a pretrain workload takes no recipe or optimizer"],
        ),
    ],
)  # fmt: skip
def test_refused_where_nothing_is_fine_tuned(data: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ConfigFileError) as exc:
        workload_from_dict(data)
    for w in [*words, "fine-tuning settings", "full_finetune, lora, qlora"]:
        assert w in str(exc.value)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"recipe": "deepspeed"}, ["Unknown fine-tuning recipe 'deepspeed'", "hf_trainer"]),
        ({"optimizer": "lion"}, ["Unknown optimizer 'lion'", "adafactor"]),
        (
            {"task": "inference", "train_tokens": None, "recipe": "torchtune"},
            ["inference workload", "recipe"],
        ),
    ],
)
def test_a_workload_built_in_python_is_checked_too(fields: dict[str, Any], words: list[str]) -> None:
    """A :class:`Workload` built by the caller skips the file reader: the API checks recipe and optimizer
    before the engine (which would otherwise read each rejection as "does not fit")."""
    base: dict[str, Any] = {"name": "w", "model": "llama-3.1-8b", "task": "lora", "precision": "bf16",
                            "train_tokens": 1e8}  # fmt: skip
    w = Workload(**(base | fields))
    with pytest.raises(InputError) as exc:
        api.recommend(w)
    for word in words:
        assert word in str(exc.value)


# --- what they do to the picks -----------------------------------------------------------------------------
def _rec(**fields: Any) -> Any:
    return api.recommend(max_nodes=1, limit=50, **fields)


def test_no_recipe_no_optimizer_keeps_the_generic_defaults_and_an_explicit_adamw_changes_nothing() -> None:
    """Default unchanged: an explicit ``optimizer: adamw`` (no recipe) is the generic default, so every
    candidate, number for number, is the same; only the label differs."""
    base = _rec(**LORA_8B, providers="lambda")
    adamw = _rec(**LORA_8B, providers="lambda", optimizer="adamw")
    assert base.status == adamw.status == "ok"

    def rows(rec: Any) -> list[tuple[Any, ...]]:
        return [(c.instance_type, c.region, c.mem_per_gpu_gib, c.cost_usd_per_run, c.dp) for c in rec.ranked]

    assert rows(base) == rows(adamw)
    assert {(c.recipe, c.optimizer) for c in base.ranked} == {(None, "adamw")}
    assert not any("Fine-tuning options" in n for c in base.ranked for n in c.notes)


def test_hf_trainer_lora_needs_at_least_the_default_memory_and_the_picks_hold_it() -> None:
    base = _rec(**LORA_8B, providers="lambda,runpod")
    hf = _rec(**LORA_8B, providers="lambda,runpod", recipe="hf_trainer")
    assert base.status == hf.status == "ok" and hf.best is not None and base.best is not None
    assert hf.best.recipe == "hf_trainer" and hf.best.optimizer == "adamw"
    assert any("recipe hf_trainer" in n for n in hf.best.notes)

    # the same one-GPU placement needs more with the transformers eager model (48.4 vs 36.0 GiB)
    def one_gpu(rec: Any, gpu: str) -> Any:
        return next(c for c in rec.ranked if c.gpu == gpu and c.total_gpus == 1)

    assert one_gpu(hf, "GH200").mem_per_gpu_gib == pytest.approx(48.4, abs=0.1)
    assert one_gpu(base, "GH200").mem_per_gpu_gib == pytest.approx(36.0, abs=0.1)
    by_place = {(c.instance_type, c.region): c.mem_per_gpu_gib for c in base.ranked}
    for c in hf.ranked:
        assert c.mem_per_gpu_gib <= c.mem_capacity_gib  # every pick holds the trainer's memory
        if (c.instance_type, c.region) in by_place and c.dp == 1 and c.total_gpus == 1:
            assert c.mem_per_gpu_gib >= by_place[(c.instance_type, c.region)] - 1e-6 or any(
                "full recompute" in n for n in c.notes
            )
    assert hf.best.mem_per_gpu_gib >= base.best.mem_per_gpu_gib - 1e-6


def test_hf_trainer_on_a_48gb_gpu_turns_checkpointing_on_where_the_default_claims_it_fits_without() -> None:
    """48.4 GiB does not fit a 48 GB RTX 6000 Ada: the recipe's recompute is relaxed to full (a note says
    so), which is slower than the default's claim of a fit with selective recompute."""
    kw: dict[str, Any] = {**LORA_8B, "gpus": "RTX-6000-Ada", "gpus_per_node": 1}
    base, hf = _rec(**kw), _rec(**kw, recipe="hf_trainer")
    assert base.best is not None and hf.best is not None
    assert base.best.mem_per_gpu_gib == pytest.approx(36.0, abs=0.1)
    assert any("selective recompute" in n for n in base.best.notes)
    assert any("does not fit: full recompute" in n for n in hf.best.notes)
    assert hf.best.mem_per_gpu_gib <= hf.best.mem_capacity_gib
    assert hf.best.time_to_train_s is not None and base.best.time_to_train_s is not None
    assert hf.best.time_to_train_s.central > base.best.time_to_train_s.central


def test_torchtune_full_finetune_of_8b_fits_one_24gb_rtx4090_the_default_cannot() -> None:
    for g in (1, 2, 4):
        default = _rec(**FFT_8B, gpus="RTX-4090", gpus_per_node=g)
        assert default.status == "cannot_fit", g
    tt = _rec(**FFT_8B, gpus="RTX-4090", gpus_per_node=1, recipe="torchtune")
    assert tt.status == "ok" and tt.best is not None
    b = tt.best
    assert (b.total_gpus, b.recipe, b.optimizer) == (1, "torchtune", "paged_adamw8bit")
    assert b.mem_per_gpu_gib <= b.mem_capacity_gib
    assert any("optimizer step in the backward" in n for n in b.notes)


def test_torchtune_sizes_several_gpus_with_its_distributed_recipe() -> None:
    """The options are built per GPU count: torchtune's multi-GPU config runs torch AdamW under FSDP."""
    tt = _rec(**FFT_8B, gpus="RTX-4090", gpus_per_node=4, recipe="torchtune")
    assert tt.status == "ok" and tt.best is not None
    assert (tt.best.total_gpus, tt.best.optimizer) == (4, "adamw")


def test_an_optimizer_overrides_the_recipe() -> None:
    lora = _rec(**LORA_8B, providers="lambda", recipe="torchtune", optimizer="adamw8bit")
    assert lora.best is not None and (lora.best.recipe, lora.best.optimizer) == ("torchtune", "adamw8bit")
    # torchtune's paged optimizer spills its states to the host; plain adamw8bit keeps them on the 4090
    fft = _rec(**FFT_8B, gpus="RTX-4090", gpus_per_node=1, recipe="torchtune", optimizer="adamw8bit")
    assert fft.status == "cannot_fit" and fft.cannot_fit is not None
    assert "recipe torchtune, optimizer adamw8bit" in fft.cannot_fit.reason


def test_cannot_fit_names_the_recipe() -> None:
    rec = _rec(**FFT_8B, gpus="RTX-4090", gpus_per_node=1, recipe="hf_trainer")
    assert rec.status == "cannot_fit" and rec.cannot_fit is not None
    assert "(full_finetune, bf16, recipe hf_trainer)" in rec.cannot_fit.reason
