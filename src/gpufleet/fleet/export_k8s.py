"""Kubernetes export split per cluster, and the Kueue queues that admit the plan's Jobs.

A Kubernetes cluster runs in one provider's region (EKS, GKE and AKS clusters are regional; an AWS Local
Zone's nodes join a cluster of its parent region, :func:`gpufleet.fleet.export.k8s_topology`), and an
on-premises site is its own cluster. A plan that places a workload in several regions (``ha_regions`` >= 2)
or providers therefore needs one manifest per cluster: applied to one cluster, a single manifest creates
every region's objects there, the other regions' pods select nodes (``topology.kubernetes.io/region``) that
cluster does not have and stay Pending, and the other clusters get nothing: the workload runs in one region
(no HA).

Kueue (kubernetes-sigs/kueue, API ``kueue.x-k8s.io/v1beta1``; docs
https://kueue.sigs.k8s.io/docs/concepts/): a ``ResourceFlavor`` names the nodes a quota is for
(``spec.nodeLabels``, "Resource Flavor"), a ``ClusterQueue`` holds the quota per flavor
(``spec.resourceGroups[].flavors[].resources[].nominalQuota``, "Cluster Queue") and lends unused quota to
the queues of its ``cohort``, and a namespaced ``LocalQueue`` points at a ClusterQueue ("Local Queue"); a
Job names its LocalQueue in the label ``kueue.x-k8s.io/queue-name`` ("Run A Kubernetes Job"). As ``gpufleet
simulate batch`` models it, each team gets one ClusterQueue (its nominal quota = the GPUs the plan gives its
Jobs, per flavor) and one LocalQueue, all the fleet's ClusterQueues in one cohort.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import yaml

from gpufleet.fleet.export import (
    Placement,
    capacity_scheduling,
    k8s_name,
    k8s_placement_docs,
    k8s_topology,
    kueue_local_queue,
)
from gpufleet.fleet.mig import k8s_resource
from gpufleet.fleet.types import FleetPlan

KUEUE_API = "kueue.x-k8s.io/v1beta1"


@dataclass(frozen=True, slots=True, kw_only=True)
class K8sCluster:
    """The objects one cluster (one provider's region, or one on-premises site) receives."""

    provider: str
    #: the nodes' topology.kubernetes.io/region (an AWS Local Zone: its parent region); on-prem: the site
    region: str
    docs: tuple[dict[str, object], ...]
    on_prem: bool = False
    #: the containers carry an image (``--image``); without one the API server refuses them at apply time
    image_given: bool = True

    @property
    def name(self) -> str:
        """``provider-region`` as a DNS label: the file name stem and the ``--cluster`` value."""
        return k8s_name(self.provider, self.region)

    @property
    def where(self) -> str:
        return f"{self.provider}/{self.region}"

    @property
    def file_name(self) -> str:
        return f"{self.name}.k8s.yaml"


def cluster_of(p: Placement) -> tuple[str, str]:
    """(provider, region) of the cluster a placement's nodes join; an on-premises site's: (provider, site)."""
    if p.on_prem:
        return p.provider, p.instance_type
    return p.provider, k8s_topology(p.provider, p.region)[0]


def k8s_clusters(
    plan: FleetPlan,
    *,
    image: str = "",
    jobs: Collection[str] = (),
    zone_ids: Mapping[tuple[str, str], Sequence[str]] | None = None,
    kueue: bool = False,
) -> list[K8sCluster]:
    """One :class:`K8sCluster` per (provider, region) of the plan's placements, in first-placement order,
    each holding only its own placements' objects (every object annotated ``gpufleet.io/cluster``). With
    ``kueue``, a cluster that runs Jobs also gets its ResourceFlavors, ClusterQueues and LocalQueues
    (:func:`kueue_objects`), first, so one ``kubectl apply`` creates the queues before the Jobs."""
    by: dict[tuple[str, str], list[tuple[Placement, dict[str, object]]]] = {}
    for p, doc in k8s_placement_docs(plan, image=image, jobs=jobs, zone_ids=zone_ids, kueue=kueue):
        by.setdefault(cluster_of(p), []).append((p, doc))
    out = []
    for (provider, region), pairs in by.items():
        on_prem = pairs[0][0].on_prem
        queues = (
            kueue_objects(
                plan.fleet, [p for p, _d in pairs if p.workload in jobs], cluster=(provider, region)
            )
            if kueue
            else []
        )
        docs = [_tagged(d, f"{provider}/{region}") for d in [*queues, *(d for _p, d in pairs)]]
        out.append(
            K8sCluster(
                provider=provider, region=region, docs=tuple(docs), on_prem=on_prem, image_given=bool(image)
            )
        )
    return out


def _tagged(doc: dict[str, object], where: str) -> dict[str, object]:
    meta = dict(doc["metadata"])  # type: ignore[call-overload]
    meta["annotations"] = {**meta.get("annotations", {}), "gpufleet.io/cluster": where}
    return {**doc, "metadata": meta}


def _flavor(p: Placement) -> tuple[str, dict[str, str]]:
    """(ResourceFlavor name, its ``nodeLabels``) of a placement's nodes: the instance type and, where the
    provider's nodes carry one, the positive spot / on-demand label (:func:`capacity_scheduling`; an
    on-demand GKE or AKS node has no label of its own, so its flavor names the instance type only)."""
    kind = "spot" if p.spot else "on-demand"
    if p.on_prem:
        return k8s_name(p.provider, p.instance_type), {"gpufleet.io/site": k8s_name(p.instance_type)}
    labels = {"node.kubernetes.io/instance-type": p.instance_type}
    labels.update(capacity_scheduling(p.provider, p.spot).node_selector)
    return k8s_name(p.instance_type, kind), labels


def _gpu_request(p: Placement) -> tuple[str, int]:
    """(resource name, amount) the placement's pods request in all: one MIG slice per pod, or the node's
    GPUs per pod, one pod per node (as :func:`gpufleet.fleet.export.k8s_placement_docs` writes them)."""
    if p.mig_profile:
        return k8s_resource(p.mig_profile), p.nodes
    return "nvidia.com/gpu", p.nodes * int(p.gpus_per_node)


def kueue_objects(
    fleet: str, jobs: Sequence[Placement], *, cluster: tuple[str, str]
) -> list[dict[str, object]]:
    """The Kueue objects admitting ``jobs`` (one cluster's Job placements): a ResourceFlavor per (instance
    type, spot or not), then per team a ClusterQueue whose ``nominalQuota`` per flavor is the GPUs the plan
    gives that team's Jobs on those nodes, and a LocalQueue (named :func:`kueue_local_queue`, the label each
    Job carries) pointing at it. Every ClusterQueue is in the cohort named after the fleet, so a team can
    borrow another's unused quota but the cohort never admits more GPUs than the plan pays for (Kueue
    "Cluster Queue": cohorts, borrowing). ``namespaceSelector: {}`` admits LocalQueues of every namespace
    (Kueue: a null selector matches none). Spot flavors are listed first: Kueue tries a ClusterQueue's
    flavors in order, and an on-demand pod's ``NotIn`` spot affinity keeps it off the spot flavor."""
    if not jobs:
        return []
    flavors: dict[str, dict[str, str]] = {}
    spot: dict[str, bool] = {}
    quota: dict[str, dict[str, dict[str, int]]] = {}  # team -> flavor -> resource -> amount
    for p in jobs:
        name, labels = _flavor(p)
        flavors[name] = labels
        spot[name] = p.spot
        res, amount = _gpu_request(p)
        if amount <= 0:  # a CPU-only Job requests no GPU: no quota to hold
            quota.setdefault(p.team, {})
            continue
        held = quota.setdefault(p.team, {}).setdefault(name, {})
        held[res] = held.get(res, 0) + amount
    docs: list[dict[str, object]] = [
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": labels},
        }
        for name, labels in flavors.items()
    ]
    cohort = k8s_name(fleet)
    note = f"GPUs the gpufleet plan {fleet} gives this team's Jobs in {cluster[0]}/{cluster[1]}, per flavor"
    for team in sorted(quota):
        per_flavor = quota[team]
        covered = sorted({r for amounts in per_flavor.values() for r in amounts})
        order = sorted(per_flavor, key=lambda f: (not spot[f], f))
        groups = (
            [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": f,
                            "resources": [
                                {"name": r, "nominalQuota": per_flavor[f].get(r, 0)} for r in covered
                            ],
                        }
                        for f in order
                    ],
                }
            ]
            if covered
            else []
        )
        cq = k8s_name(fleet, team)
        docs.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": cq, "annotations": {"gpufleet.io/nominal-quota": note}},
                "spec": {"cohort": cohort, "namespaceSelector": {}, "resourceGroups": groups},
            }
        )
        docs.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": kueue_local_queue(team)},
                "spec": {"clusterQueue": cq},
            }
        )
    return docs


