"""Fourth review (2026-11-29): a replica that spans several 8-GPU nodes, as an engineer deploys it.

* spot goes in whole replicas: a 16-GPU replica over two p4de.24xlarge nodes is all spot or all on-demand
  (one reclaimed node stops the replica; before, the plan ran 3 spot + 3 on-demand nodes for three 2-node
  replicas, one replica half on spot);
* the exports launch such a replica as one group: Kubernetes LeaderWorkerSet of ``size`` 2 (before: a
  Deployment of 6 independent 8-GPU pods), SkyPilot ``num_nodes: 2`` once per replica (before:
  ``num_nodes: 1``, "one copy per node");
* two Deployments of one workload (on-demand and spot) select disjoint pods (before: both selected
  ``app.kubernetes.io/name: <workload>``, which Kubernetes says makes the controllers fight).

Every number is recomputed from the catalog price and the fleet file, not read from the plan.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.export import k8s_manifests, k8s_yaml, skypilot_export
from gpufleet.fleet.options import build_options
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.fleet.types import FleetPlan
from gpufleet.recommend.perf import DefaultEstimator
from gpufleet.units import HOURS_PER_MONTH

SCHEMA = Path(__file__).parent / "data" / "k8s-v1.31-deployment-apps-v1.schema.json"

#: three 16-GPU replicas (TP x PP over two 8-GPU A100 nodes), half of them allowed on spot
MULTI_NODE = """
name: multinode-spot
workloads:
  big:
    team: ml
    resources: {gpus: ["A100-SXM-80GB"], gpus_per_replica: 16, replicas: 3}
    demand: {schedule: "24/7"}
    providers: [aws]
    regions: [us-east-1]
    preemptible_fraction: 0.5
"""


def _plan(tmp_path: Path, text: str, name: str = "fleet.yaml") -> tuple[Path, FleetPlan]:
    p = tmp_path / name
    p.write_text(text)
    return p, plan_fleet(p, savings=False)


def _p4de_prices() -> tuple[float, float]:
    t = load_offers()
    on = [
        r
        for r in t.records()
        if r.provider == "aws" and r.region == "us-east-1" and r.instance_type == "p4de.24xlarge"
    ]
    assert on and on[0].price_spot_usd_per_hour is not None
    return on[0].price_on_demand_usd_per_hour, on[0].price_spot_usd_per_hour


def _by_kind(plan: FleetPlan, workload: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for ln in plan.lines:
        if ln.workload == workload and ln.pay_kind != "data_transfer":
            out[ln.pay_kind] = out.get(ln.pay_kind, 0) + ln.nodes
    return out


def test_spot_share_of_a_two_node_replica_is_whole_replicas(tmp_path: Path) -> None:
    _, plan = _plan(tmp_path, MULTI_NODE)
    assert plan.status == "optimal", plan.message
    # 3 replicas x 2 nodes = 6 nodes at peak; the 50 % share is 3 nodes = 1.5 replicas -> 1 replica, 2 nodes
    kinds = _by_kind(plan, "big")
    assert kinds == {"spot": 2, "on_demand": 4}  # before: {"spot": 3, "on_demand": 3}
    assert all(ln.nodes_per_replica == 2 for ln in plan.lines if ln.pay_kind != "data_transfer")
    od, _ = _p4de_prices()
    od_line = next(ln for ln in plan.lines if ln.pay_kind == "on_demand")
    assert math.isclose(od_line.cost_usd_per_month, 4 * od * HOURS_PER_MONTH, rel_tol=1e-9)


def test_spot_quota_path_also_keeps_whole_replicas(tmp_path: Path) -> None:
    """With a spot quota in play the spot nodes are MILP variables (not folded): they count replicas."""
    text = MULTI_NODE + (
        "constraints:\n  quotas:\n"
        '    - {provider: aws, region: "*", gpu: "*", limit: 40, spot: true, name: "AWS spot GPUs"}\n'
    )
    _, plan = _plan(tmp_path, text)
    assert plan.status == "optimal", plan.message
    spot = _by_kind(plan, "big").get("spot", 0)
    # 40 spot GPUs = 5 nodes; the 50 % share (3 nodes) holds one whole 2-node replica (before: 3 nodes)
    assert spot == 2


def test_the_checker_refuses_a_half_spot_replica(tmp_path: Path) -> None:
    path, plan = _plan(tmp_path, MULTI_NODE)
    fleet = read_fleet_file(path)

    wopts = build_options(fleet, load_offers(), DefaultEstimator(), load_spot_assumptions(None))
    options = {o.key: o for w in wopts for o in w.options}
    spot = next(ln for ln in plan.lines if ln.pay_kind == "spot")
    od = next(ln for ln in plan.lines if ln.pay_kind == "on_demand")
    assert spot.option in options
    # move one node from on-demand to spot: 3 + 3, one replica half on spot, within the 50 % node share
    lines = [
        dataclasses.replace(
            spot, nodes=3, cost_usd_per_month=3 * spot.unit_price_usd_per_hour * spot.billed_hours_per_month
        ),
        dataclasses.replace(
            od, nodes=3, cost_usd_per_month=3 * od.unit_price_usd_per_hour * od.billed_hours_per_month
        ),
    ]
    bad = check_plan(fleet, options, lines)
    assert any("whole replicas" in b for b in bad), bad


def test_exports_launch_a_two_node_replica_as_one_group(tmp_path: Path) -> None:
    _, plan = _plan(tmp_path, MULTI_NODE)
    docs = list(yaml.safe_load_all(k8s_yaml(k8s_manifests(plan, image="ghcr.io/acme/serve:1"))))
    assert {d["kind"] for d in docs} == {"LeaderWorkerSet"}  # before: Deployment, one pod per node
    by_spot = {d["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"][
        "karpenter.sh/capacity-type"]: d for d in docs}  # fmt: skip
    assert by_spot["on-demand"]["spec"]["replicas"] == 2  # 4 nodes / 2 per replica
    assert by_spot["spot"]["spec"]["replicas"] == 1
    for d in docs:
        assert d["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
        lwt = d["spec"]["leaderWorkerTemplate"]
        assert lwt["size"] == 2
        pod = lwt["workerTemplate"]["spec"]
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
        assert pod["nodeSelector"]["node.kubernetes.io/instance-type"] == "p4de.24xlarge"
        assert pod["nodeSelector"]["topology.kubernetes.io/region"] == "us-east-1"
    sky = skypilot_export(plan)
    tasks = {n: yaml.safe_load(t) for n, t in sky.tasks.items()}
    assert sorted(t["num_nodes"] for t in tasks.values()) == [2, 2]  # before: [1, 1]
    assert sorted(t["resources"]["use_spot"] for t in tasks.values()) == [False, True]
    od_text = next(t for t in sky.tasks.values() if "use_spot: false" in t)
    assert "launch this task once per replica (2 copies)" in od_text


def test_deployments_of_one_workload_select_disjoint_pods(tmp_path: Path) -> None:
    text = """
