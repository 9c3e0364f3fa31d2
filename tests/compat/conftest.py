"""Shared fixtures of the GPU Fleet Optimizer compatibility tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fast_estimator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's estimator replaced by the engine tests' roofline stand-in: these tests check that the
    guide's scripts run unchanged and print reports, not the estimates (tested in tests/estimate), and the
    real training estimator takes tens of seconds per training scenario."""
    from gpufleet.recommend import api
    from recommend import fakes  # tests/ is on sys.path (rootdir-relative packages)

    monkeypatch.setitem(fakes.PARAMS, "llama-3.1-8b", 8.0e9)  # the shipped scenarios' other model
    monkeypatch.setattr(api, "_DEFAULT_ESTIMATOR", fakes.FakeEstimator())
