"""Bad-input corpus, eighth pass: the fine-tuning ``--optimizer`` and ``--recipe`` of estimate train|memory.

Each case exits 2 with no traceback and a message naming what is allowed:

- an optimizer or recipe the estimator does not model (``--optimizer lion``, ``--recipe deepspeed``), blank,
  or in the wrong place (``--optimizer torchtune``, ``--recipe adamw``);
- a recipe that contradicts the trainer ``--software`` names (``--software unsloth --recipe torchtune``);
- the options where nothing is trained: ``estimate memory --task inference|load`` and ``estimate infer``,
  which would otherwise ignore them silently.
"""

from __future__ import annotations

import pytest
from test_cli_corpus import _check

ET = ["estimate", "train", "-m", "llama-3.1-8b", "-g", "rtx4090", "--gpus", "1", "--task", "full_finetune"]
EM = ["estimate", "memory", "-m", "llama-3.1-8b", "-g", "rtx4090", "--task", "lora"]
OPT_WORDS = ["Unknown optimizer", "adamw", "adamw8bit", "paged_adamw8bit", "adafactor", "sgd"]
RECIPE_WORDS = ["Unknown fine-tuning recipe", "torchtune", "hf_trainer", "unsloth", "axolotl", "litgpt"]

ARGV: list[tuple[str, list[str], list[str]]] = [
    ("train-optimizer-unknown", [*ET, "--optimizer", "lion"], ["'lion'", *OPT_WORDS]),
    ("train-optimizer-blank", [*ET, "--optimizer", ""], OPT_WORDS),
    ("train-optimizer-is-a-recipe", [*ET, "--optimizer", "torchtune"], OPT_WORDS),
    ("train-recipe-unknown", [*ET, "--recipe", "deepspeed"], ["'deepspeed'", *RECIPE_WORDS]),
    ("train-recipe-is-an-optimizer", [*ET, "--recipe", "adamw"], RECIPE_WORDS),
    ("train-recipe-vs-software", [*ET, "--software", "unsloth", "--recipe", "torchtune"], ["contradicts"]),
    ("train-recipe-bad-recompute", [*ET, "--recipe", "torchtune", "--recompute", "half"], ["recompute"]),
    ("memory-optimizer-unknown", [*EM, "--optimizer", "lion"], ["'lion'", *OPT_WORDS]),
    ("memory-recipe-unknown", [*EM, "--recipe", "peft"], ["'peft'", *RECIPE_WORDS]),
    (
        "memory-inference-optimizer",
        [*EM[:-1], "inference", "--optimizer", "adamw"],
        ["--optimizer", "no effect", "--task inference", "training settings"],
    ),
    (
        "memory-load-recipe",
        [*EM[:-1], "load", "--recipe", "torchtune"],
        ["--recipe", "no effect", "--task load"],
    ),
    (
        "infer-recipe",
        ["estimate", "infer", "-m", "llama-3.1-8b", "-g", "h100", "--recipe", "torchtune"],
        ["--recipe", "no effect on inference", "estimate train"],
    ),
    (
        "infer-optimizer",
        ["estimate", "infer", "-m", "llama-3.1-8b", "-g", "h100", "--optimizer", "adamw"],
        ["--optimizer", "no effect on inference"],
    ),
]


@pytest.fixture(autouse=True)
def _isolated(cli_case_guard: None) -> None:
    """Every case of this module runs under the shared guard."""


@pytest.mark.parametrize(("argv", "words"), [pytest.param(a, w, id=i) for i, a, w in ARGV])
def test_bad8_argv(argv: list[str], words: list[str]) -> None:
    _check(argv, words)