name: spot-and-od
workloads:
  embed:
    team: search
    resources: {gpus: [L4], gpus_per_replica: 1, replicas: 4}
    demand: {schedule: "24/7"}
    providers: [aws]
    regions: [us-east-1]
    preemptible_fraction: 0.5
"""
    _, plan = _plan(tmp_path, text)
    docs = list(yaml.safe_load_all(k8s_yaml(k8s_manifests(plan, image="ghcr.io/acme/serve:1"))))
    deps = [d for d in docs if d["kind"] == "Deployment"]
    assert len(deps) == 2  # on-demand and spot
    validator = jsonschema.validators.validator_for(json.loads(SCHEMA.read_text()))(
        json.loads(SCHEMA.read_text())
    )
    for d in deps:
        validator.validate(d)
        assert (
            d["spec"]["selector"]["matchLabels"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        )
    a, b = deps
    sel_a, sel_b = a["spec"]["selector"]["matchLabels"], b["spec"]["selector"]["matchLabels"]
    labels_a, labels_b = (
        a["spec"]["template"]["metadata"]["labels"],
        b["spec"]["template"]["metadata"]["labels"],
    )
    # neither selector matches the other's pods (before: both were {app.kubernetes.io/name: embed})
    assert not sel_a.items() <= labels_b.items()
    assert not sel_b.items() <= labels_a.items()


@pytest.mark.parametrize("fraction", [0.34, 0.5, 0.84, 1.0])
def test_spot_share_nodes_rounds_down_to_replicas(fraction: float, tmp_path: Path) -> None:
    _, plan = _plan(
        tmp_path, MULTI_NODE.replace("preemptible_fraction: 0.5", f"preemptible_fraction: {fraction}")
    )
    # floor(fraction x 6 nodes) in whole 2-node replicas: 0.34 -> 2, 0.5 -> 2 (was 3), 0.84 -> 4 (was 5)
    expected = math.floor(fraction * 6 + 1e-9) // 2 * 2
    assert _by_kind(plan, "big").get("spot", 0) == expected


def test_a_diurnal_service_manifest_says_which_replicas_run_part_time(tmp_path: Path) -> None:
    """6 L4 replicas at peak, half at night, production (N+1): the Deployment's replicas are the peak, and
    the annotations give the base and each node's hours, so nobody runs the peak all month thinking it is
    the plan (before: `replicas: 7`, nothing else)."""
    text = """
