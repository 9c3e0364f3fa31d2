"""`make demo` installs the product (no development extras); `make test` the extras too, also after a demo
(issue 22 item 11: the demo venv was 874 MB with Ray and mypy). Dry runs (`make -n`) in a copy."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _dry(tmp: Path, target: str) -> str:
    out = subprocess.run(["make", "-n", target], cwd=tmp, capture_output=True, text=True, check=True)
    return out.stdout


def _copy(tmp: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp / name)
    return tmp


def test_demo_installs_the_product_only(tmp_path: Path) -> None:
    out = _dry(_copy(tmp_path), "demo")
    assert "pip install -q -e ." in out
    assert "[dev]" not in out
    assert "gpufleet scenarios run-set basic_demos" in out


def test_test_installs_the_dev_extras(tmp_path: Path) -> None:
    out = _dry(_copy(tmp_path), "test")
    assert "pip install -q -e '.[dev]'" in out
    assert "pytest" in out and "mypy" in out


def test_demo_then_test_adds_the_extras_and_test_then_demo_installs_nothing(tmp_path: Path) -> None:
    d = _copy(tmp_path)
    (d / ".venv" / "bin").mkdir(parents=True)
    (d / ".venv" / "bin" / "python").touch()
    time.sleep(1.1)  # stamps newer than pyproject.toml
    (d / ".venv" / ".installed-product").touch()  # after `make demo`
    assert "pip install" not in _dry(d, "demo")
    assert "pip install -q -e '.[dev]'" in _dry(d, "unit")
    (d / ".venv" / ".installed-dev").touch()  # after `make test`
    assert "pip install" not in _dry(d, "unit")
    assert "pip install" not in _dry(d, "demo")


def test_the_dev_extras_hold_the_development_tools() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"])
    for tool in ("pytest", "mypy", "ruff", "ray", "hypothesis"):
        assert tool not in core
        assert any(d.startswith(tool) for d in project["optional-dependencies"]["dev"])