#: the header line of a manifest whose containers have no image (no --image): the API server refuses a pod
#: template container without one (kustomize or Helm usually set it)
NO_IMAGE_NOTE = (
    "# No container image given (gpufleet plan --image IMAGE): set each container's image before applying\n"
    "# (the API server refuses a container without one; kustomize `images:` or Helm can set it).\n"
)


def cluster_yaml(plan: FleetPlan, cluster: K8sCluster, *, clusters: Sequence[str] = ()) -> str:
    """One cluster's manifest, with a header saying which cluster it is for and how to apply it.
    ``clusters``: the names of every cluster of the plan (:attr:`K8sCluster.name`), named in the header
    where there are several."""
    others = [c for c in clusters if c != cluster.name]
    more = (
        f"# The plan spans {len(others) + 1} clusters; the others ({', '.join(others)}) get their own "
        "manifests (-o FOLDER).\n# Do not apply theirs here: their pods select other regions' nodes and "
        "stay Pending, and the plan\n# would run in one region (no HA).\n"
        if others
        else ""
    )
    nodes = (
        f"gpufleet.io/site: {k8s_name(cluster.region)}"
        if cluster.on_prem
        else f"topology.kubernetes.io/region: {cluster.region}"
    )
    header = (
        f"# gpufleet plan {plan.fleet}: Kubernetes objects for the cluster in {cluster.where} only (its "
        f"nodes carry {nodes}).\n"
        f"# Apply with that cluster's kubeconfig context: kubectl --context <{cluster.where} cluster> "
        "apply -f <this file>\n" + more + ("" if cluster.image_given else NO_IMAGE_NOTE)
    )
    return header + "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in cluster.docs)
