"""Review: production serving spread over ``ha_regions`` = N regions is sized to survive the loss of one
region at the SLO, and only that (the plan's note promises "survives one region").

Before, every region carried ceil(peak / (N - 1)) replica units *and* one node's worth of N+1 spare on top:
two failures at once paid for. A 4-replica L4 service over 2 regions ran 5 + 5 nodes ($5,875/month) where
4 + 4 ($4,700/month) survive a lost region (the 4 left carry the peak) and therefore any lost node. Sources:
AWS Well-Architected Reliability REL10-BP01 (static stability: the locations left after losing one carry
the load) and the Google SRE book's N+1/N+2 (one unplanned outage at a time).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from gpufleet.catalog.offers import load_offers
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.plan import plan_fleet

FLEET = """
name: ha-test
workloads:
  chat:
    team: product
    resources: {{gpus: [L4], gpus_per_replica: 1, replicas: {replicas}, tier: production}}
    demand: {{schedule: "24/7"}}
    providers: [aws]
    regions: ["us-*"]
    ha_regions: {ha}
"""


def _price(region: str, instance: str) -> float:
    t = load_offers()
    m = (
        (t.column("provider") == "aws")
        & (t.column("region") == region)
        & (t.column("instance_type") == instance)
    )
    return float(t.column("price_on_demand_usd_per_hour")[m][0])


@pytest.mark.parametrize(("replicas", "ha"), [(4, 2), (4, 3), (5, 3)])
def test_each_region_carries_its_share_and_no_more(tmp_path: Path, replicas: int, ha: int) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(FLEET.format(replicas=replicas, ha=ha))
    plan = plan_fleet(f, savings=False)
    assert plan.status == "optimal", plan.message
    assert plan.check_violations == ()
    lines = [ln for ln in plan.lines if ln.workload == "chat" and ln.pay_kind != "data_transfer"]
    nodes: dict[str, int] = {}
    for ln in lines:
        assert ln.gpus_per_node == 1.0  # one L4 per node: one replica unit per node
        nodes[ln.region] = nodes.get(ln.region, 0) + ln.nodes
    assert len(nodes) == ha
    share = math.ceil(replicas / (ha - 1))  # by hand: 4 over 2 -> 4; 4 over 3 -> 2; 5 over 3 -> 3
    assert sorted(nodes.values()) == [share] * ha, nodes  # before: share + 1 in every region
    # losing any one region leaves the peak
    assert all(sum(nodes.values()) - n >= replicas for n in nodes.values())
    # the cost is those nodes at the on-demand price, 730 h
    by_hand = sum(ln.nodes * _price(ln.region, ln.instance_type) * 730.0 for ln in lines)
    assert plan.cost_usd_per_month == pytest.approx(by_hand, rel=1e-9)
    assert any("survives one region" in n and "no N+1 spare" in n for n in plan.notes)


def test_four_replicas_over_two_regions_by_hand(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(FLEET.format(replicas=4, ha=2))
    plan = plan_fleet(f, savings=False)
    # 2 regions x 4 g6.xlarge x $0.8048/h x 730 h = $4,700.03 (before: 2 x 5 nodes, $5,875.04)
    assert plan.cost_usd_per_month == pytest.approx(2 * 4 * 0.8048 * 730, rel=1e-6)


def test_the_checker_catches_a_region_short_of_its_share(tmp_path: Path) -> None:
    from gpufleet.cost.spot import load_spot_assumptions
    from gpufleet.fleet.options import build_options
    from gpufleet.fleet.plan import solve_fleet
    from gpufleet.fleet.spec import read_fleet_file
    from gpufleet.recommend.perf import DefaultEstimator

    f = tmp_path / "fleet.yaml"
    f.write_text(FLEET.format(replicas=4, ha=3))
    fl = read_fleet_file(f)
    wopts = build_options(fl, load_offers(), DefaultEstimator(), load_spot_assumptions(None))
    solved = solve_fleet(fl, {w.workload: list(w.options) for w in wopts}, prune=False)
    assert not check_plan(fl, solved.options, solved.lines, solved.cost_usd_per_month)
    key = next(ln.option for ln in solved.lines if ln.workload == "chat")
    o = solved.options[key]
    assert o.region_loss_units == 2 and o.replicas_needed == 0
    short = dataclasses.replace(o, region_loss_units=3)  # a region that would need 3 but runs 2
    bad = check_plan(fl, {**solved.options, key: short}, solved.lines, solved.cost_usd_per_month)
    assert any("regions lost" in b and "must carry 3" in b for b in bad), bad


def test_serving_egress_is_split_over_the_regions_not_billed_in_each(tmp_path: Path) -> None:
    """Each of the N regions serves 1/N of the month's responses. Before, every region was billed the whole
    1,000 GiB: 2 x $96.64 = $193.27/month of egress for 1,000 GiB served, twice AWS's $0.09/GB."""
    f = tmp_path / "fleet.yaml"
    f.write_text(
        FLEET.format(replicas=4, ha=2)
        + "    data: {provider: aws, region: us-east-1, size_gib: 0, serving_egress_gib_per_month: 1000}\n"
    )
    plan = plan_fleet(f, savings=False)
    assert plan.status == "optimal", plan.message
    egress = sum(ln.cost_usd_per_month for ln in plan.lines if ln.pay_kind == "data_transfer")
    gb = 1000 * 1.073741824  # GiB -> GB (AWS bills per GB)
    assert egress == pytest.approx(gb * 0.09, rel=1e-6)  # $96.64: first AWS tier, both US regions
