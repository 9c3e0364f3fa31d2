"""Review: an infeasible plan names what binds and by how much *in its unit*. Before, a fleet budget 20 %
under the cheapest plan read "fleet (<= $2,643/month) (short by 660.7)": 660.7 of what?"""

from __future__ import annotations

from pathlib import Path

from gpufleet.fleet.plan import plan_fleet

FLEET = """
name: short
workloads:
  embed:
    team: search
    resources: {{gpus: [L4], gpus_per_replica: 1, replicas: 3}}
    demand: {{schedule: "24/7"}}
    providers: [aws]
    regions: [us-east-1]
constraints:
{constraints}
"""


def test_a_budget_shortfall_is_in_usd_per_month(tmp_path: Path) -> None:
    f = tmp_path / "free.yaml"
    f.write_text(FLEET.format(constraints="  max_providers: 1"))
    cheapest = plan_fleet(f, savings=False)
    assert cheapest.status == "optimal"
    budget = round(0.8 * cheapest.cost_usd_per_month)  # a 20 % budget cut
    f.write_text(FLEET.format(constraints=f"  budgets: [{{name: fleet, usd_per_month: {budget}}}]"))
    plan = plan_fleet(f, savings=False)
    assert plan.status == "infeasible"
    short = cheapest.cost_usd_per_month - budget  # by hand: the cheapest plan minus the budget
    assert f"(short by ${short:,.2f}/month)" in plan.message, plan.message


def test_a_quota_shortfall_is_in_the_quota_unit(tmp_path: Path) -> None:
    f = tmp_path / "q.yaml"
    f.write_text(FLEET.format(constraints="  quotas: [{name: aws GPUs, provider: aws, limit: 1}]"))
    plan = plan_fleet(f, savings=False)
    assert plan.status == "infeasible"
    assert "aws GPUs (<= 1 gpus) (short by 2 gpus)" in plan.message, plan.message  # 3 replicas, 1 allowed
