"""Practitioner review: the Kubernetes export is one manifest per cluster (provider/region), and Jobs can be
queued by Kueue.

Before, a plan with ``ha_regions: 2`` wrote both regions' Deployments into ONE manifest with no word that
each region is another cluster: ``kubectl apply`` into one cluster ran the workload in one region (the other
region's pods select nodes that cluster lacks and stay Pending), so no HA. And Jobs carried no
``kueue.x-k8s.io/queue-name``, so a cluster running Kueue never admitted them through the team's quota.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.fleet.export import job_names, k8s_manifests, placements
from gpufleet.fleet.export_k8s import K8sCluster, cluster_yaml, k8s_clusters
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.fleet.types import Fleet, FleetPlan

DATA = Path(__file__).parent / "data"
runner = CliRunner()

#: chat: production serving over 2 AWS US regions; two teams' training jobs in us-east-1 and us-west-2
FLEET = """
name: ha-kueue
{kueue}
workloads:
  chat:
    team: product
    resources: {{gpus: [L4], gpus_per_replica: 1, replicas: 4, tier: production}}
    demand: {{schedule: "24/7"}}
    providers: [aws]
    regions: ["us-*"]
    ha_regions: 2
  pretrain:
    team: research
    resources: {{gpus: ["A100*", "H100*"], gpus_per_replica: 8, replicas: 1, job: true}}
    providers: [aws]
    regions: [us-east-1]
  finetune:
    team: applied
    resources: {{gpus: ["A100*", "H100*"], gpus_per_replica: 8, replicas: 2, job: true}}
    providers: [aws]
    regions: [us-west-2]
