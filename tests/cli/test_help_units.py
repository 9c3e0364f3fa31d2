"""Every command's --help keeps its units: Rich markup would eat "[ms]"-style brackets, so help texts write
units in parentheses, and the rendered help shows each of them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app, full_command

runner = CliRunner()
ROOT = full_command()  # every command built (the CLI itself builds only the invoked one)


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(ROOT))
UNIT = re.compile(r"\(([^()]*)\)")


def _squash(text: str) -> str:
    return re.sub(r"[\s│]+", "", text)


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) or "gpufleet" for p, _ in COMMANDS])
def test_help_shows_every_unit(path: tuple[str, ...], cmd: Any) -> None:
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    shown = _squash(r.output)
    for param in cmd.params:
        text = getattr(param, "help", None) or ""
        assert not re.search(r"\[[^\]]*\]", text), f"{param.opts}: Rich would eat the brackets in {text!r}"
        for unit in UNIT.findall(text):
            assert _squash(f"({unit})") in shown, f"{' '.join(path)} {param.opts}: ({unit}) not in --help"


def test_recommend_help_names_the_units() -> None:
    out = _squash(runner.invoke(app, ["recommend", "--help"], env={"COLUMNS": "200"}).output)
    for unit in ("(ms)", "(requests/s)", "(tokens)", "(USD/month)", "(GiB)", "(USD/GPU-h)", "(h/month)"):
        assert unit in out


def test_version() -> None:
    from gpufleet import __version__

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"gpufleet {__version__}"


def test_shell_completion_is_offered() -> None:
    out = runner.invoke(app, ["--help"]).output
    assert "--install-completion" in out and "--show-completion" in out
