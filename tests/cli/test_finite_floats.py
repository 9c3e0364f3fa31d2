"""Every float option of every command rejects nan, inf, -inf and 1e400 (which parses to inf): exit 2, the
option named, no traceback. Typer < 0.29 (pinned: 0.29 imports pydantic on every command) would accept them;
gpufleet/cli/finite.py makes them a usage error. The options are found by walking the real command tree, so a
new float option is covered without editing this file."""

from __future__ import annotations

import math
from typing import Any

import pytest
from typer._click.types import FloatParamType, Tuple
from typer.testing import CliRunner

from gpufleet.cli.app import app, full_command
from gpufleet.cli.finite import FiniteFloat, FiniteFloatRange

runner = CliRunner()
BAD = ("nan", "inf", "-inf", "1e400", "-1e400", "NaN", "+Infinity")


def _float_options() -> list[tuple[tuple[str, ...], str]]:
    found: list[tuple[tuple[str, ...], str]] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))
        for param in cmd.params:
            kinds = param.type.types if isinstance(param.type, Tuple) else [param.type]
            if any(isinstance(kind, FloatParamType) for kind in kinds):
                found.append((path, param.opts[0]))

    walk(full_command(), ())
    return found


FLOAT_OPTIONS = _float_options()


def test_the_walk_finds_the_float_options() -> None:
    assert len(FLOAT_OPTIONS) >= 40  # 52 on 2026-11-23: recommend, migrate, regions, plan, simulate, ...
    assert (("recommend",), "--target-rps") in FLOAT_OPTIONS
    assert (("plan",), "--gap") in FLOAT_OPTIONS  # a FloatRange (min/max): nan passes a plain range check
    assert (("estimate", "train"), "--tokens") in FLOAT_OPTIONS


def test_every_float_type_is_finite_only() -> None:
    root = full_command()
    for path, opt in FLOAT_OPTIONS:
        cmd: Any = root
        for name in path:
            cmd = cmd.commands[name]
        param = next(p for p in cmd.params if p.opts[0] == opt)
        assert isinstance(param.type, FiniteFloat | FiniteFloatRange), (path, opt, param.type)


@pytest.fixture(scope="module")
def built_root() -> Any:
    """The root with every command built once (``runner.invoke(app)`` would rebuild the command per call)."""
    return full_command()


@pytest.mark.parametrize(("path", "opt"), FLOAT_OPTIONS, ids=[" ".join((*p, o)) for p, o in FLOAT_OPTIONS])
def test_non_finite_float_exits_2(
    path: tuple[str, ...], opt: str, built_root: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("typer.testing._get_command", lambda _app: built_root)
    for value in BAD:
        r = runner.invoke(app, [*path, f"{opt}={value}"], env={"COLUMNS": "200"})
        assert r.exit_code == 2, (value, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (value, r.exception)
        assert "Traceback" not in r.output
        assert f"'{opt}'" in r.output and "not a finite number" in r.output, (value, r.output)


THROUGH_ROOT = [
    ["recommend", "--target-rps", "nan"],
    ["plan", "--gap", "nan"],
    ["estimate", "train", "--tokens", "inf"],
]


@pytest.mark.parametrize("argv", THROUGH_ROOT)
def test_non_finite_float_exits_2_through_the_lazy_root(argv: list[str]) -> None:
    r = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert r.exit_code == 2 and f"'{argv[-2]}'" in r.output and "not a finite number" in r.output, r.output


def test_finite_values_still_parse() -> None:
    ctx_free = FiniteFloat()
    assert ctx_free.convert("2.5", None, None) == 2.5
    assert ctx_free.convert("1e308", None, None) == 1e308
    assert ctx_free.convert(" -0 ", None, None) == 0.0
    ranged = FiniteFloatRange(min=0.0, max=0.5)
    assert math.isclose(ranged.convert("0.25", None, None), 0.25)


def test_range_and_syntax_errors_keep_their_messages() -> None:
    r = runner.invoke(app, ["plan", "--gap", "0.9"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "0.0<=x<=0.5" in r.output
    r = runner.invoke(app, ["recommend", "--target-rps", "abc"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "'abc' is not a valid float" in r.output
