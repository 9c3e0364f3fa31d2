"""Bad fleet files get a clear error (exit 2 in the CLI) or an infeasible status naming the constraint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.spec import fleet_from_dict, read_fleet_file


def _fleet(**constraints: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "workloads": {
            "serve": {
                "team": "ml",
                "resources": {"gpus": ["T4"], "replicas": 2},
                "providers": ["aws"],
                "regions": ["us-east-1"],
            }
        },
        "constraints": constraints,
    }


def test_unknown_workload_in_a_budget() -> None:
    with pytest.raises(ConfigFileError, match=r"unknown workload 'trainer'.*Fix the names"):
        fleet_from_dict(_fleet(budgets=[{"usd_per_month": 100, "workloads": ["trainer"]}]))


def test_unknown_team_in_a_budget() -> None:
    with pytest.raises(ConfigFileError, match="team 'research', which no workload has"):
        fleet_from_dict(_fleet(budgets=[{"usd_per_month": 100, "teams": ["research"]}]))


def test_negative_quota() -> None:
    with pytest.raises(
        ConfigFileError, match=r"constraints.quotas.0.limit = -4: Input should be greater than or equal to 0"
    ):
        fleet_from_dict(_fleet(quotas=[{"provider": "aws", "limit": -4}]))


def test_unknown_field_and_bad_demand() -> None:
    data = _fleet()
    data["workloads"]["serve"]["demand"] = {"hourly": [0.5] * 23}
    data["workloads"]["serve"]["colour"] = "red"
    with pytest.raises(ConfigFileError) as exc:
        fleet_from_dict(data)
    assert "hourly has 23 values; give 24 (a day) or 168 (a week)" in str(exc.value)
    assert "workloads.serve.colour" in str(exc.value)


def test_workload_and_resources_both_given() -> None:
    data = _fleet()
    data["workloads"]["serve"]["workload"] = {"model": "llama-3.1-8b"}
    with pytest.raises(ConfigFileError, match="exactly one of `workload`"):
        fleet_from_dict(data)


def test_conflicting_ha_and_single_region() -> None:
    data = _fleet()
    data["workloads"]["serve"]["ha_regions"] = 2
    with pytest.raises(ConfigFileError, match="ha_regions: 2 but allows only region 'us-east-1'"):
        fleet_from_dict(data)


def test_unknown_gpu_name() -> None:
    data = _fleet()
    data["workloads"]["serve"]["resources"]["gpus"] = ["T5000"]
    with pytest.raises(InputError, match="GPU 'T5000' matches no accelerator"):
        plan_fleet(fleet_from_dict(data), savings=False)


def test_budget_below_any_feasible_plan_is_infeasible_naming_the_budget() -> None:
    plan = plan_fleet(fleet_from_dict(_fleet(budgets=[{"name": "tiny", "usd_per_month": 1}])), savings=False)
    assert plan.status == "infeasible"
    assert any(b.startswith("tiny") for b in plan.binding), plan.binding
    assert plan.lines == ()


def test_zero_quota_is_infeasible_naming_the_quota() -> None:
    plan = plan_fleet(
        fleet_from_dict(_fleet(quotas=[{"provider": "aws", "limit": 0, "name": "T4 quota"}])), savings=False
    )
    assert plan.status == "infeasible"
    assert any("T4 quota" in b for b in plan.binding), plan.binding


def test_residency_that_no_offer_meets_names_the_workload() -> None:
    data = _fleet()
    data["workloads"]["serve"]["geos"] = ["eu"]  # but only us-east-1 is allowed
    plan = plan_fleet(fleet_from_dict(data), savings=False)
    assert plan.status == "infeasible"
    assert "workload serve" in plan.binding[0] and "data residency eu" in plan.binding[0]


def test_ha_needs_more_regions_than_quotas_allow() -> None:
    data = _fleet(quotas=[{"provider": "aws", "region": "us-west-*", "limit": 0, "name": "west"}])
    data["workloads"]["serve"]["regions"] = ["us-east-1", "us-west-2"]
    data["workloads"]["serve"]["ha_regions"] = 2
    plan = plan_fleet(fleet_from_dict(data), savings=False)
    assert plan.status == "infeasible"
    assert any("west" in b for b in plan.binding), plan.binding


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    p = tmp_path / "fleet.yaml"
    p.write_text(yaml.safe_dump(["not", "a", "mapping"]))
    with pytest.raises(ConfigFileError, match=str(p)):
        read_fleet_file(p)
    p.write_text("workloads: {a: 1}\nworkloads: {b: 2}\n")
    with pytest.raises(ConfigFileError):
        read_fleet_file(p)
