"""On 200 seeded random small fleets the MILP's optimum equals exhaustive enumeration, and every plan passes
the independent checker; infeasible fleets are infeasible for both and name a binding constraint."""

from __future__ import annotations

import math
from functools import cache

import pytest

from gpufleet.fleet.brute import BruteResult, brute_force, plan_count
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.model import group_identical
from gpufleet.fleet.plan import solve_fleet

from .gen import random_fleet

MAX_PLANS = 4000


def _small_seeds(n: int) -> list[int]:
    seeds, s = [], 0
    while len(seeds) < n:
        fleet, options = random_fleet(s)
        if plan_count(fleet, options) <= MAX_PLANS:
            seeds.append(s)
        s += 1
    return seeds


SEEDS = _small_seeds(200)


@cache
def _brute(seed: int) -> BruteResult:
    """Brute force of one seed, computed once for all the tests of this file."""
    return brute_force(*random_fleet(seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_milp_equals_brute_force(seed: int) -> None:
    fleet, options = random_fleet(seed)
    brute = _brute(seed)
    solved = solve_fleet(fleet, options)
    if brute.cost_usd_per_month is None:
        assert solved.status == "infeasible"
        assert solved.binding, "an infeasible fleet must name what binds"
        return
    assert solved.status == "optimal", solved.message
    assert solved.cost_usd_per_month is not None
    assert math.isclose(solved.cost_usd_per_month, brute.cost_usd_per_month, rel_tol=1e-6, abs_tol=1e-6)
    all_opts = {o.key: o for v in options.values() for o in v}
    assert check_plan(fleet, all_opts, solved.lines, solved.cost_usd_per_month, pools=solved.pools) == []
    assert solved.violations == ()


def test_the_sample_has_both_outcomes() -> None:
    outcomes = {_brute(s).cost_usd_per_month is None for s in SEEDS[:60]}
    assert outcomes == {True, False}


def test_mig_packing_is_in_the_sample() -> None:
    shared = [s for s in SEEDS if (b := _brute(s)).pools and any(
        len({w for w, _p, _n in pl.slices}) > 1 for pl in b.pools)]  # fmt: skip
    assert len(shared) >= 10  # several workloads packed onto one pool's GPUs, checked against enumeration


def test_identical_workloads_are_grouped_in_the_sample() -> None:
    grouped = [s for s in SEEDS if any(len(v) > 1 for v in group_identical(*random_fleet(s)).values())]
    assert len(grouped) >= 20  # the grouped (count) formulation is checked against enumeration too