"""


def _validator(name: str) -> Any:
    schema = json.loads((DATA / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = tmp_path_factory.mktemp("kueue") / "fleet.yaml"
    f.write_text(FLEET.format(kueue=""))
    return f


@pytest.fixture(scope="module")
def planned(fleet_file: Path) -> tuple[Fleet, FleetPlan]:
    fleet = read_fleet_file(fleet_file)
    plan = plan_fleet(fleet, savings=False)
    assert plan.status == "optimal", plan.message
    return fleet, plan


def _regions(plan: FleetPlan, workload: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in placements(plan):
        if p.workload == workload:
            out[p.region] = out.get(p.region, 0) + p.nodes
    return out


def _docs(c: K8sCluster, kind: str) -> Iterator[dict[str, Any]]:
    return (d for d in c.docs if d["kind"] == kind)


def test_ha_regions_2_gives_two_cluster_manifests_each_with_its_own_replicas(
    planned: tuple[Fleet, FleetPlan],
) -> None:
    fleet, plan = planned
    chat = _regions(plan, "chat")
    assert len(chat) == 2  # the HA workload is in two regions
    clusters = k8s_clusters(plan, image="ghcr.io/acme/serve:1", jobs=job_names(fleet))
    deploy, job = (
        _validator("k8s-v1.31-deployment-apps-v1.schema.json"),
        _validator("k8s-v1.31-job-batch-v1.schema.json"),
    )
    with_chat = []
    for c in clusters:
        assert c.provider == "aws" and c.file_name == f"aws-{c.region}.k8s.yaml"
        text = cluster_yaml(plan, c, clusters=[x.name for x in clusters])
        assert text.startswith(
            f"# gpufleet plan ha-kueue: Kubernetes objects for the cluster in aws/{c.region} only"
        )
        assert f"The plan spans {len(clusters)} clusters" in text and "Do not apply theirs here" in text
        assert all(x.name in text for x in clusters if x is not c)  # the others, named
        docs = list(yaml.safe_load_all(text))
        assert docs == list(c.docs)
        for d in docs:  # every object of this cluster runs in this cluster's region only
            {"Deployment": deploy, "Job": job}[d["kind"]].validate(d)
            pod = d["spec"]["template"]["spec"]
            assert pod["nodeSelector"]["topology.kubernetes.io/region"] == c.region
            assert d["metadata"]["annotations"]["gpufleet.io/cluster"] == f"aws/{c.region}"
        chats = [d for d in docs if d["metadata"]["labels"]["app.kubernetes.io/name"] == "chat"]
        if chats:
            with_chat.append(c.region)
            assert sum(d["spec"]["replicas"] for d in chats) == chat[c.region]
    assert sorted(with_chat) == sorted(chat)  # two cluster manifests hold the chat replicas, one region each
    # nothing lost or duplicated against the flat export
    flat = k8s_manifests(plan, image="ghcr.io/acme/serve:1", jobs=job_names(fleet))
    assert sorted(d["metadata"]["name"] for c in clusters for d in c.docs) == sorted(  # type: ignore[index]
        d["metadata"]["name"]  # type: ignore[index]
        for d in flat
    )


def test_kueue_is_off_unless_asked(planned: tuple[Fleet, FleetPlan]) -> None:
    fleet, plan = planned
    assert fleet.kueue is False
    for c in k8s_clusters(plan, jobs=job_names(fleet)):
        assert {d["kind"] for d in c.docs} <= {"Deployment", "Job"}
        for d in _docs(c, "Job"):
            assert "kueue.x-k8s.io/queue-name" not in d["metadata"]["labels"]
            assert "suspend" not in d["spec"]


def test_kueue_labels_jobs_and_sizes_each_teams_queue_by_the_plan(planned: tuple[Fleet, FleetPlan]) -> None:
    fleet, plan = planned
    kueue, job = (
        _validator("kueue-v1beta1-subset.schema.json"),
        _validator("k8s-v1.31-job-batch-v1.schema.json"),
    )
    # GPUs the plan gives each team's Jobs, per (region, instance type, spot), recomputed from the plan lines
    want: dict[tuple[str, str], int] = {}
    for ln in plan.lines:
        if ln.workload in ("pretrain", "finetune") and ln.pay_kind != "data_transfer":
            want[(ln.region, ln.team)] = want.get((ln.region, ln.team), 0) + ln.nodes * int(ln.gpus_per_node)
    assert {t for _r, t in want} == {"research", "applied"}
    seen: dict[tuple[str, str], int] = {}
    for c in k8s_clusters(plan, jobs=job_names(fleet), kueue=True):
        flavors = {d["metadata"]["name"]: d for d in _docs(c, "ResourceFlavor")}
        cqs = {d["metadata"]["name"]: d for d in _docs(c, "ClusterQueue")}
        lqs = {d["metadata"]["name"]: d for d in _docs(c, "LocalQueue")}
        jobs = list(_docs(c, "Job"))
        if not jobs:
            assert not flavors and not cqs and not lqs  # a cluster without Jobs gets no queues
            continue
        kinds = [d["kind"] for d in c.docs]
        assert kinds.index("Job") > max(i for i, k in enumerate(kinds) if k in ("ClusterQueue", "LocalQueue"))
        for d in [*flavors.values(), *cqs.values(), *lqs.values()]:
            kueue.validate(d)
        for j in jobs:
            job.validate(j)
            team = j["metadata"]["labels"]["gpufleet.io/team"]
            lq = lqs[j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]]
            assert lq["metadata"]["name"] == team and j["spec"]["suspend"] is True
            cq = cqs[lq["spec"]["clusterQueue"]]
            assert cq["spec"]["cohort"] == "ha-kueue" and cq["spec"]["namespaceSelector"] == {}
            # the flavor's node labels are the labels the Job's pods select
            pod_sel = j["spec"]["template"]["spec"]["nodeSelector"]
            (group,) = cq["spec"]["resourceGroups"]
            assert group["coveredResources"] == ["nvidia.com/gpu"]
            for fq in group["flavors"]:  # Kueue: each flavor lists the covered resources, in order
                assert [r["name"] for r in fq["resources"]] == group["coveredResources"]
                labels = flavors[fq["name"]]["spec"]["nodeLabels"]
                assert labels.items() <= pod_sel.items()
            quota = sum(r["nominalQuota"] for fq in group["flavors"] for r in fq["resources"])
            seen[(c.region, team)] = quota
    assert seen == want
    bad = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "x"},
        "spec": {},
    }
    with pytest.raises(
        jsonschema.ValidationError
    ):  # the schema can fail: a LocalQueue needs its ClusterQueue
        kueue.validate(bad)


# ---- CLI ---------------------------------------------------------------------------------------------------
def test_cli_refuses_a_multi_cluster_plan_in_one_file_and_writes_one_per_cluster(
    fleet_file: Path, planned: tuple[Fleet, FleetPlan], tmp_path: Path
) -> None:
    _fleet, plan = planned
    regions = {p.region for p in placements(plan)}
    out = tmp_path / "plan.k8s.yaml"
    res = runner.invoke(app, ["plan", str(fleet_file), "--no-savings", "-f", "k8s", "-o", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{len(regions)} Kubernetes clusters" in res.output and "-o FOLDER" in res.output
    assert not out.exists()  # nothing a platform engineer could apply by mistake
    res = runner.invoke(app, ["plan", str(fleet_file), "--no-savings", "-f", "k8s"])
    assert res.exit_code == 2 and "kind:" not in res.stdout
    folder = tmp_path / "k8s"
    res = runner.invoke(app, ["plan", str(fleet_file), "--no-savings", "-f", "k8s", "-o", str(folder)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"aws-{r}.k8s.yaml" for r in regions)
    res = runner.invoke(
        app, ["plan", str(fleet_file), "--no-savings", "-f", "k8s", "--cluster", "aws-us-east-1", "--kueue"]
    )
    assert res.exit_code == 0, res.output
    docs = list(yaml.safe_load_all(res.stdout))
    assert {d["metadata"]["annotations"]["gpufleet.io/cluster"] for d in docs} == {"aws/us-east-1"}
    assert "LocalQueue" in {d["kind"] for d in docs}
    res = runner.invoke(app, ["plan", str(fleet_file), "--no-savings", "-f", "k8s", "--cluster", "gcp-x"])
    assert res.exit_code == 2 and "aws-us-east-1" in res.output and "Traceback" not in res.output


def test_fleet_kueue_key_turns_it_on_and_the_options_are_k8s_only(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(FLEET.format(kueue="kueue: true"))
    assert read_fleet_file(f).kueue is True
    res = runner.invoke(app, ["plan", str(f), "--no-savings", "-f", "k8s", "--cluster", "aws-us-west-2"])
    assert res.exit_code == 0, res.output
    jobs = [d for d in yaml.safe_load_all(res.stdout) if d["kind"] == "Job"]
    assert jobs and all(j["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "applied" for j in jobs)
    res = runner.invoke(
        app, ["plan", str(f), "--no-savings", "-f", "k8s", "--cluster", "aws-us-west-2", "--no-kueue"]
    )
    assert res.exit_code == 0 and "kueue.x-k8s.io" not in res.stdout
    for opt in (["--kueue"], ["--cluster", "aws-us-east-1"]):
        res = runner.invoke(app, ["plan", str(f), "--no-savings", "-f", "json", *opt])
        assert res.exit_code == 2 and opt[0] in res.output and "Traceback" not in res.output
    f.write_text(FLEET.format(kueue="kueue: sometimes"))
    res = runner.invoke(app, ["plan", str(f), "--no-savings", "-f", "k8s"])
    assert res.exit_code == 2 and "kueue" in res.output and "Traceback" not in res.output


def test_a_local_zone_joins_its_parent_regions_cluster_and_a_site_is_its_own() -> None:
    from gpufleet.fleet.export import Placement
    from gpufleet.fleet.export_k8s import cluster_of

    common = {"workload": "w", "team": "t", "gpu": "L4", "gpus_per_node": 1.0, "nodes": 1, "spot": False}
    lz = Placement(
        provider="aws", region="us-west-2-lax1", instance_type="g6.xlarge", on_prem=False, **common
    )
    assert cluster_of(lz) == ("aws", "us-west-2")  # EKS in us-west-2 runs the Local Zone's nodes
    site = Placement(provider="onprem", region="on-prem", instance_type="dc-a", on_prem=True, **common)
    assert cluster_of(site) == ("onprem", "dc-a")  # two sites in the default region are two clusters


def test_kueue_on_a_plan_without_jobs_says_so(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(
        "name: serve-only\nkueue: true\nworkloads:\n  s:\n    resources: {gpus: [T4], replicas: 1}\n"
        "    providers: [aws]\n    regions: [us-east-1]\n"
    )
    res = runner.invoke(app, ["plan", str(f), "--no-savings", "-f", "k8s"])
    assert res.exit_code == 0, res.output
    assert "Kueue: the plan has no Job" in res.stderr and "kueue.x-k8s.io" not in res.stdout


def test_a_manifest_without_image_says_so(fleet_file: Path) -> None:
    """Without --image the containers had no `image` and nothing said so: the API server refuses such a pod
    template at apply time. The header and stderr now say to set it; with --image nothing is said."""
    from gpufleet.fleet.export_k8s import NO_IMAGE_NOTE

    args = ["plan", str(fleet_file), "--no-savings", "-f", "k8s", "--cluster", "aws-us-west-2"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert NO_IMAGE_NOTE in res.stdout and "no --image" in res.stderr
    docs = [d for d in yaml.safe_load_all(res.stdout) if d]
    assert docs and lacks_image(docs)
    res = runner.invoke(app, [*args, "--image", "ghcr.io/a/b:1"])
    assert res.exit_code == 0, res.output
    assert NO_IMAGE_NOTE not in res.stdout and "no --image" not in res.stderr
    assert not lacks_image([d for d in yaml.safe_load_all(res.stdout) if d])


def lacks_image(docs: list[Any]) -> bool:
    """Whether a container of ``docs`` (any nested ``containers`` list) has no ``image``."""

    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            conts = node.get("containers")
            if isinstance(conts, list) and any(isinstance(c, dict) and not c.get("image") for c in conts):
                return True
            return any(walk(v) for v in node.values())
        return isinstance(node, list) and any(walk(v) for v in node)

    return any(walk(d) for d in docs)