name: diurnal
workloads:
  chat:
    team: ml
    resources: {gpus: [L4], gpus_per_replica: 1, replicas: 6, tier: production}
    demand: {hourly: [0.5,0.5,0.5,0.5,0.5,0.5,0.6,0.7,0.8,0.9,1,1,1,1,1,1,0.9,0.8,0.7,0.6,0.5,0.5,0.5,0.5]}
    providers: [gcp]
    regions: [us-central1]
"""
    _, plan = _plan(tmp_path, text)
    (dep,) = list(yaml.safe_load_all(k8s_yaml(k8s_manifests(plan, image="ghcr.io/acme/serve:1"))))
    # replicas per hour = ceil(fraction x 6) + 1 spare: 0.5 -> 4 (10 h/day), 0.6/0.7 -> 5/6, 0.8 -> 6,
    # 0.9 and 1 -> 7 (8 h/day); so 4 nodes run 24 h, the 5th 14 h, the 6th 12 h, the 7th 8 h a day
    day = HOURS_PER_MONTH / 24
    assert dep["spec"]["replicas"] == 7
    ann = dep["metadata"]["annotations"]
    assert ann["gpufleet.io/min-replicas"] == "4" and ann["gpufleet.io/max-replicas"] == "7"
    expected = f"4 x 730 h, 1 x {14 * day:,.0f} h, 1 x {12 * day:,.0f} h, 1 x {8 * day:,.0f} h"
    assert ann["gpufleet.io/node-hours-per-month"] == expected  # 426, 365, 243 h
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(dep)
    (task,) = skypilot_export(plan).tasks.values()
    assert "keep 4 replica(s) up" in task


def _pod(doc: dict) -> dict:  # type: ignore[type-arg]
    return doc["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def test_spot_and_on_demand_are_selected_with_each_clouds_own_node_labels(tmp_path: Path) -> None:
    """GKE and AKS nodes carry no Karpenter label: before, every placement selected
    `karpenter.sh/capacity-type`, so a GCP or Azure Deployment matched no node and stayed Pending."""
    text = """
name: gke
workloads:
  embed:
    team: search
    resources: {gpus: [L4], gpus_per_replica: 1, replicas: 4}
    demand: {schedule: "24/7"}
    providers: [gcp]
    regions: [us-central1]
    preemptible_fraction: 0.5
"""
    _, plan = _plan(tmp_path, text)
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)

    def by_kind(p: FleetPlan) -> dict[str, dict]:  # type: ignore[type-arg]
        docs = list(yaml.safe_load_all(k8s_yaml(k8s_manifests(p, image="ghcr.io/acme/serve:1"))))
        for d in docs:
            validator.validate(d)
            assert not any(k.startswith("karpenter.sh/") for k in _pod(d)["nodeSelector"]), d
        return {d["metadata"]["name"].rsplit("-", 1)[1]: d for d in docs}

    gke = by_kind(plan)
    assert _pod(gke["spot"])["nodeSelector"]["cloud.google.com/gke-spot"] == "true"
    (term,) = _pod(gke["od"])["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]  # fmt: skip
    assert term["matchExpressions"] == [
        {"key": "cloud.google.com/gke-spot", "operator": "NotIn", "values": ["true"]}
    ]
    # the same plan on Azure: spot pools are tainted kubernetes.azure.com/scalesetpriority=spot:NoSchedule
    az = dataclasses.replace(
        plan, lines=tuple(dataclasses.replace(ln, provider="azure", region="eastus") for ln in plan.lines)
    )
    aks = by_kind(az)
    spot = _pod(aks["spot"])
    assert spot["nodeSelector"]["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in spot["tolerations"]  # fmt: skip
    assert "kubernetes.azure.com/scalesetpriority" not in _pod(aks["od"])["nodeSelector"]
    # a provider without a known label: no capacity selector, the pay kind as an annotation
    other = dataclasses.replace(
        plan, lines=tuple(dataclasses.replace(ln, provider="lambda", region="us-east-1") for ln in plan.lines)
    )
    lam = by_kind(other)
    assert lam["spot"]["metadata"]["annotations"]["gpufleet.io/capacity-type"] == "spot"
    assert lam["od"]["metadata"]["annotations"]["gpufleet.io/capacity-type"] == "on-demand"
    # AWS keeps Karpenter's label
    aws = dataclasses.replace(
        plan, lines=tuple(dataclasses.replace(ln, provider="aws", region="us-east-1") for ln in plan.lines)
    )
    docs = list(yaml.safe_load_all(k8s_yaml(k8s_manifests(aws, image="x/y:1"))))
    assert sorted(_pod(d)["nodeSelector"]["karpenter.sh/capacity-type"] for d in docs) == [
        "on-demand",
        "spot",
    ]
