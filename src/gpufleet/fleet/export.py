"""Plan exports: a FOCUS-shaped CSV, one SkyPilot task YAML per placement, Kubernetes manifests, plain CSV.

FOCUS (FinOps Open Cost and Usage Specification) 1.2 column names and allowed values
(FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec tag v1.2, ``specification/columns``). FOCUS describes billing
data; a plan is a projection, so the file is *FOCUS-shaped*, not a conformance claim: ``x_IsProjection`` is
true on every row, BilledCost = EffectiveCost = the projected amount, and custom columns use the ``x_`` prefix
as the spec requires. PricingCategory: Standard (on-demand), Dynamic (spot), Committed (new and existing
commitments), Other (on-premises TCO). A commitment billed 730 h but used fewer hours gives a ``Used`` and an
``Unused`` row (CommitmentDiscountStatus).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import cache
from typing import TYPE_CHECKING

import yaml

from gpufleet.fleet.mig import k8s_resource
from gpufleet.fleet.types import Fleet, FleetPlan, PlanLine
from gpufleet.units import HOURS_PER_MONTH

if TYPE_CHECKING:
    from gpufleet.catalog.offers import OfferTable

#: FOCUS 1.2 columns written, in order (mandatory ones first)
FOCUS_COLUMNS: tuple[str, ...] = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
    "ChargeFrequency",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedUnitPrice",
    "ListUnitPrice",
    "PricingCategory",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceSubcategory",
    "SkuId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
)
#: our projection columns (FOCUS: custom columns MUST start with x_)
X_COLUMNS: tuple[str, ...] = (
    "x_IsProjection",
    "x_Scenario",
    "x_ModelVersion",
    "x_Workload",
    "x_Team",
    "x_PayKind",
    "x_GpuModel",
    "x_GpuCount",
    "x_Nodes",
    "x_HoursRunningPerMonth",
    "x_MigProfile",
    "x_SharedPool",
)

_SERVICE = {
    "aws": ("Amazon Elastic Compute Cloud", "Amazon Web Services"),
    "gcp": ("Compute Engine", "Google Cloud"),
    "azure": ("Virtual Machines", "Microsoft Azure"),
    "oci": ("Compute", "Oracle Cloud Infrastructure"),
    "onprem": ("On-premises GPU servers", "On-premises"),
}
_PRICING_CATEGORY = {
    "on_demand": "Standard",
    "spot": "Dynamic",
    "commit_1y": "Committed",
    "commit_3y": "Committed",
    "existing": "Committed",
    "on_prem": "Other",
    "data_transfer": "Standard",
}
_COMMITMENT_TYPE = {
    "commit_1y": "1-year commitment",
    "commit_3y": "3-year commitment",
    "existing": "Existing",
}


def _month(start: date) -> tuple[str, str]:
    end = date(start.year + (start.month == 12), start.month % 12 + 1, 1)
    return (
        datetime(start.year, start.month, 1, tzinfo=UTC).isoformat().replace("+00:00", "Z"),
        datetime(end.year, end.month, 1, tzinfo=UTC).isoformat().replace("+00:00", "Z"),
    )


def _num(v: float) -> str:
    return repr(float(v))


def _describe(ln: PlanLine) -> str:
    if ln.pay_kind == "data_transfer":
        return f"{ln.workload}: data transfer"
    if ln.mig_profile:  # quantities are slice-hours; the pool's nodes are billed through these lines
        return (f"{ln.workload}: {ln.nodes} x MIG {ln.mig_profile} slices of shared {ln.instance_type} "
                f"({ln.pay_kind}) in {ln.region}")  # fmt: skip
    if ln.pool:
        return (
            f"{ln.nodes} idle MIG compute slices of shared {ln.instance_type} ({ln.pay_kind}) in {ln.region}"
        )
    return f"{ln.workload}: {ln.nodes} x {ln.instance_type} ({ln.pay_kind}) in {ln.region}"


def focus_rows(plan: FleetPlan, *, period_start: date, version: str) -> list[dict[str, str]]:
    start, end = _month(period_start)
    rows: list[dict[str, str]] = []
    for ln in plan.lines:
        service, provider_name = _SERVICE.get(ln.provider, (f"{ln.provider} GPU instances", ln.provider))
        parts: list[tuple[float, float, str]] = []  # (pricing quantity, consumed quantity, status)
        if ln.pay_kind == "data_transfer":
            parts.append((1.0, 1.0, ""))
        elif ln.pay_kind in ("commit_1y", "commit_3y") and ln.hours_per_month < HOURS_PER_MONTH - 1e-9:
            parts.append((ln.nodes * ln.hours_per_month, ln.nodes * ln.hours_per_month, "Used"))
            parts.append((ln.nodes * (HOURS_PER_MONTH - ln.hours_per_month), 0.0, "Unused"))
        else:
            status = "Used" if ln.pay_kind in ("commit_1y", "commit_3y", "existing") else ""
            parts.append((ln.nodes * ln.billed_hours_per_month, ln.nodes * ln.hours_per_month, status))
        for qty, consumed, status in parts:
            transfer = ln.pay_kind == "data_transfer"
            unit = ln.cost_usd_per_month if transfer else ln.unit_price_usd_per_hour
            list_unit = ln.cost_usd_per_month if transfer else ln.list_unit_price_usd_per_hour
            if list_unit != list_unit:  # NaN: on-prem has no list price
                list_unit = unit
            cost = unit * qty
            committed = ln.pay_kind in _COMMITMENT_TYPE
            # FOCUS 1.2 ContractedUnitPrice: "inclusive of negotiated discounts, if present, while
            # excluding negotiated commitment discounts or any other discounts" (columns/
            # contractedunitprice.md): the rate before the commitment, here the on-demand list rate (no
            # negotiated discount is known), so ContractedCost - EffectiveCost is the commitment's saving, as
            # FinOps tools read it (fleet-anchors G)
            contracted_unit = list_unit if committed else unit
            commit_id = ln.commitment or (
                f"new-{ln.pay_kind}-{ln.provider}-{ln.region}-{ln.instance_type}" if committed else ""
            )
            rows.append(
                {
                    "BilledCost": _num(cost),
                    "BillingAccountId": f"gpufleet-plan:{plan.fleet}",
                    "BillingAccountName": plan.fleet,
                    "BillingCurrency": "USD",
                    "BillingPeriodEnd": end,
                    "BillingPeriodStart": start,
                    "ChargeCategory": "Usage",
                    "ChargeClass": "",
                    "ChargeDescription": _describe(ln),
                    "ChargePeriodEnd": end,
                    "ChargePeriodStart": start,
                    "ContractedCost": _num(contracted_unit * qty),
                    "EffectiveCost": _num(cost),
                    "InvoiceIssuerName": provider_name,
                    "ListCost": _num(list_unit * qty),
                    "PricingQuantity": _num(qty),
                    "PricingUnit": "Month" if transfer else "Hours",
                    "ProviderName": provider_name,
                    "PublisherName": provider_name,
                    "ServiceCategory": "Networking" if transfer else "Compute",
                    "ServiceName": "Data Transfer" if transfer else service,
                    "ChargeFrequency": "Recurring"
                    if committed and ln.pay_kind != "existing"
                    else "Usage-Based",
                    "CommitmentDiscountCategory": "Usage" if committed else "",
                    "CommitmentDiscountId": commit_id,
                    "CommitmentDiscountName": commit_id,
                    "CommitmentDiscountQuantity": _num(qty) if committed else "",
                    "CommitmentDiscountStatus": status if committed else "",
                    "CommitmentDiscountType": _COMMITMENT_TYPE.get(ln.pay_kind, ""),
                    "CommitmentDiscountUnit": "Hours" if committed else "",
                    "ConsumedQuantity": _num(consumed),
                    "ConsumedUnit": "Month" if transfer else "Hours",
                    "ContractedUnitPrice": _num(contracted_unit),
                    "ListUnitPrice": _num(list_unit),
                    "PricingCategory": _PRICING_CATEGORY[ln.pay_kind],
                    "RegionId": ln.region,
                    "RegionName": ln.region,
                    "ResourceId": f"{plan.fleet}/{ln.option}",
                    "ResourceName": ln.workload,
                    "ResourceType": "Data Transfer" if transfer else "Virtual Machine",
                    "ServiceSubcategory": "Network Connectivity" if transfer else "Virtual Machines",
                    "SkuId": ln.instance_type,
                    "SubAccountId": ln.team,
                    "SubAccountName": ln.team,
                    "Tags": json.dumps({"team": ln.team, "workload": ln.workload}, sort_keys=True),
                    "x_IsProjection": "true",
                    "x_Scenario": "gpufleet plan",
                    "x_ModelVersion": f"gpufleet {version}",
                    "x_Workload": ln.workload,
                    "x_Team": ln.team,
                    "x_PayKind": ln.pay_kind,
                    "x_GpuModel": ln.gpu,
                    "x_GpuCount": _num(ln.nodes * ln.gpus_per_node),
                    "x_Nodes": str(ln.nodes),
                    "x_HoursRunningPerMonth": _num(ln.hours_per_month),
                    "x_MigProfile": ln.mig_profile,
                    "x_SharedPool": ln.pool,
                }
            )
    return rows


def focus_csv(plan: FleetPlan, *, period_start: date, version: str) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*FOCUS_COLUMNS, *X_COLUMNS], lineterminator="\n")
    w.writeheader()
    w.writerows(focus_rows(plan, period_start=period_start, version=version))
    return buf.getvalue()


def lines_csv(plan: FleetPlan) -> str:
    buf = io.StringIO()
    fields = [
        "workload",
        "team",
        "provider",
        "region",
        "instance_type",
        "gpu",
        "gpus_per_node",
        "pay_kind",
        "nodes",
        "hours_per_month",
        "billed_hours_per_month",
        "unit_price_usd_per_hour",
        "list_unit_price_usd_per_hour",
        "cost_usd_per_month",
        "commitment",
    ]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for ln in plan.lines:
        w.writerow({f: getattr(ln, f) if getattr(ln, f) is not None else "" for f in fields})
    return buf.getvalue()


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Nodes of one option run the same way (spot or not): one SkyPilot task, one Kubernetes workload."""

    workload: str
    team: str
    provider: str
    region: str
    instance_type: str
    gpu: str
    gpus_per_node: float
    nodes: int
    spot: bool
    on_prem: bool
    mig_profile: str = ""  # MIG slices: ``nodes`` counts slices of this profile on a shared pool
    nodes_per_replica: int = 1  # nodes one replica spans (TP x PP over nodes): launched as one group
    #: (nodes, hours each runs a month), most hours first: the demand profile's blocks as the plan pays them
    node_hours: tuple[tuple[int, float], ...] = ()


