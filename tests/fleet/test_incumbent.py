"""The LP-rounding start (fleet/incumbent.py): on seeded random small fleets its plan passes the independent
checker and costs no less than the MILP optimum (exhaustive enumeration), and the LP bound is no more; the
plan's messages state the gap on a time limit and say why when there is no plan."""

from __future__ import annotations

import math
from functools import cache

import pytest

from gpufleet.fleet import plan as plan_mod
from gpufleet.fleet.brute import brute_force, plan_count
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.incumbent import lp_round, relative_gap
from gpufleet.fleet.model import build_model
from gpufleet.fleet.plan import solve_fleet
from gpufleet.fleet.problem import Problem
from gpufleet.fleet.sharing import options_for_levers
from gpufleet.fleet.solve import Solution, solve

from .gen import random_fleet

MAX_PLANS = 4000


def _seeds(n: int) -> list[int]:
    seeds, s = [], 0
    while len(seeds) < n:
        if plan_count(*random_fleet(s)) <= MAX_PLANS:
            seeds.append(s)
        s += 1
    return seeds


SEEDS = _seeds(80)


@cache
def _optimum(seed: int) -> float | None:
    return brute_force(*random_fleet(seed)).cost_usd_per_month


def _rounding_only(p: Problem, *, time_limit_s: float = 60.0, mip_rel_gap: float = 1e-6) -> Solution:
    """solve() as if HiGHS found nothing: the LP rounding alone ('feasible', or 'error' without one)."""
    inc = lp_round(p, time_limit_s=time_limit_s)
    if inc.x is None:
        return Solution(status="error", x=(), objective=None, mip_gap=None, dual_bound=inc.lp_bound,
                        mip_nodes=0, solve_time_s=inc.time_s, message="no rounding")  # fmt: skip
    return Solution(status="feasible", x=inc.x, objective=inc.objective, mip_gap=None,
                    dual_bound=inc.lp_bound, mip_nodes=0, solve_time_s=inc.time_s,
                    message="LP rounding")  # fmt: skip


def _problem(seed: int) -> Problem:
    """The MILP solve_fleet builds for a seed (options as the default levers allow them)."""
    fleet, options = random_fleet(seed)
    usable = options_for_levers(fleet, options, True)
    return build_model(fleet, {fw.name: list(usable.get(fw.name, [])) for fw in fleet.workloads}).problem


@pytest.mark.parametrize("seed", SEEDS)
def test_rounding_is_a_checked_plan_no_cheaper_than_the_optimum(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet, options = random_fleet(seed)
    monkeypatch.setattr(plan_mod, "solve", _rounding_only)
    solved = solve_fleet(fleet, options)
    best = _optimum(seed)
    if solved.status != "feasible":  # no rounding found (allowed, but counted below) or no option at all
        assert solved.lines == ()
        return
    assert best is not None, "a rounding of an infeasible fleet"
    assert solved.status == "feasible"
    assert solved.cost_usd_per_month is not None
    all_opts = {o.key: o for v in options.values() for o in v}
    assert check_plan(fleet, all_opts, solved.lines, solved.cost_usd_per_month, pools=solved.pools) == []
    assert solved.violations == ()
    assert solved.cost_usd_per_month >= best - 1e-6 * max(1.0, best)


@pytest.mark.parametrize("seed", SEEDS[:40])
def test_lp_bound_is_below_the_optimum(seed: int) -> None:
    inc = lp_round(_problem(seed), time_limit_s=30.0)
    best = _optimum(seed)
    if best is None:
        assert inc.x is None
        return
    assert inc.lp_bound is not None and not inc.lp_infeasible
    assert inc.lp_bound <= best + 1e-6 * max(1.0, best)
    if inc.objective is not None:
        assert inc.objective >= best - 1e-6 * max(1.0, best)


def test_rounding_finds_most_feasible_plans() -> None:
    """The start is only useful if it usually exists: on the feasible sample fleets it must."""
    found = total = 0
    for seed in SEEDS:
        if _optimum(seed) is None:
            continue
        total += 1
        found += lp_round(_problem(seed), time_limit_s=30.0).x is not None
    assert total >= 20
    assert found >= 0.9 * total, (found, total)


def test_a_rounding_within_the_gap_is_returned_with_its_gap() -> None:
    """With a loose gap the rounding is the answer (no branching), its gap against the LP bound stated."""
    checked = 0
    for seed in SEEDS:
        best = _optimum(seed)
        if best is None:
            continue
        sol = solve(_problem(seed), mip_rel_gap=0.5)
        assert sol.status == "optimal" and sol.objective is not None and sol.mip_gap is not None
        assert sol.mip_gap <= 0.5
        assert sol.objective >= best - 1e-6 * max(1.0, best)
        assert sol.dual_bound is not None and sol.dual_bound <= best + 1e-6 * max(1.0, best)
        if sol.source == "LP rounding":
            assert math.isclose(sol.mip_gap, relative_gap(sol.objective, sol.dual_bound), abs_tol=1e-12)
            checked += 1
    assert checked >= 10


def test_relative_gap() -> None:
    assert relative_gap(100.0, 99.0) == pytest.approx(0.01)
    assert relative_gap(5.0, 5.0) == 0.0
    assert relative_gap(100.0, 101.0) == 0.0
    assert relative_gap(100.0, -math.inf) == math.inf


def test_time_limit_plan_states_its_gap_and_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    seed = next(s for s in SEEDS if _optimum(s) is not None)
    fleet, options = random_fleet(seed)
    monkeypatch.setattr(plan_mod, "solve", _rounding_only)
    solved = solve_fleet(fleet, options, time_limit_s=7.0)
    assert solved.status == "feasible"
    assert "FEASIBLE (time limit)" in solved.message
    assert "within the 7 s limit" in solved.message and "no plan costs less than $" in solved.message
    assert "--time-limit" in solved.message


def test_no_plan_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    seed = next(s for s in SEEDS if _optimum(s) is not None)
    fleet, options = random_fleet(seed)

    def nothing(p: Problem, *, time_limit_s: float = 60.0, mip_rel_gap: float = 1e-6) -> Solution:
        return Solution(status="error", x=(), objective=None, mip_gap=None, dual_bound=1234.5, mip_nodes=3,
                        solve_time_s=time_limit_s, message="Time limit reached")  # fmt: skip

    monkeypatch.setattr(plan_mod, "solve", nothing)
    solved = solve_fleet(fleet, options, time_limit_s=2.0)
    assert solved.status == "error" and solved.lines == ()
    assert solved.message.startswith("NO PLAN: HiGHS stopped (Time limit reached)")
    assert "$1,234.50/month" in solved.message
    assert "--time-limit" in solved.message and "now 2 s" in solved.message
