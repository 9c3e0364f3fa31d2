"""End to end: every example fleet plans, passes the independent checker and has savings by lever."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.types import FleetPlan

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "fleets").glob("*.yaml"))


def test_platform_plan(platform_plan: FleetPlan) -> None:
    p = platform_plan
    assert p.status == "optimal" and p.check_violations == ()
    assert p.stats is not None and p.stats.mip_gap is not None and p.stats.mip_gap <= 1e-6
    assert p.stats.options_after_pruning < p.stats.options_before_pruning
    assert {ln.workload for ln in p.lines} == {"dev", "staging", "production", "training"}
    names = [lv.name for lv in p.levers]
    assert names[:6] == ["schedule", "right-size", "region moves", "spot", "commitments", "autoscaling"]
    evaluated = [lv for lv in p.levers if lv.savings_usd_per_month is not None]
    assert p.cost_usd_per_month is not None
    assert math.isclose(evaluated[-1].usd_per_month_after or 0.0, p.cost_usd_per_month, rel_tol=1e-9)
    auto = next(lv for lv in p.levers if lv.name == "autoscaling")
    assert auto.savings_usd_per_month is None and auto.note.startswith("not evaluated")
    # the budget holds and the training job (preemptible) runs on spot
    assert p.cost_usd_per_month <= 15_000
    assert any(ln.workload == "training" and ln.pay_kind == "spot" for ln in p.lines)


@pytest.mark.parametrize(
    "path",
    # the platform and the MIG example (tests/fleet/test_sharing.py) are planned by their own tests
    [p for p in EXAMPLES if p.name not in ("assessment-platform.yaml", "mig-inference.yaml")],
    ids=lambda p: p.stem,
)
def test_examples_plan_end_to_end(path: Path) -> None:
    plan = plan_fleet(path)
    assert plan.status == "optimal", plan.message
    assert plan.check_violations == ()
    assert plan.levers and any(lv.savings_usd_per_month is not None for lv in plan.levers)
