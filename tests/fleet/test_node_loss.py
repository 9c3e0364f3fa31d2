"""Production serving in every example fleet survives one lost node (N+1; issue 22 item 3).

Recomputed from the plan's own lines, options and MIG placements: whole-GPU placements pay for one more
replica unit than the load needs and run >= 2 units in every block; MIG slices of a production service sit
on >= 2 nodes so that losing any node (and so any GPU) leaves the slices its load needs. The independent
checker (``gpufleet.fleet.check``) must catch a plan that breaks this.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.options import build_options
from gpufleet.fleet.plan import Solved, solve_fleet
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.fleet.types import Fleet
from gpufleet.recommend.perf import DefaultEstimator

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "fleets").glob("*.yaml"))


def _path(name: str) -> Path:
    return next(p for p in EXAMPLES if p.name == name)


@cache
def _solved(name: str) -> tuple[Fleet, Solved]:
    """The example's plan as the planner solves it (its options kept for the checks)."""
    f = read_fleet_file(_path(name))
    wopts = build_options(f, load_offers(), DefaultEstimator(), load_spot_assumptions(None))
    return f, solve_fleet(f, {w.workload: list(w.options) for w in wopts}, prune=False)


def _production(path: Path) -> set[str]:
    return {w.name for w in read_fleet_file(path).workloads if w.production_serving}


def _over_regions(path: Path) -> set[str]:
    """Production services spread over ha_regions >= 2: sized for a lost region instead (test_ha_regions)."""
    return {w.name for w in read_fleet_file(path).workloads if w.region_loss_sized}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_production_service_survives_a_lost_node(path: Path) -> None:
    _f, plan = _solved(path.name)
    assert plan.status == "optimal", plan.message
    assert plan.violations == ()
    prod = _production(path)
    assert prod, f"{path.name} has no production serving"
    opts = plan.options
    for name in prod - _over_regions(path):
        lines = [ln for ln in plan.lines if ln.workload == name and ln.pay_kind != "data_transfer"]
        assert lines, name
        for key in {ln.option for ln in lines}:
            o = opts[key]
            assert o.replicas_needed >= 1, f"{name}: {key} claims no N+1 sizing"
            if o.is_mig:
                slices: dict[int, int] = defaultdict(int)
                pool = next(pl for pl in plan.pools if pl.key == o.pool)
                for g in pool.gpus:
                    for w, _prof, n in g.tenants:
                        if w == name:
                            slices[g.node] += n
                total = sum(slices.values())
                assert len(slices) >= 2, f"{name}: all {total} slices on one node of {pool.key}"
                assert total - max(slices.values()) >= o.replicas_needed, (name, dict(slices))
            else:
                paid: dict[int, int] = defaultdict(int)
                for ln in lines:
                    if ln.option == key:
                        paid[ln.block] += ln.nodes
                nodes = sum(paid.values())
                if o.nodes_per_replica == 1:  # a lost node takes every unit it holds
                    left = (nodes - 1) * o.units_per_node
                else:
                    left = nodes // o.nodes_per_replica - 1
                assert left >= o.replicas_needed, (name, key, nodes, o.replicas_needed)
                assert paid[0] >= 2, f"{name}: base block on one node"


def test_mig_example_spreads_each_service_over_two_gpus() -> None:
    """Before: both production replicas of three services on one GPU of one VM."""
    _f, plan = _solved("mig-inference.yaml")
    assert plan.pools
    for pool in plan.pools:
        assert pool.mirrored and pool.nodes >= 2
        nodes_of: dict[str, set[int]] = defaultdict(set)
        for g in pool.gpus:
            for w, _p, _n in g.tenants:
                nodes_of[w].add(g.node)
        assert all(len(v) >= 2 for v in nodes_of.values()), dict(nodes_of)


def test_the_checker_catches_a_service_on_one_node() -> None:
    f, plan = _solved("mig-inference.yaml")
    pool = plan.pools[0]
    # the placement the planner made is accepted; every GPU moved onto node 0 is not
    assert not check_plan(f, plan.options, plan.lines, plan.cost_usd_per_month, pools=plan.pools)
    one = tuple(dataclasses.replace(g, node=0) for g in pool.gpus)
    same_node = dataclasses.replace(pool, gpus=one)
    pools = (same_node, *plan.pools[1:])
    bad = check_plan(f, plan.options, plan.lines, plan.cost_usd_per_month, pools=pools)
    assert any("losing the node" in b for b in bad), bad


def test_a_service_over_regions_survives_a_lost_region() -> None:
    """multicloud's chat-eu runs over 2 regions: each carries the whole peak (peak / (2 - 1)), no N+1 spare
    inside a region (before: peak + one node in each)."""
    _f, plan = _solved("multicloud.yaml")
    (name,) = _over_regions(_path("multicloud.yaml"))
    keys = {ln.option for ln in plan.lines if ln.workload == name and ln.pay_kind != "data_transfer"}
    assert len({(plan.options[k].provider, plan.options[k].region) for k in keys}) == 2
    for k in keys:
        o = plan.options[k]
        assert o.replicas_needed == 0 and o.region_loss_units >= 1
        assert o.replicas_peak == o.region_loss_units  # no spare unit on top of the region's share


def test_the_checker_catches_whole_gpu_serving_without_a_spare() -> None:
    f, plan = _solved("multicloud.yaml")
    prod = _production(_path("multicloud.yaml")) - _over_regions(_path("multicloud.yaml"))
    key = next(ln.option for ln in plan.lines if ln.workload in prod and not ln.mig_profile)
    o = plan.options[key]
    tight = dataclasses.replace(o, replicas_needed=o.nodes_peak // o.nodes_per_replica)
    bad = check_plan(f, {**plan.options, key: tight}, plan.lines, plan.cost_usd_per_month, pools=plan.pools)
    assert any("one lost" in b for b in bad), bad


def test_the_plan_says_what_failure_it_survives() -> None:
    from gpufleet.fleet.plan import _model_notes

    f = read_fleet_file(_path("mig-inference.yaml"))
    note = next(n for n in _model_notes(f) if "survives one lost node" in n)
    assert all(w.name in note for w in f.workloads if w.production_serving)


def test_the_mig_table_shows_the_mirror_and_the_nodes() -> None:
    from gpufleet.fleet.types import FleetPlan
    from gpufleet.report.fleet_report import pool_rows

    _f, solved = _solved("mig-inference.yaml")
    plan = FleetPlan(
        fleet="mig-inference", status=solved.status, message=solved.message,
        cost_usd_per_month=solved.cost_usd_per_month, lines=solved.lines, new_commitments=(), binding=(),
        levers=(), stats=None, check_violations=solved.violations, pools=solved.pools,
    )  # fmt: skip
    rows = pool_rows(plan)
    assert rows and "mirrored halves (survives a lost node)" in rows[0][2]
    assert "on nodes 0, 1" in rows[0][4]
