"""Exports: FOCUS columns and invariants, Kubernetes manifests against the schema, SkyPilot fields."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import date
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpufleet.fleet.export import (
    FOCUS_COLUMNS,
    X_COLUMNS,
    focus_csv,
    k8s_manifests,
    k8s_yaml,
    lines_csv,
    skypilot_tasks,
)
from gpufleet.fleet.types import FleetPlan

#: FOCUS 1.2 mandatory columns (specification/columns, feature level Mandatory)
FOCUS_MANDATORY = {
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "PricingQuantity",
    "PricingUnit",
    "ServiceCategory",
    "ServiceName",
}
#: the FOCUS 1.2 columns we may write (mandatory + conditional + recommended)
FOCUS_ALL = FOCUS_MANDATORY | {
    "BillingAccountType",
    "CapacityReservationId",
    "CapacityReservationStatus",
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
    "PricingCurrency",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
    "Tags",
    "AvailabilityZone",
    "ChargeFrequency",
    "InvoiceId",
    "ServiceSubcategory",
}
SCHEMA = Path(__file__).parent / "data" / "k8s-v1.31-deployment-apps-v1.schema.json"


@pytest.fixture(scope="module")
def focus(platform_plan: FleetPlan) -> list[dict[str, str]]:
    text = focus_csv(platform_plan, period_start=date(2026, 12, 1), version="test")
    return list(csv.DictReader(io.StringIO(text)))


def test_focus_columns_follow_the_spec(focus: list[dict[str, str]]) -> None:
    cols = set(focus[0])
    assert cols >= FOCUS_MANDATORY
    assert cols - FOCUS_ALL == set(X_COLUMNS)
    assert all(c.startswith("x_") for c in X_COLUMNS)
    assert set(FOCUS_COLUMNS) <= FOCUS_ALL


def test_focus_invariants(focus: list[dict[str, str]], platform_plan: FleetPlan) -> None:
    for r in focus:
        qty = float(r["PricingQuantity"])
        assert math.isclose(float(r["ListCost"]), float(r["ListUnitPrice"]) * qty, rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(
            float(r["ContractedCost"]), float(r["ContractedUnitPrice"]) * qty, rel_tol=1e-9, abs_tol=1e-9
        )
        assert r["BilledCost"] == r["EffectiveCost"]
        assert r["PricingCategory"] in {"Standard", "Dynamic", "Committed", "Other"}
        assert r["ChargeCategory"] in {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}
        assert r["ChargeClass"] in {"", "Correction"}
        assert r["ChargeFrequency"] in {"One-Time", "Recurring", "Usage-Based"}
        assert r["CommitmentDiscountStatus"] in {"", "Used", "Unused"}
        assert r["CommitmentDiscountCategory"] in {"", "Spend", "Usage"}
        assert (r["PricingCategory"] == "Committed") == (r["CommitmentDiscountId"] != "")
        if r["x_PayKind"] == "spot":
            assert r["PricingCategory"] == "Dynamic"
        assert r["x_IsProjection"] == "true"
        assert (
            r["BillingPeriodStart"] == "2026-12-01T00:00:00Z"
            and r["BillingPeriodEnd"] == "2027-01-01T00:00:00Z"
        )
        json.loads(r["Tags"])
    usage = [r for r in focus if r["ChargeCategory"] == "Usage" and r["CommitmentDiscountStatus"]]
    used = sum(float(r["EffectiveCost"]) for r in usage if r["CommitmentDiscountStatus"] == "Used")
    unused = sum(float(r["EffectiveCost"]) for r in usage if r["CommitmentDiscountStatus"] == "Unused")
    assert math.isclose(sum(float(r["EffectiveCost"]) for r in usage), used + unused)
    assert platform_plan.cost_usd_per_month is not None
    assert math.isclose(
        sum(float(r["EffectiveCost"]) for r in focus), platform_plan.cost_usd_per_month, rel_tol=1e-9
    )


def test_k8s_manifests_validate_against_the_kubernetes_schema(platform_plan: FleetPlan) -> None:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    docs = list(yaml.safe_load_all(k8s_yaml(k8s_manifests(platform_plan, image="ghcr.io/acme/serve:1.0"))))
    assert docs
    for d in docs:
        validator.validate(d)
        pod = d["spec"]["template"]["spec"]
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] >= 1
        assert "node.kubernetes.io/instance-type" in pod["nodeSelector"]
    bad = dict(docs[0], spec={**docs[0]["spec"], "replicas": "three"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)


#: SkyPilot task schema (sky/utils/schemas.py get_task_schema, get_resources_schema): no extra keys
SKY_TASK_KEYS = {
    "name",
    "workdir",
    "event_callback",
    "num_nodes",
    "resources",
    "file_mounts",
    "service",
    "setup",
    "run",
    "envs",
    "secrets",
    "inputs",
    "outputs",
    "volumes",
    "config",
}
SKY_RESOURCE_KEYS = {
    "cloud",
    "region",
    "zone",
    "infra",
    "instance_type",
    "accelerators",
    "use_spot",
    "cpus",
    "memory",
    "disk_size",
    "disk_tier",
    "ports",
    "image_id",
    "labels",
    "job_recovery",
    "accelerator_args",
    "network_tier",
    "any_of",
    "ordered",
}


def test_skypilot_tasks_have_the_schema_fields(platform_plan: FleetPlan) -> None:
    tasks = skypilot_tasks(platform_plan)
    assert tasks
    kinds = {ln.pay_kind == "spot" for ln in platform_plan.lines if ln.pay_kind != "data_transfer"}
    for name, text in tasks.items():
        assert name.endswith(".sky.yaml")
        t = yaml.safe_load(text)
        assert set(t) <= SKY_TASK_KEYS
        assert isinstance(t["num_nodes"], int) and t["num_nodes"] >= 1
        assert set(t["resources"]) <= SKY_RESOURCE_KEYS
        assert isinstance(t["resources"]["use_spot"], bool)
        assert t["resources"]["cloud"] and t["resources"]["region"] and t["resources"]["instance_type"]
    assert {yaml.safe_load(x)["resources"]["use_spot"] for x in tasks.values()} == kinds


def test_lines_csv_sums_to_the_plan(platform_plan: FleetPlan) -> None:
    rows = list(csv.DictReader(io.StringIO(lines_csv(platform_plan))))
    assert platform_plan.cost_usd_per_month is not None
    assert math.isclose(sum(float(r["cost_usd_per_month"]) for r in rows), platform_plan.cost_usd_per_month)


# ---- issue 22 item 7: exports complete or say what they left out -----------------------------------------
def _moved(plan: FleetPlan, provider: str, region: str) -> FleetPlan:
    """``plan`` with its first cloud placement line moved to ``provider``/``region`` (the export reads only
    the lines' fields)."""
    import dataclasses

    lines = list(plan.lines)
    i = next(
        k for k, ln in enumerate(lines) if ln.pay_kind not in ("data_transfer", "on_prem") and not ln.pool
    )
    lines[i] = dataclasses.replace(lines[i], provider=provider, region=region)
    return dataclasses.replace(plan, lines=tuple(lines))


def test_every_catalog_provider_is_a_skypilot_cloud_or_a_listed_refusal() -> None:
    from gpufleet.catalog.offers import load_offers
    from gpufleet.fleet.export import skypilot_clouds

    sky = skypilot_clouds()
    assert sky.skypilot_version and "sky/clouds" in sky.source
    assert set(sky.provider_to_cloud.values()) <= set(sky.clouds)
    providers = set(load_offers().column("provider").tolist())
    assert providers <= set(sky.provider_to_cloud) | set(sky.not_supported)
    assert not set(sky.provider_to_cloud) & set(sky.not_supported)
    # SkyPilot 0.14.1 has Verda and Seeweb clouds: make demo's staging on Verda gets a task
    assert sky.provider_to_cloud["verda"] == "verda" and sky.provider_to_cloud["seeweb"] == "seeweb"


def test_skypilot_writes_a_verda_task_and_lists_a_hyperstack_placement(platform_plan: FleetPlan) -> None:
    from gpufleet.fleet.export import skypilot_export

    verda = skypilot_export(_moved(platform_plan, "verda", "FIN-01"))
    assert verda.left_out == ()
    clouds = {yaml.safe_load(t)["resources"]["cloud"] for t in verda.tasks.values()}
    assert "verda" in clouds
    hs = skypilot_export(_moved(platform_plan, "hyperstack", "NORWAY-1"))
    assert len(hs.left_out) == 1 and "hyperstack/NORWAY-1" in hs.left_out[0]
    assert len(hs.tasks) == len(verda.tasks) - 1  # the other placements are still written


def test_k8s_local_zone_selects_the_parent_region_and_the_zone_names(platform_plan: FleetPlan) -> None:
    plan = _moved(platform_plan, "aws", "us-west-2-lax1")
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    given = {("aws", "us-west-2-lax1"): ("usw2-lax1-az1", "usw2-lax1-az2")}
    for zone_ids in (given, None):  # None: the shipped catalog's zone IDs
        docs = k8s_manifests(plan, zone_ids=zone_ids)
        pods = [d["spec"]["template"]["spec"] for d in docs]  # type: ignore[index]
        regions = {p["nodeSelector"].get("topology.kubernetes.io/region") for p in pods}
        assert (
            "us-west-2-lax1" not in regions and "us-west-2" in regions
        )  # no node carries a Local Zone region
        # a zone term (GCP/Azure on-demand pods also carry a capacity-type NotIn term: review 4)
        zone_terms = [
            (p, next((t for t in exprs if t["key"] == "topology.kubernetes.io/zone"), None))
            for p in pods
            if "affinity" in p
            for exprs in [p["affinity"]["nodeAffinity"][req]["nodeSelectorTerms"][0]["matchExpressions"]]
        ]
        lz = [p for p, t in zone_terms if t is not None]
        terms = [t for _p, t in zone_terms if t is not None]
        assert lz  # the moved placement (and any Local Zone placement the plan already has)
        assert all(t["key"] == "topology.kubernetes.io/zone" and t["operator"] == "In" for t in terms)
        assert ["us-west-2-lax-1a", "us-west-2-lax-1b"] in [t["values"] for t in terms]
        for p, t in zip(lz, terms, strict=True):  # a zone name = parent region + metro + number + letter
            assert all(
                v.startswith(p["nodeSelector"]["topology.kubernetes.io/region"] + "-") for v in t["values"]
            )
        for d in docs:
            validator.validate(d)


def test_k8s_topology_of_ordinary_regions_is_unchanged() -> None:
    from gpufleet.fleet.export import k8s_topology

    assert k8s_topology("aws", "us-east-1") == ("us-east-1", ())
    assert k8s_topology("gcp", "us-central1") == ("us-central1", ())
    assert k8s_topology("aws", "us-east-1-atl2", ("use1-atl2-az1",)) == ("us-east-1", ("us-east-1-atl-2a",))


def test_skypilot_local_zone_names_the_parent_region_and_its_zones(platform_plan: FleetPlan) -> None:
    from gpufleet.fleet.export import skypilot_export

    plan = _moved(platform_plan, "aws", "us-west-2-lax1")
    sky = skypilot_export(plan, zone_ids={("aws", "us-west-2-lax1"): ("usw2-lax1-az1", "usw2-lax1-az2")})
    res = [yaml.safe_load(t)["resources"] for t in sky.tasks.values()]
    assert all(r["region"] != "us-west-2-lax1" for r in res)
    lz = [r for r in res if "any_of" in r]
    assert lz and all(r["region"] == "us-west-2" for r in lz)
    assert {"zone": "us-west-2-lax-1a"} in lz[0]["any_of"] and {"zone": "us-west-2-lax-1b"} in lz[0]["any_of"]
    assert all(set(r) <= SKY_RESOURCE_KEYS for r in res)
