"""One in-process CLI run for the CLI tests: no traceback, and no exception other than the exit."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()


def run_cli(*args: str) -> Any:
    """``gpufleet ARGS`` in-process; the result, after checking that it raised nothing but ``SystemExit``
    and printed no traceback."""
    r = runner.invoke(app, list(args))
    assert "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r
