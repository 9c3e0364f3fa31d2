"""Shared test fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("default", deadline=None, max_examples=50)
# CI replays the same examples on every run (derandomize, no example database), so a merge that passed
# passes again on a fresh machine; local runs draw new examples each time and keep finding what the fixed
# set misses (the fuzz tests' NaN autoscale result was found that way)
settings.register_profile("ci", deadline=None, max_examples=100, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# The CLI's consoles copy the environment when gpufleet.cli.console is imported, as a process does at start-up
# (a COLUMNS there fixes their width for good); the CLI imports that module on first use. Import it now with
# no COLUMNS or LINES (pytest-xdist workers inherit COLUMNS=80, a shell may export its own), so every test's
# width (CliRunner env=, monkeypatch) is read live, in any worker and any test order.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
import gpufleet.cli.console  # noqa: E402, F401


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """`gpufleet serve` (run in process by some tests, uvicorn faked) installs its log handler on the root
    logger, writing to the stderr of that moment: under CliRunner a stream closed after the test, so a later
    test's log line printed '--- Logging error ---' into its captured output. Each test gets the root logger
    back as it found it."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


#: the library's estimator cache bounds (recommend.perf / recommend.candidates), read before any test runs
_LIBRARY_CACHE_BOUNDS: tuple[int, int] | None = None


@pytest.fixture(autouse=True)
def _library_cache_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """An app sets the estimator cache bounds of the whole process (service settings), at start-up and in
    its route-worker initialiser, which may run after the test that started it has ended; tests outside
    tests/service build apps too. Every test starts from the library's bounds and gets them back after it,
    in any order or pytest-xdist worker."""
    global _LIBRARY_CACHE_BOUNDS
    from gpufleet.recommend import candidates, perf

    if _LIBRARY_CACHE_BOUNDS is None:  # the first test of this process: nothing has built an app yet
        _LIBRARY_CACHE_BOUNDS = (perf._CALLS_MAX, candidates._CACHE_MAX)
    calls_max, configs_max = _LIBRARY_CACHE_BOUNDS
    monkeypatch.setattr(perf, "_CALLS_MAX", calls_max)
    monkeypatch.setattr(candidates, "_CACHE_MAX", configs_max)