def _node_hours(lines: Sequence[PlanLine]) -> tuple[tuple[int, float], ...]:
    by: dict[float, int] = {}
    for ln in lines:
        h = round(ln.hours_per_month, 1)
        by[h] = by.get(h, 0) + ln.nodes
    return tuple((n, h) for h, n in sorted(by.items(), reverse=True))


def schedule_annotations(p: Placement) -> dict[str, str]:
    """Kubernetes annotations for a placement whose nodes do not all run the whole month: the manifest's
    replica count is the peak (what the busiest hour needs), and the plan's cost assumes the nodes above the
    base run only the hours the demand profile needs them, so an autoscaler (HPA/KEDA on the serving queue,
    Karpenter removing the empty nodes) must scale between ``gpufleet.io/min-replicas`` and the peak; kept at
    the peak all month, the placement costs more than the plan says. Empty where every node runs 730 h."""
    if p.mig_profile or not p.node_hours or all(h >= HOURS_PER_MONTH - 0.05 for _, h in p.node_hours):
        return {}
    npr = max(1, p.nodes_per_replica)
    base = sum(n for n, h in p.node_hours if h >= HOURS_PER_MONTH - 0.05)
    return {
        "gpufleet.io/min-replicas": str(base // npr),
        "gpufleet.io/max-replicas": str(p.nodes // npr),
        "gpufleet.io/node-hours-per-month": ", ".join(f"{n} x {h:,.0f} h" for n, h in p.node_hours),
        "gpufleet.io/note": (
            "replicas is the peak; the plan pays the nodes above min-replicas only for the hours "
            "listed: scale them with the load (HPA/KEDA, Karpenter consolidation) or the month costs "
            "more than the plan"
        ),
    }


def placements(plan: FleetPlan) -> list[Placement]:
    """Plan lines grouped by (option, spot or not); nodes summed over blocks (the peak). A MIG placement is
    one workload's slices on a shared pool (the pool's idle capacity is no placement)."""
    agg: dict[tuple[str, bool], list[PlanLine]] = {}
    for ln in plan.lines:
        if ln.pay_kind == "data_transfer" or (ln.pool and not ln.mig_profile):
            continue
        agg.setdefault((ln.option, ln.pay_kind == "spot"), []).append(ln)
    out = []
    for (_opt, spot), lines in agg.items():
        ln = lines[0]
        out.append(
            Placement(
                workload=ln.workload,
                team=ln.team,
                provider=ln.provider,
                region=ln.region,
                instance_type=ln.instance_type,
                gpu=ln.gpu,
                gpus_per_node=ln.gpus_per_node,
                nodes=sum(x.nodes for x in lines),
                spot=spot,
                on_prem=ln.pay_kind == "on_prem",
                mig_profile=ln.mig_profile,
                nodes_per_replica=ln.nodes_per_replica,
                node_hours=_node_hours(lines),
            )
        )
    return out


def k8s_name(*parts: str) -> str:
    """An RFC 1123 DNS label (lower case alphanumerics and '-', <= 63 chars)."""
    text = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")
    return text[:63].rstrip("-") or "workload"


@dataclass(frozen=True, slots=True, kw_only=True)
class SkyPilotClouds:
    """The clouds a SkyPilot task may name and the catalog providers they map to (data/skypilot_clouds.json,
    with its source and SkyPilot version)."""

    skypilot_version: str
    source: str
    clouds: tuple[str, ...]
    provider_to_cloud: dict[str, str]
    not_supported: dict[str, str]  # provider -> why


@cache
def skypilot_clouds() -> SkyPilotClouds:
    from importlib import resources

    raw = json.loads(
        resources.files("gpufleet.fleet").joinpath("data", "skypilot_clouds.json").read_text(encoding="utf-8")
    )
    return SkyPilotClouds(
        skypilot_version=raw["skypilot_version"],
        source=raw["source"],
        clouds=tuple(raw["clouds"]),
        provider_to_cloud=dict(raw["provider_to_cloud"]),
        not_supported=dict(raw["not_supported"]),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SkyPilotExport:
    """The task files written and every placement left out, each with why (``plan -f skypilot`` lists them
    and exits 6: gpufleet.cli.exit_codes)."""

    tasks: dict[str, str]  # file name -> task YAML
    left_out: tuple[str, ...]  # one line per placement without a task


def _left_out(plan_provider: str, what: str) -> str:
    sky = skypilot_clouds()
    why = sky.not_supported.get(plan_provider, f"no {plan_provider} cloud in SkyPilot {sky.skypilot_version}")
    return (
        f"{what}: {why} (SkyPilot clouds: {', '.join(sky.clouds)}); launch it with the provider's own tools"
    )


def skypilot_tasks(plan: FleetPlan, *, jobs: Collection[str] = ()) -> dict[str, str]:
    """file name -> SkyPilot task YAML of :func:`skypilot_export` (the placements left out are not listed)."""
    return skypilot_export(plan, jobs=jobs).tasks


def skypilot_export(
    plan: FleetPlan,
    *,
    jobs: Collection[str] = (),
    zone_ids: Mapping[tuple[str, str], Sequence[str]] | None = None,
) -> SkyPilotExport:
    """SkyPilot task YAMLs (sky launch / sky jobs launch), one per placement on a provider SkyPilot supports
    (:func:`skypilot_clouds`), and the placements left out (other providers, on-premises sites). An AWS Local
    Zone placement names its parent region and the Local Zone's zone(s) (:func:`k8s_topology`; ``zone_ids``
    as for :func:`k8s_manifests`), as SkyPilot's AWS regions hold them; a workload in
    ``jobs`` (:func:`job_names`) is one multi-node task, ``num_nodes`` = its nodes (SkyPilot "Distributed
    multi-node jobs": one task launches every node and sets ``SKYPILOT_NODE_RANK``), a service one copy per
    node."""
    cloud_of = skypilot_clouds().provider_to_cloud
    if zone_ids is None:
        zone_ids = catalog_zone_ids() if any(_AWS_LOCAL_ZONE.match(ln.region) for ln in plan.lines) else {}
    out: dict[str, str] = {}
    left: list[str] = []
    for pool in plan.pools:  # one task launches the shared nodes; MIG is configured on them (mig-parted)
        if pool.nodes <= 0:
            continue
        if pool.provider not in cloud_of:
            left.append(
                _left_out(pool.provider, f"shared MIG pool {pool.key} ({pool.provider} {pool.region})")
            )
            continue
        task = {
            "name": k8s_name("mig-pool", pool.instance_type),
            "num_nodes": pool.nodes,
            "resources": {
                "cloud": cloud_of[pool.provider],
                "region": pool.region,
                "instance_type": pool.instance_type,
                "use_spot": False,
            },
        }
        layout = "; ".join(
            " + ".join(f"{k} x {prof}" for prof, k in cfg) + f" on {n} GPU(s)" for cfg, n in pool.layouts
        )
        slices = "; ".join(f"{w} {n} x {prof}" for w, prof, n in pool.slices)
        header = (
            f"# gpufleet plan {plan.fleet}: shared MIG pool {pool.key}, {pool.nodes} node(s) of "
            f"{pool.instance_type} ({pool.gpus_per_node} x {pool.gpu}), {pool.pay_kind}.\n"
            f"# MIG layout: {layout}.\n# Slices: {slices}.\n"
            "# SkyPilot requests whole instances: configure MIG on the nodes (nvidia-smi mig / mig-parted) "
            "and run each workload on its slices (CUDA_VISIBLE_DEVICES=MIG-<uuid>).\n"
        )
        out[f"{task['name']}-{k8s_name(pool.provider, pool.region)}.sky.yaml"] = header + yaml.safe_dump(
            task, sort_keys=False
        )
    for p in placements(plan):
        if p.mig_profile:  # on its shared pool's task (or listed with the pool)
            continue
        what = f"workload {p.workload}: {p.nodes} x {p.instance_type} in {p.provider}/{p.region}"
        if p.on_prem:
            left.append(
                f"{what}: an on-premises site is not a SkyPilot cloud task; register the site's nodes with "
                "SkyPilot's ssh or kubernetes infra and launch there"
            )
            continue
        if p.provider not in cloud_of:
            left.append(_left_out(p.provider, what))
            continue
        job = p.workload in jobs
        # an AWS Local Zone is a zone of its parent region for SkyPilot too (resources.region/zone)
        region, zones = k8s_topology(p.provider, p.region, zone_ids.get((p.provider, p.region), ()))
        resources: dict[str, object] = {
            "cloud": cloud_of[p.provider],
            "region": region,
            "instance_type": p.instance_type,
            "use_spot": p.spot,
        }
        if len(zones) == 1:
            resources["zone"] = zones[0]
        elif zones:  # any zone of the Local Zone group (SkyPilot "any_of" resources)
            resources["any_of"] = [{"zone": z} for z in zones]
        npr = max(1, p.nodes_per_replica)
        task = {
            "name": k8s_name(p.workload, "spot" if p.spot else "od"),
            # a service replica split over nodes (TP x PP across nodes) is one multi-node task per replica:
            # one copy per node would start halves of a model that no single node holds
            "num_nodes": p.nodes if job else npr,
            "resources": resources,
        }
        if job:
            how = "# One multi-node job: num_nodes launches every node (SKYPILOT_NODE_RANK); add setup/run.\n"
        elif npr > 1:
            how = (
                f"# Each replica spans {npr} nodes: launch this task once per replica ({p.nodes // npr} "
                f"cop{'y' if p.nodes // npr == 1 else 'ies'}); num_nodes starts the replica's {npr} nodes "
                "together (SKYPILOT_NODE_RANK); add setup/run commands.\n"
            )
        else:
            copies = f"{p.nodes} cop{'y' if p.nodes == 1 else 'ies'}"
            how = f"# Launch one copy per node ({copies}); add setup/run commands.\n"
        sched = schedule_annotations(p)
        if sched and not job:
            how += (
                f"# Nodes run {sched['gpufleet.io/node-hours-per-month']} a month: keep "
                f"{sched['gpufleet.io/min-replicas']} replica(s) up and the rest only while the load needs "
                "them (the plan's cost assumes it).\n"
            )
        header = (
            f"# gpufleet plan {plan.fleet}: workload {p.workload} (team {p.team}), {p.nodes} node(s) of "
            f"{p.instance_type} ({p.gpu}) in {p.provider}/{p.region}, {'spot' if p.spot else 'not spot'}.\n"
            + how
        )
        out[f"{task['name']}-{k8s_name(p.provider, p.region)}.sky.yaml"] = header + yaml.safe_dump(
            task, sort_keys=False
        )
    return SkyPilotExport(tasks=out, left_out=tuple(left))


def job_names(fleet: Fleet) -> frozenset[str]:
    """Workloads that run to completion: training/fine-tuning model workloads and capacity workloads marked
    ``job`` (exported as Kubernetes Jobs, not Deployments)."""
    return frozenset(
        fw.name
        for fw in fleet.workloads
        if (fw.workload is not None and fw.workload.is_training)
        or (fw.resources is not None and fw.resources.job)
    )


#: AWS Local Zone regions as the catalog names them: parent region, a dash, metro code and number
#: (us-west-2-lax1 = the Local Zone group us-west-2-lax-1 of parent region us-west-2)
_AWS_LOCAL_ZONE = re.compile(r"^([a-z]{2}-[a-z]+-\d)-([a-z]{3})(\d+)$")
#: an AWS zone ID's number (usw2-lax1-az2 -> 2)
_AWS_ZONE_NUMBER = re.compile(r"-az(\d+)$")


def k8s_topology(provider: str, region: str, zone_ids: Sequence[str] = ()) -> tuple[str, tuple[str, ...]]:
    """(``topology.kubernetes.io/region`` value, ``topology.kubernetes.io/zone`` values) that the nodes of
    a placement carry. The kubelet / cloud controller set the region label to the cloud region and the zone
    label to the zone name (Kubernetes "Well-Known Labels": topology.kubernetes.io/region, .../zone). An AWS
    Local Zone is a zone of its parent region: its nodes carry region ``us-west-2`` and zone
    ``us-west-2-lax-1a``, never ``us-west-2-lax1`` (AWS Local Zones user guide: a Local Zone's name is its
    zone group plus a letter, zone ID ``usw2-lax1-az1`` = ``us-west-2-lax-1a``, ``-az2`` = ``-1b``; EKS nodes
    in a Local Zone are labelled with that zone name). ``zone_ids``: the catalog's zone IDs of the region
    (none: the group's first zone, ``a``). Other regions: the region, no zone constraint."""
    m = _AWS_LOCAL_ZONE.match(region) if provider == "aws" else None
    if m is None:
        return region, ()
    parent, metro, number = m.groups()
    group = f"{parent}-{metro}-{number}"
    letters = sorted(
        {chr(ord("a") + int(z.group(1)) - 1) for z in (_AWS_ZONE_NUMBER.search(i) for i in zone_ids) if z}
    )
    return parent, tuple(f"{group}{c}" for c in (letters or ["a"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityScheduling:
    """How a pod asks for spot or on-demand nodes on one provider's Kubernetes: node labels to select, node
    affinity terms (``NotIn`` also matches nodes without the label) and tolerations."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Mapping[str, object], ...] = ()
    tolerations: tuple[Mapping[str, str], ...] = ()


def capacity_scheduling(provider: str, spot: bool) -> CapacityScheduling:
    """The spot / on-demand node selection each provider's nodes carry. AWS: Karpenter's well-known label
    ``karpenter.sh/capacity-type`` = ``spot`` | ``on-demand`` (Karpenter "Well-Known Labels"). GCP (GKE):
    Spot VM nodes carry ``cloud.google.com/gke-spot: "true"`` (GKE "Spot VMs": select them with that
    nodeSelector), on-demand nodes carry no such label, so on-demand pods keep off spot nodes with
    ``NotIn ["true"]``. Azure (AKS): spot node pools are labelled and tainted
    ``kubernetes.azure.com/scalesetpriority=spot:NoSchedule`` (AKS "Add an Azure Spot node pool"): spot pods
    select and tolerate it, on-demand pods keep off it with ``NotIn [spot]``. Other providers: no label is
    known, so none is set (a Karpenter label on a GKE or AKS cluster matches no node and the pod stays
    Pending); the object's ``gpufleet.io/capacity-type`` annotation says which the plan priced."""
    if provider == "aws":
        return CapacityScheduling(
            node_selector={"karpenter.sh/capacity-type": "spot" if spot else "on-demand"}
        )
    if provider == "gcp":
        key = "cloud.google.com/gke-spot"
        if spot:
            return CapacityScheduling(node_selector={key: "true"})
        return CapacityScheduling(match_expressions=({"key": key, "operator": "NotIn", "values": ["true"]},))
    if provider == "azure":
        key = "kubernetes.azure.com/scalesetpriority"
        if spot:
            return CapacityScheduling(
                node_selector={key: "spot"},
                tolerations=({"key": key, "operator": "Equal", "value": "spot", "effect": "NoSchedule"},),
            )
        return CapacityScheduling(match_expressions=({"key": key, "operator": "NotIn", "values": ["spot"]},))
    return CapacityScheduling()


def k8s_manifests(
    plan: FleetPlan,
    *,
    image: str = "",
    jobs: Collection[str] = (),
    zone_ids: Mapping[tuple[str, str], Sequence[str]] | None = None,
    kueue: bool = False,
) -> list[dict[str, object]]:
    """The Kubernetes objects of every placement (:func:`k8s_placement_docs`), in one list: the objects of
    *all* clusters; ``fleet.export_k8s.k8s_clusters`` splits them into one manifest per cluster."""
    return [d for _p, d in k8s_placement_docs(plan, image=image, jobs=jobs, zone_ids=zone_ids, kueue=kueue)]


def kueue_local_queue(team: str) -> str:
    """The Kueue LocalQueue a team's Jobs name in ``kueue.x-k8s.io/queue-name``: one per team."""
    return k8s_name(team)


def k8s_placement_docs(
    plan: FleetPlan,
    *,
    image: str = "",
    jobs: Collection[str] = (),
    zone_ids: Mapping[tuple[str, str], Sequence[str]] | None = None,
    kueue: bool = False,
) -> list[tuple[Placement, dict[str, object]]]:
    """(placement, object) pairs. A Deployment per serving placement: one pod per node, GPUs as limits,
    nodeSelector and the GPU toleration (as in the assessment seed's kubernetes_gpu_scheduling block). MIG
    placements: one pod per slice requesting ``nvidia.com/mig-<profile>: 1``, the resource name the NVIDIA
    GPU Operator / k8s-device-plugin advertise with the *mixed* MIG strategy (NVIDIA GPU Operator docs,
    "GPU Operator with MIG"; NVIDIA k8s-device-plugin README, MIG support).

    A workload in ``jobs`` (:func:`job_names`: training and batch jobs) is a ``batch/v1`` Job instead: a
    Deployment restarts its pods after they finish and never forms one multi-node job. The Job runs one pod
    per node, all at once (``parallelism`` = ``completions`` = nodes) with ``completionMode: Indexed``, the
    rank a torchrun/JobSet-style launcher reads from ``JOB_COMPLETION_INDEX``, and ``restartPolicy: Never``
    (Kubernetes "Jobs": Indexed completion mode; Kueue admits batch/v1 Jobs, JobSets and Kubeflow
    PyTorchJobs, not Deployments). ``kueue``: each Job carries the label ``kueue.x-k8s.io/queue-name`` = its
    team's LocalQueue (:func:`kueue_local_queue`) and is created with ``suspend: true``, which Kueue lifts
    when it admits the Job (Kueue docs, "Run A Kubernetes Job": the queue-name label, and "Kueue
    Workloads": a Job is created suspended and unsuspended on admission).

    A serving replica that spans several nodes (``nodes_per_replica`` > 1: TP x PP across nodes) is a
    ``LeaderWorkerSet`` (kubernetes-sigs/lws, API ``leaderworkerset.x-k8s.io/v1``; the multi-node serving
    deployment vLLM and SGLang document): ``replicas`` groups of ``leaderWorkerTemplate.size`` pods, one
    per node, created, placed and restarted together (its default restart policy recreates the whole group
    when one pod fails). A Deployment of independent pods would start halves of a model that no one pod
    holds, and lose no whole replica when a node goes.

    Every pod carries ``gpufleet.io/placement`` (= the object's name) and a Deployment selects on it, so
    two placements of one workload in one cluster (on-demand and spot, or two HA regions) never overlap
    (Kubernetes "Deployments": do not overlap selectors with other controllers).

    Region and zone selectors are the labels nodes carry (:func:`k8s_topology`): an AWS Local Zone placement
    selects its parent region and the Local Zone's zone names. ``zone_ids``: (provider, region) -> the
    catalog's zone IDs (default: the shipped catalog's)."""
    if zone_ids is None:
        zone_ids = catalog_zone_ids() if any(_AWS_LOCAL_ZONE.match(ln.region) for ln in plan.lines) else {}
    docs: list[tuple[Placement, dict[str, object]]] = []
    for p in placements(plan):
        name = k8s_name(p.workload, p.region, "spot" if p.spot else "od")
        # the placement label keeps the selectors of one workload's placements (spot and on-demand, or one
        # per HA region in one cluster) apart: Kubernetes "Deployments": "do not overlap labels or
        # selectors with other controllers", or the controllers fight over each other's pods
        labels = {
            "app.kubernetes.io/name": k8s_name(p.workload),
            "gpufleet.io/team": k8s_name(p.team),
            "gpufleet.io/placement": name,
        }
        selector: dict[str, str] = {}
        zones: tuple[str, ...] = ()
        if p.on_prem:
            selector["gpufleet.io/site"] = k8s_name(p.instance_type)
        else:
            region, zones = k8s_topology(p.provider, p.region, zone_ids.get((p.provider, p.region), ()))
            selector["node.kubernetes.io/instance-type"] = p.instance_type
            selector["topology.kubernetes.io/region"] = region
            if len(zones) == 1:
                selector["topology.kubernetes.io/zone"] = zones[0]
        cap = capacity_scheduling(p.provider, p.spot) if not p.on_prem else CapacityScheduling()
        selector.update(cap.node_selector)
        container: dict[str, object] = {"name": k8s_name(p.workload)}
        if image:
            container["image"] = image
        gpus = int(p.gpus_per_node)
        if p.mig_profile:  # one slice per pod, as the GPU Operator's mixed MIG strategy exposes it
            gpus = 1
            res = k8s_resource(p.mig_profile)
            container["resources"] = {"limits": {res: 1}, "requests": {res: 1}}
        elif gpus > 0:
            container["resources"] = {
                "limits": {"nvidia.com/gpu": gpus},
                "requests": {"nvidia.com/gpu": gpus},
            }
        pod: dict[str, object] = {"nodeSelector": selector, "containers": [container]}
        terms: list[dict[str, object]] = [dict(t) for t in cap.match_expressions]
        if not p.on_prem and len(zones) > 1:  # any zone of the Local Zone group: node affinity, In
            terms.append({"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)})
        if terms:
            pod["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": terms}
                    ]}
                }
            }  # fmt: skip
        if p.mig_profile:
            labels = {**labels, "gpufleet.io/mig-profile": p.mig_profile}
        tolerations = [dict(t) for t in cap.tolerations]
        if gpus > 0:
            tolerations.insert(0, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
        if tolerations:
            pod["tolerations"] = tolerations
        if p.workload in jobs:
            queued = {"kueue.x-k8s.io/queue-name": kueue_local_queue(p.team)} if kueue else {}
            job_doc: dict[str, object] = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "labels": {**labels, **queued}, **_annotations(p, job=True)},
                "spec": {
                    **({"suspend": True} if kueue else {}),
                    "completions": p.nodes,
                    "parallelism": p.nodes,
                    "completionMode": "Indexed",
                    "template": {"metadata": {"labels": labels}, "spec": {**pod, "restartPolicy": "Never"}},
                },
            }
            docs.append((p, job_doc))
            continue
        npr = max(1, p.nodes_per_replica)
        if npr > 1:  # one replica over npr nodes: a LeaderWorkerSet group of npr pods, one per node
            lws: dict[str, object] = {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": name, "labels": labels, **_annotations(p)},
                "spec": {
                    "replicas": p.nodes // npr,
                    "leaderWorkerTemplate": {
                        "size": npr,
                        "workerTemplate": {"metadata": {"labels": labels}, "spec": pod},
                    },
                },
            }
            docs.append((p, lws))
            continue
        deployment: dict[str, object] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels, **_annotations(p)},
            "spec": {
                "replicas": p.nodes,
                "selector": {
                    "matchLabels": {
                        "app.kubernetes.io/name": k8s_name(p.workload),
                        "gpufleet.io/placement": name,
                    }
                },
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        }
        docs.append((p, deployment))
    return docs


def _annotations(p: Placement, *, job: bool = False) -> dict[str, object]:
    notes = {} if job else schedule_annotations(p)
    if not p.on_prem and p.provider not in ("aws", "gcp", "azure"):  # no known capacity label (see above)
        notes = {**notes, "gpufleet.io/capacity-type": "spot" if p.spot else "on-demand"}
    return {"annotations": notes} if notes else {}


def catalog_zone_ids(offers: OfferTable | None = None) -> dict[tuple[str, str], tuple[str, ...]]:
    """(provider, region) -> the zone IDs the catalog lists there, for the AWS Local Zone regions only (the
    zones :func:`k8s_topology` names)."""
    from gpufleet.catalog.offers import load_offers

    t = offers if offers is not None else load_offers()
    out: dict[tuple[str, str], set[str]] = {}
    for p, r, z in zip(t.column("provider").tolist(), t.column("region").tolist(), t.column("zone").tolist(),
                       strict=True):  # fmt: skip
        if p == "aws" and z and _AWS_LOCAL_ZONE.match(r):
            out.setdefault((p, r), set()).add(str(z))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def k8s_yaml(docs: Sequence[dict[str, object]]) -> str:
    return "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in docs)
