"""The listing, estimating and recommending commands import only what they use (README "Speed"): never the
heavy optional libraries, and not pydantic, PyYAML, numpy or rich where a command has no need of them. Each
command runs in a fresh interpreter, as the console script does, and reports ``sys.modules``. Timings are
measured by benchmarks/bench_cli.py, not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: never imported by these commands (solvers, simulators, data frames, Ray)
HEAVY = ("scipy", "duckdb", "highspy", "simpy", "ray", "pyarrow", "pandas")

_CHILD = """
import io, json, sys, contextlib
from gpufleet.cli.entry import main
sys.argv = ["gpufleet", *json.loads(sys.argv[1])]
code = 0
try:
    with contextlib.redirect_stdout(io.StringIO()):
        main()
except SystemExit as exc:
    code = exc.code or 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _run(argv: list[str], cache_dir: Path) -> tuple[int, set[str]]:
    env = os.environ | {"GPUFLEET_CACHE_DIR": str(cache_dir), "COLUMNS": "120", "NO_COLOR": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(argv)], capture_output=True, text=True, env=env, check=False
    )
    doc = json.loads(out.stderr.strip().splitlines()[-1])
    return int(doc["code"]), set(doc["modules"])


HISTORY = ["catalog", "history", "--provider", "aws", "--instance", "p5.48xlarge", "--region", "us-east-1"]
INFER = ["estimate", "infer", "--model", "llama-3.1-8b", "--gpu", "H100-SXM"]
#: (argv, modules it must not import besides HEAVY; a name covers its submodules). JSON output needs no rich
#: console or table (typer itself may import bits of rich).
CASES: list[tuple[list[str], tuple[str, ...]]] = [
    (["--version"], ("typer", "rich", "pydantic", "numpy", "yaml")),
    (INFER, ("pydantic", "numpy", "yaml")),
    ([*INFER, "--format", "json"], ("pydantic", "numpy", "yaml", "rich.console", "rich.table")),
    (
        ["estimate", "memory", "-m", "llama-3.1-70b", "-g", "H100-SXM", "--tp", "4"],
        ("pydantic", "numpy", "yaml"),
    ),
    (["estimate", "train", "-m", "llama-3.1-8b", "-g", "H100-SXM"], ("pydantic", "numpy", "yaml")),
    (["catalog", "gpus"], ("pydantic", "numpy", "yaml")),
    (["catalog", "models", "--format", "json"], ("pydantic", "numpy", "yaml", "rich.console", "rich.table")),
    (["catalog", "gpus", "--format", "json"], ("pydantic", "numpy", "yaml", "rich.console", "rich.table")),
    (["catalog", "offers", "--gpu", "H100-SXM", "--format", "json"], ("pydantic", "yaml", "rich.console")),
    ([*HISTORY, "--format", "json"], ("pydantic", "yaml", "rich.console", "httpx")),
    # the shipped scenarios are validated once (the warm-up run) and then read without pydantic
    (["scenarios", "list"], ("numpy", "pydantic")),
    (["scenarios", "list", "--format", "json"], ("numpy", "pydantic", "rich.console", "rich.table")),
    (
        ["recommend", "--model", "llama-3.1-8b", "--target-rps", "2", "--ttft-ms", "500", "--tpot-ms", "50"],
        ("yaml",),
    ),
    # migrate reads egress prices from fleet.refdata: not the fleet planner, its solver or its file model
    (
        ["migrate", "--model", "llama-3.1-8b", "--current-instance", "p5.48xlarge", "--current-count", "2"],
        ("yaml", "gpufleet.fleet.plan", "gpufleet.fleet.spec"),
    ),
    (
        [
            "recommend",
            "--model",
            "llama-3.1-70b",
            "--target-rps",
            "2",
            "--geo",
            "eu",
            "--gpu",
            "H100,A100",
            "--provider-class",
            "hyperscaler,gpu_cloud",
            "--gpus-per-node",
            "8",
            "--format",
            "json",
        ],
        ("yaml", "rich.console", "rich.table"),
    ),
]


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user cache directory after one run each: the offer table cached, the shipped profile and scenarios
    validated once."""
    cache_dir = tmp_path_factory.mktemp("cache")
    code, first = _run(INFER, cache_dir)
    assert code == 0
    assert "pydantic" in first  # the first run validates the shipped profile (and leaves a mark)
    code, first = _run(["scenarios", "list", "--format", "json"], cache_dir)
    assert code == 0
    assert "pydantic" in first  # the first listing validates the shipped scenarios (and leaves a mark)
    return cache_dir


@pytest.mark.parametrize(("argv", "absent"), CASES, ids=[" ".join(a[:3]) for a, _ in CASES])
def test_command_imports_only_what_it_uses(
    argv: list[str], absent: tuple[str, ...], warm_cache: Path
) -> None:
    code, modules = _run(argv, warm_cache)
    assert code == 0
    loaded = sorted(n for n in (*HEAVY, *absent) if any(m == n or m.startswith(n + ".") for m in modules))
    assert not loaded, f"`gpufleet {' '.join(argv)}` imported {loaded}"
    assert "gpufleet" in modules  # the child really ran the command


def test_version_fast_path_prints_what_the_typer_option_prints() -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.app import app

    typer_out = CliRunner().invoke(app, ["--version"]).output
    for flag in ("--version", "-V"):
        out = subprocess.run(
            [sys.executable, "-c", "from gpufleet.cli.entry import main; main()", flag],
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout == typer_out


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_console_script_asks_openblas_for_one_thread_unless_told(given: str | None, expected: str) -> None:
    """numpy's OpenBLAS threads busy-wait (CPU time, and wall time on a busy machine); gpufleet does no BLAS
    work, so the console script sets OPENBLAS_NUM_THREADS=1 before numpy loads, keeping a user's own value."""
    code = (
        "import os, sys\n"
        "sys.argv = ['gpufleet', 'catalog', 'offers', '--gpu', 'H100-SXM', '--format', 'json']\n"
        "from gpufleet.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'numpy' in sys.modules\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stderr.strip().splitlines()[-1] == expected
