"""Review scenario: capacity workloads that state no vCPUs or RAM get the recommender's host floor
(recommend/deploy.py HostRules: serving 2 + 1 vCPU per GPU on the node, a job 4 per GPU; host RAM at least the
8 GiB base). Before, a production T4 service was planned on GCP n1-standard-1 (1 vCPU, 3.75 GB RAM) and the
assessment platform's staging V100 on a 2-vCPU, 4 GB host: no serving engine runs there."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpufleet.catalog.offers import load_offers
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.sizing import host_vcpu_units
from gpufleet.recommend.deploy import DEFAULT_HOST_RULES

FLEET = """
name: t4-serving
workloads:
  embed:
    team: search
    resources: {gpus: [T4], gpus_per_replica: 1, replicas: 3, tier: production}
    demand: {schedule: "24/7"}
    providers: [gcp]
    geos: [us]
  nightly:
    team: research
    resources: {gpus: ["V100*"], gpus_per_replica: 1, replicas: 1, job: true}
    demand: {hours_per_week: 20}
"""
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleets" / "assessment-platform.yaml"


def _host(provider: str, region: str, instance: str) -> tuple[float, float, float]:
    t = load_offers()
    m = (
        (t.column("provider") == provider)
        & (t.column("region") == region)
        & (t.column("instance_type") == instance)
    )
    (i,) = np.flatnonzero(m)[:1]
    return float(t.column("vcpus")[i]), float(t.column("ram_gib")[i]), float(t.column("gpu_count")[i])


def _check_lines(plan: object, jobs: set[str]) -> int:
    checked = 0
    for line in plan.lines:  # type: ignore[attr-defined]
        if line.pay_kind == "data_transfer" or not line.gpu:
            continue
        vcpus, ram, gpus = _host(line.provider, line.region, line.instance_type)
        need = (
            DEFAULT_HOST_RULES.vcpus_per_gpu_training * gpus
            if line.workload in jobs
            else DEFAULT_HOST_RULES.vcpus_base_inference + DEFAULT_HOST_RULES.vcpus_per_gpu_inference * gpus
        )
        assert vcpus >= need, (line.workload, line.instance_type, vcpus, need)
        assert ram >= DEFAULT_HOST_RULES.ram_base_gib, (line.workload, line.instance_type, ram)
        checked += 1
    return checked


def test_capacity_workloads_get_the_host_floor(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(FLEET)
    plan = plan_fleet(f, savings=False)
    assert plan.status == "optimal"
    assert _check_lines(plan, {"nightly"}) >= 2
    embed = [ln for ln in plan.lines if ln.workload == "embed"]
    assert embed and all(ln.instance_type != "n1-standard-1" for ln in embed)


def test_the_demo_plan_keeps_the_host_floor() -> None:
    plan = plan_fleet(EXAMPLE, savings=False)
    assert _check_lines(plan, {"training"}) >= 4


def test_host_vcpu_units_by_hand() -> None:
    vc = np.array([1.0, 4.0, 8.0, 96.0])
    # serving, 1 GPU per replica: (vCPUs - 2) / 1
    assert host_vcpu_units(vc, 1, job=False).tolist() == [0, 2, 6, 94]
    # a job of 8 GPUs per replica: vCPUs / (4 x 8)
    assert host_vcpu_units(vc, 8, job=True).tolist() == [0, 0, 0, 3]


def test_waterfall_without_a_current_deployment_names_its_baseline(tmp_path: Path) -> None:
    """Review scenario (a new platform, nothing deployed): the waterfall's "% of today" was measured against
    a baseline the table did not name ("no current deployment given"); it is the right-sized on-demand plan,
    and the spot saving is recomputed from it."""
    f = tmp_path / "fleet.yaml"
    f.write_text(FLEET.replace("job: true}", "job: true}\n    preemptible_fraction: 1.0"))
    plan = plan_fleet(f)
    by = {lv.name: lv for lv in plan.levers}
    assert "'today' is the right-sized on-demand plan" in by["schedule"].note
    base = by["schedule"].usd_per_month_before
    sp = by["spot"]
    assert base is not None and sp.savings_usd_per_month is not None and sp.savings_pct is not None
    assert abs(sp.savings_pct - 100 * sp.savings_usd_per_month / base) < 1e-6
