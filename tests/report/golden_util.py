"""Golden-file comparison; regenerate with GPUFLEET_REGEN_GOLDEN=1 (or `make golden`)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN_DIR / name
    if os.environ.get("GPUFLEET_REGEN_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"golden file {path} is missing: run GPUFLEET_REGEN_GOLDEN=1 pytest tests/report"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, (
        f"{name} differs from its golden file; review, then regenerate with GPUFLEET_REGEN_GOLDEN=1"
    )
