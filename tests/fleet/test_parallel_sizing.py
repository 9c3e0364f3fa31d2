"""Sizing in forked worker processes gives the same options as sizing in-process, and a user error raised
while sizing in a worker reaches the caller as the original error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.errors import GpufleetError
from gpufleet.fleet import options as options_mod
from gpufleet.fleet.options import WorkloadOptions, build_options
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.recommend.perf import DefaultEstimator

from .test_sizing import _fleet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleets"


def _canon(wos: list[WorkloadOptions]) -> list[str]:
    # repr: an absent price is NaN, which is unequal to itself
    return [repr(w) for w in wos]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_parallel_sizing_equals_serial(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options_mod, "PARALLEL_MIN_WORKLOADS", 1)
    fleet = _fleet(seed)
    fleet = dataclasses.replace(
        fleet, workloads=(*fleet.workloads, dataclasses.replace(fleet.workloads[0], name="copy"))
    )
    table, spot = load_offers(), load_spot_assumptions()
    serial = build_options(fleet, table, DefaultEstimator(), spot, workers=1)
    calls: list[tuple[int, int]] = []
    parallel = build_options(
        fleet, table, DefaultEstimator(), spot, workers=2, progress=lambda d, t, _n: calls.append((d, t))
    )
    assert _canon(serial) == _canon(parallel)
    assert [w.workload for w in parallel] == [w.name for w in fleet.workloads]
    assert calls and calls[-1][0] == calls[-1][1]  # progress ends at its total


def test_model_workloads_size_in_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options_mod, "PARALLEL_MIN_WORKLOADS", 1)
    fleet = read_fleet_file(EXAMPLES / "mig-inference.yaml")
    table, spot = load_offers(), load_spot_assumptions()
    serial = build_options(fleet, table, DefaultEstimator(), spot, workers=1)
    parallel = build_options(fleet, table, DefaultEstimator(), spot, workers=2)
    assert _canon(serial) == _canon(parallel)


def test_worker_error_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options_mod, "PARALLEL_MIN_WORKLOADS", 1)

    class Boom(GpufleetError):
        def __init__(self, workload: str, detail: str) -> None:  # two arguments: does not survive pickling
            super().__init__(f"workload {workload}: {detail}")

    def fail(fw: object, *args: object, **kwargs: object) -> object:
        raise Boom("w0", "no offer can carry it")

    monkeypatch.setattr(options_mod, "_no_option_reason", fail)
    monkeypatch.setattr(options_mod._Sizer, "options", lambda self, fw, notes: ([], 0))
    fleet = _fleet(1)
    with pytest.raises(Boom, match="no offer can carry it"):
        build_options(fleet, load_offers(), DefaultEstimator(), load_spot_assumptions(), workers=2)


def test_identical_model_workloads_are_sized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet listing one service many times (found by the bad-input sweep: 300 copies took 2 min 47 s)
    sizes it once; each copy gets the same options under its own name and keys."""
    fleet = read_fleet_file(EXAMPLES / "mig-inference.yaml")
    first = fleet.workloads[0]
    assert first.workload is not None
    model = first.workload
    copies = tuple(
        dataclasses.replace(first, name=f"copy{i}", workload=dataclasses.replace(model, name=f"c{i}"))
        for i in range(3)
    )
    fleet = dataclasses.replace(fleet, workloads=(*fleet.workloads, *copies))
    calls: list[str] = []
    real = options_mod._size_one

    def counting(ctx: object, fw: object) -> object:
        calls.append(fw.name)  # type: ignore[attr-defined]
        return real(ctx, fw)  # type: ignore[arg-type]

    monkeypatch.setattr(options_mod, "_size_one", counting)
    out = build_options(fleet, load_offers(), DefaultEstimator(), load_spot_assumptions(), workers=1)
    assert sorted(calls) == sorted(w.name for w in fleet.workloads[: len(fleet.workloads) - 3])
    by = {w.workload: w for w in out}
    for c in copies:
        mine, theirs = by[c.name].options, by[first.name].options
        assert len(mine) == len(theirs) > 0
        for a, b in zip(mine, theirs, strict=True):
            assert a.workload == c.name and a.key.startswith(f"{c.name}#")
            assert a.key.rpartition("#")[2] == b.key.rpartition("#")[2]
            assert repr(dataclasses.replace(a, key=b.key, workload=b.workload)) == repr(b)  # NaN-safe
