"""`gpufleet recommend|migrate|regions --recipe/--optimizer`: the fine-tuning trainer preset and optimizer
of the workload, on the command line (the engine's behaviour: tests/recommend/test_recipe.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.estimate.memory import OPTIMIZERS
from gpufleet.estimate.recipes import RECIPES

from .clirun import run_cli

runner = CliRunner()
FFT_4090 = ["--model", "llama-3.1-8b", "--task", "full_finetune", "--tokens", "1e8", "--gpu", "RTX-4090",
            "--gpus-per-node", "1", "--max-nodes", "1"]  # fmt: skip


_run = run_cli


def _json(*args: str) -> dict[str, Any]:
    r = _run(*args, "--format", "json")
    doc: dict[str, Any] = json.loads(r.stdout)
    status = doc["result"].get("status", "ok")  # a migration (stay or move) is an answer here
    assert r.exit_code == (0 if status == "ok" else 3), r.output  # 3: no candidate (cli.exit_codes)
    return doc


def test_flags_reach_the_workload_and_the_candidates_json() -> None:
    doc = _json("recommend", *FFT_4090, "--recipe", "torchtune")["result"]
    assert (doc["workload"]["recipe"], doc["workload"]["optimizer"]) == ("torchtune", None)
    assert doc["status"] == "ok"
    best = doc["best"]
    assert (best["recipe"], best["optimizer"], best["total_gpus"]) == ("torchtune", "paged_adamw8bit", 1)
    assert best["mem_per_gpu_gib"] <= best["mem_capacity_gib"]
    assert any("recipe torchtune: paged_adamw8bit" in n for n in best["notes"])


def test_default_is_unchanged_generic_and_cannot_fit_on_one_4090() -> None:
    doc = _json("recommend", *FFT_4090)["result"]
    assert doc["status"] == "cannot_fit"
    assert (doc["workload"]["recipe"], doc["workload"]["optimizer"]) == (None, None)
    assert "recipe" not in doc["cannot_fit"]["reason"]


def test_the_table_names_what_sized_the_memory() -> None:
    argv = ["recommend", *FFT_4090, "--recipe", "torchtune", "--optimizer", "paged_adamw8bit"]
    r = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "fine-tuning recipe torchtune, optimizer paged_adamw8bit (sizes the memory)" in flat
    md = _run("recommend", *FFT_4090, "--recipe", "torchtune", "--format", "markdown")
    assert md.exit_code == 0 and "/ 24.0 (recipe torchtune, paged_adamw8bit) |" in md.output
    plain = runner.invoke(app, ["recommend", "--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8",
                                "--provider", "lambda", "--top", "1"], env={"COLUMNS": "200"})  # fmt: skip
    assert plain.exit_code == 0 and "recipe" not in plain.output and "fine-tuning" not in plain.output


def test_migrate_takes_the_flags_and_sizes_now_and_after_with_the_recipe() -> None:
    doc = _json("migrate", "--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8", "--provider",
                "lambda", "--current-provider", "lambda", "--current-instance", "gpu_1x_h100_pcie",
                "--recipe", "hf_trainer")["result"]  # fmt: skip
    assert doc["workload"]["recipe"] == "hf_trainer"
    assert doc["current"]["recipe"] == "hf_trainer"
    assert doc["current"]["mem_per_gpu_gib"] == pytest.approx(48.4, abs=0.1)  # 1 x H100: the eager model


def test_regions_takes_the_flags() -> None:
    r = _run("regions", "--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8", "--provider",
             "lambda", "--recipe", "trl", "--optimizer", "adamw8bit", "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("command", ["recommend", "migrate", "regions"])
def test_help_lists_every_recipe_and_optimizer(command: str) -> None:
    r = runner.invoke(app, [command, "--help"], env={"COLUMNS": "300"})
    flat = " ".join(r.output.replace("│", " ").split())
    for name in (*RECIPES, *OPTIMIZERS):
        assert name in flat, name
    assert "--recipe" in flat and "--optimizer" in flat


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--recipe", "deepspeed"], ["--recipe", "'deepspeed'", "allowed", *RECIPES]),
        (["--recipe", "paged_adamw8bit"], ["--recipe", "unknown fine-tuning recipe"]),
        (["--optimizer", "lion"], ["--optimizer", "'lion'", "allowed", *OPTIMIZERS]),
        (["--optimizer", "unsloth"], ["--optimizer", "unknown optimizer"]),
        (["--task", "inference", "--recipe", "torchtune"], ["inference workload takes no recipe"]),
        (["--task", "pretrain", "--optimizer", "adafactor"], ["pretrain workload takes no optimizer"]),
    ],
)
def test_bad_values_exit_2_naming_the_allowed(args: list[str], words: list[str]) -> None:
    base = ["--model", "llama-3.2-1b", "--provider", "lambda"]
    if "--task" not in args:
        base += ["--task", "lora"]
    if "inference" not in args:
        base += ["--tokens", "1e9"]
    r = _run("recommend", *base, *args)
    assert r.exit_code == 2, r.output
    flat = " ".join(r.output.split())
    for w in words:
        assert w.lower() in flat.lower(), (w, flat)
