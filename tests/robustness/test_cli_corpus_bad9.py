"""Bad-input corpus, ninth pass: the fine-tuning ``recipe`` and ``optimizer`` of recommend's workload.

Each case exits 2 with no traceback and a message naming what is allowed:

- ``--recipe`` / ``--optimizer`` of `recommend`, `migrate` and `regions` naming a preset or optimizer the
  estimator does not model (``deepspeed``, ``lion``) or in the other's place, or blank (the shared blank-text
  check of the workload model);
- the options where nothing is fine-tuned: an inference or a pretrain workload, which would otherwise ignore
  them silently (the presets are fine-tuning trainers' defaults);
- the same mistakes as workload-file fields (``recipe:``, ``optimizer:``), named with the file and entry.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli_corpus import _check

LORA = ["--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8", "--provider", "lambda"]
REC = ["recommend", *LORA]
MIG = ["migrate", *LORA, "--current-provider", "lambda", "--current-instance", "gpu_1x_h100_pcie"]
REG = ["regions", *LORA]
OPT_WORDS = ["unknown optimizer", "adamw", "adamw8bit", "paged_adamw8bit", "adafactor", "sgd"]
RECIPE_WORDS = ["unknown fine-tuning recipe", "torchtune", "hf_trainer", "unsloth", "axolotl", "litgpt"]
NOT_TUNING = ["takes no", "fine-tuning settings", "full_finetune, lora, qlora"]

ARGV: list[tuple[str, list[str], list[str]]] = [
    ("recommend-recipe-unknown", [*REC, "--recipe", "deepspeed"], ["--recipe", "'deepspeed'", *RECIPE_WORDS]),
    ("recommend-recipe-blank", [*REC, "--recipe", ""], ["recipe", "blank", "leave recipe out"]),
    ("recommend-recipe-is-an-optimizer", [*REC, "--recipe", "adamw8bit"], RECIPE_WORDS),
    ("recommend-optimizer-unknown", [*REC, "--optimizer", "lion"], ["--optimizer", "'lion'", *OPT_WORDS]),
    ("recommend-optimizer-is-a-recipe", [*REC, "--optimizer", "torchtune"], OPT_WORDS),
    (
        "recommend-recipe-on-inference",
        ["recommend", "--model", "llama-3.1-8b", "--recipe", "torchtune"],
        ["inference workload", "recipe", *NOT_TUNING],
    ),
    (
        "recommend-optimizer-on-pretrain",
        [
            "recommend",
            "--model",
            "llama-3.2-1b",
            "--task",
            "pretrain",
            "--tokens",
            "1e9",
            "--optimizer",
            "adamw",
        ],
        ["pretrain workload", "optimizer", *NOT_TUNING],
    ),
    ("migrate-recipe-unknown", [*MIG, "--recipe", "peft"], ["'peft'", *RECIPE_WORDS]),
    ("migrate-optimizer-unknown", [*MIG, "--optimizer", "lion"], ["'lion'", *OPT_WORDS]),
    ("regions-recipe-unknown", [*REG, "--recipe", "deepspeed"], ["'deepspeed'", *RECIPE_WORDS]),
]

#: workload files (YAML) with a bad recipe/optimizer field -> words the message names
FILES: list[tuple[str, str, list[str]]] = [
    (
        "file-recipe-unknown",
        "model: llama-3.1-8b\ntask: lora\ntrain_tokens: 1e8\nrecipe: deepspeed\n",
        ["field 'recipe'", "'deepspeed'", *RECIPE_WORDS],
    ),
    (
        "file-optimizer-not-text",
        "model: llama-3.1-8b\ntask: lora\ntrain_tokens: 1e8\noptimizer: [adamw]\n",
        ["field 'optimizer'", "valid string"],
    ),
    (
        "file-recipe-on-inference",
        "model: llama-3.1-8b\nrecipe: hf_trainer\n",
        ["inference workload", *NOT_TUNING],
    ),
    (
        "file-several-one-bad",
        "workloads:\n  ok:\n    model: llama-3.1-8b\n    task: lora\n    train_tokens: 1e8\n    recipe: trl\n"
        "  bad:\n    model: llama-3.1-8b\n    task: qlora\n    train_tokens: 1e8\n    optimizer: lion\n",
        ["entry 'bad'", "field 'optimizer'", "'lion'", *OPT_WORDS],
    ),
]


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w in ARGV])
def test_bad9_argv(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


@pytest.mark.parametrize(("text", "words"), [pytest.param(t, w, id=i) for i, t, w in FILES])
def test_bad9_workload_file(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "workload.yaml"
    path.write_text(text, encoding="utf-8")
    _check(["recommend", str(path)], [str(path), *words])
    _check(["migrate", str(path)], [str(path), *words])
