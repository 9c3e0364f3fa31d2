"""Shared guard of the bad-input CLI corpora: each case runs with its own user data dir, a wide terminal and a
10 s alarm (a case that hangs fails instead of holding the suite)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def cli_case_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")

    def hang(*_: object) -> None:
        raise TimeoutError("case ran over 10 s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
