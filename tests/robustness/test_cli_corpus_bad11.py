"""Bad-input corpus, eleventh pass (issue 26; same checker as ``test_cli_corpus.py``): exit 2, one message
naming the problem, no traceback.

Before the fixes:

- a user catalog path that is a symlink loop: ``RuntimeError: Symlink loop`` traceback (``Path.resolve``
  before the file was read);
- a Hugging Face config folder the user may not enter: ``PermissionError`` traceback (``Path.is_symlink``
  after the failed ``exists``);
- a calibration profile with a tiny efficiency: ``NameError: cannot access free variable 'hi'`` (a chained
  comparison with walrus bounds never set ``hi`` below the range), or the previous parameter's bound in the
  message ("allowed 0.0065 to 110" for an efficiency of at most 1);
- ``estimate memory --seq-len`` / ``estimate train --seq-len`` beyond the model's context
  (``max_position_embeddings``): sized as if valid (train added a WARNING note); now exit 2 as
  ``estimate infer`` and ``recommend`` refuse a prompt beyond it. The defaults (2,048 and 4,096 tokens) are
  capped at the context, so ``estimate train -m gpt2`` sizes gpt2's 1,024 tokens.
"""

from __future__ import annotations

import json
import os
import pathlib
from pathlib import Path

import pytest
from test_cli_corpus import _check, runner

from gpufleet.cli.app import app
from gpufleet.estimate.priors import PRIORS

CASES_CSV = Path(__file__).parents[1] / "data" / "cases" / "small.csv"


def test_user_catalog_symlink_loop(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b.yaml", tmp_path / "a.yaml")
    os.symlink(tmp_path / "a.yaml", tmp_path / "b.yaml")
    for cmd in (["catalog", "offers"], ["recommend", "--model", "llama-3-8b"]):
        _check([*cmd, "--catalog", str(tmp_path / "a.yaml")], ["user catalog", "symbolic links"])


def test_config_folder_not_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root the permission bits do not stop reading, so the folder's refusal is simulated where the
    operating system raises it (stat of the config.json inside)."""
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    real_stat = pathlib.Path.stat

    def stat(self: Path, *, follow_symlinks: bool = True) -> os.stat_result:
        if self.parent == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    for cmd in ("infer", "memory", "train"):
        _check(
            ["estimate", cmd, "-m", str(folder), "-g", "h100"], ["my-model", "Permission denied", "folder"]
        )


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    path = tmp_path_factory.mktemp("profile") / "p.json"
    res = runner.invoke(app, ["calibrate", str(CASES_CSV), "-o", str(path)])
    assert res.exit_code == 0, res.output
    doc: dict[str, object] = json.loads(path.read_text())
    return doc


@pytest.mark.parametrize(
    ("param", "value", "words"),
    [
        ("cpu_adam_gparams_per_s", 1e-12, ["cpu_adam_gparams_per_s=1e-12", "allowed 0.04 to 400"]),
        # was "to 110" (stale bound); the lower bound is the prior / 100
        ("eta_hopper", 1e-9, ["eta_hopper=1e-09", f"allowed {PRIORS['eta_hopper'].value / 100:g} to 1"]),
        ("eta_hopper", 5.0, ["eta_hopper=5", f"allowed {PRIORS['eta_hopper'].value / 100:g} to 1"]),
        ("width_h0", 1e-3, ["width_h0=0.001", "allowed"]),
    ],
)
def test_profile_parameter_out_of_range(
    profile: dict[str, object], tmp_path: Path, param: str, value: float, words: list[str]
) -> None:
    doc = json.loads(json.dumps(profile))
    doc["params"][param] = value
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    _check(["estimate", "memory", "-m", "llama-3-8b", "-g", "h100", "--profile", str(path)], words)


M2 = ["-m", "llama-2-7b", "-g", "h100"]  # a 4,096-token model


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["estimate", "memory", *M2, "--seq-len", "9000"],
            ["--seq-len 9,000", "4,096-token", "Allowed: 1 to 4,096"],
        ),
        (["estimate", "memory", *M2, "--task", "lora", "--seq-len", "4097"], ["4,096-token", "llama-2-7b"]),
        (["estimate", "memory", *M2, "--task", "pretrain", "--seq-len", "32768"], ["maximum context"]),
        (
            ["estimate", "memory", *M2, "--input-len", "4000", "--output-len", "200"],
            ["4,200 tokens", "4,096"],
        ),
        (["estimate", "train", *M2, "--seq-len", "9000"], ["--seq-len 9,000", "Allowed: 1 to 4,096"]),
        (["estimate", "train", *M2, "--task", "qlora", "--seq-len", "8192"], ["4,096-token"]),
        (["estimate", "train", "-m", "gpt2", "-g", "h100", "--seq-len", "2048"], ["1,024-token", "gpt2"]),
    ],
)
def test_length_beyond_context(argv: list[str], words: list[str]) -> None:
    _check(argv, words)


@pytest.mark.parametrize(
    ("argv", "title"),
    [
        (["estimate", "memory", *M2, "--seq-len", "4096"], "batch 1 × 4096 tokens"),
        (["estimate", "memory", "-m", "gpt2", "-g", "h100"], "batch 1 × 1024 tokens"),  # default capped
        (["estimate", "train", *M2, "--seq-len", "4096"], "global batch 256 × 4096 tokens"),
        (
            ["estimate", "train", "-m", "gpt2", "-g", "h100"],
            "global batch 256 × 1024 tokens",
        ),  # default capped
        (["estimate", "memory", *M2, "--input-len", "4000", "--output-len", "97"], "batch 1 × 4097 tokens"),
    ],
)
def test_length_within_context(argv: list[str], title: str) -> None:
    res = runner.invoke(app, argv)
    assert res.exit_code == 0, res.output[-800:]
    assert title in res.output, res.output[:400]
    assert "WARNING: seq_len" not in res.output
