"""The root command is lazy: its static table (cli/app.py COMMANDS) must match the real commands, the
top-level --help must read as if every command were built, and invoking one command builds only that one."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import COMMANDS, _LazyGroup, app, build_command, full_command

runner = CliRunner()


def test_table_matches_the_real_commands() -> None:
    for entry in COMMANDS:
        real = build_command(entry)
        assert real.name == entry.name
        first_paragraph = (real.short_help or real.help or "").split("\n\n")[0].strip()
        assert " ".join(first_paragraph.split()) == entry.help, f"update COMMANDS[{entry.name!r}].help"
        assert not real.hidden and not real.deprecated
        assert (getattr(real, "commands", None) is not None) == entry.group


def test_table_names_are_unique() -> None:
    names = [e.name for e in COMMANDS]
    assert len(names) == len(set(names))


def test_top_level_help_is_the_same_as_with_every_command_built(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    built: list[str] = []

    def real_command(self: _LazyGroup, ctx: object, name: str) -> object:
        built.append(name)
        return self.load_command(name)

    monkeypatch.setattr(_LazyGroup, "get_command", real_command)
    full = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert sorted(built) == sorted(e.name for e in COMMANDS)
    assert lazy.exit_code == full.exit_code == 0
    assert lazy.output == full.output
    for entry in COMMANDS:
        assert entry.name in lazy.output


def test_full_command_builds_every_subcommand() -> None:
    root = full_command()
    assert [n for n in root.list_commands(None)] == [e.name for e in COMMANDS]  # type: ignore[arg-type]
    assert "infer" in root.commands["estimate"].commands


def test_unknown_command_suggests_close_matches() -> None:
    r = runner.invoke(app, ["estimat"])
    assert r.exit_code == 2
    assert "No such command 'estimat'" in r.output and "'estimate'" in r.output


def test_one_command_imports_only_its_own_module() -> None:
    code = (
        "import sys\n"
        "from gpufleet.cli.app import app\n"
        "try:\n"
        "    app(['estimate', '--help'], prog_name='gpufleet')\n"
        "except SystemExit:\n"
        "    pass\n"
        "mods = [m for m in sys.modules if m.startswith('gpufleet.cli.')]\n"
        "print(' '.join(sorted(mods)), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    loaded = set(out.split())
    assert "gpufleet.cli.estimate" in loaded
    for other in (
        "recommend",
        "catalog",
        "config",
        "telemetry",
        "simulate",
        "plan",
        "calibrate",
        "scenarios",
    ):
        assert f"gpufleet.cli.{other}" not in loaded, f"`gpufleet estimate --help` imported cli.{other}"
