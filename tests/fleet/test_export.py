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
