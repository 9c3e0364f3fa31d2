"""`gpufleet recommend|migrate|regions --seq-len/--batch`: a training job's sequence length and global batch
from the command line, and the length flags a task ignores refused (exit 2) instead of silently dropped."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()
LORA = ["--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8"]
ON_H100 = ["--gpu", "H100-SXM"]


def test_seq_len_and_batch_reach_the_training_workload() -> None:
    r = runner.invoke(
        app, ["recommend", *LORA, *ON_H100, "--seq-len", "2048", "--batch", "64", "--format", "json"]
    )
    assert r.exit_code == 0, r.output
    w = json.loads(r.stdout)["result"]["workload"]
    assert (w["seq_len_tokens"], w["global_batch_sequences"]) == (2048, 64)
    again = runner.invoke(app, ["recommend", *LORA, *ON_H100, "--seq-len", "1024", "--format", "json"])
    assert json.loads(again.stdout)["result"]["workload"]["seq_len_tokens"] == 1024


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([*LORA, "--input-len", "5"], "--input-len has no effect with --task lora"),
        ([*LORA, "--output-len", "64"], "--output-len has no effect with --task lora"),
        (["--model", "llama-3.1-8b", "--target-rps", "2", "--seq-len", "2048"], "--seq-len has no effect"),
        (["--model", "llama-3.1-8b", "--target-rps", "2", "--batch", "8"], "--batch has no effect"),
    ],
)
@pytest.mark.parametrize("command", ["recommend", "regions"])
def test_length_flags_the_task_ignores_exit_2(command: str, args: list[str], fragment: str) -> None:
    r = runner.invoke(app, [command, *args])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and fragment in r.output
