"""Hand-built, fixed results for renderer tests (no catalog or estimator: made-up but consistent numbers)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpufleet.estimate.types import Interval
from gpufleet.recommend.rank import with_unit_costs
from gpufleet.recommend.types import (
    Candidate,
    CannotFit,
    CurrentDeployment,
    FitSuggestion,
    Migration,
    PerformanceChange,
    Recommendation,
    ScenarioResult,
    ScenarioSetResult,
    SpotCost,
    Workload,
)

WORKLOAD = Workload(
    name="chat-8b",
    model="llama-3.1-8b",
    task="inference",
    precision="bf16",
    input_len_tokens=1024,
    output_len_tokens=256,
    target_output_tokens_per_s=5000.0,
    ttft_p95_s=0.5,
    tpot_p95_s=0.05,
    hours_per_month=730.0,
    budget_usd_per_month=20000.0,
    current=CurrentDeployment(provider="aws", instance_type="p4d.24xlarge", count=1, region="us-east-1"),
    description="An 8B chat model at 5k output tokens/s.",
)


def candidate(**overrides: Any) -> Candidate:
    base = Candidate(
        provider="lambda",
        region="us-east-1",
        instance_type="gpu_1x_h100_pcie",
        gpu="H100-PCIe",
        gpu_vendor="NVIDIA",
        gpus_per_node=1,
        nodes_per_replica=1,
        tp=1,
        pp=1,
        dp=1,
        replicas=2,
        total_nodes=2,
        total_gpus=2,
        price_kind="on_demand",
        price_usd_per_node_hour=2.49,
        cost_usd_per_hour=4.98,
        cost_usd_per_month=3635.4,
        cost_usd_per_million_output_tokens_at_load=None,
        cost_usd_per_run=None,
        mem_per_gpu_gib=41.5,
        mem_capacity_gib=79.6,
        output_tokens_per_s=Interval(central=6000.0, p10=4500.0, p90=7400.0),
        requests_per_s=Interval(central=23.4, p10=17.6, p90=28.9),
        ttft_s=Interval(central=0.21, p10=0.15, p90=0.33),
        tpot_s=Interval(central=0.031, p10=0.025, p90=0.041),
        batch_per_replica=96,
        generation_year=2022,
        provider_class="gpu_cloud",
        fabric="TCP 25 Gb/s (assumed)",
        fabric_gbps_per_node=25.0,
        multi_node_capable=True,
        vcpus=26.0,
        host_memory_gib=200.0,
        price_date="2026-08-01",
        price_age_days=121,
        notes=(),
    )
    c = replace(base, **overrides)
    return with_unit_costs(
        replace(c, saturated_output_tokens_per_s=1.25 * c.output_tokens_per_s.central),  # type: ignore[union-attr]
        WORKLOAD.target_output_tokens_per_s,
        WORKLOAD.hours_per_month,
    )


A = candidate()
B = candidate(
    provider="runpod",
    region="US",
    instance_type="1x_A100-80GB_SECURE",
    gpu="A100-80GB",
    replicas=3,
    total_nodes=3,
    total_gpus=3,
    price_usd_per_node_hour=1.19,
    cost_usd_per_hour=3.57,
    cost_usd_per_month=2606.1,
    output_tokens_per_s=Interval(central=5000.0, p10=3900.0, p90=6100.0),
    generation_year=2020,
    fabric="TCP 25 Gb/s (assumed), single node",
    multi_node_capable=False,
    vcpus=16.0,
    host_memory_gib=125.0,
    price_date="",
    price_age_days=None,
    risk="medium",
    risk_reasons=("price date unknown",),
)
SPOT = candidate(
    provider="aws",
    region="us-west-2",
    instance_type="g6e.xlarge",
    gpu="L40S",
    replicas=4,
    total_nodes=4,
    total_gpus=4,
    price_kind="spot",
    price_usd_per_node_hour=0.62,
    cost_usd_per_hour=2.48,
    cost_usd_per_month=1810.4,
    output_tokens_per_s=Interval(central=5000.0, p10=3600.0, p90=6300.0),
    spot=SpotCost(
        price_usd_per_hour=0.62,
        interruptions_per_h=0.4,
        checkpoint_interval_h=None,
        wall_time_factor=1.0,
        replica_availability=0.8,
        replicas_provisioned=4,
        replicas_needed=3,
        assumption_source="spot interruption rate 0.4/h (tight GPU capacity, SkyPilot traces)",
    ),
    provider_class="hyperscaler",
    fabric="TCP 2.5 Gb/s",
    fabric_gbps_per_node=2.5,
    vcpus=4.0,
    host_memory_gib=32.0,
    risk="medium",
    risk_reasons=("spot capacity (interruptions)",),
)
SLOW = candidate(
    provider="azure",
    region="eastus",
    instance_type="Standard_NC24ads_A100_v4",
    gpu="A100-80GB",
    replicas=1,
    total_nodes=1,
    total_gpus=1,
    price_usd_per_node_hour=3.67,
    cost_usd_per_hour=3.67,
    cost_usd_per_month=2679.1,
    output_tokens_per_s=Interval(central=2430.0, p10=1900.0, p90=3000.0),
    meets_slo=False,
    slo_misses=("throughput 2,430 tok/s < target 5,000 tok/s",),
    provider_class="hyperscaler",
    fabric="TCP 20 Gb/s",
    fabric_gbps_per_node=20.0,
    vcpus=24.0,
    host_memory_gib=220.0,
    price_date="2026-05-20",
    price_age_days=194,
)
CURRENT = candidate(
    provider="aws",
    region="us-east-1",
    instance_type="p4d.24xlarge",
    gpu="A100-40GB",
    gpus_per_node=8,
    replicas=8,
    total_nodes=1,
    total_gpus=8,
    price_usd_per_node_hour=21.96,
    cost_usd_per_hour=21.96,
    cost_usd_per_month=16030.8,
    mem_capacity_gib=39.4,
    output_tokens_per_s=Interval(central=14970.0, p10=11200.0, p90=18500.0),
    provider_class="hyperscaler",
    fabric="EFA 400 Gb/s",
    fabric_gbps_per_node=400.0,
    vcpus=96.0,
    host_memory_gib=1152.0,
)

NOTES = (
    "Performance from the roofline model with the shipped calibration profile (p10-p90 from its residuals).",
    "Prices are the catalog snapshot of 2025-07; run `gpufleet catalog update` to refresh.",
)


def recommendation(workload: Workload = WORKLOAD) -> Recommendation:
    return Recommendation(
        workload=workload,
        status="ok",
        objective="cheapest",
        best=SPOT,
        ranked=(SPOT, B, A),
        pareto=(SPOT, A),
        offers_considered=412,
        candidates_evaluated=1893,
        message="The cheapest option that meets every SLO is aws g6e.xlarge (spot).",
        notes=NOTES,
    )


def infeasible() -> Recommendation:
    return Recommendation(
        workload=replace(WORKLOAD, name="tight-slo", ttft_p95_s=0.01),
        status="infeasible_slo",
        objective="cheapest",
        best=None,
        ranked=(),
        pareto=(),
        closest=(SLOW,),
        offers_considered=412,
        candidates_evaluated=1893,
        message="No option meets TTFT p95 <= 10 ms; the closest misses are listed.",
        notes=NOTES,
    )


def cannot_fit() -> Recommendation:
    return Recommendation(
        workload=replace(WORKLOAD, name="huge", model="llama-3.1-405b", providers=("lambda",)),
        status="cannot_fit",
        objective="cheapest",
        best=None,
        ranked=(),
        pareto=(),
        cannot_fit=CannotFit(
            mem_needed_single_gpu_gib=812.0,
            largest_gpu_memory_gib=79.6,
            largest_node_memory_gib=636.8,
            reason="llama-3.1-405b in bf16 needs 812 GiB; the largest lambda node holds 636.8 GiB.",
            suggestions=(
                FitSuggestion(
                    kind="lower_precision",
                    description="Serve in fp8",
                    mem_per_gpu_gib=52.3,
                    example_offer="lambda gpu_8x_h100_sxm5 (us-east-1)",
                ),
                FitSuggestion(kind="more_gpus", description="Span 2 nodes with PP2", mem_per_gpu_gib=54.1),
            ),
        ),
        offers_considered=37,
        candidates_evaluated=0,
        message="No lambda offer holds llama-3.1-405b in bf16.",
        notes=NOTES,
    )


def migration() -> Migration:
    rec = recommendation()
    return Migration(
        workload=WORKLOAD,
        current=CURRENT,
        recommended=SPOT,
        current_cost_usd_per_month=16030.8,
        new_cost_usd_per_month=1810.4,
        savings_usd_per_month=14220.4,
        savings_pct=88.7,
        performance=PerformanceChange(
            throughput_ratio=0.334, ttft_ratio=1.0, tpot_ratio=1.0, time_to_train_ratio=None
        ),
        risk="medium",
        risk_reasons=("spot capacity: 0.4 interruptions/h, one spare replica provisioned",),
        complexity="medium",
        complexity_reasons=("provider change (aws -> aws, same provider)", "GPU change A100-40GB -> L40S"),
        verdict="Migrate: saves $14,220/month (88.7%) while meeting every SLO.",
        recommendation=rec,
    )


def scenario_set() -> ScenarioSetResult:
    return ScenarioSetResult(
        name="basic_demos",
        results=(
            ScenarioResult(
                name="chat-8b",
                description=WORKLOAD.description,
                recommendation=recommendation(),
                migration=migration(),
            ),
            ScenarioResult(name="tight-slo", description="Impossible TTFT.", recommendation=infeasible()),
            ScenarioResult(name="huge", description="405B on one provider.", recommendation=cannot_fit()),
        ),
    )
